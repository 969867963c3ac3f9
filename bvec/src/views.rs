//! Segment views of a bvec iterator: `mp_bvec_iter_bvec`, `bvec_iter_bvec` and the loops over them.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h),
//! [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! [`BvecIter::segments`] is `bio_for_each_bvec` (one item per table entry, multipage) and
//! [`BvecIter::pages`] is `bio_for_each_segment` (one item per page). Both start at the
//! iterator's position, stop after its remaining size, and borrow the table without copying it.

use core::iter::FusedIterator;

use crate::{Bvec, BvecIter, Page, PAGE_SHIFT, PAGE_SIZE};

/// `PAGE_SIZE` as a `u32`, for offset masks.
const PAGE_U32: u32 = PAGE_SIZE as u32;

impl<'a, P: Page> BvecIter<'a, P> {
    /// The rest of the current segment, clipped to the remaining size (`mp_bvec_iter_bvec`).
    ///
    /// Its offset may be `PAGE_SIZE` or more and it may span pages. `None` when the iterator is
    /// empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(4), 4000, 9000)?];
    /// let mut it = BvecIter::new(&table, 0, 6000)?;
    /// it.advance(1000)?;
    /// assert_eq!(it.current(), Some(Bvec::new(Pfn(4), 5000, 5000)?));
    /// it.advance(5000)?;
    /// assert_eq!(it.current(), None);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn current(&self) -> Option<Bvec<P>> {
        let state = self.state();
        self.table()
            .get(state.idx() as usize)?
            .window(state.done(), state.size())
    }

    /// The part of the current segment inside its current page (`bvec_iter_bvec`).
    ///
    /// The page is the actual page (`page.nth(k)`), the offset is below `PAGE_SIZE` and the
    /// segment never crosses a page. `None` when the iterator is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(4), 4000, 9000)?];
    /// let mut it = BvecIter::new(&table, 0, 9000)?;
    /// assert_eq!(it.current_page(), Some(Bvec::new(Pfn(4), 4000, 96)?));
    /// it.advance(96)?; // onto the page boundary
    /// assert_eq!(it.current_page(), Some(Bvec::new(Pfn(5), 0, 4096)?));
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn current_page(&self) -> Option<Bvec<P>> {
        let mp = self.current()?;
        let abs = mp.offset();
        let offset = abs & (PAGE_U32 - 1);
        let in_page = PAGE_U32 - offset;
        let len = if mp.len() < in_page {
            mp.len()
        } else {
            in_page
        };
        let page = mp.page().nth((abs >> PAGE_SHIFT) as usize);
        Bvec::new(page, offset, len).ok()
    }

    /// Physical address of the next byte (`bvec_phys` of the current multipage view).
    ///
    /// `None` when the iterator is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn, PAGE_SIZE};
    /// let table = [Bvec::new(Pfn(2), 100, 8000)?];
    /// let mut it = BvecIter::new(&table, 0, 8000)?;
    /// it.advance(5000)?;
    /// assert_eq!(it.phys(), Some(2 * PAGE_SIZE as u64 + 5100));
    /// it.advance(3000)?;
    /// assert_eq!(it.phys(), None);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn phys(&self) -> Option<u64> {
        Some(self.current()?.phys())
    }

    /// Multipage segments from the position on, clipped to the remaining size
    /// (`bio_for_each_bvec`). The iterator itself does not move.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 6000)?, Bvec::new(Pfn(8), 10, 20)?];
    /// let mut it = BvecIter::new(&table, 0, 6010)?;
    /// it.advance(1000)?;
    /// let segs: Vec<_> = it.segments().collect();
    /// assert_eq!(segs, [Bvec::new(Pfn(0), 1000, 5000)?, Bvec::new(Pfn(8), 10, 10)?]);
    /// assert_eq!(BvecIter::new(&table, 0, 0)?.segments().count(), 0);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn segments(&self) -> Segments<'a, P> {
        Segments { iter: *self }
    }

    /// Single-page segments from the position on, clipped to the remaining size
    /// (`bio_for_each_segment`). The iterator itself does not move.
    ///
    /// Each item lies inside one page: its page is the real page (`page.nth(k)`) and its offset is
    /// below `PAGE_SIZE`. A segment is cut at every page boundary; items of different table entries
    /// are never merged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 4000, 4200)?, Bvec::new(Pfn(9), 0, 10)?];
    /// let pages: Vec<_> = BvecIter::new(&table, 0, 4205)?.pages().collect();
    /// assert_eq!(
    ///     pages,
    ///     [Bvec::new(Pfn(0), 4000, 96)?, Bvec::new(Pfn(1), 0, 4096)?,
    ///      Bvec::new(Pfn(2), 0, 8)?, Bvec::new(Pfn(9), 0, 5)?]
    /// );
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn pages(&self) -> Pages<'a, P> {
        Pages { iter: *self }
    }
}

/// Iterator over the multipage segments of a [`BvecIter`]; see [`BvecIter::segments`].
#[must_use = "iterators are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Segments<'a, P: Page> {
    /// Position of the next item.
    iter: BvecIter<'a, P>,
}

impl<'a, P: Page> Segments<'a, P> {
    /// The position after the items yielded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 10)?, Bvec::new(Pfn(1), 0, 10)?];
    /// let mut segs = BvecIter::new(&table, 0, 20)?.segments();
    /// segs.next();
    /// assert_eq!(segs.as_iter().state().idx(), 1);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn as_iter(&self) -> BvecIter<'a, P> {
        self.iter
    }
}

impl<P: Page> Iterator for Segments<'_, P> {
    type Item = Bvec<P>;

    #[inline]
    fn next(&mut self) -> Option<Bvec<P>> {
        let s = self.iter.state();
        let seg = self.iter.table().get(s.idx() as usize)?;
        // The rest of the current segment, clipped to the size; `None` when the size is 0.
        let bv = seg.window(s.done(), s.size())?;
        // `window` made the checks `advance_single` would make again: `done + len <=
        // seg.len()` and `len <= size`.
        self.iter.step_in_segment(seg.len(), bv.len());
        Some(bv)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let size = self.iter.remaining() as usize;
        if size == 0 {
            return (0, Some(0));
        }
        // Each item holds at least one byte and is a different table entry.
        let entries = self
            .iter
            .table()
            .len()
            .saturating_sub(self.iter.state().idx() as usize);
        (1, Some(size.min(entries)))
    }
}

impl<P: Page> FusedIterator for Segments<'_, P> {}

/// Iterator over the single-page segments of a [`BvecIter`]; see [`BvecIter::pages`].
#[must_use = "iterators are lazy and do nothing unless consumed"]
#[derive(Clone, Debug)]
pub struct Pages<'a, P: Page> {
    /// Position of the next item.
    iter: BvecIter<'a, P>,
}

impl<'a, P: Page> Pages<'a, P> {
    /// The position after the items yielded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 8192)?];
    /// let mut pages = BvecIter::new(&table, 0, 8192)?.pages();
    /// pages.next();
    /// assert_eq!(pages.as_iter().state().done(), 4096);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn as_iter(&self) -> BvecIter<'a, P> {
        self.iter
    }
}

impl<P: Page> Iterator for Pages<'_, P> {
    type Item = Bvec<P>;

    #[inline]
    fn next(&mut self) -> Option<Bvec<P>> {
        let bv = self.iter.current_page()?;
        // `bv` is a prefix of the current segment, so this step cannot fail.
        self.iter.advance_single(bv.len()).ok()?;
        Some(bv)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let size = self.iter.remaining();
        // Each item holds at most one page and at least one byte.
        let min = (size >> PAGE_SHIFT) + u32::from(size & (PAGE_U32 - 1) != 0);
        (min as usize, Some(size as usize))
    }
}

impl<P: Page> FusedIterator for Pages<'_, P> {}
