//! Hostile completions against the `nvme` crate: a simulated controller posts duplicate
//! entries, stale generations, out-of-range command ids, wrong SQ ids, out-of-range SQ heads
//! and stale-phase entries around real completions. Every visible bad entry must be refused
//! exactly once, no command may complete twice or with another command's data, and every
//! command still completes.

use std::collections::HashSet;

use iovstack_tests::nvme_sim::host::Host;
use iovstack_tests::nvme_sim::{Hostile, NsConfig, SimConfig};
use nvme::{BlkStatus, SubmissionEntry};
use proptest::prelude::*;

fn kinds() -> impl Strategy<Value = Vec<Hostile>> {
    prop::sample::subsequence(Hostile::ALL.to_vec(), 1..=Hostile::ALL.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn hostile_completions_are_refused_and_never_complete_a_command(
        hostile in kinds(),
        seed in any::<u64>(),
        reorder in any::<bool>(),
        depth in 3u32..16,
        writes in prop::collection::vec((0u64..64, any::<u8>()), 1..40),
        batch in 1usize..8,
    ) {
        let cfg = SimConfig {
            namespaces: vec![NsConfig::simple(1, 64, 9)],
            reorder_seed: if reorder { seed | 1 } else { 0 },
            hostile: hostile.clone(),
            max_queue_pairs: 1,
            ..SimConfig::default()
        };
        let mut host = Host::new(cfg);
        host.enable(16).map_err(|e| TestCaseError::fail(e.to_string()))?;
        host.setup_io(1, 0, depth).map_err(TestCaseError::fail)?;
        let mut model = vec![0u8; 64 * 512];
        for chunk in writes.chunks(batch) {
            // A batch of single-block writes, each followed by a read of the same block, on
            // distinct tags; reads check the data, so a completion delivered to the wrong tag
            // or early would show.
            let mut want = HashSet::new();
            let mut reads = Vec::new();
            let mut tag = 0u16;
            for &(lba, byte) in chunk {
                if tag + 2 > host.queues[1].cids.depth() as u16 {
                    break;
                }
                let segs = host.dma_buffer(512, 0, 1);
                host.fill(&segs, &[byte; 512]);
                let dptr = host.data_pointer(&segs, false).map_err(TestCaseError::fail)?;
                let cmd = SubmissionEntry::write(1, lba, 1, false, dptr).map_err(|e| TestCaseError::fail(e.to_string()))?;
                host.submit(1, tag, cmd).map_err(TestCaseError::fail)?;
                model[lba as usize * 512..(lba as usize + 1) * 512].fill(byte);
                want.insert(tag);
                let rsegs = host.dma_buffer(512, 0, 1);
                let dptr = host.data_pointer(&rsegs, true).map_err(TestCaseError::fail)?;
                let cmd = SubmissionEntry::read(1, lba, 1, dptr).map_err(|e| TestCaseError::fail(e.to_string()))?;
                host.submit(1, tag + 1, cmd).map_err(TestCaseError::fail)?;
                want.insert(tag + 1);
                reads.push((tag + 1, rsegs, byte));
                tag += 2;
            }
            host.ring(1);
            for _ in 0..500 {
                if want.is_empty() {
                    break;
                }
                host.ctrl.process(&mut host.bus);
                for (t, c) in host.reap(1) {
                    prop_assert!(want.remove(&t), "tag {} completed twice or never submitted", t);
                    prop_assert_eq!(BlkStatus::from_nvme(c.status), BlkStatus::Ok);
                }
            }
            prop_assert!(want.is_empty(), "tags {:?} never completed", want);
            // Writes and reads of one batch run in submission order on one queue, so each read
            // sees its write.
            for (t, segs, byte) in reads {
                prop_assert!(host.contents(&segs).iter().all(|&b| b == byte), "read tag {} has wrong data", t);
            }
        }
        prop_assert_eq!(host.rejected.len() as u32, host.ctrl.injected, "{:?}", host.rejected);
        prop_assert_eq!(host.queues[1].cids.in_flight(), 0);
        prop_assert!(host.ctrl.namespaces[&1].data == model);
    }
}

/// Each kind of hostile entry on its own, many commands: the entries are injected and every
/// one is refused with the error its kind calls for.
#[test]
fn each_hostile_kind_is_refused_with_its_error() {
    let expect = [
        (Hostile::Duplicate, "completion for idle tag"),
        (Hostile::StaleGeneration, "generation mismatch"),
        (Hostile::CidOutOfRange, "beyond queue depth"),
        (Hostile::WrongSqId, "on the CQ of SQ"),
        (Hostile::SqHeadOutOfRange, "SQ head 65535"),
    ];
    for (kind, text) in expect {
        let cfg = SimConfig {
            hostile: vec![kind],
            reorder_seed: 3,
            max_queue_pairs: 1,
            ..SimConfig::default()
        };
        let mut host = Host::new(cfg);
        host.enable(16).unwrap();
        host.setup_io(1, 0, 16).unwrap();
        let mut completed = 0;
        for _ in 0..20 {
            for tag in 0..8 {
                host.submit(1, tag, SubmissionEntry::flush(1)).unwrap();
            }
            host.ring(1);
            let mut done = 0;
            for _ in 0..200 {
                host.ctrl.process(&mut host.bus);
                done += host.reap(1).len();
                if done == 8 {
                    break;
                }
            }
            assert_eq!(done, 8, "{kind:?}: commands lost");
            completed += done;
        }
        assert_eq!(completed, 160);
        assert!(
            host.ctrl.injected > 10,
            "{kind:?}: only {} injected",
            host.ctrl.injected
        );
        assert_eq!(host.rejected.len() as u32, host.ctrl.injected, "{kind:?}");
        assert!(
            host.rejected.iter().all(|r| r.contains(text)),
            "{kind:?}: {:?}",
            host.rejected
        );
    }
}

/// Stale-phase entries are never consumed.
#[test]
fn stale_phase_entries_are_not_consumed() {
    let cfg = SimConfig {
        hostile: vec![Hostile::BadPhase],
        max_queue_pairs: 1,
        ..SimConfig::default()
    };
    let mut host = Host::new(cfg);
    host.enable(16).unwrap();
    host.setup_io(1, 0, 8).unwrap();
    for round in 0..50 {
        host.submit(1, 0, SubmissionEntry::flush(1)).unwrap();
        host.ring(1);
        host.ctrl.process(&mut host.bus);
        assert_eq!(host.reap(1).len(), 1, "round {round}");
        assert_eq!(
            host.reap(1).len(),
            0,
            "round {round}: a stale entry was consumed"
        );
    }
    assert!(host.rejected.is_empty(), "{:?}", host.rejected);
    assert!(
        host.ctrl.injected_hidden > 10,
        "only {} stale entries",
        host.ctrl.injected_hidden
    );
}
