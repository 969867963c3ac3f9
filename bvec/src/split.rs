//! Splitting a bvec iterator without copying its table (`bio_split`'s iterator arithmetic).
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! Both halves borrow the same table. The segment that straddles the split point is shared: the
//! front half ends inside it and the back half starts at the split offset in it, which is what a
//! split bio does with `bi_iter` (`bio_trim` + `bio_advance`).

use crate::iter::past_end;
use crate::{BvecError, BvecIter, Page};

impl<P: Page> BvecIter<'_, P> {
    /// Cuts the iterator into `[0, bytes)` and `[bytes, remaining)`.
    ///
    /// The front half keeps the position and sector; the back half is the iterator advanced by
    /// `bytes` (sector moved by `bytes >> 9`). Splitting at 0 gives an empty front, splitting at
    /// [`Self::remaining`] an empty back.
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`; the unchanged iterator is handed
    /// back with the error.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 1024)?, Bvec::new(Pfn(1), 0, 1024)?];
    /// let it = BvecIter::new(&table, 0, 2048)?;
    /// let (front, back) = it.split_at(1536).map_err(|(e, _)| e)?;
    /// assert_eq!((front.remaining(), back.remaining()), (1024 + 512, 512));
    /// assert_eq!((back.state().idx(), back.state().done(), back.sector()), (1, 512, 3));
    /// assert_eq!(front.segments().last(), Some(Bvec::new(Pfn(1), 0, 512)?));
    ///
    /// let (e, it) = it.split_at(2049).unwrap_err();
    /// assert_eq!(e, BvecError::PastEnd { requested: 2049, remaining: 2048 });
    /// assert_eq!(it.remaining(), 2048);
    /// # Ok::<(), BvecError>(())
    /// ```
    pub fn split_at(self, bytes: u32) -> Result<(Self, Self), (BvecError, Self)> {
        let mut back = self;
        if let Err(e) = back.advance(bytes) {
            return Err((e, self));
        }
        let mut front = self;
        front.set_size(bytes);
        Ok((front, back))
    }

    /// A copy covering only the first `bytes` bytes (the front half of [`Self::split_at`]).
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 4096)?];
    /// let it = BvecIter::new(&table, 0, 4096)?;
    /// assert_eq!(it.front(512)?.remaining(), 512);
    /// assert!(it.front(0)?.is_empty());
    /// assert!(it.front(4097).is_err());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn front(&self, bytes: u32) -> Result<Self, BvecError> {
        let mut front = *self;
        front.truncate(bytes)?;
        Ok(front)
    }

    /// A copy advanced by `bytes` (the back half of [`Self::split_at`]).
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 4096)?];
    /// let it = BvecIter::new(&table, 0, 4096)?;
    /// assert_eq!(it.back(512)?.state().done(), 512);
    /// assert!(it.back(4096)?.is_empty());
    /// assert!(it.back(4097).is_err());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn back(&self, bytes: u32) -> Result<Self, BvecError> {
        let mut back = *self;
        back.advance(bytes)?;
        Ok(back)
    }

    /// Shrinks the remaining size to `size` bytes, keeping the position (`bio_truncate`'s iterator
    /// part).
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `size > self.remaining()` (an iterator can only shrink);
    /// the iterator is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 4096)?];
    /// let mut it = BvecIter::new(&table, 0, 2048)?;
    /// it.truncate(2048)?; // no-op
    /// it.truncate(100)?;
    /// assert_eq!(it.remaining(), 100);
    /// assert_eq!(it.truncate(101), Err(BvecError::PastEnd { requested: 101, remaining: 100 }));
    /// # Ok::<(), BvecError>(())
    /// ```
    #[inline]
    pub fn truncate(&mut self, size: u32) -> Result<(), BvecError> {
        if size > self.remaining() {
            return Err(past_end(size, self.remaining()));
        }
        self.set_size(size);
        Ok(())
    }
}
