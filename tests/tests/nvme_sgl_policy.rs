//! `SglPolicy::use_sgls` of the `nvme` crate against a model of `nvme_pci_use_sgls()`
//! (drivers/nvme/host/pci.c, Linux 6.12), written here with the kernel's division: the
//! average segment `DIV_ROUND_UP(payload, nseg)` compared with `sgl_threshold`. The crate
//! decides without dividing, so the model is an independent check of that rewrite over the
//! whole range of every input, and at the boundaries where the average meets the threshold.

use nvme::{SglPolicy, SGL_THRESHOLD_DEFAULT};
use proptest::prelude::*;

/// The model: the C driver's rule, plus the crate's documented extensions (metadata SGLs
/// force an SGL; below the threshold a passthrough command still uses one), with the
/// rounded-up division (`DIV_ROUND_UP`) done in 128 bits.
fn model(p: &SglPolicy, payload: u64, nseg: u32) -> bool {
    if !p.ctrl_supports_sgls || p.admin_queue {
        return false;
    }
    if p.metadata_sgls {
        return true;
    }
    let n = u128::from(nseg.max(1));
    let avg = u128::from(payload).div_ceil(n);
    if p.sgl_threshold == 0 || avg < u128::from(p.sgl_threshold) {
        return p.passthrough;
    }
    true
}

fn policy() -> impl Strategy<Value = SglPolicy> {
    (
        any::<[bool; 4]>(),
        prop_oneof![
            Just(0u32),
            Just(1),
            Just(SGL_THRESHOLD_DEFAULT),
            any::<u32>()
        ],
    )
        .prop_map(|([sgls, admin, md, pt], t)| SglPolicy {
            ctrl_supports_sgls: sgls,
            admin_queue: admin,
            metadata_sgls: md,
            passthrough: pt,
            sgl_threshold: t,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// Any inputs.
    #[test]
    fn matches_the_kernel_rule(p in policy(), payload in any::<u64>(), nseg in any::<u32>()) {
        prop_assert_eq!(p.use_sgls(payload, nseg), model(&p, payload, nseg));
    }

    /// Payloads within one of a multiple of the threshold, where the rounded-up average
    /// crosses it.
    #[test]
    fn matches_at_the_threshold(
        p in policy(),
        nseg in 0u32..=4096,
        delta in -2i64..=2,
    ) {
        let n = u64::from(nseg.max(1));
        let edge = (u64::from(p.sgl_threshold).saturating_sub(1)).saturating_mul(n);
        let payload = edge.saturating_add_signed(delta);
        prop_assert_eq!(p.use_sgls(payload, nseg), model(&p, payload, nseg));
    }
}

/// The boundary by hand: 32 KiB threshold, 2 segments.
#[test]
fn boundary_examples() {
    let p = SglPolicy {
        ctrl_supports_sgls: true,
        admin_queue: false,
        metadata_sgls: false,
        passthrough: false,
        sgl_threshold: 32 * 1024,
    };
    // DIV_ROUND_UP(65535, 2) = 32768: SGL; DIV_ROUND_UP(65534, 2) = 32767: PRPs.
    assert!(p.use_sgls(65535, 2));
    assert!(!p.use_sgls(65534, 2));
    assert!(p.use_sgls(u64::MAX, u32::MAX));
    assert!(!p.use_sgls(0, 0));
}
