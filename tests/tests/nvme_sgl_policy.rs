//! `SglPolicy::use_sgls` of the `nvme` crate against a model of `nvme_pci_use_sgls()`
//! (drivers/nvme/host/pci.c, Linux 6.12), written here with the kernel's division: the
//! average segment `DIV_ROUND_UP(payload, nseg)` compared with `sgl_threshold`. The crate
//! decides without dividing, so the model is an independent check of that rewrite over the
//! whole range of every input, and at the boundaries where the average meets the threshold.
//!
//! `SglPolicy::layout` against a model of `nvme_map_data()` (same file): the data pointer form
//! of a request, from its physical segment count, its one `bio_vec` and its mapped segments.

use nvme::{DataLayout, SglPolicy, SGL_THRESHOLD_DEFAULT};
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

/// `nvme_map_data()` as the C code reads: a request of one physical segment whose `bio_vec`
/// (`req_bvec()`, never a P2P page here) ends within two controller pages of its offset's page
/// gets `nvme_setup_prp_simple()` unless `nvme_pci_metadata_use_sgls()`; else, on an I/O queue
/// (`nvmeq->qid`) with `sgl_threshold` set and SGL support, `nvme_setup_sgl_simple()`; every other
/// request is mapped whole and gets SGLs when `nvme_pci_use_sgls()` (the model above) says so,
/// else PRPs. 4096 is `NVME_CTRL_PAGE_SIZE`.
fn model_layout(
    p: &SglPolicy,
    nr_phys_segments: u32,
    bv: (u64, u32),
    payload: u64,
    nents: u32,
) -> DataLayout {
    if nr_phys_segments == 1 {
        let (bv_offset, bv_len) = bv;
        if !p.metadata_sgls && u128::from(bv_offset & 4095) + u128::from(bv_len) <= 4096 * 2 {
            return DataLayout::PrpSimple;
        }
        let qid = !p.admin_queue;
        if qid && p.sgl_threshold != 0 && p.ctrl_supports_sgls {
            return DataLayout::SglSimple;
        }
    }
    if model(p, payload, nents) {
        DataLayout::Sgls
    } else {
        DataLayout::Prps
    }
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// The layout of any request against `nvme_map_data()`'s choice, with the single segment's
    /// offset and length drawn around the two-page bound.
    #[test]
    fn layout_matches_map_data(
        p in policy(),
        nr in prop_oneof![Just(1u32), Just(0), Just(2), any::<u32>()],
        offset in prop_oneof![0u64..8192, any::<u64>()],
        len in prop_oneof![0u32..=8192, 8000u32..=8500, any::<u32>()],
        payload in any::<u64>(),
        nseg in any::<u32>(),
    ) {
        let single = (nr == 1).then_some((offset, len));
        prop_assert_eq!(
            p.layout(single, payload, nseg),
            model_layout(&p, nr, (offset, len), payload, nseg)
        );
    }

    /// Single segments that end within two bytes of the two-page bound.
    #[test]
    fn layout_at_the_two_page_bound(
        p in policy(),
        offset in any::<u64>(),
        delta in -2i64..=2,
        nseg in any::<u32>(),
    ) {
        let len = u32::try_from((8192 - (offset & 4095) as i64 + delta).max(0)).unwrap();
        prop_assert_eq!(
            p.layout(Some((offset, len)), u64::from(len), nseg),
            model_layout(&p, 1, (offset, len), u64::from(len), nseg)
        );
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

/// The two-page bound of the single segment by hand: 8 KiB from a page start, or 4 KiB from
/// the middle of a page, still fit; one byte more takes the SGL descriptor (or, without SGL
/// support or on the admin queue, the general path).
#[test]
fn single_segment_examples() {
    let p = SglPolicy {
        ctrl_supports_sgls: true,
        admin_queue: false,
        metadata_sgls: false,
        passthrough: false,
        sgl_threshold: 32 * 1024,
    };
    assert_eq!(
        p.layout(Some((0x1000, 8192)), 8192, 1),
        DataLayout::PrpSimple
    );
    assert_eq!(
        p.layout(Some((0x1800, 6144)), 6144, 1),
        DataLayout::PrpSimple
    );
    assert_eq!(
        p.layout(Some((0x1800, 6145)), 6145, 1),
        DataLayout::SglSimple
    );
    let no_sgl = SglPolicy {
        ctrl_supports_sgls: false,
        ..p
    };
    assert_eq!(
        no_sgl.layout(Some((0x1800, 6145)), 6145, 1),
        DataLayout::Prps
    );
    let admin = SglPolicy {
        admin_queue: true,
        ..p
    };
    assert_eq!(
        admin.layout(Some((0, 1 << 20)), 1 << 20, 1),
        DataLayout::Prps
    );
    let md = SglPolicy {
        metadata_sgls: true,
        ..p
    };
    assert_eq!(md.layout(Some((0, 512)), 512, 1), DataLayout::SglSimple);
    let off = SglPolicy {
        sgl_threshold: 0,
        ..p
    };
    assert_eq!(off.layout(Some((0, 65536)), 65536, 1), DataLayout::Prps);
}
