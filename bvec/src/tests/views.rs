//! `current`, `current_page`, `phys`, `segments`, `pages`.

extern crate std;

use std::vec::Vec;

use super::{bytes_of, bytes_of_segs, table};
use crate::{Bvec, BvecIter, Page, Pfn, PAGE_SIZE};

#[test]
fn multipage_offsets_beyond_a_page() {
    // Offset >= PAGE_SIZE: the first byte is in page.nth(2).
    let t = table(&[(10, 2 * 4096 + 100, 5000), (30, 4096, 4096)]);
    let it = BvecIter::new(&t, 0, 9096).unwrap();
    let segs: Vec<_> = it.segments().collect();
    assert_eq!(segs, t);
    let pages: Vec<_> = it.pages().collect();
    assert_eq!(
        pages,
        table(&[(12, 100, 3996), (13, 0, 1004), (31, 0, 4096)])
    );
    assert_eq!(it.phys(), Some(10 * 4096 + 2 * 4096 + 100));
    assert_eq!(bytes_of_segs(it.pages()), bytes_of(&it));
}

#[test]
fn pages_at_page_boundaries() {
    let t = table(&[(0, 0, 3 * 4096)]);
    let mut it = BvecIter::new(&t, 0, 3 * 4096).unwrap();
    assert_eq!(it.pages().count(), 3);
    it.advance(4095).unwrap();
    assert_eq!(it.current_page(), Some(Bvec::new(Pfn(0), 4095, 1).unwrap()));
    it.advance(1).unwrap();
    assert_eq!(it.current_page(), Some(Bvec::new(Pfn(1), 0, 4096).unwrap()));
    assert_eq!(it.current(), Some(Bvec::new(Pfn(0), 4096, 8192).unwrap()));
    it.advance(4097).unwrap();
    assert_eq!(it.current_page(), Some(Bvec::new(Pfn(2), 1, 4095).unwrap()));
    let pages: Vec<_> = it.pages().collect();
    assert_eq!(pages, [Bvec::new(Pfn(2), 1, 4095).unwrap()]);
}

#[test]
fn views_honour_size() {
    let t = table(&[(0, 4000, 200), (5, 0, 100), (6, 0, 100)]);
    let mut it = BvecIter::new(&t, 0, 250).unwrap();
    it.advance(50).unwrap();
    let segs: Vec<_> = it.segments().collect();
    assert_eq!(segs, table(&[(0, 4050, 150), (5, 0, 50)]));
    let pages: Vec<_> = it.pages().collect();
    assert_eq!(pages, table(&[(0, 4050, 46), (1, 0, 104), (5, 0, 50)]));
    assert_eq!(bytes_of_segs(it.segments()), bytes_of(&it));
    assert_eq!(bytes_of_segs(it.pages()), bytes_of(&it));
    // Views do not move the iterator.
    assert_eq!(it.remaining(), 200);
}

#[test]
fn views_are_fused_and_hint_honestly() {
    let t = table(&[(0, 0, 5000), (9, 0, 10)]);
    let it = BvecIter::new(&t, 0, 5010).unwrap();
    let mut segs = it.segments();
    let (lo, hi) = segs.size_hint();
    assert!(lo <= 2 && hi.unwrap() >= 2);
    assert!(segs.next().is_some() && segs.next().is_some());
    assert_eq!(segs.size_hint(), (0, Some(0)));
    assert!(segs.next().is_none() && segs.next().is_none());
    assert_eq!(segs.as_iter().state().idx(), 2);
    let mut pages = it.pages();
    let (lo, hi) = pages.size_hint();
    assert!(lo <= 3 && hi.unwrap() >= 3);
    assert_eq!(pages.by_ref().count(), 3);
    assert!(pages.next().is_none());
    assert!(pages.as_iter().is_empty());
}

#[test]
fn empty_iterator_views() {
    let t = table(&[(0, 0, 10)]);
    let it = BvecIter::new(&t, 0, 0).unwrap();
    assert_eq!(it.current(), None);
    assert_eq!(it.current_page(), None);
    assert_eq!(it.phys(), None);
    assert_eq!(it.segments().next(), None);
    assert_eq!(it.pages().next(), None);
}

#[test]
fn pages_of_a_huge_segment() {
    let t = table(&[(1, 0, u32::MAX)]);
    let it = BvecIter::new(&t, 0, u32::MAX).unwrap();
    let mut n = 0u32;
    let mut last = None;
    for bv in it.pages() {
        assert!((bv.offset() as usize) < PAGE_SIZE && bv.end() as usize <= PAGE_SIZE);
        n += 1;
        last = Some(bv);
    }
    assert_eq!(n, 1 << 20);
    let last = last.unwrap();
    assert_eq!(
        (last.page(), last.offset(), last.len()),
        (Pfn(1).nth((1 << 20) - 1), 0, 4095)
    );
}
