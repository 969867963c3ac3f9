//! `revert`.

use super::{pos, table};
use crate::{BvecError, BvecIter, IterState};

#[test]
fn revert_to_start_and_past_it() {
    let t = table(&[(0, 0, 100), (1, 0, 100), (2, 0, 100)]);
    let mut it = BvecIter::new(&t, 10, 300).unwrap();
    it.advance(250).unwrap();
    let before = it.state();
    assert_eq!(
        it.revert(251),
        Err(BvecError::BeforeStart {
            requested: 251,
            available: 250
        })
    );
    assert_eq!(it.state(), before);
    it.revert(250).unwrap();
    assert_eq!(pos(&it), (0, 0, 300));
    assert_eq!(it.sector(), 10);
    assert!(it.revert(1).is_err());
    it.revert(0).unwrap();
    assert_eq!(pos(&it), (0, 0, 300));
}

#[test]
fn revert_lands_on_boundaries_like_advance() {
    let t = table(&[(0, 0, 100), (1, 0, 100), (2, 0, 100)]);
    let mut it = BvecIter::new(&t, 0, 300).unwrap();
    it.advance(300).unwrap();
    assert_eq!(pos(&it), (3, 0, 0));
    it.revert(100).unwrap();
    assert_eq!(pos(&it), (2, 0, 100));
    it.revert(1).unwrap();
    assert_eq!(pos(&it), (1, 99, 101));
    it.revert(199).unwrap();
    assert_eq!(pos(&it), (0, 0, 300));
}

#[test]
fn revert_inverts_advance() {
    let t = table(&[(0, 4000, 5000), (10, 0, 513), (20, 8192, 9000)]);
    let total = 5000 + 513 + 9000;
    for a in [0u32, 1, 512, 5000, 5001, 5513, total] {
        for b in [0u32, 1, 512, 5000, 5513] {
            if b > a {
                continue;
            }
            let mut it = BvecIter::new(&t, 77, total).unwrap();
            it.advance(a - b).unwrap();
            let mid = it.state();
            it.advance(b).unwrap();
            it.revert(b).unwrap();
            assert_eq!(it.state(), mid, "advance {a} then revert {b}");
        }
    }
}

#[test]
fn revert_exhausted_front_half() {
    // An iterator whose size ran out mid-table can be moved back over bytes it already did.
    let t = table(&[(0, 0, 100), (1, 0, 100)]);
    let mut it = BvecIter::new(&t, 0, 150).unwrap();
    it.advance(150).unwrap();
    it.revert(60).unwrap();
    assert_eq!(pos(&it), (0, 90, 60));
}

#[test]
fn revert_limited_by_u32_size() {
    let t = table(&[(0, 0, u32::MAX), (1 << 20, 0, u32::MAX)]);
    let mut it = BvecIter::from_state(&t, IterState::new(0, u32::MAX - 5, 1, 0)).unwrap();
    let before = it.state();
    assert_eq!(
        it.revert(6),
        Err(BvecError::BeforeStart {
            requested: 6,
            available: 5
        })
    );
    assert_eq!(it.state(), before);
    it.revert(5).unwrap();
    assert_eq!(pos(&it), (0, u32::MAX - 5, u32::MAX));
}
