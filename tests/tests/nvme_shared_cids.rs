//! The lock-free command id table and SQ head of the driver's queues (`nvme::SharedCidTable`,
//! `nvme::SqHead`, `nvme::accept_shared`) against a model written here (a map from tag to the
//! generation in flight, and the SQ window as counters), over random operation sequences; and
//! under real concurrency: a submitter, a completion thread and a canceller racing for the same
//! commands end every command exactly once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

use nvme::{
    accept_shared, make_cid, split_cid, CidError, Completion, ReapError, SharedCidTable, SqHead,
    Status,
};
use proptest::prelude::*;

/// One operation on the table.
#[derive(Clone, Debug)]
enum Op {
    Start(u16),
    /// Complete the command in flight on tag `.0 % depth` if `.1`, else a raw command id.
    Complete(u16, bool),
    Cancel(u16),
    CancelAll,
    Take,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Start),
        4 => (any::<u16>(), any::<bool>()).prop_map(|(c, r)| Op::Complete(c, r)),
        1 => any::<u16>().prop_map(Op::Cancel),
        1 => Just(Op::CancelAll),
        1 => Just(Op::Take),
    ]
}

/// The model: the last generation of each tag, and whether it is in flight.
struct Model {
    depth: usize,
    gen: HashMap<u16, u8>,
    busy: HashMap<u16, bool>,
}

impl Model {
    fn start(&mut self, tag: u16) -> Result<u16, CidError> {
        if usize::from(tag) >= self.depth {
            return Err(CidError::TagOutOfRange {
                tag,
                depth: self.depth,
            });
        }
        if self.busy.get(&tag) == Some(&true) {
            return Err(CidError::Busy { tag });
        }
        let g = self.gen.entry(tag).or_insert(0);
        *g = (*g + 1) % 16;
        self.busy.insert(tag, true);
        Ok(((u16::from(*g)) << 12) | tag)
    }

    fn check(&self, cid: u16) -> Result<u16, CidError> {
        let (tag, got) = (cid & 0xfff, (cid >> 12) as u8);
        if usize::from(tag) >= self.depth {
            return Err(CidError::TagOutOfRange {
                tag,
                depth: self.depth,
            });
        }
        if self.busy.get(&tag) != Some(&true) {
            return Err(CidError::NotInFlight { tag });
        }
        let expected = self.gen[&tag];
        if got != expected {
            return Err(CidError::StaleGeneration { tag, got, expected });
        }
        Ok(tag)
    }

    fn cancel(&mut self, tag: u16) -> bool {
        usize::from(tag) < self.depth && self.busy.insert(tag, false) == Some(true)
    }

    fn in_flight(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .busy
            .iter()
            .filter(|(_, &b)| b)
            .map(|(&t, _)| t)
            .collect();
        v.sort_unstable();
        v
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every operation returns what the model says, and afterwards the in-flight tags and
    /// their command ids are the model's.
    #[test]
    fn shared_table_follows_the_model(depth in 1usize..=64, ops in prop::collection::vec(op(), 1..200)) {
        let t = SharedCidTable::<64>::new(depth).unwrap();
        let mut m = Model { depth, gen: HashMap::new(), busy: HashMap::new() };
        for o in ops {
            match o {
                Op::Start(raw) => {
                    // Mostly tags in range, sometimes beyond.
                    let tag = raw % (depth as u16 + 2);
                    prop_assert_eq!(t.start(tag), m.start(tag));
                }
                Op::Complete(raw, real) => {
                    let busy = m.in_flight();
                    let cid = if real && !busy.is_empty() {
                        let tag = busy[usize::from(raw) % busy.len()];
                        make_cid(tag, m.gen[&tag])
                    } else {
                        raw
                    };
                    let want = m.check(cid);
                    prop_assert_eq!(t.check(cid), want);
                    prop_assert_eq!(t.complete(cid), want);
                    if let Ok(tag) = want {
                        m.busy.insert(tag, false);
                    }
                }
                Op::Cancel(raw) => {
                    let tag = raw % (depth as u16 + 2);
                    prop_assert_eq!(t.cancel(tag), m.cancel(tag));
                }
                Op::CancelAll => {
                    let n = m.in_flight().len();
                    for tag in m.in_flight() {
                        m.cancel(tag);
                    }
                    prop_assert_eq!(t.cancel_all(), n);
                }
                Op::Take => {
                    let want = m.in_flight().first().copied();
                    if let Some(tag) = want {
                        m.cancel(tag);
                    }
                    prop_assert_eq!(t.take_in_flight(), want);
                }
            }
            let busy = m.in_flight();
            prop_assert_eq!(t.in_flight_tags().collect::<Vec<_>>(), busy.clone());
            prop_assert_eq!(t.in_flight(), busy.len());
            for tag in 0..depth as u16 + 2 {
                let want = (m.busy.get(&tag) == Some(&true)).then(|| make_cid(tag, m.gen[&tag]));
                prop_assert_eq!(t.cid_of(tag), want);
                prop_assert_eq!(t.is_in_flight(tag), want.is_some());
            }
        }
    }

    /// `SqHead` accepts a completion's SQ head iff it lies in the window from the last head to
    /// the published tail (counted modulo the depth here), and a refused one leaves it as it
    /// was; `accept_shared` refuses an entry whole if either field is bad, including the
    /// completion of a command a timeout or reset cancelled (its id was real).
    #[test]
    fn shared_accept_validates_both_fields(
        depth in 2u32..64,
        steps in prop::collection::vec(
            (0u32..64, any::<u16>(), any::<bool>(), any::<bool>(), 0u8..8),
            1..100,
        ),
    ) {
        let tags = depth as usize - 1;
        let mut head = SqHead::new(depth).unwrap();
        let cids = SharedCidTable::<64>::new(tags).unwrap();
        // Model: entries pushed and consumed as running counters; tag -> cid in flight.
        let (mut pushed, mut consumed) = (0u64, 0u64);
        let mut flying: Vec<(u16, u16)> = Vec::new();
        // Ids of commands cancelled (as `nvme_cancel_request()`), whose completions may come.
        let mut cancelled: Vec<u16> = Vec::new();
        for (n, raw, real, good_head, cancel) in steps {
            // Start up to `n` commands while the ring has room.
            for _ in 0..n {
                if pushed - consumed >= u64::from(depth - 1) || flying.len() >= tags {
                    break;
                }
                let tag = (0..tags as u16).find(|t| !flying.iter().any(|f| f.0 == *t)).unwrap();
                let cid = cids.start(tag).unwrap();
                flying.push((tag, cid));
                pushed += 1;
            }
            if cancel == 0 && !flying.is_empty() {
                let (tag, cid) = flying.remove(usize::from(raw) % flying.len());
                prop_assert!(cids.cancel(tag));
                cancelled.push(cid);
            }
            let tail = (pushed % u64::from(depth)) as u16;
            let cid = if real && cancel == 1 && !cancelled.is_empty() {
                cancelled[usize::from(raw) % cancelled.len()]
            } else if real && !flying.is_empty() {
                flying[usize::from(raw) % flying.len()].1
            } else {
                raw
            };
            let window = pushed - consumed;
            let sq_head = if good_head {
                ((consumed + u64::from(raw) % (window + 1)) % u64::from(depth)) as u16
            } else {
                raw % (depth as u16 + 3)
            };
            let d = |a: u64, b: u64| (a + u64::from(depth) - b) % u64::from(depth);
            let off = d(u64::from(sq_head), consumed % u64::from(depth));
            let head_ok = u32::from(sq_head) < depth && off <= window;
            let cid_ok = flying.iter().any(|f| f.1 == cid);
            let before = head.head();
            let c = Completion { cid, status: Status::from_raw(0), result: 0, sq_head };
            match accept_shared(&mut head, tail, &cids, &c) {
                Ok(tag) => {
                    prop_assert!(cid_ok && head_ok);
                    prop_assert_eq!(tag, split_cid(cid).0);
                    prop_assert!(!cids.is_in_flight(tag));
                    flying.retain(|f| f.1 != cid);
                    consumed += off;
                    prop_assert_eq!(head.head(), sq_head);
                }
                Err(ReapError::Cid(_)) => {
                    prop_assert!(!cid_ok);
                    prop_assert_eq!(head.head(), before);
                }
                Err(ReapError::SqHead(_)) => {
                    prop_assert!(cid_ok && !head_ok);
                    prop_assert_eq!(head.head(), before);
                    prop_assert!(cids.is_in_flight(split_cid(cid).0));
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
    }
}

/// A submitter starts commands and hands their ids to a completion thread while a canceller
/// cancels random tags (as timeouts and resets do): every command started ends exactly once,
/// by a completion or by a cancellation, never both, and none is lost.
#[test]
fn racing_completion_and_cancellation_end_each_command_once() {
    const DEPTH: usize = 32;
    const COMMANDS: u64 = 200_000;
    let t = SharedCidTable::<DEPTH>::new(DEPTH).unwrap();
    let (completed, cancelled, started) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<u16>(DEPTH);
        let (t, completed, cancelled, started, stop) =
            (&t, &completed, &cancelled, &started, &stop);
        s.spawn(move || {
            let mut tag = 0u16;
            let mut n = 0;
            while n < COMMANDS {
                tag = (tag + 1) % DEPTH as u16;
                // A tag is reused only once its previous command ended.
                if let Ok(cid) = t.start(tag) {
                    started.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                    tx.send(cid).unwrap();
                }
            }
        });
        s.spawn(move || {
            for cid in rx {
                if t.complete(cid).is_ok() {
                    completed.fetch_add(1, Ordering::Relaxed);
                }
            }
            stop.store(true, Ordering::Release);
        });
        s.spawn(move || {
            let mut x = 0x9e37_79b9u32;
            while !stop.load(Ordering::Acquire) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if t.cancel((x % DEPTH as u32) as u16) {
                    cancelled.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    });
    let (c, x) = (completed.into_inner(), cancelled.into_inner());
    assert_eq!(started.into_inner(), COMMANDS);
    // Every command ended once; the cancellations did race with completions.
    assert_eq!(c + x, COMMANDS, "completed {c} cancelled {x}");
    assert!(
        c > 0 && x > 0,
        "completed {c} cancelled {x}: no race happened"
    );
    assert_eq!(t.in_flight(), 0);
}
