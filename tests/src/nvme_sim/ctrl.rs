//! The simulated controller: queues in bus memory, doorbell handling, command fetch, and
//! completion posting (in order or shuffled, with optional hostile entries).

use std::collections::BTreeMap;

use super::bus::Bus;
use super::exec::Outcome;
use super::hostile::Hostile;
use super::ns::{CtrlIdentity, Namespace, NsConfig};
use super::regs::{RegBehaviour, SimRegs};

/// Everything that configures a simulated controller.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Register behaviour.
    pub regs: RegBehaviour,
    /// BAR length.
    pub bar_len: u32,
    /// Identify Controller settings.
    pub identity: CtrlIdentity,
    /// Namespaces.
    pub namespaces: Vec<NsConfig>,
    /// I/O queue pairs the controller grants at most (Number of Queues).
    pub max_queue_pairs: u16,
    /// Seed of the completion order; 0 posts completions in submission order.
    pub reorder_seed: u64,
    /// Hostile completions to inject.
    pub hostile: Vec<Hostile>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            regs: RegBehaviour::default(),
            bar_len: 0x4000,
            identity: CtrlIdentity::default(),
            namespaces: vec![NsConfig::simple(1, 2048, 9)],
            max_queue_pairs: 64,
            reorder_seed: 0,
            hostile: Vec::new(),
        }
    }
}

/// A device-side submission queue.
#[derive(Clone, Debug)]
pub(crate) struct DevSq {
    pub(crate) base: u64,
    pub(crate) size: u32,
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) cqid: u16,
}

/// A device-side completion queue.
#[derive(Clone, Debug)]
pub(crate) struct DevCq {
    pub(crate) base: u64,
    pub(crate) size: u32,
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) phase: bool,
}

/// A completion waiting to be posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingCqe {
    /// Completion queue.
    pub cqid: u16,
    /// Submission queue of the command.
    pub sqid: u16,
    /// Command id.
    pub cid: u16,
    /// Status without the phase tag (SC | SCT << 8 | DNR << 14 ...).
    pub status: u16,
    /// Result dword 0.
    pub result: u32,
}

/// The simulated controller.
#[derive(Debug)]
pub struct SimController {
    /// Register file.
    pub regs: SimRegs,
    /// Configuration.
    pub cfg: SimConfig,
    /// Namespaces by id.
    pub namespaces: BTreeMap<u32, Namespace>,
    pub(crate) sqs: BTreeMap<u16, DevSq>,
    pub(crate) cqs: BTreeMap<u16, DevCq>,
    pub(crate) pending: Vec<PendingCqe>,
    /// The last head of each deleted submission queue, reported by the completions of its
    /// commands posted after the deletion.
    pub(crate) deleted_sq_heads: BTreeMap<u16, u16>,
    /// Queue pairs granted by the last Number of Queues (0 before).
    pub granted: u16,
    rng: u64,
    /// Visible hostile entries injected so far.
    pub injected: u32,
    /// Stale-phase entries written so far (invisible to a correct host).
    pub injected_hidden: u32,
    /// Doorbell writes that named a queue that does not exist or a value out of range.
    pub bad_doorbells: u32,
    /// Commands executed, by opcode class: (admin, io).
    pub executed: (u64, u64),
    /// The controller stops answering (fetches, executes and posts nothing, its completions
    /// stay unposted) once this many I/O commands were executed in total, until it is
    /// disabled: a disable (controller reset) cures the hang.
    pub hang_after_io: Option<u64>,
    /// With `hang_after_io`: only the I/O queues stop (their commands stay unfetched); the
    /// admin queue goes on (a controller whose back end stalls, as QEMU's under a throttle).
    pub hang_io_only: bool,
    /// Admin commands with this opcode are fetched but never completed (as QEMU's controller
    /// holds an Asynchronous Event Request until an event happens): their waiter times out.
    /// A disable drops them with the queues.
    pub hold_admin: Option<u8>,
}

impl SimController {
    /// A controller built from `cfg`, disabled.
    pub fn new(cfg: SimConfig) -> Self {
        let namespaces = cfg
            .namespaces
            .iter()
            .map(|n| (n.nsid, Namespace::new(n.clone())))
            .collect();
        Self {
            regs: SimRegs::new(cfg.regs, cfg.bar_len),
            rng: cfg.reorder_seed,
            namespaces,
            cfg,
            sqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            pending: Vec::new(),
            deleted_sq_heads: BTreeMap::new(),
            granted: 0,
            injected: 0,
            injected_hidden: 0,
            bad_doorbells: 0,
            executed: (0, 0),
            hang_after_io: None,
            hang_io_only: false,
            hold_admin: None,
        }
    }

    pub(crate) fn next_random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Completions executed but not yet posted.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Runs the controller once: applies doorbell writes, executes every fetched command, and
    /// posts completions (a shuffled subset when reordering). Does nothing unless enabled and
    /// ready; a disabled controller forgets its queues.
    pub fn process(&mut self, bus: &mut Bus) {
        if self.regs.cc() & 1 == 0 {
            self.sqs.clear();
            self.cqs.clear();
            self.pending.clear();
            self.deleted_sq_heads.clear();
            self.regs.take_doorbells();
            self.hang_after_io = None;
            return;
        }
        if !self.hang_io_only && self.hang_after_io.is_some_and(|n| self.executed.1 >= n) {
            return;
        }
        if !self.regs.ready() {
            return;
        }
        if let std::collections::btree_map::Entry::Vacant(e) = self.sqs.entry(0) {
            let (aqa, asq, acq) = self.regs.admin_queue();
            let sq_size = (aqa & 0xfff) + 1;
            let cq_size = ((aqa >> 16) & 0xfff) + 1;
            e.insert(DevSq {
                base: asq,
                size: sq_size,
                head: 0,
                tail: 0,
                cqid: 0,
            });
            self.cqs.insert(
                0,
                DevCq {
                    base: acq,
                    size: cq_size,
                    head: 0,
                    tail: 0,
                    phase: true,
                },
            );
        }
        self.apply_doorbells();
        let ids: Vec<u16> = self.sqs.keys().copied().collect();
        for sqid in ids {
            while let Some(sq) = self.sqs.get(&sqid).cloned() {
                if sq.head == sq.tail
                    || (sqid != 0 && self.hang_after_io.is_some_and(|n| self.executed.1 >= n))
                {
                    break;
                }
                let mut cmd = [0u8; 64];
                bus.read(sq.base + u64::from(sq.head) * 64, &mut cmd);
                if let Some(s) = self.sqs.get_mut(&sqid) {
                    s.head = (s.head + 1) % s.size;
                }
                let out = if sqid == 0 {
                    self.executed.0 += 1;
                    self.exec_admin(bus, &cmd)
                } else {
                    self.executed.1 += 1;
                    self.exec_io(bus, &cmd)
                };
                let cid = u16::from_le_bytes([cmd[2], cmd[3]]);
                if sqid == 0 && self.hold_admin == Some(cmd[0]) {
                    continue;
                }
                let Outcome { status, result } = out;
                self.pending.push(PendingCqe {
                    cqid: sq.cqid,
                    sqid,
                    cid,
                    status,
                    result,
                });
            }
        }
        self.post(bus);
    }

    fn apply_doorbells(&mut self) {
        let stride = 4u32 << self.cfg.regs.dstrd;
        for (off, value) in self.regs.take_doorbells() {
            let index = (off - 0x1000) / stride;
            let Ok(qid) = u16::try_from(index / 2) else {
                self.bad_doorbells += 1;
                continue;
            };
            let ok = if index % 2 == 0 {
                self.sqs
                    .get_mut(&qid)
                    .filter(|q| value < q.size)
                    .map(|q| q.tail = value)
            } else {
                self.cqs
                    .get_mut(&qid)
                    .filter(|q| value < q.size)
                    .map(|q| q.head = value)
            };
            if ok.is_none() || (off - 0x1000) % stride != 0 {
                self.bad_doorbells += 1;
            }
        }
    }

    /// SQ head to report for `sqid`.
    fn sq_head(&self, sqid: u16) -> u16 {
        self.sqs.get(&sqid).map_or_else(
            || self.deleted_sq_heads.get(&sqid).copied().unwrap_or(0),
            |s| s.head as u16,
        )
    }

    /// Writes one completion entry with explicit fields; returns false if the CQ is full or
    /// missing. `phase_ok: false` writes the stale phase and does not advance the tail.
    pub(crate) fn write_cqe(
        &mut self,
        bus: &mut Bus,
        cqid: u16,
        fields: (u32, u16, u16, u16, u16),
        phase_ok: bool,
    ) -> bool {
        let Some(cq) = self.cqs.get_mut(&cqid) else {
            return false;
        };
        if (cq.tail + 1) % cq.size == cq.head {
            return false;
        }
        let (result, sq_head, sq_id, cid, status) = fields;
        let phase = if phase_ok { cq.phase } else { !cq.phase };
        let mut e = [0u8; 16];
        e[0..4].copy_from_slice(&result.to_le_bytes());
        e[8..10].copy_from_slice(&sq_head.to_le_bytes());
        e[10..12].copy_from_slice(&sq_id.to_le_bytes());
        e[12..14].copy_from_slice(&cid.to_le_bytes());
        e[14..16].copy_from_slice(&((status << 1) | u16::from(phase)).to_le_bytes());
        bus.write(cq.base + u64::from(cq.tail) * 16, &e);
        if phase_ok {
            cq.tail += 1;
            if cq.tail == cq.size {
                cq.tail = 0;
                cq.phase = !cq.phase;
            }
        }
        true
    }

    fn post(&mut self, bus: &mut Bus) {
        let mut budget = self.pending.len();
        if self.cfg.reorder_seed != 0 && budget > 1 {
            // Post a random non-empty subset, in random order.
            budget = 1 + (self.next_random() % budget as u64) as usize;
        }
        for _ in 0..budget {
            if self.pending.is_empty() {
                break;
            }
            let i = if self.cfg.reorder_seed != 0 {
                (self.next_random() % self.pending.len() as u64) as usize
            } else {
                0
            };
            let p = self.pending[i];
            let head = self.sq_head(p.sqid);
            if !self.write_cqe(bus, p.cqid, (p.result, head, p.sqid, p.cid, p.status), true) {
                // CQ full: keep it for later.
                break;
            }
            self.pending.remove(i);
            self.inject(bus, &p);
        }
    }
}
