//! Ring wrap of the `nvme` crate's submission and completion queues over many depths, against
//! the simulated controller: the head, tail and phase after N commands follow from N and the
//! depth alone, every doorbell value is in range, and a full submission ring is detected at
//! exactly `depth - 1` outstanding entries.

use iovstack_tests::nvme_sim::host::Host;
use iovstack_tests::nvme_sim::SimConfig;
use nvme::{CompletionEntry, SqError, SubmissionEntry, SubmissionMemory, SubmissionQueue};
use proptest::prelude::*;

struct Discard;

impl SubmissionMemory for Discard {
    fn write_entry(&mut self, _: u16, _: &SubmissionEntry) {}
}

#[test]
fn submission_ring_is_full_at_depth_minus_one() {
    for depth in 2u32..=300 {
        let mut sq = SubmissionQueue::new(1, depth).unwrap();
        for i in 0..depth - 1 {
            assert_eq!(
                sq.push(&mut Discard, &SubmissionEntry::flush(1)),
                Ok(i as u16)
            );
        }
        assert_eq!(
            sq.push(&mut Discard, &SubmissionEntry::flush(1)),
            Err(SqError::Full)
        );
        assert_eq!(sq.commit(), Some(depth - 1));
        // The device consumed everything: the ring is empty again and wraps on the next push.
        sq.update_head((depth - 1) as u16).unwrap();
        assert_eq!(sq.free_slots(), depth - 1);
        assert_eq!(
            sq.push(&mut Discard, &SubmissionEntry::flush(1)),
            Ok((depth - 1) as u16)
        );
        assert_eq!(sq.tail(), 0);
    }
    assert!(SubmissionQueue::new(1, 1).is_err());
    assert!(SubmissionQueue::new(1, 65537).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rings_wrap_over_many_depths(depth in 2u32..40, batches in prop::collection::vec(1u32..40, 1..30)) {
        let mut host = Host::new(SimConfig { max_queue_pairs: 1, ..SimConfig::default() });
        host.enable(4).map_err(|e| TestCaseError::fail(e.to_string()))?;
        host.setup_io(1, 0, depth).map_err(TestCaseError::fail)?;
        let mut total = 0u64;
        for b in batches {
            let n = b.min(depth - 1);
            for tag in 0..n as u16 {
                host.submit(1, tag, SubmissionEntry::flush(1)).map_err(TestCaseError::fail)?;
            }
            prop_assert!(host.ring(1));
            prop_assert!(!host.ring(1), "a second doorbell write without new entries");
            let mut done = 0;
            for _ in 0..100 {
                host.ctrl.process(&mut host.bus);
                done += host.reap(1).len() as u32;
                if done == n {
                    break;
                }
            }
            prop_assert_eq!(done, n);
            total += u64::from(n);
            let q = &host.queues[1];
            let d = u64::from(depth);
            prop_assert_eq!(u64::from(q.sq.tail()), total % d);
            prop_assert_eq!(u64::from(q.sq.head()), total % d);
            prop_assert_eq!(u64::from(q.cq.head()), total % d);
            prop_assert_eq!(q.cq.phase(), (total / d) % 2 == 0);
        }
        prop_assert!(host.rejected.is_empty(), "{:?}", host.rejected);
        prop_assert_eq!(host.ctrl.bad_doorbells, 0);
    }
}

proptest! {
    /// `accept_completion` against a model: a completion is taken iff its command id names
    /// the generation in flight on its tag and its SQ head lies between the host's head and
    /// tail; a refused one changes neither the SQ head nor any tag's state, whatever field was
    /// bad (issue 7: the whole entry is validated before any field is used).
    #[test]
    fn completion_is_validated_whole_before_use(
        depth in 2u32..64,
        started in proptest::collection::vec(any::<u16>(), 0..40),
        consumed in any::<u16>(),
        cqes in proptest::collection::vec((any::<u16>(), any::<u16>(), any::<bool>()), 1..60),
    ) {
        let tags = depth as usize - 1;
        let mut sq = SubmissionQueue::new(1, depth).unwrap();
        let mut cids = nvme::CidTable::<64>::new(tags).unwrap();
        // Model: tag -> cid in flight; the SQ window as (head, tail) counters.
        let mut model: std::collections::HashMap<u16, u16> = Default::default();
        for t in started {
            let tag = t % tags as u16;
            if model.contains_key(&tag) || sq.is_full() {
                continue;
            }
            let cid = cids.start(tag).unwrap();
            sq.push(&mut Discard, &SubmissionEntry::flush(1)).unwrap();
            model.insert(tag, cid);
        }
        let _ = sq.commit();
        // The device consumed some of the entries.
        let used = sq.used();
        let adv = if used == 0 { 0 } else { u32::from(consumed) % (used + 1) };
        sq.update_head(((u32::from(sq.head()) + adv) % depth) as u16).unwrap();
        for (raw_cid, raw_head, use_real) in cqes {
            // Half the entries use a real command id (maybe of a completed command).
            let cid = if use_real && !model.is_empty() {
                let k = *model.keys().nth(usize::from(raw_cid) % model.len()).unwrap();
                model[&k]
            } else {
                raw_cid
            };
            let sq_head = raw_head % depth as u16;
            let (head0, tail) = (u32::from(sq.head()), u32::from(sq.tail()));
            let dist = |a: u32, b: u32| (a + depth - b) % depth;
            let head_ok = dist(u32::from(sq_head), head0) <= dist(tail, head0);
            let (tag, gen) = nvme::split_cid(cid);
            let cid_ok = model.get(&tag).is_some_and(|&c| nvme::split_cid(c).1 == gen)
                && usize::from(tag) < tags;
            let before: Vec<bool> = (0..tags as u16).map(|t| cids.is_in_flight(t)).collect();
            let c = nvme::Completion { cid, status: nvme::Status::from_raw(0), result: 0, sq_head };
            match nvme::accept_completion(&mut sq, &mut cids, &c) {
                Ok(t) => {
                    prop_assert!(cid_ok && head_ok, "accepted cid {cid:#x} head {sq_head}");
                    prop_assert_eq!(t, tag);
                    prop_assert_eq!(sq.head(), sq_head);
                    prop_assert!(!cids.is_in_flight(t));
                    model.remove(&t);
                }
                Err(e) => {
                    prop_assert!(!(cid_ok && head_ok), "refused a valid entry: {e}");
                    match e {
                        nvme::ReapError::Cid(_) => prop_assert!(!cid_ok),
                        nvme::ReapError::SqHead(_) => prop_assert!(cid_ok && !head_ok),
                        _ => prop_assert!(false, "unknown error {e}"),
                    }
                    prop_assert_eq!(u32::from(sq.head()), head0);
                    let after: Vec<bool> = (0..tags as u16).map(|t| cids.is_in_flight(t)).collect();
                    prop_assert_eq!(before, after);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The quadword forms the driver uses on queue memory (eight stores per submission entry,
    /// two loads per completion entry) carry exactly the wire bytes: any 64 bytes read as an
    /// entry come back, quadword by quadword, as the same bytes, and any 16 completion bytes
    /// read as two little-endian quadwords give the entry read byte by byte; eight submission
    /// quadwords made from the bytes give the entry read byte by byte.
    #[test]
    fn quadword_forms_are_the_wire_bytes(
        sqe in prop::collection::vec(any::<u8>(), 64),
        cqe in prop::collection::vec(any::<u8>(), 16),
    ) {
        let sqe: [u8; 64] = sqe.try_into().unwrap();
        let q = SubmissionEntry::from_bytes(&sqe).to_qwords();
        for (n, word) in q.iter().enumerate() {
            prop_assert_eq!(&word.to_le_bytes()[..], &sqe[8 * n..8 * n + 8]);
        }
        // And back: quadwords made from the wire bytes by hand give the entry read byte by byte.
        let mut by_hand = [0u64; 8];
        for (n, word) in by_hand.iter_mut().enumerate() {
            *word = u64::from_le_bytes(sqe[8 * n..8 * n + 8].try_into().unwrap());
        }
        prop_assert_eq!(SubmissionEntry::from_qwords(by_hand), SubmissionEntry::from_bytes(&sqe));
        prop_assert_eq!(SubmissionEntry::from_qwords(by_hand).to_bytes(), sqe);
        let cqe: [u8; 16] = cqe.try_into().unwrap();
        let lo = u64::from_le_bytes(cqe[..8].try_into().unwrap());
        let hi = u64::from_le_bytes(cqe[8..].try_into().unwrap());
        let e = CompletionEntry::from_qwords([lo, hi]);
        prop_assert_eq!(e, CompletionEntry::from_bytes(&cqe));
        prop_assert_eq!(e.to_bytes(), cqe);
    }
}
