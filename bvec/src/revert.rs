//! Moving a bvec iterator backwards, bounded by the start of its table.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)
//!
//! The kernel has no bvec revert (`iov_iter_revert` walks back over a bvec table without a lower
//! bound); this one refuses to go before the first byte of the table.

use crate::iter::sectors;
use crate::{BvecError, BvecIter, IterState, Page};

impl<P: Page> BvecIter<'_, P> {
    /// Moves back by `bytes`, growing the remaining size by as much (the inverse of [`Self::advance`]).
    ///
    /// The kernel has no bounded bvec revert; this one stops at the start of the table. The sector
    /// moves back by `bytes >> 9`. Landing on a segment boundary gives `done == 0` in the later
    /// segment. Cost: one step per segment crossed.
    ///
    /// # Errors
    ///
    /// [`BvecError::BeforeStart`] when fewer than `bytes` bytes precede the position in the table,
    /// or the remaining size would exceed `u32::MAX`; `available` is the largest revert that
    /// would have succeeded. The iterator is unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(1), 0, 100)?];
    /// let mut it = BvecIter::new(&table, 0, 200)?;
    /// it.advance(150)?;
    /// it.revert(50)?; // back onto the boundary
    /// assert_eq!((it.state().idx(), it.state().done(), it.remaining()), (1, 0, 100));
    /// assert_eq!(it.revert(101), Err(BvecError::BeforeStart { requested: 101, available: 100 }));
    /// it.revert(100)?; // back to the start of the table
    /// assert_eq!((it.state().idx(), it.state().done(), it.remaining()), (0, 0, 200));
    /// # Ok::<(), BvecError>(())
    /// ```
    pub fn revert(&mut self, bytes: u32) -> Result<(), BvecError> {
        let size = self.state().size();
        let Some(new_size) = size.checked_add(bytes) else {
            return Err(self.before_start(bytes));
        };
        let mut idx = self.state().idx() as usize;
        let done = self.state().done();
        let new_done = if bytes <= done {
            done - bytes
        } else {
            let mut rem = bytes - done;
            loop {
                let Some(prev) = idx.checked_sub(1) else {
                    return Err(self.before_start(bytes));
                };
                idx = prev;
                let Some(bv) = self.table().get(idx) else {
                    return Err(self.before_start(bytes));
                };
                if rem <= bv.len() {
                    break bv.len() - rem;
                }
                rem -= bv.len();
            }
        };
        let Ok(idx) = u32::try_from(idx) else {
            return Err(self.before_start(bytes));
        };
        let sector = self.state().sector().wrapping_sub(sectors(bytes));
        // INVARIANT: the new position lies `bytes` before the old one, inside the table, with
        // `done < len` (a revert of `rem == len` lands on the segment start); the bytes between
        // the two positions exist, so `new_size` bytes follow the new position.
        self.replace_state(IterState::new(sector, new_size, idx, new_done));
        Ok(())
    }

    /// Bytes between the start of the table and the position, counted up to `cap`.
    fn consumed(&self, cap: u64) -> u64 {
        let mut sum = u64::from(self.state().done());
        let head = self
            .table()
            .get(..self.state().idx() as usize)
            .unwrap_or(&[]);
        for bv in head.iter().rev() {
            if sum >= cap {
                break;
            }
            sum += u64::from(bv.len());
        }
        sum
    }

    /// The `BeforeStart` error for a revert of `bytes`, with the largest revert that would work.
    #[cold]
    fn before_start(&self, bytes: u32) -> BvecError {
        let headroom = u64::from(u32::MAX - self.state().size());
        BvecError::BeforeStart {
            requested: u64::from(bytes),
            available: self.consumed(headroom).min(headroom),
        }
    }
}
