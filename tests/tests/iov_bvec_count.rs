//! `IovIter::bvec`'s count check and end position against a plain model of the kernel's rules,
//! at every count that matters (each entry boundary, one byte either side, beyond the total) on
//! tables long enough for the constructor's whole-block walk (8 entries per compare) to run,
//! stop inside a block and leave a remainder.
//!
//! The model: lib/iov_iter.c `iov_iter_bvec()` takes any count the entries hold (we refuse one
//! they do not, reporting their total); `iov_iter_bvec_advance()` by the whole count lands where
//! the count ends (a boundary at the next entry); `iov_iter_npages()` counts, per entry the
//! count covers, the pages its bytes touch (`bvec_npages()`).

use bvec::{Bvec, Pfn, PAGE_SIZE};
use iov::{IovError, IovIter, Source};
use proptest::prelude::*;

/// Where `count` bytes from the table start end, as `iov_iter_bvec_advance()` leaves it.
fn model_end(lens: &[u32], count: usize) -> (usize, usize) {
    if count == 0 {
        return (0, 0);
    }
    let mut size = count;
    for (i, &len) in lens.iter().enumerate() {
        if size < len as usize {
            return (i, size);
        }
        size -= len as usize;
    }
    (lens.len(), size)
}

/// Pages the first `count` bytes touch, entry by entry (`bvec_npages()`).
fn model_npages(entries: &[(u32, u32)], count: usize) -> usize {
    let mut left = count;
    let mut pages = 0;
    for &(off, len) in entries {
        if left == 0 {
            break;
        }
        let part = left.min(len as usize);
        let start = off as usize % PAGE_SIZE;
        pages += (start + part).div_ceil(PAGE_SIZE);
        left -= part;
    }
    pages
}

/// An entry: mostly whole pages (so that some tables are page-aligned throughout), else any
/// offset and length up to three pages.
fn entry() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![
        3 => (0u32..2, 1u32..3).prop_map(|(o, l)| (o * 4096, l * 4096)),
        1 => (0u32..3 * 4096, 1u32..3 * 4096),
    ]
}

/// The counts worth checking on a table of these lengths.
fn counts(lens: &[u32]) -> Vec<usize> {
    let mut v = vec![0, 1];
    let mut sum = 0usize;
    for &l in lens {
        sum += l as usize;
        v.extend([sum - 1, sum, sum + 1]);
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn bvec_constructor_matches_model(entries in prop::collection::vec(entry(), 0..40)) {
        let table: Vec<Bvec<Pfn>> = entries
            .iter()
            .enumerate()
            .map(|(i, &(o, l))| Bvec::new(Pfn(100 + 8 * i as u64), o, l).expect("valid entry"))
            .collect();
        let lens: Vec<u32> = entries.iter().map(|e| e.1).collect();
        let total: usize = lens.iter().map(|&l| l as usize).sum();
        for count in counts(&lens) {
            match IovIter::<Pfn, Source>::bvec(&table, count) {
                Ok(mut it) => {
                    prop_assert!(count <= total, "count {} over total {} accepted", count, total);
                    prop_assert_eq!(it.count(), count);
                    prop_assert_eq!(it.npages(usize::MAX), model_npages(&entries, count));
                    it.advance(count);
                    prop_assert_eq!(
                        (it.segment_index(), it.iov_offset()),
                        model_end(&lens, count),
                        "count {}", count
                    );
                    prop_assert_eq!(it.count(), 0);
                }
                Err(e) => {
                    prop_assert!(count > total, "count {} within total {} refused", count, total);
                    prop_assert_eq!(
                        e,
                        IovError::CountExceedsSegments { count, available: total }
                    );
                }
            }
        }
    }
}
