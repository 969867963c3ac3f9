//! Controller recovery after a timeout (issue 7), driven by the `nvme` crate's recovery pieces
//! against the simulated controller: a controller that stops answering in the middle of a batch
//! of writes is reset the way rnvme's `reset.rs` does it (`CtrlState` Live -> Resetting, the I/O
//! queue deleted first if the controller still answers (`delete_queues.rs`; the simulated
//! controller then aborts the commands it holds, Command Aborted due to SQ Deletion, and they
//! are sent again like cancelled ones), disable bounded by CAP.TO, every command still in flight
//! cancelled as host-aborted and sent again per `decide_disposition`, enable, queues again,
//! Live), possibly hanging again after each reset (its admin queue stalled too, or only its I/O
//! queue), and either coming back or never becoming ready again. Checked against a model: every
//! request ends exactly once, none is sent more than `MAX_RETRIES + 1` times, a request that succeeded
//! has its data on the namespace, a request fails only if its retries ran out or the controller
//! died, every state change is one `CtrlState::can_become` allows, and everything is bounded.

use iovstack_tests::nvme_sim::host::Host;
use iovstack_tests::nvme_sim::{NsConfig, SimConfig};
use nvme::{
    decide_disposition, delete_queues_before_disable, Completion, Csts, CtrlState, Disposition,
    Status, SubmissionEntry, MAX_RETRIES,
};
use proptest::prelude::*;

/// Blocks of 512 B per write; write `i` covers blocks `8 * i .. 8 * i + 8` (no overlaps, so
/// retries in any order leave the same data).
const BLOCKS: u32 = 8;
const LEN: usize = BLOCKS as usize * 512;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Ok,
    Failed,
}

fn pattern(i: usize, seed: u8) -> Vec<u8> {
    (0..LEN)
        .map(|b| (b as u8).wrapping_mul(31) ^ (i as u8).wrapping_mul(7) ^ seed)
        .collect()
}

fn change(state: &mut CtrlState, to: CtrlState) {
    assert!(state.can_become(to), "{state:?} -> {to:?} not allowed");
    *state = to;
}

/// rnvme's `delete_queues.rs` before a reset's disable: a controller that still answers (CSTS
/// ready, no fatal status) gets its I/O queue deleted, submission queue first; the completions
/// the deletion produces are reaped before the completion queue goes (the driver's interrupt
/// handler does that); the first failure ends the deletion. Returns whether the whole queue
/// pair was deleted, and what was reaped.
fn delete_first(host: &mut Host) -> (bool, Vec<(u16, Completion)>) {
    let mut reaped = Vec::new();
    if !delete_queues_before_disable(Csts::from_raw(host.ctrl.regs.csts())) {
        return (false, reaped);
    }
    let done = |c: Result<Completion, String>| c.is_ok_and(|c| c.status.is_success());
    if !done(host.admin(SubmissionEntry::delete_sq(1).unwrap())) {
        return (false, reaped);
    }
    for _ in 0..4 {
        host.ctrl.process(&mut host.bus);
        reaped.extend(host.reap(1));
    }
    (
        done(host.admin(SubmissionEntry::delete_cq(1).unwrap())),
        reaped,
    )
}

/// Submits write `i` (tag `i`) on I/O queue 1.
fn submit(host: &mut Host, i: usize, seed: u8) {
    let segs = host.dma_buffer(LEN as u32, 0, 1);
    host.fill(&segs, &pattern(i, seed));
    let dp = host.data_pointer(&segs, false).unwrap();
    let cmd = SubmissionEntry::write(1, (i as u64) * u64::from(BLOCKS), BLOCKS, false, dp).unwrap();
    host.submit(1, i as u16, cmd).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn reset_recovers_or_fails_cleanly(
        n in 1usize..40,
        hang_after in 0u64..40,
        // How many times the controller hangs again after a reset (0: the first reset cures
        // it), each time after `rehang_at` more I/O commands (0: at once, so everything sent
        // again is in flight again); MAX_RETRIES or more exhausts the retries.
        rehangs in 0usize..10,
        rehang_at in prop_oneof![Just(0u64), 0u64..4],
        recovers in any::<bool>(),
        // Whether the hung controller still runs admin commands (then the reset deletes its
        // queue first, which aborts the commands it holds) or nothing at all (then the
        // deletion times out and the reset disables it anyway), and whether it reports a
        // fatal status (then no deletion is tried).
        admin_answers in any::<bool>(),
        fatal in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let mut host = Host::new(SimConfig {
            namespaces: vec![NsConfig::simple(1, 2048, 9)],
            ..SimConfig::default()
        });
        host.enable(32).unwrap();
        host.setup_io(1, 0, 64).unwrap();
        host.ctrl.hang_after_io = Some(hang_after);
        host.ctrl.hang_io_only = admin_answers;
        let mut state = CtrlState::Live;
        let mut ends: Vec<Option<End>> = vec![None; n];
        let mut sends = vec![0u8; n];
        let mut retries = vec![0u8; n];
        for (i, sent) in sends.iter_mut().enumerate() {
            submit(&mut host, i, seed);
            *sent += 1;
        }
        host.ring(1);
        let mut rehangs = std::iter::repeat(rehang_at).take(rehangs);
        let mut resets = 0u32;
        loop {
            // The controller runs; completions end their requests.
            for _ in 0..4 {
                host.ctrl.process(&mut host.bus);
                for (tag, c) in host.reap(1) {
                    let i = usize::from(tag);
                    prop_assert!(ends[i].is_none(), "request {i} ended twice");
                    ends[i] = Some(if c.status.is_success() { End::Ok } else { End::Failed });
                }
            }
            let in_flight: Vec<u16> = host.queues[1].cids.in_flight_tags().collect();
            if in_flight.is_empty() {
                break;
            }
            // Timeout: (the Abort is refused, as QEMU does) reset.
            resets += 1;
            prop_assert!(resets <= u32::from(MAX_RETRIES) + 2, "resets do not end");
            change(&mut state, CtrlState::Resetting);
            let mut again = Vec::new();
            if fatal {
                host.ctrl.regs.behaviour.fatal_after_ms = Some(0);
            }
            let (deleted, reaped) = delete_first(&mut host);
            host.ctrl.regs.behaviour.fatal_after_ms = None;
            prop_assert_eq!(
                deleted,
                admin_answers && !fatal,
                "the queue is deleted iff the controller answers"
            );
            for (tag, c) in reaped {
                let i = usize::from(tag);
                prop_assert!(ends[i].is_none(), "request {i} ended twice");
                if c.status.aborted_by_sq_deletion() {
                    // `IoOps::process`: sent again as a command the reset cancelled.
                    match decide_disposition(Status::HOST_ABORTED, retries[i], false) {
                        Disposition::Retry => {
                            retries[i] += 1;
                            again.push(i);
                        }
                        Disposition::Complete => ends[i] = Some(End::Failed),
                    }
                } else {
                    ends[i] = Some(if c.status.is_success() { End::Ok } else { End::Failed });
                }
            }
            let in_flight: Vec<u16> = host.queues[1].cids.in_flight_tags().collect();
            if deleted {
                // Every command of the deleted queue completed before its deletion did.
                prop_assert!(in_flight.is_empty(), "{} commands left in flight", in_flight.len());
            }
            let disabled = host.disable().is_ok();
            prop_assert!(disabled, "the simulated controller always disables");
            for tag in in_flight {
                prop_assert!(host.queues[1].cids.cancel(tag));
                let i = usize::from(tag);
                match decide_disposition(Status::HOST_ABORTED, retries[i], false) {
                    Disposition::Retry => {
                        retries[i] += 1;
                        again.push(i);
                    }
                    Disposition::Complete => {
                        prop_assert!(ends[i].is_none());
                        ends[i] = Some(End::Failed);
                    }
                }
            }
            if !recovers {
                host.ctrl.regs.behaviour.ready_after_ms = None;
            }
            let back = host.enable(32).is_ok() && host.setup_io(1, 0, 64).is_ok();
            if !back {
                change(&mut state, CtrlState::Dead);
                // Every request sent again fails: nothing is left waiting.
                for i in again {
                    prop_assert!(ends[i].is_none());
                    ends[i] = Some(End::Failed);
                }
                break;
            }
            change(&mut state, CtrlState::Live);
            if let Some(k) = rehangs.next() {
                host.ctrl.hang_after_io = Some(host.ctrl.executed.1 + k);
            }
            for i in again {
                submit(&mut host, i, seed);
                sends[i] += 1;
            }
            host.ring(1);
        }
        for i in 0..n {
            let end = ends[i];
            prop_assert!(end.is_some(), "request {i} never ended");
            prop_assert!(sends[i] <= MAX_RETRIES + 1, "request {i} sent {} times", sends[i]);
            if end == Some(End::Failed) {
                prop_assert!(
                    state == CtrlState::Dead || retries[i] == MAX_RETRIES,
                    "request {i} failed with retries left on a live controller"
                );
            } else {
                let start = i * LEN;
                let data = &host.ctrl.namespaces[&1].data[start..start + LEN];
                prop_assert_eq!(data, &pattern(i, seed)[..], "request {} data", i);
            }
        }
        if recovers && state == CtrlState::Live {
            // The controller serves I/O after the resets.
            prop_assert!(host.ctrl.hang_after_io.is_none() || host.queues[1].cids.in_flight() == 0);
        }
        if !recovers && resets > 0 {
            prop_assert_eq!(state, CtrlState::Dead);
        }
    }
}

/// An Asynchronous Event Request (opcode 0x0c), which the simulated controller is told to hold.
fn aer() -> SubmissionEntry {
    let mut b = [0u8; 64];
    b[0] = 0x0c;
    SubmissionEntry::from_bytes(&b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// An admin command times out (issue 7) with I/O in flight, and rnvme's `admin.rs` /
    /// `reset.rs` decisions are applied: `CtrlState::after_admin_timeout` gives a reset owed
    /// (bound) or dead (probing, removing); with a reset owed the waiter deletes the I/O queue
    /// of a controller that still answers (`delete_queues.rs`: the commands it aborts are sent
    /// again), then the controller is disabled;
    /// an owed reset is claimed once (`can_start_reset`), cancels and requeues what was in
    /// flight and brings the controller back, unless it does not become ready again or an
    /// admin command of the reset times out too (then dead, every request failed). Checked:
    /// every state change is allowed, no admin command but the waiter's deletions is sent
    /// while the state forbids it,
    /// every request ends exactly once, a written request's data is on the namespace, and a
    /// request fails only on a dead controller.
    #[test]
    fn admin_timeout_resets_or_fails_cleanly(
        n in 0usize..24,
        hang_after in prop_oneof![Just(None), (0u64..24).prop_map(Some)],
        recoverable in any::<bool>(),
        recovers in any::<bool>(),
        timeout_in_reset in any::<bool>(),
        // Whether a hung controller still runs admin commands (the deletion then works).
        admin_answers in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let mut host = Host::new(SimConfig {
            namespaces: vec![NsConfig::simple(1, 2048, 9)],
            ..SimConfig::default()
        });
        host.enable(32).unwrap();
        host.setup_io(1, 0, 64).unwrap();
        host.ctrl.hang_after_io = hang_after;
        host.ctrl.hang_io_only = admin_answers;
        host.ctrl.hold_admin = Some(0x0c);
        let mut state = CtrlState::Live;
        let mut ends: Vec<Option<End>> = vec![None; n];
        for i in 0..n {
            submit(&mut host, i, seed);
        }
        host.ring(1);
        let reap = |host: &mut Host, ends: &mut Vec<Option<End>>| -> Result<(), TestCaseError> {
            for (tag, c) in host.reap(1) {
                let i = usize::from(tag);
                prop_assert!(ends[i].is_none(), "request {} ended twice", i);
                ends[i] = Some(if c.status.is_success() { End::Ok } else { End::Failed });
            }
            Ok(())
        };
        // The admin command never completes: the waiter times out (the I/O queue runs
        // meanwhile, unless the controller hangs).
        prop_assert!(state.admin_usable());
        prop_assert!(host.admin(aer()).is_err(), "the held command completed");
        reap(&mut host, &mut ends)?;
        // `Session::timed_out`: the state the timeout leads to; with a reset owed, the queue
        // of a controller that still answers is deleted first; then the disable.
        let next = state.after_admin_timeout(recoverable);
        change(&mut state, next);
        prop_assert_eq!(state, if recoverable { CtrlState::ResetPending } else { CtrlState::Dead });
        // Admin commands are refused until the reset (`Session::exec_done`: ENODEV).
        prop_assert!(!state.admin_usable());
        let mut again = Vec::new();
        if state == CtrlState::ResetPending {
            let (deleted, reaped) = delete_first(&mut host);
            for (tag, c) in reaped {
                let i = usize::from(tag);
                prop_assert!(ends[i].is_none(), "request {} ended twice", i);
                if c.status.aborted_by_sq_deletion() {
                    prop_assert_eq!(
                        decide_disposition(Status::HOST_ABORTED, 0, false),
                        Disposition::Retry
                    );
                    again.push(i);
                } else {
                    ends[i] = Some(if c.status.is_success() { End::Ok } else { End::Failed });
                }
            }
            if deleted {
                prop_assert!(host.queues[1].cids.in_flight() == 0, "commands left in flight");
            }
        }
        prop_assert!(host.disable().is_ok());
        let in_flight: Vec<u16> = host.queues[1].cids.in_flight_tags().collect();
        if state == CtrlState::ResetPending {
            // The reset is claimed once: whoever comes second finds it running.
            prop_assert!(state.can_start_reset());
            change(&mut state, CtrlState::Resetting);
            prop_assert!(!state.can_start_reset());
            for tag in in_flight {
                prop_assert!(host.queues[1].cids.cancel(tag));
                let i = usize::from(tag);
                prop_assert_eq!(
                    decide_disposition(Status::HOST_ABORTED, 0, false),
                    Disposition::Retry
                );
                again.push(i);
            }
            if !recovers {
                host.ctrl.regs.behaviour.ready_after_ms = None;
            }
            if timeout_in_reset {
                // Set Features (Number of Queues) of the reset times out too.
                host.ctrl.hold_admin = Some(0x09);
            }
            let enabled = host.enable(32).is_ok();
            prop_assert!(state.admin_usable(), "the reset sends its commands");
            let back = enabled && host.setup_io(1, 0, 64).is_ok();
            if back {
                change(&mut state, CtrlState::Live);
                for &i in &again {
                    submit(&mut host, i, seed);
                }
                host.ring(1);
                for _ in 0..8 {
                    host.ctrl.process(&mut host.bus);
                    reap(&mut host, &mut ends)?;
                }
                prop_assert!(host.queues[1].cids.in_flight() == 0, "requests left after the reset");
                // Admin commands work again.
                host.ctrl.hold_admin = None;
                prop_assert!(host.admin(SubmissionEntry::set_num_queues(1).unwrap()).is_ok());
            } else {
                // A failed enable, or an admin timeout during the reset: dead for good.
                if enabled {
                    prop_assert_eq!(state.after_admin_timeout(true), CtrlState::Dead);
                }
                change(&mut state, CtrlState::Dead);
                for i in again {
                    prop_assert!(ends[i].is_none());
                    ends[i] = Some(End::Failed);
                }
            }
        } else {
            // Dead: the I/O timeout handler fails every request still in flight.
            for tag in in_flight {
                prop_assert!(host.queues[1].cids.cancel(tag));
                let i = usize::from(tag);
                prop_assert!(ends[i].is_none());
                ends[i] = Some(End::Failed);
            }
            prop_assert!(!state.can_start_reset());
        }
        for (i, end) in ends.iter().enumerate() {
            prop_assert!(end.is_some(), "request {} never ended", i);
            if *end == Some(End::Failed) {
                prop_assert_eq!(state, CtrlState::Dead, "request {} failed on a live controller", i);
            } else {
                let start = i * LEN;
                let data = &host.ctrl.namespaces[&1].data[start..start + LEN];
                prop_assert_eq!(data, &pattern(i, seed)[..], "request {} data", i);
            }
        }
        if recoverable && recovers && !timeout_in_reset {
            prop_assert_eq!(state, CtrlState::Live);
        }
    }
}
