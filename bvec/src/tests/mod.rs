//! Unit tests for the iterator: edge cases of iov-semantics.md §5 / §5.1.

extern crate std;

use std::vec::Vec;

use crate::{Bvec, BvecIter, IterState, Page, Pfn, PAGE_SIZE};

mod advance;
mod count;
mod revert;
mod split;
mod views;

/// Builds a table from `(pfn, offset, len)` triples; panics on a bad triple (test input only).
fn table(spec: &[(u64, u32, u32)]) -> Vec<Bvec<Pfn>> {
    spec.iter()
        .map(|&(pfn, off, len)| Bvec::new(Pfn(pfn), off, len).expect("test table entry"))
        .collect()
}

/// `(idx, done, size)` of an iterator.
fn pos(it: &BvecIter<'_, Pfn>) -> (u32, u32, u32) {
    let s = it.state();
    (s.idx(), s.done(), s.size())
}

/// Every byte the iterator covers, as `(pfn, offset in page)`, computed directly from the table.
fn bytes_of(it: &BvecIter<'_, Pfn>) -> Vec<(u64, usize)> {
    let s = it.state();
    let mut out = Vec::new();
    let mut skip = s.done() as usize;
    for bv in &it.table()[s.idx() as usize..] {
        for i in skip..bv.len() as usize {
            let abs = bv.offset() as usize + i;
            out.push((bv.page().nth(abs / PAGE_SIZE).0, abs % PAGE_SIZE));
        }
        skip = 0;
    }
    out.truncate(s.size() as usize);
    out
}

/// Expands segments yielded by a view into bytes, like [`bytes_of`].
fn bytes_of_segs(segs: impl Iterator<Item = Bvec<Pfn>>) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for bv in segs {
        for i in 0..bv.len() as usize {
            let abs = bv.offset() as usize + i;
            out.push((bv.page().nth(abs / PAGE_SIZE).0, abs % PAGE_SIZE));
        }
    }
    out
}

#[test]
fn state_layout_matches_bvec_iter() {
    assert_eq!(core::mem::size_of::<IterState>(), 20);
    assert_eq!(core::mem::align_of::<IterState>(), 4);
}
