//! Ring wrap of the `nvme` crate's submission and completion queues over many depths, against
//! the simulated controller: the head, tail and phase after N commands follow from N and the
//! depth alone, every doorbell value is in range, and a full submission ring is detected at
//! exactly `depth - 1` outstanding entries.

use iovstack_tests::nvme_sim::host::Host;
use iovstack_tests::nvme_sim::SimConfig;
use nvme::{SqError, SubmissionEntry, SubmissionMemory, SubmissionQueue};
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
