//! Invariant checks shared by the bvec fuzz targets: an iterator against the reference model
//! [`BvecModel`], with per-byte work bounded so that multi-GiB tables stay fast.

use bvec::{Bvec, BvecIter, Pfn};

use crate::bvec_model::{BvecModel, Piece};

/// Windows up to this many bytes are also compared byte by byte.
const PER_BYTE_LIMIT: u64 = 1024;
/// Pages views with up to this many items are walked.
const PAGE_ITEMS_LIMIT: u64 = 256;

/// A yielded segment as a model piece.
pub fn piece(bv: &Bvec<Pfn>) -> Piece {
    Piece {
        pfn: bv.page().0,
        offset: u64::from(bv.offset()),
        len: u64::from(bv.len()),
    }
}

/// Merges pieces that continue each other (same frame base, next offset), so that a sequence cut
/// in two at any point normalises to the same list as the uncut one.
pub fn normalise(pieces: impl IntoIterator<Item = Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        match out.last_mut() {
            Some(last) if last.pfn == p.pfn && last.offset + last.len == p.offset => {
                last.len += p.len
            }
            _ => out.push(p),
        }
    }
    out
}

/// Per-byte `(frame, offset in page)` of yielded segments.
pub fn expand(items: impl Iterator<Item = Bvec<Pfn>>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for bv in items {
        for i in 0..u64::from(bv.len()) {
            let abs = u64::from(bv.offset()) + i;
            out.push((bv.page().0 + abs / 4096, abs % 4096));
        }
    }
    out
}

/// Asserts that `it` matches `m`: state, round trip through `from_state`, views (bytes
/// conserved, same pieces) and counts.
pub fn check(it: &BvecIter<'_, Pfn>, m: &BvecModel) {
    let s = it.state();
    let got = (
        s.sector(),
        u64::from(s.size()),
        u64::from(s.idx()),
        u64::from(s.done()),
    );
    assert_eq!(got, m.expected_state(), "state");
    let again = BvecIter::from_state(it.table(), s).map(|i| i.state());
    assert_eq!(again, Ok(s), "from_state round trip");

    let segs: Vec<Piece> = it.segments().map(|b| piece(&b)).collect();
    assert_eq!(segs, m.segments(), "segments view");
    assert_eq!(u64::from(it.nr_segs_remaining()), segs.len() as u64);
    let nr_pages = m
        .nr_pages(m.remaining())
        .expect("model nr_pages inside the window");
    assert_eq!(u64::from(it.nr_pages_remaining()), nr_pages, "nr_pages");

    if nr_pages <= PAGE_ITEMS_LIMIT {
        let mut bytes = 0u64;
        let mut items = 0u64;
        for bv in it.pages() {
            assert!(
                bv.end() as usize <= bvec::PAGE_SIZE,
                "page item crosses a page"
            );
            bytes += u64::from(bv.len());
            items += 1;
        }
        assert_eq!(bytes, m.remaining(), "pages view conserves bytes");
        assert_eq!(items, nr_pages, "pages view count");
    }
    if m.remaining() <= PER_BYTE_LIMIT {
        let bytes = m.bytes();
        let pages: Vec<Piece> = it.pages().map(|b| piece(&b)).collect();
        assert_eq!(
            pages,
            BvecModel::groups(&bytes),
            "pages view vs per-byte grouping"
        );
        let want: Vec<(u64, u64)> = bytes.iter().map(|b| (b.pfn, b.off)).collect();
        assert_eq!(expand(it.pages()), want, "pages view bytes");
    }
}
