//! Fuzz target `bvec_split`: repeatedly split a random iterator, keep one half, and check that
//! the halves concatenate to the original, share its table, and match the reference model.

use bvec::{BvecError, BvecIter};

use super::input::{Amount, Decoder, Encoder, Entry};
use super::oracle::{check, expand, normalise, piece};
use crate::bvec_model::BvecModel;

/// Operations decoded per input at most.
const MAX_OPS: usize = 32;
/// Windows up to this many bytes also compare the halves byte by byte.
const PER_BYTE_LIMIT: u32 = 1024;

/// Decodes `data` and checks every split; panics on a broken invariant.
///
/// Input: a table (see [`Decoder::table`]), then steps: an op byte (`% 4`: split keeping the
/// front, split keeping the back, advance, revert) followed by an amount.
pub fn run(data: &[u8]) {
    let mut d = Decoder::new(data);
    let (table, sector, size) = d.table();
    let mut it = BvecIter::new(&table, sector, size).expect("decoded size fits the table");
    let mut m = BvecModel::new(&table, sector, u64::from(size)).expect("model accepts the size");
    for _ in 0..MAX_OPS {
        if d.is_empty() {
            break;
        }
        let op = d.u8() % 4;
        let (rem, seg_left) = (m.remaining(), m.seg_left());
        match op {
            0 | 1 => {
                let n = d.amount(rem, seg_left);
                let whole = it;
                match (it.split_at(n), m.split(u64::from(n))) {
                    (Ok((f, b)), Ok((mf, mb))) => {
                        check_halves(&whole, &f, &b, n);
                        check(&f, &mf);
                        check(&b, &mb);
                        (it, m) = if op == 1 { (b, mb) } else { (f, mf) };
                    }
                    (Err((e, back)), Err(r)) => {
                        let want = BvecError::PastEnd {
                            requested: u64::from(n),
                            remaining: r,
                        };
                        assert_eq!(e, want);
                        assert_eq!(
                            back.state(),
                            whole.state(),
                            "failed split changed the iterator"
                        );
                        it = back;
                    }
                    (got, want) => panic!(
                        "split {n}: iterator ok = {}, model ok = {}",
                        got.is_ok(),
                        want.is_ok()
                    ),
                }
            }
            2 => {
                let n = d.amount(rem, seg_left);
                assert_eq!(it.advance(n).is_ok(), m.advance(u64::from(n)).is_ok());
            }
            _ => {
                let n = d.amount(m.cursor(), seg_left);
                assert_eq!(it.revert(n).is_ok(), m.revert(u64::from(n)).is_ok());
            }
        }
        check(&it, &m);
    }
}

/// The halves of `whole` split at `n`: sizes add up, same table, sectors as documented, and the
/// multipage pieces (and, when small, the bytes) concatenate to the original.
fn check_halves(
    whole: &BvecIter<'_, bvec::Pfn>,
    f: &BvecIter<'_, bvec::Pfn>,
    b: &BvecIter<'_, bvec::Pfn>,
    n: u32,
) {
    assert_eq!(f.remaining(), n);
    assert_eq!(
        u64::from(f.remaining()) + u64::from(b.remaining()),
        u64::from(whole.remaining())
    );
    assert!(core::ptr::eq(f.table(), whole.table()) && core::ptr::eq(b.table(), whole.table()));
    assert_eq!(f.sector(), whole.sector());
    assert_eq!(b.sector(), whole.sector().wrapping_add(u64::from(n >> 9)));
    let joined = normalise(f.segments().chain(b.segments()).map(|bv| piece(&bv)));
    assert_eq!(joined, normalise(whole.segments().map(|bv| piece(&bv))));
    let straddles = f.segments().count() + b.segments().count();
    let parts = whole.segments().count();
    assert!(
        straddles == parts || straddles == parts + 1,
        "at most one segment is shared"
    );
    if whole.remaining() <= PER_BYTE_LIMIT {
        let mut bytes = expand(f.pages());
        bytes.extend(expand(b.pages()));
        assert_eq!(bytes, expand(whole.pages()));
    }
}

/// Seed inputs: splits at 0, at the end, past the end, on and inside segments, nested splits.
pub fn seeds() -> Vec<Vec<u8>> {
    use Amount::*;
    let tables: [&[Entry]; 3] = [
        &[
            Entry::Small(1, 0, 1024),
            Entry::Small(2, 100, 1024),
            Entry::Pages(3, 2, 2),
        ],
        &[Entry::Huge(0, 0, u32::MAX), Entry::Huge(9, 8191, 4097)],
        &[
            Entry::Edge(4, 4, 0, 512),
            Entry::Edge(4, 5, 0, 3584),
            Entry::Edge(6, 7, 2, 1),
        ],
    ];
    let mut out = vec![Vec::new()];
    for table in tables {
        for size in [255u8, 200] {
            let base = || Encoder::new().table(table, 8, size);
            out.push(base().op(0).amount(Zero).op(1).amount(Base).finish());
            out.push(base().op(1).amount(Zero).op(0).amount(Base).finish());
            out.push(base().op(0).amount(BasePlus1).finish());
            out.push(
                base()
                    .op(0)
                    .amount(SegLeft)
                    .op(1)
                    .amount(SegLeftPlus1)
                    .finish(),
            );
            out.push(
                base()
                    .op(1)
                    .amount(Frac(20000))
                    .op(1)
                    .amount(Frac(40000))
                    .finish(),
            );
            out.push(
                base()
                    .op(2)
                    .amount(SegLeft)
                    .op(1)
                    .amount(Raw(1))
                    .op(3)
                    .amount(Base)
                    .finish(),
            );
            out.push(
                base()
                    .op(1)
                    .amount(Raw(512))
                    .op(3)
                    .amount(Raw(512))
                    .op(0)
                    .amount(Base)
                    .finish(),
            );
        }
    }
    out
}
