//! Counting the segments a byte range of a bvec iterator touches (`bio_segments`,
//! `bvec_split_segs`, `bio_iov_vecs_to_alloc`).
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! Counting walks table entries, never pages: the page count of a piece of one entry is computed
//! from its first and last byte with two shifts. A range inside the current entry costs O(1); a
//! longer one costs one step per entry it touches.

use crate::iter::past_end;
use crate::{Bvec, BvecError, BvecIter, Page, PAGE_SHIFT};

/// Number of pages touched by `n > 0` bytes starting `skip` bytes into `bv`.
#[inline]
fn pages_in<P: Page>(bv: &Bvec<P>, skip: u32, n: u32) -> u32 {
    // No overflow: `skip + n <= bv.len()` and `offset + len <= u32::MAX`.
    let first = bv.offset().saturating_add(skip);
    let last = first.saturating_add(n).saturating_sub(1);
    (last >> PAGE_SHIFT) - (first >> PAGE_SHIFT) + 1
}

impl<P: Page> BvecIter<'_, P> {
    /// Sums `count(entry, skip, n)` over the pieces of table entries that the next `bytes` bytes
    /// cover (`n > 0` bytes of `entry` starting `skip` bytes in).
    #[inline]
    fn count_pieces(
        &self,
        bytes: u32,
        count: impl Fn(&Bvec<P>, u32, u32) -> u32,
    ) -> Result<u32, BvecError> {
        if bytes > self.remaining() {
            return Err(past_end(bytes, self.remaining()));
        }
        let state = self.state();
        let mut rem = bytes;
        let mut skip = state.done();
        let mut total = 0u32;
        let ahead = self.table().get(state.idx() as usize..).unwrap_or(&[]);
        for bv in ahead {
            if rem == 0 {
                break;
            }
            let n = rem.min(bv.len().saturating_sub(skip));
            // Every piece holds at least one byte per unit counted, so the sum is at most `bytes`.
            total = total.saturating_add(count(bv, skip, n));
            rem -= n;
            skip = 0;
        }
        Ok(total)
    }

    /// Number of table entries (multipage segments) the next `bytes` bytes touch.
    ///
    /// This is the item count of `front(bytes).segments()`. O(1) when the range stays inside
    /// the current entry, otherwise one step per entry touched.
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(1), 0, 100)?];
    /// let mut it = BvecIter::new(&table, 0, 200)?;
    /// assert_eq!(it.nr_segments(0)?, 0);
    /// assert_eq!(it.nr_segments(100)?, 1);
    /// assert_eq!(it.nr_segments(101)?, 2);
    /// it.advance(99)?;
    /// assert_eq!(it.nr_segments(2)?, 2);
    /// assert!(it.nr_segments(102).is_err());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn nr_segments(&self, bytes: u32) -> Result<u32, BvecError> {
        self.count_pieces(bytes, |_, _, _| 1)
    }

    /// Number of single-page segments the next `bytes` bytes touch (`bio_segments` of a window).
    ///
    /// This is the item count of `front(bytes).pages()`: each table entry is cut at page
    /// boundaries and pieces of different entries are never merged, even when they share a page.
    /// O(1) when the range stays inside the current entry, otherwise one step per entry touched.
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 4000, 8288)?, Bvec::new(Pfn(0), 0, 10)?];
    /// let it = BvecIter::new(&table, 0, 8298)?;
    /// assert_eq!(it.nr_pages(96)?, 1); // up to the first page boundary
    /// assert_eq!(it.nr_pages(97)?, 2);
    /// assert_eq!(it.nr_pages(8288)?, 3); // 96 + 4096 + 4096 bytes
    /// assert_eq!(it.nr_pages(8298)?, 4); // page 0 again, but another entry: not merged
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn nr_pages(&self, bytes: u32) -> Result<u32, BvecError> {
        self.count_pieces(bytes, pages_in)
    }

    /// Number of table entries the remaining bytes touch, to size a table that will hold them
    /// (`bio_iov_vecs_to_alloc`). One step per entry.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(1), 0, 100)?, Bvec::new(Pfn(2), 0, 1)?];
    /// let mut it = BvecIter::new(&table, 0, 150)?;
    /// assert_eq!(it.nr_segs_remaining(), 2);
    /// it.advance(150)?;
    /// assert_eq!(it.nr_segs_remaining(), 0);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn nr_segs_remaining(&self) -> u32 {
        self.nr_segments(self.remaining()).unwrap_or(0)
    }

    /// Number of single-page segments in the remaining bytes (`bio_segments`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 2048, 8192)?];
    /// assert_eq!(BvecIter::new(&table, 0, 8192)?.nr_pages_remaining(), 3);
    /// assert_eq!(BvecIter::new(&table, 0, 0)?.nr_pages_remaining(), 0);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn nr_pages_remaining(&self) -> u32 {
        self.nr_pages(self.remaining()).unwrap_or(0)
    }
}
