//! Property tests: every iterator kind against the flat reference model, plus the iterator
//! contract (one conformance macro instantiated per kind).

use iov::{AnyDir, IovIter};
use iovstack_tests::iov_harness::{check, Geometry, Op, Shape, ARENA_PAGES, PAGE_OP_PAGES};
use iovstack_tests::mem::{ArenaMem, KERNEL_BASE, USER_BASE};
use proptest::prelude::*;

const ARENA: usize = ARENA_PAGES * 4096;
/// First arena byte segments may use (below: page-op buffers).
const SEG_START: usize = PAGE_OP_PAGES * 4096;
const FIRST_PFN: u64 = PAGE_OP_PAGES as u64;

/// Segment lengths: many empty ones, page-ish sizes, and rare huge ones.
fn seg_len(huge: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => Just(0usize),
        6 => 1usize..9000,
        2 => (1usize..4).prop_map(|p| p * 4096),
        1 => 1usize..huge,
    ]
}

/// Addresses inside the arena seen from `base`, with some below or above it (faults).
fn addr(base: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        8 => (SEG_START..ARENA).prop_map(move |o| base + o),
        1 => (SEG_START..ARENA).prop_map(move |o| base + o / 4096 * 4096),
        1 => (0..base.min(1 << 40)).prop_map(move |o| base - 1 - o),
        1 => (0usize..1 << 40).prop_map(move |o| base + ARENA + o),
    ]
}

fn iovec_shape() -> impl Strategy<Value = Shape> {
    prop::collection::vec((addr(USER_BASE), seg_len(1 << 50)), 0..8).prop_map(Shape::Iovec)
}

fn kvec_shape() -> impl Strategy<Value = Shape> {
    prop::collection::vec((addr(KERNEL_BASE), seg_len(1 << 40)), 0..8).prop_map(Shape::Kvec)
}

fn ubuf_shape() -> impl Strategy<Value = Shape> {
    (addr(USER_BASE), seg_len(1 << 50)).prop_map(|(a, l)| Shape::Ubuf(a, l))
}

fn bvec_entry() -> impl Strategy<Value = (u64, u32, u32)> {
    prop_oneof![
        // Small, possibly page-straddling or multipage, mostly inside the arena.
        6 => (FIRST_PFN..34, 0u32..3 * 4096, 1u32..3 * 4096),
        // Page-uniform entries.
        3 => (FIRST_PFN..30, 0u32..2, 1u32..3).prop_map(|(p, o, l)| (p, o * 4096, l * 4096)),
        // Huge multipage segments far away.
        1 => (1u64 << 30..1u64 << 31, any::<u32>(), any::<u32>())
            .prop_map(|(p, o, l)| (p, o / 2, (l / 2).max(1))),
    ]
}

fn bvec_shape() -> impl Strategy<Value = Shape> {
    prop::collection::vec(bvec_entry(), 0..20).prop_map(Shape::Bvec)
}

/// A registered-buffer-like table: a first entry of any shape, middle entries of one
/// power-of-two stride (one page or a folio of 2-4 pages) at any in-page offset, a last entry of
/// at most the stride; sometimes one entry perturbed so the table is not strided (the walking
/// path). Then an import offset anywhere in it.
fn bvec_fixed_shape() -> impl Strategy<Value = Shape> {
    (
        (FIRST_PFN..34, 0u32..4096, 1u32..3 * 4096),
        prop_oneof![4 => Just(12u32), 1 => 13u32..15],
        prop::collection::vec((FIRST_PFN..30, 0u32..2), 0..6),
        (FIRST_PFN..34, any::<u32>()),
        (any::<bool>(), any::<usize>()),
        any::<usize>(),
    )
        .prop_map(|(first, shift, middle, last, (perturb, which), off)| {
            let stride = 1u32 << shift;
            let mut v = vec![first];
            v.extend(middle.iter().map(|&(p, o)| (p, o * 4096, stride)));
            v.push((last.0, 0, 1 + last.1 % stride));
            if perturb {
                let i = which % v.len();
                v[i].2 = 1 + v[i].2 / 3;
            }
            let total: usize = v.iter().map(|e| e.2 as usize).sum();
            Shape::BvecFixed(v, off % (total + 1))
        })
}

fn page_list_shape() -> impl Strategy<Value = Shape> {
    (
        prop::collection::vec((FIRST_PFN..34, 0u8..3), 0..6),
        any::<usize>(),
    )
        .prop_map(|(f, off)| {
            let first = f.first().map_or(0, |&(_, o)| 4096usize << o);
            let off = if off % 3 == 0 { 0 } else { off % (first + 1) };
            Shape::PageList(f, off)
        })
}

fn discard_shape() -> impl Strategy<Value = Shape> {
    seg_len(1 << 50).prop_map(Shape::Discard)
}

fn geometry(shape: impl Strategy<Value = Shape>) -> impl Strategy<Value = Geometry> {
    (shape, any::<bool>(), any::<usize>(), any::<bool>()).prop_map(|(shape, source, c, full)| {
        let mut g = Geometry {
            shape,
            source,
            count: usize::MAX,
        };
        let cap = g.capacity();
        if !full {
            g.count = if cap == 0 {
                0
            } else {
                c % (cap.min(1 << 20) + 1)
            };
        }
        g
    })
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0usize..10_000,
        1 => Just(usize::MAX),
        1 => 0usize..1 << 45,
        1 => (1usize..5).prop_map(|p| p * 4096),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let small = 0usize..12_000;
    prop_oneof![
        3 => small.clone().prop_map(Op::CopyTo),
        3 => small.clone().prop_map(Op::CopyFrom),
        1 => small.clone().prop_map(Op::CopyToFull),
        1 => small.clone().prop_map(Op::CopyFromFull),
        1 => small.clone().prop_map(Op::Zero),
        3 => size().prop_map(Op::Advance),
        3 => size().prop_map(Op::Revert),
        1 => size().prop_map(|s| Op::Truncate(s as u64)),
        1 => size().prop_map(Op::Reexpand),
        1 => Just(Op::Save),
        1 => Just(Op::Restore),
        1 => (0u64..3, 0usize..2 * 4096, 0usize..9000).prop_map(|(p, o, b)| Op::CopyPageTo(p, o, b)),
        1 => (0u64..3, 0usize..2 * 4096, 0usize..9000).prop_map(|(p, o, b)| Op::CopyPageFrom(p, o, b)),
        2 => (0usize..6, size()).prop_map(|(n, s)| Op::GetPages(n, s)),
        2 => (0usize..6, size()).prop_map(|(n, s)| Op::ExtractPages(n, s)),
        1 => (0..ARENA, 1usize..300).prop_map(|(a, l)| Op::Fault(a..a + l)),
    ]
}

/// Cases per property: 384, or `PROPTEST_CASES` from the environment for longer runs.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(384)
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..24)
}

/// The iterator contract, instantiated once per kind: model agreement for random operation
/// sequences, and laws that need no model.
macro_rules! conformance {
    ($kind:ident, $shape:expr) => {
        mod $kind {
            use super::*;

            fn build<'t>(
                geo: &Geometry,
                t: &'t iovstack_tests::iov_harness::Tables,
            ) -> IovIter<'t, ::bvec::Pfn, AnyDir> {
                t.iter(geo).expect("count fits")
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(cases()))]

                #[test]
                fn matches_model(geo in geometry($shape), ops in ops()) {
                    check(&geo, &ops);
                }

                #[test]
                fn advance_then_revert_restores_count(geo in geometry($shape), a in size(), b in size()) {
                    let t = geo.tables();
                    let mut it = build(&geo, &t);
                    it.advance(a);
                    let (count, consumed) = (it.count(), it.consumed());
                    let moved = b.min(count);
                    it.advance(b);
                    prop_assert_eq!(it.count(), count - moved);
                    let back = it.revert(moved);
                    if moved <= iov::MAX_RW_COUNT {
                        prop_assert!(back.is_ok());
                        prop_assert_eq!((it.count(), it.consumed()), (count, consumed));
                    } else {
                        prop_assert!(back.is_err());
                    }
                    // Never further back than the start.
                    prop_assert!(it.revert(it.consumed() + 1).is_err());
                }

                #[test]
                fn save_restore_is_exact(geo in geometry($shape), a in size(), b in size()) {
                    let t = geo.tables();
                    let mut it = build(&geo, &t);
                    it.advance(a);
                    let s = it.save_state();
                    let before = (it.count(), it.nr_segs(), it.iov_offset(), it.consumed());
                    it.advance(b);
                    match it.restore(&s) {
                        Ok(()) => prop_assert_eq!(
                            (it.count(), it.nr_segs(), it.iov_offset(), it.consumed()),
                            before
                        ),
                        Err(e) => prop_assert_eq!(e, iov::IovError::RestoreUnsupported),
                    }
                }

                #[test]
                fn truncate_reexpand_and_copy_accounting(geo in geometry($shape), n in 0u64..20_000, len in 0usize..20_000) {
                    let t = geo.tables();
                    let mut it = build(&geo, &t);
                    let count = it.count();
                    it.truncate(n);
                    prop_assert_eq!(it.count() as u64, (count as u64).min(n));
                    prop_assert!(it.reexpand(count).is_ok());
                    let cap = geo.reexpand_limit();
                    prop_assert!(it.reexpand(cap).is_ok());
                    prop_assert!(cap == usize::MAX || it.reexpand(cap + 1).is_err());
                    prop_assert!(it.reexpand(count).is_ok());
                    let mut mem = ArenaMem::new(ARENA_PAGES);
                    let (before, consumed) = (it.count(), it.consumed());
                    let done = if it.is_source() {
                        let mut buf = vec![0; len];
                        it.copy_from_iter(&mut mem, &mut buf)
                    } else {
                        it.copy_to_iter(&mut mem, &vec![1; len])
                    };
                    prop_assert!(done <= len.min(before));
                    prop_assert_eq!(it.count(), before - done);
                    // 0 at construction except for an import at an offset (`consumed` = offset).
                    prop_assert_eq!(it.consumed(), consumed + done);
                }
            }
        }
    };
}

conformance!(ubuf, ubuf_shape());
conformance!(iovec, iovec_shape());
conformance!(kvec, kvec_shape());
conformance!(bvec, bvec_shape());
conformance!(page_list, page_list_shape());
conformance!(bvec_fixed, bvec_fixed_shape());
conformance!(discard, discard_shape());
