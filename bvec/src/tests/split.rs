//! `split_at`, `front`, `back`, `truncate`.

extern crate std;

use std::vec::Vec;

use super::{bytes_of, pos, table};
use crate::{BvecError, BvecIter};

/// Splits at `at` and checks the halves partition the original bytes.
fn check_split(
    it: BvecIter<'_, crate::Pfn>,
    at: u32,
) -> (BvecIter<'_, crate::Pfn>, BvecIter<'_, crate::Pfn>) {
    let whole = bytes_of(&it);
    let (f, b) = it.split_at(at).map_err(|(e, _)| e).unwrap();
    assert_eq!(f.remaining() + b.remaining(), it.remaining());
    let mut joined: Vec<_> = bytes_of(&f);
    joined.extend(bytes_of(&b));
    assert_eq!(joined, whole);
    assert!(core::ptr::eq(f.table(), it.table()) && core::ptr::eq(b.table(), it.table()));
    assert_eq!(f.sector(), it.sector());
    assert_eq!(b.sector(), it.sector() + u64::from(at >> 9));
    (f, b)
}

#[test]
fn split_at_zero_and_end() {
    let t = table(&[(0, 0, 1024), (1, 0, 1024)]);
    let it = BvecIter::new(&t, 4, 2048).unwrap();
    let (f, b) = check_split(it, 0);
    assert!(f.is_empty());
    assert_eq!(b.state(), it.state());
    let (f, b) = check_split(it, 2048);
    assert_eq!(f.state(), it.state());
    assert_eq!(pos(&b), (2, 0, 0));
}

#[test]
fn split_inside_and_on_boundary() {
    let t = table(&[(0, 100, 1024), (1, 0, 1024), (7, 5000, 3000)]);
    let it = BvecIter::new(&t, 0, 5048).unwrap();
    let (f, b) = check_split(it, 1500); // inside segment 1: shared
    assert_eq!(pos(&f), (0, 0, 1500));
    assert_eq!(pos(&b), (1, 476, 3548));
    assert_eq!(
        f.segments().last(),
        b.table().get(1).and_then(|bv| bv.window(0, 476))
    );
    let (f, b) = check_split(it, 1024); // on the boundary
    assert_eq!(f.segments().count(), 1);
    assert_eq!(pos(&b), (1, 0, 4024));
    // Split a split: the back half of the back half.
    let (_, bb) = check_split(b, 3000);
    assert_eq!(pos(&bb), (2, 1976, 1024));
}

#[test]
fn split_past_end_returns_iterator() {
    let t = table(&[(0, 0, 1024)]);
    let it = BvecIter::new(&t, 0, 1000).unwrap();
    let (e, back) = it.split_at(1001).unwrap_err();
    assert_eq!(
        e,
        BvecError::PastEnd {
            requested: 1001,
            remaining: 1000
        }
    );
    assert_eq!(back.state(), it.state());
}

#[test]
fn front_back_truncate() {
    let t = table(&[(0, 0, 1024), (1, 0, 1024)]);
    let it = BvecIter::new(&t, 0, 2048).unwrap();
    let f = it.front(1500).unwrap();
    assert_eq!(pos(&f), (0, 0, 1500));
    assert_eq!(f.nr_segs_remaining(), 2);
    let b = it.back(1500).unwrap();
    assert_eq!(pos(&b), (1, 476, 548));
    assert!(it.front(2049).is_err() && it.back(2049).is_err());
    let mut tr = it;
    tr.truncate(0).unwrap();
    assert_eq!(pos(&tr), (0, 0, 0));
    assert!(tr.truncate(1).is_err());
}
