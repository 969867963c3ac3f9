//! A small test host that drives the `nvme` crate against the simulated controller: bring-up
//! with [`nvme::Enable`], admin commands, I/O queue creation, submission with doorbell
//! batching, completion reaping with every validation error recorded, and DMA buffers with PRP
//! or SGL data pointers in bus memory.

use nvme::{
    build_prps, build_sgl, plan_prps, AdminQueue, CidTable, Cns, Completion, CompletionEntry,
    CompletionMemory, CompletionQueue, DataPointer, DmaSegment, Doorbells, Enable, InitError, Poll,
    PrpListPage, PrpLists, QueueGrant, QueuePlan, Registers, SglDescriptor, ShutdownSeq,
    SubmissionEntry, SubmissionMemory, SubmissionQueue,
};

use super::bus::{Bus, BUS_PAGE};
use super::ctrl::{SimConfig, SimController};

/// Most tags a host queue has (storage of its command id table).
pub const MAX_DEPTH: usize = 1024;
/// Polls after which a bring-up loop is declared unbounded (a test failure).
pub const MAX_POLLS: u32 = 1_000_000;

struct SqMem<'a> {
    bus: &'a mut Bus,
    base: u64,
}

impl SubmissionMemory for SqMem<'_> {
    fn write_entry(&mut self, index: u16, entry: &SubmissionEntry) {
        self.bus
            .write(self.base + u64::from(index) * 64, &entry.to_bytes());
    }
}

struct CqMem<'a> {
    bus: &'a Bus,
    base: u64,
}

impl CompletionMemory for CqMem<'_> {
    fn read_status(&self, index: u16) -> u16 {
        self.bus.read_u16(self.base + u64::from(index) * 16 + 14)
    }
    fn read_entry(&self, index: u16) -> CompletionEntry {
        let mut b = [0u8; 16];
        self.bus.read(self.base + u64::from(index) * 16, &mut b);
        CompletionEntry::from_bytes(&b)
    }
}

/// One host queue pair.
#[derive(Debug)]
pub struct HostQueue {
    /// Queue id.
    pub qid: u16,
    /// Submission ring.
    pub sq: SubmissionQueue,
    /// Completion ring.
    pub cq: CompletionQueue,
    /// Command ids.
    pub cids: CidTable<MAX_DEPTH>,
    sq_base: u64,
    cq_base: u64,
    sq_db: u32,
    cq_db: u32,
}

/// The test host.
#[derive(Debug)]
pub struct Host {
    /// The controller.
    pub ctrl: SimController,
    /// Bus memory.
    pub bus: Bus,
    /// Queue 0 is the admin queue, then the I/O queues.
    pub queues: Vec<HostQueue>,
    /// Every completion the core refused (ring or command id validation), as text.
    pub rejected: Vec<String>,
    doorbells: Option<Doorbells>,
}

impl Host {
    /// A host for a new controller built from `cfg`.
    pub fn new(cfg: SimConfig) -> Self {
        Self {
            ctrl: SimController::new(cfg),
            bus: Bus::new(),
            queues: Vec::new(),
            rejected: Vec::new(),
            doorbells: None,
        }
    }

    /// Runs [`nvme::Enable`] with an admin queue of `depth` entries, advancing the simulated
    /// clock by every requested wait. Returns the number of polls.
    ///
    /// # Panics
    ///
    /// If the sequence polls more than [`MAX_POLLS`] times (it must be bounded).
    pub fn enable(&mut self, depth: u16) -> Result<u32, InitError> {
        let pages = (u64::from(depth) * 64).div_ceil(BUS_PAGE);
        let sq_base = self.bus.alloc(pages);
        let cq_base = self.bus.alloc(pages);
        let mut en = Enable::new(AdminQueue {
            sq_addr: sq_base,
            cq_addr: cq_base,
            entries: depth,
        });
        let mut polls = 0;
        loop {
            polls += 1;
            assert!(polls <= MAX_POLLS, "Enable did not terminate");
            match en.poll(&self.ctrl.regs, self.ctrl.regs.now())? {
                Poll::Wait(ms) => {
                    assert!(ms >= 1, "a wait of 0 ms");
                    self.ctrl.regs.advance(u64::from(ms));
                }
                Poll::Done => break,
            }
        }
        let db = Doorbells::new(en.cap(), u64::from(self.ctrl.regs.bar_len));
        self.doorbells = Some(db);
        let d = u32::from(depth);
        self.queues.clear();
        self.queues.push(HostQueue {
            qid: 0,
            sq: SubmissionQueue::new(0, d).map_err(|_| InitError::DeviceGone)?,
            cq: CompletionQueue::new(0, d, 0, d).map_err(|_| InitError::DeviceGone)?,
            cids: CidTable::new(usize::from(depth) - 1).map_err(|_| InitError::DeviceGone)?,
            sq_base,
            cq_base,
            sq_db: db.sq_tail(0).unwrap_or(0),
            cq_db: db.cq_head(0).unwrap_or(0),
        });
        Ok(polls)
    }

    /// Runs [`nvme::Disable`] (the first step of a controller reset) and lets the controller
    /// see it; returns the number of polls.
    pub fn disable(&mut self) -> Result<u32, InitError> {
        let mut d = nvme::Disable::new();
        let mut polls = 0;
        loop {
            polls += 1;
            assert!(polls <= MAX_POLLS, "Disable did not terminate");
            match d.poll(&self.ctrl.regs, self.ctrl.regs.now())? {
                Poll::Wait(ms) => self.ctrl.regs.advance(u64::from(ms)),
                Poll::Done => break,
            }
        }
        self.ctrl.process(&mut self.bus);
        Ok(polls)
    }

    /// Runs [`nvme::ShutdownSeq`]; returns the number of polls.
    pub fn shutdown(&mut self, rtd3e_us: u32) -> Result<u32, InitError> {
        let mut s = ShutdownSeq::new(rtd3e_us);
        let mut polls = 0;
        loop {
            polls += 1;
            assert!(polls <= MAX_POLLS, "ShutdownSeq did not terminate");
            match s.poll(&self.ctrl.regs, self.ctrl.regs.now())? {
                Poll::Wait(ms) => self.ctrl.regs.advance(u64::from(ms)),
                Poll::Done => return Ok(polls),
            }
        }
    }

    /// Starts `cmd` on queue `q` under blk-mq tag `tag`; returns the command id used.
    pub fn submit(&mut self, q: usize, tag: u16, mut cmd: SubmissionEntry) -> Result<u16, String> {
        let hq = self.queues.get_mut(q).ok_or("no such queue")?;
        let cid = hq.cids.start(tag).map_err(|e| e.to_string())?;
        cmd.set_cid(cid);
        let mut mem = SqMem {
            bus: &mut self.bus,
            base: hq.sq_base,
        };
        if let Err(e) = hq.sq.push(&mut mem, &cmd) {
            hq.cids.cancel(tag);
            return Err(e.to_string());
        }
        Ok(cid)
    }

    /// Writes queue `q`'s tail doorbell if needed; returns whether it wrote.
    pub fn ring(&mut self, q: usize) -> bool {
        let Some(hq) = self.queues.get_mut(q) else {
            return false;
        };
        match hq.sq.commit() {
            Some(v) => {
                self.ctrl.regs.write32(hq.sq_db, v);
                true
            }
            None => false,
        }
    }

    /// Drains queue `q`'s completions: the validated ones as `(tag, completion)`; refused ones
    /// go to [`Host::rejected`]. Writes the head doorbell.
    pub fn reap(&mut self, q: usize) -> Vec<(u16, Completion)> {
        let mut out = Vec::new();
        let Some(hq) = self.queues.get_mut(q) else {
            return out;
        };
        let mem = CqMem {
            bus: &self.bus,
            base: hq.cq_base,
        };
        // A correct ring yields at most `depth` entries before its phase flips away from what
        // is in memory; the bound keeps a broken ring from hanging the test.
        let mut budget = hq.cq.depth();
        while let Some(r) = hq.cq.next(&mem) {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                self.rejected
                    .push(format!("q{q}: ring yielded more than its depth"));
                break;
            }
            let c = match r {
                Ok(c) => c,
                Err(e) => {
                    self.rejected.push(format!("q{q}: {e}"));
                    continue;
                }
            };
            match nvme::accept_completion(&mut hq.sq, &mut hq.cids, &c) {
                Ok(tag) => out.push((tag, c)),
                Err(e) => self.rejected.push(format!("q{q}: {e}")),
            }
        }
        if let Some(v) = hq.cq.doorbell() {
            self.ctrl.regs.write32(hq.cq_db, v);
        }
        out
    }

    /// Runs one admin command to completion (tag 0), letting the controller run up to 64 times.
    pub fn admin(&mut self, cmd: SubmissionEntry) -> Result<Completion, String> {
        self.submit(0, 0, cmd)?;
        self.ring(0);
        for _ in 0..64 {
            self.ctrl.process(&mut self.bus);
            if let Some((_, c)) = self.reap(0).into_iter().find(|(t, _)| *t == 0) {
                return Ok(c);
            }
        }
        if let Some(hq) = self.queues.get_mut(0) {
            hq.cids.cancel(0);
        }
        Err("admin command timed out".into())
    }

    /// Identify `cns` for `nsid`, into a buffer at a page offset of 0 (PRP1 only).
    pub fn identify(&mut self, cns: Cns, nsid: u32) -> Result<Vec<u8>, String> {
        let buf = self.bus.alloc(1);
        let c = self.admin(SubmissionEntry::identify(
            cns,
            nsid,
            DataPointer::prp(buf, 0),
        ))?;
        if !c.status.is_success() {
            return Err(format!("identify failed: {}", c.status));
        }
        let mut data = vec![0u8; 4096];
        self.bus.read(buf, &mut data);
        Ok(data)
    }

    /// Negotiates and creates I/O queues of `depth` entries for `cpus` CPUs and `poll` poll
    /// queues (one vector per CPU); returns the plan.
    pub fn setup_io(&mut self, cpus: u32, poll: u16, depth: u32) -> Result<QueuePlan, String> {
        let want = QueuePlan::request(cpus, poll);
        let c = self.admin(SubmissionEntry::set_num_queues(want).map_err(|e| e.to_string())?)?;
        if !c.status.is_success() {
            return Err(format!("set features failed: {}", c.status));
        }
        let plan = QueuePlan::new(cpus, poll, QueueGrant::from_result(c.result as u32), cpus)
            .map_err(|e| e.to_string())?;
        let db = self.doorbells.ok_or("not enabled")?;
        for i in 0..plan.total() {
            let qid = (i + 1) as u16;
            let pages = (u64::from(depth) * 64).div_ceil(BUS_PAGE);
            let (sq_base, cq_base) = (self.bus.alloc(pages), self.bus.alloc(pages));
            let vector = (i < u32::from(plan.default)).then_some(qid);
            let c = self.admin(
                SubmissionEntry::create_cq(qid, depth, cq_base, vector)
                    .map_err(|e| e.to_string())?,
            )?;
            if !c.status.is_success() {
                return Err(format!("create cq {qid}: {}", c.status));
            }
            let c = self.admin(
                SubmissionEntry::create_sq(qid, depth, sq_base, qid).map_err(|e| e.to_string())?,
            )?;
            if !c.status.is_success() {
                return Err(format!("create sq {qid}: {}", c.status));
            }
            let tags = (depth as usize - 1).min(MAX_DEPTH);
            self.queues.push(HostQueue {
                qid,
                sq: SubmissionQueue::new(qid, depth).map_err(|e| e.to_string())?,
                cq: CompletionQueue::new(qid, depth, qid, depth).map_err(|e| e.to_string())?,
                cids: CidTable::new(tags).map_err(|e| e.to_string())?,
                sq_base,
                cq_base,
                sq_db: db.sq_tail(qid).map_err(|e| e.to_string())?,
                cq_db: db.cq_head(qid).map_err(|e| e.to_string())?,
            });
        }
        Ok(plan)
    }

    /// Deletes every I/O queue (each submission queue, then its completion queue, as the
    /// Linux driver's `nvme_delete_io_queues` does) and forgets them.
    pub fn delete_io(&mut self) -> Result<(), String> {
        let qids: Vec<u16> = self.queues.iter().skip(1).map(|q| q.qid).collect();
        for qid in qids.iter().rev() {
            let c = self.admin(SubmissionEntry::delete_sq(*qid).map_err(|e| e.to_string())?)?;
            if !c.status.is_success() {
                return Err(format!("delete sq {qid}: {}", c.status));
            }
            let c = self.admin(SubmissionEntry::delete_cq(*qid).map_err(|e| e.to_string())?)?;
            if !c.status.is_success() {
                return Err(format!("delete cq {qid}: {}", c.status));
            }
        }
        self.queues.truncate(1);
        Ok(())
    }

    /// Allocates a data buffer of `len` bytes starting `offset` bytes into its first page, cut
    /// into DMA segments of at most `pages_per_seg` pages each (each segment a separate
    /// allocation, so segments are not bus-contiguous). The segments obey the PRP rules when
    /// `offset` is dword aligned.
    pub fn dma_buffer(&mut self, len: u32, offset: u32, pages_per_seg: u32) -> Vec<DmaSegment> {
        let mut segs = Vec::new();
        let mut left = len;
        let mut off = offset % BUS_PAGE as u32;
        while left > 0 {
            let cap = pages_per_seg.max(1) * BUS_PAGE as u32 - off;
            let n = left.min(cap);
            let base = self
                .bus
                .alloc(u64::from((off + n).div_ceil(BUS_PAGE as u32)));
            segs.push(DmaSegment::new(base + u64::from(off), n));
            left -= n;
            off = 0;
        }
        segs
    }

    /// Builds the data pointer for `segs`: an SGL when `sgl`, otherwise PRPs, with list pages
    /// allocated in bus memory.
    pub fn data_pointer(&mut self, segs: &[DmaSegment], sgl: bool) -> Result<DataPointer, String> {
        if sgl {
            let mut list = vec![SglDescriptor::default(); 256];
            let list_dma = self.bus.alloc(1);
            let s =
                build_sgl(segs.iter().copied(), &mut list, list_dma).map_err(|e| e.to_string())?;
            for (i, d) in list.iter().take(s.list_entries).enumerate() {
                self.bus.write(list_dma + 16 * i as u64, &d.to_bytes());
            }
            return Ok(s.dptr.into());
        }
        let plan = plan_prps(segs).map_err(|e| e.to_string())?;
        let dma: Vec<u64> = (0..plan.list_pages).map(|_| self.bus.alloc(1)).collect();
        let mut pages: Vec<PrpListPage> = vec![[0u64; 512]; plan.list_pages];
        let prps = build_prps(
            segs,
            &mut PrpLists::new(&mut pages, &dma).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        for (page, &addr) in pages.iter().zip(&dma) {
            let bytes: Vec<u8> = page
                .iter()
                .flat_map(|e| u64::from_le(*e).to_le_bytes())
                .collect();
            self.bus.write(addr, &bytes);
        }
        Ok(prps.into())
    }

    /// Writes `data` into the buffer `segs`.
    pub fn fill(&mut self, segs: &[DmaSegment], data: &[u8]) {
        let mut at = 0usize;
        for s in segs {
            let end = (at + s.len as usize).min(data.len());
            self.bus.write(s.addr, &data[at..end]);
            at = end;
        }
    }

    /// Reads the buffer `segs` back.
    pub fn contents(&self, segs: &[DmaSegment]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in segs {
            let mut chunk = vec![0u8; s.len as usize];
            self.bus.read(s.addr, &mut chunk);
            out.extend_from_slice(&chunk);
        }
        out
    }
}
