//! Fuzz target `nvme_completion`: arbitrary completion entries through the `nvme` crate's
//! completion ring, command id table and submission ring, and arbitrary register values
//! through controller bring-up, disable, shutdown and doorbell computation.
//!
//! Oracles: a completion accepted by the ring names the expected SQ and an SQ head inside the
//! queue; a command id accepted by the table resolves to a tag below the depth that a model
//! says is in flight with exactly that id, and every refusal matches the model's reason; the
//! ring never yields more than `depth` entries per drain; every state machine ends within its
//! poll budget with `Done` or a typed error; doorbell offsets lie inside the BAR.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use nvme::{
    AdminQueue, Cap, CidError, CidTable, CompletionEntry, CompletionMemory, CompletionQueue,
    Disable, Doorbells, Enable, IdentifyController, IdentifyNamespace, Poll, Registers,
    ShutdownSeq, SubmissionQueue,
};

use super::input::Decoder;

/// A completion ring in plain memory.
struct Ring(RefCell<Vec<CompletionEntry>>);

impl CompletionMemory for Ring {
    fn read_status(&self, index: u16) -> u16 {
        self.0
            .borrow()
            .get(usize::from(index))
            .map_or(0, |e| e.raw_status())
    }
    fn read_entry(&self, index: u16) -> CompletionEntry {
        self.0
            .borrow()
            .get(usize::from(index))
            .copied()
            .unwrap_or_default()
    }
}

/// Registers whose CAP is fixed and whose CSTS reads walk a fuzzed list (the last value
/// repeats).
struct FuzzRegs {
    cap: u64,
    csts: Vec<u32>,
    next: Cell<usize>,
    writes: Cell<u32>,
}

impl Registers for FuzzRegs {
    fn read32(&self, offset: u32) -> u32 {
        match offset {
            0x1c => {
                let i = self.next.get();
                self.next.set(i + 1);
                self.csts.get(i).or(self.csts.last()).copied().unwrap_or(0)
            }
            0x00 => self.cap as u32,
            0x04 => (self.cap >> 32) as u32,
            _ => 0,
        }
    }
    fn read64(&self, offset: u32) -> u64 {
        u64::from(self.read32(offset)) | (u64::from(self.read32(offset + 4)) << 32)
    }
    fn write32(&self, _: u32, _: u32) {
        self.writes.set(self.writes.get() + 1);
    }
    fn write64(&self, _: u32, _: u64) {
        self.writes.set(self.writes.get() + 1);
    }
}

/// Runs `poll` with a clock that advances by each requested wait (or stands still when
/// `frozen`), and checks it ends within `budget` polls.
fn drive(budget: u32, frozen: bool, mut poll: impl FnMut(u64) -> Result<Poll, nvme::InitError>) {
    let mut now = 0u64;
    for _ in 0..budget {
        match poll(now) {
            Ok(Poll::Wait(ms)) => {
                assert!(ms >= 1);
                if !frozen {
                    now += u64::from(ms);
                }
            }
            Ok(Poll::Done) | Err(_) => return,
        }
    }
    panic!("state machine still waiting after {budget} polls");
}

fn registers(d: &mut Decoder<'_>) {
    // CAP with TO limited so the budget stays small: TO * 500 ms / 2 ms polls.
    let cap = (d.u64() & !(0xff << 24)) | (u64::from(d.u8() % 8) << 24);
    let n = usize::from(d.u8() % 16);
    let csts: Vec<u32> = (0..n).map(|_| d.u32()).collect();
    let flags = d.u8();
    let frozen = flags & 1 != 0;
    let budget = (Cap::from_raw(cap).ready_timeout_ms() / nvme::POLL_INTERVAL_MS + 3) * 2 + 4;
    let regs = FuzzRegs {
        cap,
        csts,
        next: Cell::new(0),
        writes: Cell::new(0),
    };
    let aq = AdminQueue {
        sq_addr: d.u64() & !0xfff,
        cq_addr: d.u64(),
        entries: d.u16() % 80,
    };
    let mut en = Enable::new(aq);
    drive(budget, frozen, |now| en.poll(&regs, now));
    regs.next.set(0);
    let mut dis = Disable::new();
    drive(budget, frozen, |now| dis.poll(&regs, now));
    regs.next.set(0);
    let rtd3e = d.u32() % 9_000_000;
    let mut sd = ShutdownSeq::new(rtd3e);
    let sd_budget = sd.limit_ms() / nvme::POLL_INTERVAL_MS + 8;
    drive(sd_budget, frozen, |now| sd.poll(&regs, now));

    let bar_len = u64::from(d.u32());
    let db = Doorbells::new(Cap::from_raw(cap), bar_len);
    let qid = d.u16();
    for off in [db.sq_tail(qid), db.cq_head(qid)].into_iter().flatten() {
        assert!(u64::from(off) + 4 <= bar_len && off >= 0x1000);
    }
}

fn identify(d: &mut Decoder<'_>) {
    let mut b = vec![0u8; 4096];
    // Sparse: a few (offset, byte) pairs in the interesting first 600 bytes.
    for _ in 0..d.u8() % 32 {
        let at = usize::from(d.u16() % 600);
        b[at] = d.u8();
    }
    if let Ok(ns) = IdentifyNamespace::parse(&b) {
        assert!((512..=4096).contains(&ns.block_size()));
        assert_eq!(ns.capacity_sectors() >> (ns.lbads() - 9), ns.nsze());
    }
    if let Ok(c) = IdentifyController::parse(&b) {
        assert!(c.max_hw_sectors(Cap::from_raw(0)) <= nvme::NVME_MAX_HW_SECTORS);
    }
}

/// Decodes `data` and runs the checks; panics on a broken invariant.
///
/// Input: CQ depth byte, SQ depth byte, table depth byte, SQ id `u16`, an in-flight bitmap
/// `u64` (tags 0..64), then rounds: a count byte and that many `(slot byte, 16 entry bytes)`
/// writes into the ring, then a drain and its head doorbell decision (against a deferral taken
/// from the depths and the bitmap); finally the register part and the identify part.
pub fn run(data: &[u8]) {
    let mut d = Decoder::new(data);
    let cq_depth = u32::from(d.u8() % 63) + 2;
    let sq_depth = u32::from(d.u8() % 63) + 2;
    let tags = usize::from(d.u8()) % (sq_depth as usize - 1) + 1;
    let sq_id = d.u16() % 4;
    let Ok(mut cq) = CompletionQueue::new(1, cq_depth, sq_id, sq_depth) else {
        panic!("valid depths refused");
    };
    let Ok(mut sq) = SubmissionQueue::new(sq_id, sq_depth) else {
        panic!("valid depth refused");
    };
    let Ok(mut table) = CidTable::<64>::new(tags) else {
        panic!("valid table depth refused");
    };
    let mut model: BTreeMap<u16, u16> = BTreeMap::new();
    let bitmap = d.u64();
    // A head doorbell deferral taken from the input (no byte of its own, so the corpus keeps
    // its meaning): up to the ring's spare entries, and one more is refused.
    let spare = cq_depth.saturating_sub(sq_depth);
    assert!(cq.defer_doorbell(spare + 1).is_err());
    let defer = spare / (1 + (bitmap & 3) as u32);
    assert!(cq.defer_doorbell(defer).is_ok());
    for tag in 0..tags as u16 {
        if (bitmap >> tag) & 1 != 0 {
            // Reuse some tags a few times so generations differ.
            for _ in 0..=(tag % 3) {
                if let Ok(cid) = table.start(tag) {
                    model.insert(tag, cid);
                }
                if tag % 3 != 0 && table.complete(model[&tag]).is_ok() {
                    model.remove(&tag);
                }
            }
            if let Ok(cid) = table.start(tag) {
                model.insert(tag, cid);
            }
        }
    }
    let ring = Ring(RefCell::new(vec![
        CompletionEntry::default();
        cq_depth as usize
    ]));
    for _ in 0..d.u8() % 16 {
        for _ in 0..d.u8() % 24 {
            let slot = usize::from(d.u8()) % cq_depth as usize;
            let mut e = [0u8; 16];
            for b in &mut e {
                *b = d.u8();
            }
            // Half the time make the entry plausible: right phase, a model cid, our SQ.
            if e[0] & 1 != 0 {
                let phase = u16::from(cq.phase());
                let cid = model
                    .values()
                    .nth(usize::from(e[1]) % model.len().max(1))
                    .copied();
                let entry = CompletionEntry::new(
                    0,
                    u16::from(e[2]) % sq_depth as u16,
                    sq_id,
                    cid.unwrap_or(0),
                    u16::from(e[3] & 0xfe) | phase,
                );
                e = entry.to_bytes();
            }
            ring.0.borrow_mut()[slot] = CompletionEntry::from_bytes(&e);
        }
        let mut drained = 0u32;
        while let Some(r) = cq.next(&ring) {
            drained += 1;
            assert!(
                drained <= cq_depth,
                "ring yielded more than its depth in one drain"
            );
            let Ok(c) = r else { continue };
            assert!(u32::from(c.sq_head) < sq_depth);
            let _ = sq.update_head(c.sq_head);
            assert!(u32::from(sq.head()) < sq_depth);
            let tag = c.cid & 0xfff;
            match table.complete(c.cid) {
                Ok(t) => {
                    assert_eq!(t, tag);
                    assert!(usize::from(t) < tags);
                    assert_eq!(
                        model.remove(&t),
                        Some(c.cid),
                        "completed a command not in flight"
                    );
                }
                Err(CidError::TagOutOfRange { .. }) => assert!(usize::from(tag) >= tags),
                Err(CidError::NotInFlight { .. }) => assert!(!model.contains_key(&tag)),
                Err(CidError::StaleGeneration { .. }) => {
                    assert!(model.get(&tag).is_some_and(|&m| m != c.cid));
                }
                Err(e) => panic!("unexpected error {e}"),
            }
            assert_eq!(table.in_flight(), model.len());
        }
        let unreported = cq.unreported();
        match cq.doorbell() {
            Some(head) => {
                assert!(unreported > defer, "head reported within the deferral");
                assert!(head < cq_depth && head == u32::from(cq.head()));
                assert_eq!(cq.unreported(), 0);
            }
            None => assert!(unreported <= defer, "head held back past the deferral"),
        }
    }
    registers(&mut d);
    identify(&mut d);
}
