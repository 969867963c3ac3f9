//! `new`, `from_state`, `advance` and `advance_single`.

use super::{bytes_of, pos, table};
use crate::{BvecError, BvecIter, IterState, Pfn};

#[test]
fn new_checks_size_against_table() {
    let t = table(&[(0, 0, 100), (1, 50, 100)]);
    assert_eq!(pos(&BvecIter::new(&t, 0, 200).unwrap()), (0, 0, 200));
    assert_eq!(
        BvecIter::new(&t, 0, 201).unwrap_err(),
        BvecError::SizeExceedsTable {
            requested: 201,
            available: 200
        }
    );
    let empty: [crate::Bvec<Pfn>; 0] = [];
    assert!(BvecIter::new(&empty, 0, 0).unwrap().is_empty());
    assert!(BvecIter::new(&empty, 0, 1).is_err());
}

#[test]
fn from_state_validates_position() {
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let ok = |i, d, s| BvecIter::from_state(&t, IterState::new(0, s, i, d)).map(|it| pos(&it));
    assert_eq!(ok(0, 99, 101), Ok((0, 99, 101)));
    assert_eq!(ok(1, 0, 100), Ok((1, 0, 100)));
    assert_eq!(ok(2, 0, 0), Ok((2, 0, 0)));
    assert_eq!(
        ok(0, 100, 0),
        Err(BvecError::BadPosition { idx: 0, done: 100 })
    );
    assert_eq!(ok(2, 1, 0), Err(BvecError::BadPosition { idx: 2, done: 1 }));
    assert_eq!(ok(3, 0, 0), Err(BvecError::BadPosition { idx: 3, done: 0 }));
    assert_eq!(
        ok(u32::MAX, 0, 0),
        Err(BvecError::BadPosition {
            idx: u32::MAX,
            done: 0
        })
    );
    assert_eq!(
        ok(2, 0, 1),
        Err(BvecError::SizeExceedsTable {
            requested: 1,
            available: 0
        })
    );
    assert_eq!(
        ok(0, 99, 102),
        Err(BvecError::SizeExceedsTable {
            requested: 102,
            available: 101
        })
    );
}

#[test]
fn advance_zero_is_a_no_op_everywhere() {
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let mut it = BvecIter::new(&t, 5, 200).unwrap();
    for step in [0, 30, 70, 100] {
        it.advance(step).unwrap();
        let before = it.state();
        it.advance(0).unwrap();
        assert_eq!(it.state(), before);
    }
    assert_eq!(pos(&it), (2, 0, 0));
}

#[test]
fn advance_landing_on_boundaries() {
    let t = table(&[(0, 0, 100), (1, 0, 200), (2, 0, 300)]);
    let mut it = BvecIter::new(&t, 0, 600).unwrap();
    it.advance(100).unwrap();
    assert_eq!(pos(&it), (1, 0, 500));
    it.advance(200).unwrap();
    assert_eq!(pos(&it), (2, 0, 300));
    let mut it = BvecIter::new(&t, 0, 600).unwrap();
    it.advance(300).unwrap(); // two whole segments in one step
    assert_eq!(pos(&it), (2, 0, 300));
    it.advance(300).unwrap();
    assert_eq!(pos(&it), (3, 0, 0));
}

#[test]
fn advance_to_size_end_inside_table() {
    // The size ends exactly at a segment end while more entries follow.
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let mut it = BvecIter::new(&t, 0, 100).unwrap();
    it.advance(100).unwrap();
    assert_eq!(pos(&it), (1, 0, 0));
    // ...and in the middle of a segment.
    let mut it = BvecIter::new(&t, 0, 150).unwrap();
    it.advance(150).unwrap();
    assert_eq!(pos(&it), (1, 50, 0));
    assert!(it.current().is_none());
}

#[test]
fn advance_past_end_leaves_iterator_unchanged() {
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let mut it = BvecIter::new(&t, 9, 150).unwrap();
    it.advance(20).unwrap();
    let before = it.state();
    assert_eq!(
        it.advance(131),
        Err(BvecError::PastEnd {
            requested: 131,
            remaining: 130
        })
    );
    assert_eq!(it.advance(u32::MAX).map_err(|_| ()), Err(()));
    assert_eq!(it.state(), before);
    it.advance(130).unwrap();
    assert_eq!(it.advance(1).map_err(|_| ()), Err(()));
}

#[test]
fn advance_keeps_bytes_and_sector() {
    let t = table(&[(0, 4000, 5000), (10, 0, 513), (20, 8192, 9000)]);
    let total = 5000 + 513 + 9000;
    for first in [0u32, 1, 511, 512, 4999, 5000, 5001, 5513, 9000, total] {
        let full = BvecIter::new(&t, 1000, total).unwrap();
        let mut it = full;
        it.advance(first).unwrap();
        assert_eq!(it.remaining(), total - first);
        assert_eq!(it.sector(), 1000 + u64::from(first >> 9));
        assert_eq!(bytes_of(&it), bytes_of(&full)[first as usize..]);
    }
}

#[test]
fn sector_counts_each_step_separately() {
    let t = table(&[(0, 0, 4096)]);
    let mut it = BvecIter::new(&t, 0, 4096).unwrap();
    it.advance(300).unwrap();
    it.advance(300).unwrap();
    assert_eq!(it.sector(), 0); // as bio_advance_iter: 300 >> 9 == 0 twice
    let mut one = BvecIter::new(&t, u64::MAX, 4096).unwrap();
    one.advance(1024).unwrap();
    assert_eq!(one.sector(), 1); // wraps, never panics
}

#[test]
fn advance_single_stays_in_segment() {
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let mut it = BvecIter::new(&t, 0, 150).unwrap();
    assert_eq!(
        it.advance_single(101),
        Err(BvecError::BeyondSegment {
            requested: 101,
            available: 100
        })
    );
    assert_eq!(pos(&it), (0, 0, 150));
    it.advance_single(0).unwrap();
    assert_eq!(pos(&it), (0, 0, 150));
    it.advance_single(100).unwrap();
    assert_eq!(pos(&it), (1, 0, 50));
    // The size, not the segment, is the limit here.
    assert_eq!(
        it.advance_single(51),
        Err(BvecError::PastEnd {
            requested: 51,
            remaining: 50
        })
    );
    it.advance_single(50).unwrap();
    assert_eq!(pos(&it), (1, 50, 0));
    assert!(it.advance_single(1).is_err());
}

#[test]
fn huge_segments_do_not_overflow() {
    let t = table(&[(0, 0, u32::MAX), (1 << 20, 0, u32::MAX), (1 << 21, 7, 9)]);
    let mut it = BvecIter::new(&t, 0, u32::MAX).unwrap();
    it.advance(u32::MAX - 1).unwrap();
    assert_eq!(pos(&it), (0, u32::MAX - 1, 1));
    it.advance(1).unwrap();
    assert_eq!(pos(&it), (1, 0, 0));
    let mut it = BvecIter::from_state(&t, IterState::new(0, u32::MAX, 0, u32::MAX - 1)).unwrap();
    it.advance(u32::MAX).unwrap(); // done + bytes exceeds u32 during the walk
    assert_eq!(pos(&it), (1, u32::MAX - 1, 0));
    assert_eq!(it.sector(), u64::from(u32::MAX >> 9));
}
