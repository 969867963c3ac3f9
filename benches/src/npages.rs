//! `iov_iter_npages` on a 65,536-segment BVEC iterator: the crate's answer against a walk.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! Seed 003 made `iov_iter_npages` O(1) for bvecs; Linux 6.12 walks the table again (multipage
//! bvecs broke the one-page-per-entry shortcut). The iov crate answers in O(1) when every entry
//! is page-aligned at both ends and walks otherwise. [`walk_npages`] is the straightforward
//! per-segment walk the benchmark compares against.

use core::cmp::min;

use bvec::{Bvec, Pfn, PAGE_SIZE};

const PAGE_MASK: usize = PAGE_SIZE - 1;

/// Pages touched by the first `count` bytes of `table` starting `skip` bytes into its first
/// entry, at most `maxpages`: one division per segment (`bvec_npages`).
///
/// # Examples
///
/// ```
/// use bvec::{Bvec, Pfn};
/// use iovstack_benches::npages::walk_npages;
/// let t = [Bvec::new(Pfn(0), 0, 8192)?, Bvec::new(Pfn(5), 100, 4000)?];
/// assert_eq!(walk_npages(&t, 100, 12092, usize::MAX), 4); // 2 + 2: the second entry straddles
/// assert_eq!(walk_npages(&t, 0, 4096, usize::MAX), 1);
/// assert_eq!(walk_npages(&t, 0, 12192, 2), 2);
/// # Ok::<(), bvec::BvecError>(())
/// ```
pub fn walk_npages(table: &[Bvec<Pfn>], skip: usize, count: usize, maxpages: usize) -> usize {
    let (mut skip, mut left, mut npages) = (skip, count, 0usize);
    for bv in table {
        if left == 0 {
            break;
        }
        let offs = (bv.offset() as usize + skip) & PAGE_MASK;
        let len = min((bv.len() as usize).saturating_sub(skip), left);
        left -= len;
        npages += (offs + len).div_ceil(PAGE_SIZE);
        if npages >= maxpages {
            return maxpages;
        }
        skip = 0;
    }
    npages
}

/// `npages` single-page bvecs of distinct pages with the last one a byte short, so the table is
/// not page-uniform and the crate takes its walking path.
pub fn ragged_table(npages: usize) -> Vec<Bvec<Pfn>> {
    (0..npages)
        .filter_map(|i| {
            let len = if i + 1 == npages {
                PAGE_SIZE - 1
            } else {
                PAGE_SIZE
            };
            Bvec::new(Pfn(i as u64), 0, len as u32).ok()
        })
        .collect()
}

/// Bytes described by `table`.
pub fn table_bytes(table: &[Bvec<Pfn>]) -> usize {
    table.iter().map(|b| b.len() as usize).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iov::{IovIter, Source};

    #[test]
    fn walk_agrees_with_the_crate_on_both_paths() {
        let uniform = vec![crate::kunit::PAGE_BVEC; 1000];
        let ragged = ragged_table(1000);
        for t in [&uniform, &ragged] {
            let total = table_bytes(t);
            let mut it = IovIter::<Pfn, Source>::bvec(t, total).unwrap();
            for step in [0usize, 100, 4000, 1 << 20] {
                it.advance(step);
                let (rest, skip) = it.bvec_table().unwrap();
                for max in [1usize, 7, 999, usize::MAX] {
                    assert_eq!(it.npages(max), walk_npages(rest, skip, it.count(), max));
                }
            }
        }
    }
}
