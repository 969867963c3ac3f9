//! Property tests: `bvec::BvecIter` against the flat-byte reference model `bvec_model`.
//!
//! Random tables (multipage, page-straddling, offsets beyond a page, segments up to `u32::MAX`
//! bytes) are driven through random operation sequences; after every step the iterator's state,
//! its views and its counts must match the model, and failed operations must leave it unchanged.

use bvec::{Bvec, BvecError, BvecIter, Pfn};
use iovstack_tests::bvec_model::{BvecModel, Piece};
use proptest::prelude::*;

/// Windows up to this size are also compared byte by byte.
const PER_BYTE_LIMIT: u64 = 8192;
/// Pages views with up to this many items are checked item by item.
const PAGE_ITEMS_LIMIT: u64 = 20_000;

/// How an operation picks its byte count, relative to the state at the time it runs.
#[derive(Clone, Copy, Debug)]
enum Amt {
    Zero,
    /// `base * n / 1000`.
    Frac(u16),
    Exact,
    ExactPlus1,
    SegLeft,
    SegLeftPlus1,
    Raw(u32),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Advance(Amt),
    AdvanceSingle(Amt),
    Revert(Amt),
    Truncate(Amt),
    /// Split and continue with the front (`false`) or back (`true`) half.
    Split(Amt, bool),
    Counts(Amt),
}

fn amt() -> impl Strategy<Value = Amt> {
    prop_oneof![
        1 => Just(Amt::Zero),
        4 => (0u16..=1000).prop_map(Amt::Frac),
        2 => Just(Amt::Exact),
        1 => Just(Amt::ExactPlus1),
        2 => Just(Amt::SegLeft),
        1 => Just(Amt::SegLeftPlus1),
        1 => any::<u32>().prop_map(Amt::Raw),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => amt().prop_map(Op::Advance),
        2 => amt().prop_map(Op::AdvanceSingle),
        3 => amt().prop_map(Op::Revert),
        1 => amt().prop_map(Op::Truncate),
        2 => (amt(), any::<bool>()).prop_map(|(a, b)| Op::Split(a, b)),
        2 => amt().prop_map(Op::Counts),
    ]
}

/// An offset near a page or sector edge, in one of the first three pages.
fn edge_offset() -> impl Strategy<Value = u32> {
    let edge = prop::sample::select(vec![0u32, 1, 7, 511, 512, 513, 4088, 4095]);
    (0u32..3, edge).prop_map(|(page, e)| page * 4096 + e)
}

/// `(pfn, offset, len)` of a small entry: page-local, page-straddling, offset beyond a page.
fn small_entry() -> impl Strategy<Value = (u64, u32, u32)> {
    prop_oneof![
        (0u64..8, 0u32..4096, 1u32..=64),
        (0u64..8, edge_offset(), 1u32..=9000),
        (0u64..1 << 40, 0u32..3 * 4096, 1u32..=3 * 4096),
        (
            0u64..1 << 20,
            (0u32..4).prop_map(|p| p * 4096),
            (1u32..=3).prop_map(|p| p * 4096)
        ),
    ]
}

/// `(pfn, offset, len)` of an entry of up to 4 GiB.
fn huge_entry() -> impl Strategy<Value = (u64, u32, u32)> {
    prop_oneof![
        (0u64..1 << 40, 0u32..3 * 4096, 1u32..=u32::MAX),
        (0u64..1 << 40, 0u32..3 * 4096, 1u32..=64),
        (0u64..1 << 40, any::<u32>(), any::<u32>()),
    ]
}

fn build(spec: &[(u64, u32, u32)]) -> Vec<Bvec<Pfn>> {
    spec.iter()
        .filter_map(|&(pfn, off, len)| Bvec::new(Pfn(pfn), off, len.min(u32::MAX - off)).ok())
        .collect()
}

fn piece(bv: &Bvec<Pfn>) -> Piece {
    Piece {
        pfn: bv.page().0,
        offset: u64::from(bv.offset()),
        len: u64::from(bv.len()),
    }
}

/// Per-byte `(pfn, offset in page)` of a sequence of yielded segments.
fn expand(items: impl Iterator<Item = Bvec<Pfn>>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for bv in items {
        for i in 0..u64::from(bv.len()) {
            let abs = u64::from(bv.offset()) + i;
            out.push((bv.page().0 + abs / 4096, abs % 4096));
        }
    }
    out
}

fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn resolve(a: Amt, base: u64, seg_left: u64) -> u32 {
    to_u32(match a {
        Amt::Zero => 0,
        Amt::Frac(f) => base * u64::from(f) / 1000,
        Amt::Exact => base,
        Amt::ExactPlus1 => base + 1,
        Amt::SegLeft => seg_left,
        Amt::SegLeftPlus1 => seg_left + 1,
        Amt::Raw(r) => u64::from(r),
    })
}

/// Checks everything observable about `it` against `m`.
fn check(it: &BvecIter<'_, Pfn>, m: &BvecModel) -> Result<(), TestCaseError> {
    let s = it.state();
    let got = (
        s.sector(),
        u64::from(s.size()),
        u64::from(s.idx()),
        u64::from(s.done()),
    );
    prop_assert_eq!(got, m.expected_state());
    let again = BvecIter::from_state(it.table(), s).map(|i| i.state());
    prop_assert_eq!(again, Ok(s));

    // Multipage view: at most one item per entry, so always cheap.
    let segs: Vec<Piece> = it.segments().map(|b| piece(&b)).collect();
    prop_assert_eq!(&segs, &m.segments());
    prop_assert_eq!(segs.iter().map(|p| p.len).sum::<u64>(), m.remaining());
    prop_assert_eq!(u64::from(it.nr_segs_remaining()), segs.len() as u64);

    let nr_pages = m
        .nr_pages(m.remaining())
        .map_err(|r| TestCaseError::fail(format!("model nr_pages: {r}")))?;
    prop_assert_eq!(u64::from(it.nr_pages_remaining()), nr_pages);
    prop_assert_eq!(it.current().map(|b| piece(&b)), segs.first().copied());

    if m.remaining() <= PER_BYTE_LIMIT {
        let pages: Vec<Piece> = it.pages().map(|b| piece(&b)).collect();
        prop_assert_eq!(&pages, &m.page_groups());
        let want: Vec<(u64, u64)> = m.bytes().iter().map(|b| (b.pfn, b.off)).collect();
        prop_assert_eq!(&expand(it.pages()), &want);
        prop_assert_eq!(&expand(it.segments()), &want);
    } else if nr_pages <= PAGE_ITEMS_LIMIT {
        check_pages_by_endpoints(it, m)?;
    }
    Ok(())
}

/// Checks each pages-view item against the model at its first and last byte, and that it is
/// maximal (the next byte is in another entry or page): a full check without per-byte work.
fn check_pages_by_endpoints(it: &BvecIter<'_, Pfn>, m: &BvecModel) -> Result<(), TestCaseError> {
    let end = m.cursor() + m.remaining();
    let mut pos = m.cursor();
    for bv in it.pages() {
        let len = u64::from(bv.len());
        prop_assert!(u64::from(bv.offset()) + len <= 4096);
        let (Some(a), Some(z)) = (m.byte(pos), m.byte(pos + len - 1)) else {
            return Err(TestCaseError::fail(
                "pages view went past the model's table",
            ));
        };
        prop_assert_eq!((a.pfn, a.off), (bv.page().0, u64::from(bv.offset())));
        prop_assert_eq!((z.seg, z.pfn, z.off), (a.seg, a.pfn, a.off + len - 1));
        if pos + len < end {
            let n = m
                .byte(pos + len)
                .ok_or_else(|| TestCaseError::fail("short table"))?;
            prop_assert!(
                n.seg != a.seg || n.pfn != a.pfn,
                "item not maximal at {}",
                pos
            );
        }
        pos += len;
    }
    prop_assert_eq!(pos, end);
    Ok(())
}

fn past_end(requested: u32, remaining: u64) -> BvecError {
    BvecError::PastEnd {
        requested: u64::from(requested),
        remaining,
    }
}

/// Runs `ops` from an iterator over the first `size_frac` thousandths of the table.
fn run(table: &[Bvec<Pfn>], sector: u64, size_frac: u16, ops: &[Op]) -> Result<(), TestCaseError> {
    let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
    let size = to_u32(total.min(u64::from(u32::MAX)) * u64::from(size_frac) / 1000);
    let mut it =
        BvecIter::new(table, sector, size).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut m = BvecModel::new(table, sector, u64::from(size))
        .ok_or_else(|| TestCaseError::fail("model refused a valid size"))?;
    check(&it, &m)?;
    for &op in ops {
        let before = it.state();
        let rem = m.remaining();
        let res = match op {
            Op::Advance(a) => {
                let n = resolve(a, rem, m.seg_left());
                let r = it.advance(n);
                prop_assert_eq!(r, m.advance(u64::from(n)).map_err(|r| past_end(n, r)));
                r
            }
            Op::AdvanceSingle(a) => {
                let left = m.seg_left().min(rem);
                let n = resolve(a, left, m.seg_left());
                let r = it.advance_single(n);
                let want = if u64::from(n) > rem {
                    Err(past_end(n, rem))
                } else if u64::from(n) > m.seg_left() {
                    Err(BvecError::BeyondSegment {
                        requested: n,
                        available: to_u32(m.seg_left()),
                    })
                } else {
                    m.advance(u64::from(n)).map_err(|r| past_end(n, r))
                };
                prop_assert_eq!(r, want);
                r
            }
            Op::Revert(a) => {
                let n = resolve(a, m.cursor(), m.seg_left());
                let r = it.revert(n);
                let want = m
                    .revert(u64::from(n))
                    .map_err(|avail| BvecError::BeforeStart {
                        requested: u64::from(n),
                        available: avail,
                    });
                prop_assert_eq!(r, want);
                r
            }
            Op::Truncate(a) => {
                let n = resolve(a, rem, m.seg_left());
                let r = it.truncate(n);
                prop_assert_eq!(r, m.truncate(u64::from(n)).map_err(|r| past_end(n, r)));
                r
            }
            Op::Split(a, keep_back) => {
                let n = resolve(a, rem, m.seg_left());
                match (it.split_at(n), m.split(u64::from(n))) {
                    (Ok((f, b)), Ok((mf, mb))) => {
                        check(&f, &mf)?;
                        check(&b, &mb)?;
                        prop_assert_eq!(f.remaining() as u64 + b.remaining() as u64, rem);
                        if rem <= PER_BYTE_LIMIT {
                            let mut joined = expand(f.pages());
                            joined.extend(expand(b.pages()));
                            prop_assert_eq!(joined, expand(it.pages()));
                        }
                        (it, m) = if keep_back { (b, mb) } else { (f, mf) };
                        Ok(())
                    }
                    (Err((e, back)), Err(r)) => {
                        prop_assert_eq!(e, past_end(n, r));
                        prop_assert_eq!(back.state(), before);
                        Err(e)
                    }
                    (got, want) => {
                        return Err(TestCaseError::fail(format!(
                            "split {n}: iterator {:?}, model {:?}",
                            got.map(|_| ()).map_err(|(e, _)| e),
                            want.map(|_| ())
                        )))
                    }
                }
            }
            Op::Counts(a) => {
                let n = resolve(a, rem, m.seg_left());
                let segs = it.nr_segments(n).map(u64::from);
                prop_assert_eq!(
                    segs,
                    m.nr_segments(u64::from(n)).map_err(|r| past_end(n, r))
                );
                let pages = it.nr_pages(n).map(u64::from);
                prop_assert_eq!(pages, m.nr_pages(u64::from(n)).map_err(|r| past_end(n, r)));
                if u64::from(n) <= rem && rem <= PER_BYTE_LIMIT {
                    let f = it
                        .front(n)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(pages, Ok(f.pages().count() as u64));
                }
                Ok(())
            }
        };
        if res.is_err() {
            prop_assert_eq!(it.state(), before, "failed {:?} changed the iterator", op);
        }
        check(&it, &m)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn small_tables(
        spec in prop::collection::vec(small_entry(), 0..10),
        sector in prop_oneof![Just(0u64), any::<u64>()],
        size_frac in prop_oneof![Just(1000u16), 0u16..=1000],
        ops in prop::collection::vec(op(), 0..40),
    ) {
        run(&build(&spec), sector, size_frac, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn huge_tables(
        spec in prop::collection::vec(huge_entry(), 1..5),
        sector in any::<u64>(),
        size_frac in prop_oneof![Just(1000u16), 0u16..=1000],
        ops in prop::collection::vec(op(), 0..30),
    ) {
        run(&build(&spec), sector, size_frac, &ops)?;
    }
}
