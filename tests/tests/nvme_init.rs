//! Controller bring-up, disable and shutdown of the `nvme` crate against the simulated
//! register file: every sequence ends with `Done` or the typed error the simulated behaviour
//! calls for, within its time bound and poll budget. Expected outcomes come from the
//! behaviour parameters, with delays kept at least 20 ms away from each bound and from each
//! other.

use iovstack_tests::nvme_sim::host::Host;
use iovstack_tests::nvme_sim::{RegBehaviour, SimConfig};
use nvme::{InitError, Phase};
use proptest::prelude::*;

/// A delay that is clearly inside (`Some(small)`), clearly outside (`Some(large)`) or never.
fn delay(limit: u64) -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        (0..limit.saturating_sub(20).max(1)).prop_map(Some),
        (limit + 20..limit + 5000).prop_map(Some),
        Just(None),
    ]
}

/// Behaviour parameters: CAP.TO, then the delays.
fn behaviour() -> impl Strategy<Value = RegBehaviour> {
    (1u8..8)
        .prop_flat_map(|to| {
            let limit = u64::from(to) * 500;
            (
                Just(to),
                delay(limit),
                delay(limit),
                prop_oneof![3 => Just(None), 1 => delay(limit)],
                any::<bool>(),
                prop_oneof![9 => Just(0u8), 1 => 1u8..3],
                prop_oneof![19 => Just(false), 1 => Just(true)],
            )
                .prop_map(
                    |(to, ready, unready, fatal, start_enabled, mpsmin, gone)| RegBehaviour {
                        cap_to: to,
                        ready_after_ms: ready,
                        unready_after_ms: unready,
                        fatal_after_ms: fatal,
                        start_enabled,
                        mpsmin,
                        gone,
                        ..RegBehaviour::default()
                    },
                )
        })
        // Which of ready and fatal the enable wait sees first is only decided when they are
        // further apart than its polling interval: kept 20 ms apart, as the delays are from the
        // bounds.
        .prop_filter("ready and fatal too close to order", |b| {
            match (b.ready_after_ms, b.fatal_after_ms) {
                (Some(r), Some(f)) => r.abs_diff(f) >= 20,
                _ => true,
            }
        })
}

/// The outcome the behaviour calls for.
fn expected(b: &RegBehaviour) -> Result<(), InitError> {
    let limit = u64::from(b.cap_to) * 500;
    let within = |d: Option<u64>| d.is_some_and(|d| d < limit);
    if b.gone {
        return Err(InitError::DeviceGone);
    }
    if b.mpsmin != 0 {
        return Err(InitError::PageSize { mpsmin: b.mpsmin });
    }
    if b.start_enabled {
        // Handed over enabled. The disable has to wait for CSTS.RDY to clear only if the
        // controller shows it: ready at once and not already in fatal state (a controller
        // whose CFS is set never showed RDY, so clearing CC.EN takes effect at once; the
        // enable wait then fails on CFS).
        let fatal_now = b.fatal_after_ms.is_some_and(|f| f == 0);
        let ready_now = b.ready_after_ms.is_some_and(|r| r == 0);
        if ready_now && !fatal_now && !within(b.unready_after_ms) {
            return Err(InitError::Timeout {
                phase: Phase::Disable,
                csts: 0,
                limit_ms: 0,
            });
        }
    }
    match (b.fatal_after_ms, b.ready_after_ms) {
        (Some(f), r) if within(Some(f)) && r.is_none_or(|r| f <= r) => Err(InitError::Fatal {
            phase: Phase::Enable,
            csts: 0,
        }),
        (_, r) if within(r) => Ok(()),
        _ => Err(InitError::Timeout {
            phase: Phase::Enable,
            csts: 0,
            limit_ms: 0,
        }),
    }
}

/// RTD3E (the default limit, one that RTD3E does not raise, or one it raises to 9-10 s) and a
/// shutdown delay kept 20 ms away from the limit that gives, as the other delays are from
/// their bounds. (The limit is computed first: a fixed gap around the default 5 s once let a
/// delay land on a raised limit, where the outcome depends on the poll schedule; the deadline
/// itself is tested by `shutdown_at_its_deadline`.)
fn shutdown_case() -> impl Strategy<Value = (Option<u64>, u32)> {
    prop_oneof![
        Just(0u32),
        1_000_000u32..4_000_000,
        9_000_000u32..10_000_000
    ]
    .prop_flat_map(|rtd3e| {
        let limit = u64::from(nvme::shutdown_timeout_ms(rtd3e));
        (delay(limit), Just(rtd3e))
    })
}

/// Errors compared by kind and phase only.
fn kind(r: &Result<u32, InitError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(InitError::Timeout { phase, .. }) => format!("timeout {phase:?}"),
        Err(InitError::Fatal { phase, .. }) => format!("fatal {phase:?}"),
        Err(e) => format!("{e:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn enable_ends_as_the_controller_behaves(b in behaviour()) {
        let mut host = Host::new(SimConfig { regs: b, ..SimConfig::default() });
        let r = host.enable(32);
        prop_assert_eq!(kind(&r), kind(&expected(&b).map(|()| 0)));
        // Two bounded waits at most, each ending within one poll interval of its limit.
        let limit = u64::from(b.cap_to) * 500;
        prop_assert!(host.ctrl.regs.now() <= 2 * (limit + 2), "took {} ms", host.ctrl.regs.now());
        prop_assert!(host.ctrl.regs.csts_reads.get() <= 2 * (limit as u32 / 2 + 4));
        if r.is_ok() {
            prop_assert_eq!(host.ctrl.regs.cc() & 0x00ff_ffff, 0x0046_0001);
            let (aqa, _, _) = host.ctrl.regs.admin_queue();
            prop_assert_eq!(aqa, 0x001f_001f);
        }
    }

    #[test]
    fn shutdown_waits_for_shst_within_rtd3e((shutdown, rtd3e) in shutdown_case()) {
        let regs = RegBehaviour { shutdown_after_ms: shutdown, ..RegBehaviour::default() };
        let mut host = Host::new(SimConfig { regs, ..SimConfig::default() });
        host.enable(8).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let start = host.ctrl.regs.now();
        let limit = nvme::shutdown_timeout_ms(rtd3e);
        let r = host.shutdown(rtd3e);
        let in_time = shutdown.is_some_and(|s| s < u64::from(limit));
        prop_assert_eq!(kind(&r), if in_time { "ok".to_string() } else { "timeout Shutdown".to_string() });
        prop_assert!(host.ctrl.regs.now() - start <= u64::from(limit) + 2);
    }
}

#[test]
fn disable_fails_fast_when_the_device_is_gone() {
    let mut host = Host::new(SimConfig::default());
    host.enable(32).unwrap();
    host.ctrl.regs.behaviour.gone = true;
    let mut d = nvme::Disable::new();
    assert_eq!(d.poll(&host.ctrl.regs, 0), Err(InitError::DeviceGone));
    // The failure sticks.
    assert_eq!(d.poll(&host.ctrl.regs, 1), Err(InitError::DeviceGone));
}

#[test]
fn a_frozen_clock_still_ends_the_wait() {
    // Never ready, and the caller never advances the clock: the poll budget ends it.
    let regs = RegBehaviour {
        ready_after_ms: None,
        cap_to: 2,
        ..RegBehaviour::default()
    };
    let host = Host::new(SimConfig {
        regs,
        ..SimConfig::default()
    });
    let mut en = nvme::Enable::new(nvme::AdminQueue {
        sq_addr: 0x1000,
        cq_addr: 0x2000,
        entries: 4,
    });
    let mut polls = 0;
    let r = loop {
        polls += 1;
        assert!(polls < 10_000, "unbounded");
        match en.poll(&host.ctrl.regs, 0) {
            Ok(nvme::Poll::Wait(_)) => {}
            other => break other,
        }
    };
    assert!(
        matches!(
            r,
            Err(InitError::Timeout {
                phase: Phase::Enable,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(polls <= 1000 / 2 + 4, "{polls} polls");
}

/// At the deadline itself: every poll reads CSTS before it tests the deadline, as
/// `nvme_wait_ready()` (drivers/nvme/host/core.c) reads CSTS before its `time_after()` test,
/// so a controller that reports the shutdown complete by the poll at the deadline is in time
/// and one that reports it a millisecond later is not.
#[test]
fn shutdown_at_its_deadline() {
    for rtd3e in [0u32, 3_999_999, 9_000_000, 9_999_999] {
        let limit = u64::from(nvme::shutdown_timeout_ms(rtd3e));
        for (after, in_time) in [
            (limit - 2, true),
            (limit, true),
            (limit + 1, false),
            (limit + 2, false),
        ] {
            let regs = RegBehaviour {
                shutdown_after_ms: Some(after),
                ..RegBehaviour::default()
            };
            let mut host = Host::new(SimConfig {
                regs,
                ..SimConfig::default()
            });
            host.enable(8).expect("enable");
            let start = host.ctrl.regs.now();
            let r = host.shutdown(rtd3e);
            let want = if in_time { "ok" } else { "timeout Shutdown" };
            assert_eq!(
                kind(&r),
                want,
                "RTD3E {rtd3e} us, limit {limit} ms, done after {after} ms"
            );
            assert!(host.ctrl.regs.now() - start <= limit + 2);
        }
    }
}
