//! `nr_segments`, `nr_pages`, `nr_segs_remaining`, `nr_pages_remaining`.

use super::{pos, table};
use crate::{BvecError, BvecIter};

#[test]
fn counts_match_views_for_every_prefix() {
    let t = table(&[(0, 4000, 200), (5, 8192, 8193), (9, 0, 1), (9, 1, 4095)]);
    let total: u32 = t.iter().map(|b| b.len()).sum();
    for start in [0u32, 1, 96, 200, 4000, 8393, 8394] {
        let mut it = BvecIter::new(&t, 0, total).unwrap();
        it.advance(start).unwrap();
        for n in 0..=it.remaining() {
            let f = it.front(n).unwrap();
            assert_eq!(it.nr_segments(n).unwrap() as usize, f.segments().count());
            assert_eq!(it.nr_pages(n).unwrap() as usize, f.pages().count());
        }
        assert_eq!(it.nr_segs_remaining() as usize, it.segments().count());
        assert_eq!(it.nr_pages_remaining() as usize, it.pages().count());
    }
}

#[test]
fn counts_refuse_past_end() {
    let t = table(&[(0, 0, 100)]);
    let it = BvecIter::new(&t, 0, 50).unwrap();
    let err = BvecError::PastEnd {
        requested: 51,
        remaining: 50,
    };
    assert_eq!(it.nr_segments(51), Err(err));
    assert_eq!(it.nr_pages(51), Err(err));
    assert_eq!(pos(&it), (0, 0, 50));
}

#[test]
fn counts_of_huge_segments() {
    let t = table(&[(0, 0, u32::MAX), (1 << 20, 4095, 2)]);
    let it = BvecIter::new(&t, 0, u32::MAX).unwrap();
    assert_eq!(it.nr_segments(u32::MAX).unwrap(), 1);
    assert_eq!(it.nr_pages(u32::MAX).unwrap(), 1 << 20);
    let mut it = it;
    it.advance(u32::MAX).unwrap();
    assert!(it.is_empty());
    assert_eq!(it.nr_pages_remaining(), 0);
}
