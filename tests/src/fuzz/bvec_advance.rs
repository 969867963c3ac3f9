//! Fuzz target `bvec_advance`: a random table and a sequence of advance / advance_single /
//! revert / truncate / count operations, each checked against the reference model.

use bvec::{BvecError, BvecIter};

use super::input::{Amount, Decoder, Encoder, Entry};
use super::oracle::check;
use crate::bvec_model::BvecModel;

/// Operations decoded per input at most, to bound the time of one run.
const MAX_OPS: usize = 64;

fn past_end(requested: u32, remaining: u64) -> BvecError {
    BvecError::PastEnd {
        requested: u64::from(requested),
        remaining,
    }
}

/// Decodes `data` and checks every operation; panics on a broken invariant.
///
/// Input: a table (see [`Decoder::table`]), then operations: an op byte (`% 5`: advance,
/// advance_single, revert, truncate, counts) followed by an amount.
pub fn run(data: &[u8]) {
    let mut d = Decoder::new(data);
    let (table, sector, size) = d.table();
    let mut it = BvecIter::new(&table, sector, size).expect("decoded size fits the table");
    let mut m = BvecModel::new(&table, sector, u64::from(size)).expect("model accepts the size");
    check(&it, &m);
    for _ in 0..MAX_OPS {
        if d.is_empty() {
            break;
        }
        let op = d.u8() % 5;
        let before = it.state();
        let rem = m.remaining();
        let seg_left = m.seg_left();
        let failed = match op {
            0 => {
                let n = d.amount(rem, seg_left);
                let r = it.advance(n);
                assert_eq!(r, m.advance(u64::from(n)).map_err(|r| past_end(n, r)));
                r.is_err()
            }
            1 => {
                let n = d.amount(seg_left.min(rem), seg_left);
                let r = it.advance_single(n);
                let want = if u64::from(n) > rem {
                    Err(past_end(n, rem))
                } else if u64::from(n) > seg_left {
                    Err(BvecError::BeyondSegment {
                        requested: n,
                        available: u32::try_from(seg_left).unwrap_or(u32::MAX),
                    })
                } else {
                    m.advance(u64::from(n)).map_err(|r| past_end(n, r))
                };
                assert_eq!(r, want);
                r.is_err()
            }
            2 => {
                let n = d.amount(m.cursor(), seg_left);
                let r = it.revert(n);
                let want = m.revert(u64::from(n)).map_err(|a| BvecError::BeforeStart {
                    requested: u64::from(n),
                    available: a,
                });
                assert_eq!(r, want);
                r.is_err()
            }
            3 => {
                let n = d.amount(rem, seg_left);
                let r = it.truncate(n);
                assert_eq!(r, m.truncate(u64::from(n)).map_err(|r| past_end(n, r)));
                r.is_err()
            }
            _ => {
                let n = d.amount(rem, seg_left);
                let want = |r| past_end(n, r);
                let segs = it.nr_segments(n).map(u64::from);
                assert_eq!(segs, m.nr_segments(u64::from(n)).map_err(want));
                let pages = it.nr_pages(n).map(u64::from);
                assert_eq!(pages, m.nr_pages(u64::from(n)).map_err(want));
                segs.is_err()
            }
        };
        if failed {
            assert_eq!(
                it.state(),
                before,
                "a failed operation changed the iterator"
            );
        }
        check(&it, &m);
    }
}

/// Seed inputs: boundary landings, past-end and before-start errors, multipage and huge tables.
pub fn seeds() -> Vec<Vec<u8>> {
    use Amount::*;
    let three = [
        Entry::Small(1, 0, 100),
        Entry::Small(2, 4000, 200),
        Entry::Pages(9, 1, 3),
    ];
    let huge = [
        Entry::Huge(3, 0, u32::MAX),
        Entry::Huge(7, 4095, 2),
        Entry::Edge(1, 6, 2, 9000),
    ];
    let edges = [
        Entry::Edge(0, 0, 0, 4096),
        Entry::Edge(5, 7, 1, 2),
        Entry::Edge(8, 3, 2, 700),
    ];
    let mut out = vec![
        Vec::new(),
        Encoder::new().table(&[], 0, 255).finish(),
        Encoder::new().table(&three, 0, 255).finish(),
    ];
    for table in [&three[..], &huge[..], &edges[..]] {
        for size in [255u8, 128, 0] {
            let base = || Encoder::new().table(table, 1 << 20, size);
            out.push(base().op(0).amount(SegLeft).op(0).amount(SegLeft).finish());
            out.push(base().op(0).amount(BasePlus1).op(0).amount(Base).finish());
            out.push(
                base()
                    .op(1)
                    .amount(SegLeftPlus1)
                    .op(1)
                    .amount(Base)
                    .finish(),
            );
            out.push(base().op(0).amount(Frac(30000)).op(2).amount(Base).finish());
            out.push(base().op(0).amount(Base).op(2).amount(BasePlus1).finish());
            out.push(base().op(3).amount(Frac(1000)).op(4).amount(Base).finish());
            out.push(base().op(4).amount(BasePlus1).op(0).amount(Zero).finish());
            out.push(base().op(0).amount(Raw(513)).op(2).amount(Raw(1)).finish());
        }
    }
    out
}
