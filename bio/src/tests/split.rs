//! `split_rw_at`, `count_phys_segments`, `max_segment_bytes` and the merge/gap predicates.

use std::vec::Vec;

use super::{table, TestPage};
use crate::{
    count_phys_segments, gap_to_prev, max_segment_bytes, phys_mergeable, split_rw_at,
    try_merge_hw_page, try_merge_page, BioError, LimitsConfig, QueueLimits, SplitPoint,
};
use bvec::{Bvec, Pfn};

fn nvme() -> QueueLimits {
    QueueLimits::nvme(512, 0, 0).unwrap()
}

fn lim(f: impl FnOnce(&mut LimitsConfig)) -> QueueLimits {
    let mut c = LimitsConfig::default();
    f(&mut c);
    QueueLimits::new(&c).unwrap()
}

/// `n` separate full pages (never contiguous).
fn pages(n: u64) -> Vec<Bvec<Pfn>> {
    (0..n)
        .map(|i| Bvec::new(Pfn(i * 2), 0, 4096).unwrap())
        .collect()
}

#[test]
fn split_at_max_segments() {
    let t = pages(130);
    let l = nvme();
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Front {
            bytes: 128 * 4096,
            nsegs: 128
        })
    );
    assert_eq!(
        split_rw_at(t[..128].iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Whole { nsegs: 128 })
    );
    // A multipage segment counting as several segments hits the cap in its middle.
    let l = lim(|c| {
        c.max_segments = 3;
        c.max_segment_size = 4096;
    });
    let t = table(&[(0, 0, 6 * 4096)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Front {
            bytes: 3 * 4096,
            nsegs: 3
        })
    );
}

#[test]
fn split_at_max_bytes() {
    let t = pages(4);
    let l = nvme();
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, 8192),
        Ok(SplitPoint::Front {
            bytes: 8192,
            nsegs: 2
        })
    );
    // Mid-page: aligned down to 512 is the max itself here.
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, 5120),
        Ok(SplitPoint::Front {
            bytes: 5120,
            nsegs: 2
        })
    );
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, 16384),
        Ok(SplitPoint::Whole { nsegs: 4 })
    );
}

#[test]
fn seg_boundary_crossing_counts_two_segments() {
    let l = lim(|c| c.seg_boundary_mask = 0xffff);
    // Pages 15 and 16: bytes 0xF000..0x11000 cross 0x10000.
    let t = table(&[(15, 0, 8192)]);
    assert_eq!(count_phys_segments(t.iter().copied(), &l), 2);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Whole { nsegs: 2 })
    );
    // 4 GiB boundary with the default mask.
    let l = nvme();
    let t = table(&[((1 << 20) - 1, 2048, 4096)]);
    assert_eq!(count_phys_segments(t.iter().copied(), &l), 2);
    let t = table(&[(1 << 20, 0, 65536)]);
    assert_eq!(count_phys_segments(t.iter().copied(), &l), 1);
}

#[test]
fn max_segment_size_cuts_segments() {
    let l = lim(|_| {});
    let t = table(&[(0, 0, 65536 * 2 + 1)]);
    assert_eq!(count_phys_segments(t.iter().copied(), &l), 3);
    assert_eq!(max_segment_bytes(&l, 0, u32::MAX), 65536);
    assert_eq!(max_segment_bytes(&l, 0xFFFF_FFFF, u32::MAX), 1);
    assert_eq!(max_segment_bytes(&l, 0x1_0000_0000, 7), 7);
    let big = lim(|c| c.max_segment_size = u32::MAX);
    assert_eq!(max_segment_bytes(&big, 0, u32::MAX), u32::MAX);
    let sbm = lim(|c| {
        c.max_segment_size = u32::MAX;
        c.seg_boundary_mask = u64::MAX;
    });
    assert_eq!(max_segment_bytes(&sbm, 12345, u32::MAX), u32::MAX);
}

#[test]
fn virt_boundary_gap_splits() {
    let l = nvme();
    // Half a page, then another page: gap.
    let t = table(&[(1, 0, 2048), (5, 0, 4096)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Front {
            bytes: 2048,
            nsegs: 1
        })
    );
    // Next segment starts mid-page.
    let t = table(&[(1, 0, 4096), (5, 512, 1024)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Front {
            bytes: 4096,
            nsegs: 1
        })
    );
    // Aligned on both sides: no gap; first may start and last may end anywhere.
    let t = table(&[(1, 512, 3584), (5, 0, 4096), (9, 0, 100)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Whole { nsegs: 3 })
    );
    // Without a virtual boundary the same input never splits.
    let t = table(&[(1, 0, 2048), (5, 0, 4096)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &lim(|_| {}), u32::MAX),
        Ok(SplitPoint::Whole { nsegs: 2 })
    );
}

#[test]
fn split_is_aligned_to_logical_block_and_recounted() {
    let l = QueueLimits::nvme(4096, 0, 0).unwrap();
    // 4096 + 2048 then a gap: 6144 fits, aligned down to 4096 = only the first segment.
    let t = table(&[(1, 0, 4096), (3, 0, 2048), (7, 0, 4096)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Ok(SplitPoint::Front {
            bytes: 4096,
            nsegs: 1
        })
    );
    // The aligned result 0 quirk is an error here.
    let t = table(&[(1, 0, 2048), (7, 0, 4096)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, u32::MAX),
        Err(BioError::CannotSplit {
            fitted: 2048,
            logical_block_size: 4096
        })
    );
    // max_bytes below one block.
    let t = pages(2);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, 4095),
        Err(BioError::CannotSplit {
            fitted: 4095,
            logical_block_size: 4096
        })
    );
}

#[test]
fn empty_and_single_segments() {
    let l = nvme();
    assert_eq!(
        split_rw_at(core::iter::empty::<Bvec<Pfn>>(), &l, 0),
        Ok(SplitPoint::Whole { nsegs: 0 })
    );
    let t = table(&[(0, 4095, 1)]);
    assert_eq!(
        split_rw_at(t.iter().copied(), &l, 512),
        Ok(SplitPoint::Whole { nsegs: 1 })
    );
    // Offsets beyond a page (multipage view) take the slow path and still count 1.
    let t = table(&[(0, 8192, 100)]);
    assert_eq!(count_phys_segments(t.iter().copied(), &l), 1);
}

#[test]
fn merge_rules() {
    let a = TestPage {
        id: 10,
        phys: 0x10_000,
    };
    let bv = Bvec::new(a, 0, 4096).unwrap();
    // Physically contiguous and handle-contiguous: merge.
    let next = TestPage {
        id: 11,
        phys: 0x11_000,
    };
    assert_eq!(try_merge_page(&bv, next, 0, 10).unwrap().bvec.len(), 4106);
    // Physically contiguous, different handle: no merge (struct-page contiguity).
    let alias = TestPage {
        id: 99,
        phys: 0x11_000,
    };
    assert!(try_merge_page(&bv, alias, 0, 10).is_none());
    // Same page (continuing inside the last page) needs no handle check.
    let half = Bvec::new(a, 0, 100).unwrap();
    let m = try_merge_page(&half, alias, 100, 10);
    assert!(m.is_none()); // alias phys 0x11000 + 100 is not 0x10064
    let m = try_merge_page(
        &half,
        TestPage {
            id: 77,
            phys: 0x10_000,
        },
        100,
        10,
    )
    .unwrap();
    assert!(m.same_page);
    assert_eq!(m.bvec.page(), a);
    // Offset given in a multipage form.
    let m = try_merge_page(&bv, a, 4096, 4096).unwrap();
    assert_eq!((m.bvec.len(), m.same_page), (8192, false));
    // u32 overflow of the grown segment.
    let huge = Bvec::new(a, 0, u32::MAX - 10).unwrap();
    assert!(try_merge_page(&huge, a, u32::MAX - 10, 11).is_none());
    assert!(try_merge_page(&huge, a, u32::MAX - 10, 10).is_some());
}

#[test]
fn hw_merge_and_gap_predicates() {
    let l = lim(|c| {
        c.max_segment_size = 8192;
        c.seg_boundary_mask = 0xffff;
    });
    let bv = Bvec::new(Pfn(0), 0, 4096).unwrap();
    assert!(try_merge_hw_page(&l, &bv, Pfn(1), 0, 4096).is_some());
    assert!(try_merge_hw_page(&l, &bv, Pfn(1), 0, 4097).is_none()); // max_segment_size
    let bv = Bvec::new(Pfn(15), 0, 4096).unwrap();
    assert!(try_merge_hw_page(&l, &bv, Pfn(16), 0, 1).is_none()); // boundary window
    let big = Bvec::new(Pfn(0), 0, 10000).unwrap();
    assert!(try_merge_hw_page(&l, &big, Pfn(2), 10000 - 8192, 1).is_none()); // already over size
    assert!(phys_mergeable(
        &l,
        &Bvec::new(Pfn(0), 0, 4096).unwrap(),
        &Bvec::new(Pfn(1), 0, 4096).unwrap()
    ));
    assert!(!phys_mergeable(
        &l,
        &Bvec::new(Pfn(15), 0, 4096).unwrap(),
        &Bvec::new(Pfn(16), 0, 1).unwrap()
    ));
    let n = nvme();
    assert!(!gap_to_prev(
        &lim(|_| {}),
        &Bvec::new(Pfn(0), 0, 1).unwrap(),
        1
    ));
    assert!(gap_to_prev(&n, &Bvec::new(Pfn(0), 0, 1).unwrap(), 0));
    assert!(!gap_to_prev(
        &n,
        &Bvec::new(Pfn(0), 4000, 96).unwrap(),
        8192
    ));
}
