//! A checked cursor over a bvec table: `bvec_iter_advance` and friends.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)
//!
//! Views (`segments`, `pages`) live in `views.rs`, splitting in `split.rs` and segment counting in
//! `count.rs`; all of them are methods of [`BvecIter`].

use crate::{Bvec, BvecError, IterState, Page};

/// Longest table an iterator addresses: `bi_idx` is a `u32`.
const MAX_TABLE: usize = u32::MAX as usize;

/// Sector distance covered by `bytes`, as `bio_advance_iter` counts it (`bytes >> 9`).
#[inline]
pub(crate) const fn sectors(bytes: u32) -> u64 {
    (bytes >> 9) as u64
}

/// The `PastEnd` error, out of line because it is the unlikely path.
#[cold]
pub(crate) fn past_end(requested: u32, remaining: u32) -> BvecError {
    BvecError::PastEnd {
        requested: u64::from(requested),
        remaining: u64::from(remaining),
    }
}

/// A cursor over a bvec table with a residual byte count (`struct bvec_iter` plus its table).
///
/// The cursor never owns the table: clones, splits and views all borrow the same `&[Bvec]`, so
/// nothing is ever copied, exactly like a cloned or split bio sharing its parent's `bi_io_vec`.
///
/// Every operation that could leave the table fails instead, with a [`BvecError`], and leaves the
/// iterator unchanged. The kernel WARNs and clamps (`bvec_iter_advance`) or walks off the array.
///
/// # Sector accounting
///
/// Like `bio_advance_iter`, every move of `n` bytes moves [`Self::sector`] by `n >> 9`, so moving in
/// pieces that are not multiples of 512 advances the sector by less than one move of the sum would.
/// Block I/O always moves in multiples of the logical block size. The sector is a label: it wraps
/// and is never checked.
///
/// # Invariants
///
/// - `table.len() <= u32::MAX`.
/// - `state.idx <= table.len()`. If `state.idx < table.len()` then
///   `state.done < table[state.idx].len()`; otherwise `state.done == 0` and `state.size == 0`.
/// - `state.size` is at most the number of bytes from the position to the end of the table.
///
/// # Examples
///
/// ```
/// use bvec::{Bvec, BvecIter, Pfn};
/// let table = [Bvec::new(Pfn(1), 0, 4096)?, Bvec::new(Pfn(9), 512, 1024)?];
/// let mut it = BvecIter::new(&table, 0, 5120)?;
/// it.advance(4096)?; // lands exactly on the boundary: next segment, done = 0
/// assert_eq!((it.state().idx(), it.state().done(), it.sector()), (1, 0, 8));
/// assert!(it.advance(2048).is_err()); // past the end: refused, nothing changed
/// assert_eq!(it.remaining(), 1024);
/// # Ok::<(), bvec::BvecError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BvecIter<'a, P: Page> {
    table: &'a [Bvec<P>],
    state: IterState,
}

/// The first `u32::MAX` entries of `table` (all of it in practice).
#[inline]
fn clamp<P>(table: &[Bvec<P>]) -> &[Bvec<P>] {
    match table.get(..MAX_TABLE) {
        Some(head) => head,
        None => table,
    }
}

/// Bytes from position `(idx, done)` to the end of `table`, summing whole segments only until
/// `want` is reached (so the cost is the number of segments `want` covers, not the table length).
fn bytes_from<P: Page>(table: &[Bvec<P>], idx: usize, done: u32, want: u32) -> u64 {
    let want = u64::from(want);
    let mut sum = 0u64;
    let mut skip = u64::from(done);
    for bv in table.get(idx..).unwrap_or(&[]) {
        if sum >= want {
            break;
        }
        sum += u64::from(bv.len()).saturating_sub(skip);
        skip = 0;
    }
    sum
}

impl<'a, P: Page> BvecIter<'a, P> {
    /// Starts at the beginning of `table`, covering its first `size` bytes, at `sector`.
    ///
    /// Only the first `u32::MAX` entries of a longer table are used (`bi_idx` is a `u32`).
    /// Cost: one step per segment that `size` covers.
    ///
    /// # Errors
    ///
    /// [`BvecError::SizeExceedsTable`] when the table holds fewer than `size` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 100, 300)?];
    /// assert_eq!(BvecIter::new(&table, 5, 300)?.remaining(), 300);
    /// assert!(BvecIter::new(&table, 5, 0)?.is_empty());
    /// assert_eq!(
    ///     BvecIter::new(&table, 5, 301).unwrap_err(),
    ///     BvecError::SizeExceedsTable { requested: 301, available: 300 }
    /// );
    /// assert!(BvecIter::<Pfn>::new(&[], 0, 0)?.is_empty());
    /// # Ok::<(), BvecError>(())
    /// ```
    pub fn new(table: &'a [Bvec<P>], sector: u64, size: u32) -> Result<Self, BvecError> {
        Self::from_state(table, IterState::new(sector, size, 0, 0))
    }

    /// Rebuilds an iterator from a saved state (a bio's `bi_iter`), checking it against `table`.
    ///
    /// Cost: one step per segment that `state.size()` covers.
    ///
    /// # Errors
    ///
    /// - [`BvecError::BadPosition`] when `idx` is past the table, or `done` is not inside
    ///   segment `idx` (`idx == table.len()` with `done == 0` is the valid end position).
    /// - [`BvecError::SizeExceedsTable`] when fewer than `size` bytes follow the position.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, IterState, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 1000)?, Bvec::new(Pfn(5), 0, 24)?];
    /// let it = BvecIter::from_state(&table, IterState::new(0, 524, 0, 500))?;
    /// assert_eq!(it.remaining(), 524);
    /// // The end of the table is a valid, empty position.
    /// assert!(BvecIter::from_state(&table, IterState::new(0, 0, 2, 0))?.is_empty());
    /// assert_eq!(
    ///     BvecIter::from_state(&table, IterState::new(0, 0, 0, 1000)).unwrap_err(),
    ///     BvecError::BadPosition { idx: 0, done: 1000 }
    /// );
    /// assert_eq!(
    ///     BvecIter::from_state(&table, IterState::new(0, 25, 1, 0)).unwrap_err(),
    ///     BvecError::SizeExceedsTable { requested: 25, available: 24 }
    /// );
    /// # Ok::<(), BvecError>(())
    /// ```
    pub fn from_state(table: &'a [Bvec<P>], state: IterState) -> Result<Self, BvecError> {
        let table = clamp(table);
        let (idx, done, size) = (state.idx(), state.done(), state.size());
        let bad = BvecError::BadPosition { idx, done };
        let idx_us = idx as usize;
        match table.get(idx_us) {
            Some(bv) if done >= bv.len() => return Err(bad),
            Some(_) => {}
            None if idx_us == table.len() && done == 0 => {}
            None => return Err(bad),
        }
        let available = bytes_from(table, idx_us, done, size);
        if u64::from(size) > available {
            return Err(BvecError::SizeExceedsTable {
                requested: u64::from(size),
                available,
            });
        }
        // INVARIANT: `table` was clamped to `u32::MAX` entries; the position and size were
        // checked against it just above.
        Ok(Self { table, state })
    }

    /// Rebuilds an iterator from a state whose size the caller already knows fits, in O(1).
    ///
    /// Like [`Self::from_state`], the position (`idx`, `done`) is checked; unlike it, the
    /// O(segments) check that `state.size()` bytes follow the position is skipped. This is for
    /// callers that hold that fact as an invariant of their own, such as an `iov_iter` handing its
    /// bvec table to a bio (seed 000: reuse the table without copying or walking it).
    ///
    /// The caller must ensure that at least `state.size()` bytes follow the position. Breaking
    /// that promise cannot cause undefined behaviour or a panic: every walk stops at the table end
    /// (an advance past it returns [`BvecError::PastEnd`] and changes nothing), but views then
    /// yield fewer bytes than [`Self::remaining`] reports.
    ///
    /// # Errors
    ///
    /// [`BvecError::BadPosition`] as for [`Self::from_state`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, IterState, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 1000)?, Bvec::new(Pfn(5), 0, 24)?];
    /// let it = BvecIter::from_state_unchecked(&table, IterState::new(0, 524, 0, 500))?;
    /// assert_eq!(it.segments().map(|b| b.len()).sum::<u32>(), 524);
    /// assert!(BvecIter::from_state_unchecked(&table, IterState::new(0, 1, 3, 0)).is_err());
    /// # Ok::<(), BvecError>(())
    /// ```
    #[inline]
    pub fn from_state_unchecked(table: &'a [Bvec<P>], state: IterState) -> Result<Self, BvecError> {
        let table = clamp(table);
        let (idx, done) = (state.idx(), state.done());
        match table.get(idx as usize) {
            Some(bv) if done < bv.len() => {}
            None if idx as usize == table.len() && done == 0 => {}
            _ => return Err(BvecError::BadPosition { idx, done }),
        }
        // INVARIANT: the position was checked above; the size is the caller's promise, and the
        // walks stay inside the table even if it is broken.
        Ok(Self { table, state })
    }

    /// The plain-data position, to store in a bio and give back to [`Self::from_state`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, IterState, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 4096)?];
    /// let mut it = BvecIter::new(&table, 0, 4096)?;
    /// it.advance(1024)?;
    /// assert_eq!(it.state(), IterState::new(2, 3072, 0, 1024));
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub const fn state(&self) -> IterState {
        self.state
    }

    /// The whole table the iterator walks (not only the part still ahead of it).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 8)?, Bvec::new(Pfn(1), 0, 8)?];
    /// let mut it = BvecIter::new(&table, 0, 16)?;
    /// it.advance(12)?;
    /// assert_eq!(it.table().len(), 2);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub const fn table(&self) -> &'a [Bvec<P>] {
        self.table
    }

    /// Bytes left to iterate (`bi_size`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 8)?];
    /// let mut it = BvecIter::new(&table, 0, 6)?;
    /// it.advance(6)?;
    /// assert_eq!(it.remaining(), 0);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub const fn remaining(&self) -> u32 {
        self.state.size()
    }

    /// First sector of the remaining I/O (`bi_sector`); see "Sector accounting" above.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 4096)?];
    /// let mut it = BvecIter::new(&table, 100, 4096)?;
    /// it.advance(511)?; // less than one sector: the sector does not move
    /// assert_eq!(it.sector(), 100);
    /// it.advance(1024)?;
    /// assert_eq!(it.sector(), 102);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub const fn sector(&self) -> u64 {
        self.state.sector()
    }

    /// True when no bytes are left.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 8)?];
    /// assert!(!BvecIter::new(&table, 0, 1)?.is_empty());
    /// assert!(BvecIter::new(&table, 0, 0)?.is_empty());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.state.size() == 0
    }

    /// Moves forward by `bytes` (`bvec_iter_advance` + the sector update of `bio_advance_iter`).
    ///
    /// Whole segments are skipped with one subtraction each, with no per-page work. Landing
    /// exactly on the end of a segment moves to the start of the next one (`done == 0`).
    /// `advance(0)` changes nothing.
    ///
    /// # Errors
    ///
    /// [`BvecError::PastEnd`] when `bytes > self.remaining()`; the iterator is left unchanged (the
    /// kernel WARNs and empties it instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(1), 0, 100)?, Bvec::new(Pfn(2), 0, 100)?];
    /// let mut it = BvecIter::new(&table, 0, 300)?;
    /// it.advance(150)?;
    /// assert_eq!((it.state().idx(), it.state().done()), (1, 50));
    /// it.advance(0)?;
    /// assert_eq!((it.state().idx(), it.state().done()), (1, 50));
    /// assert_eq!(it.advance(151), Err(BvecError::PastEnd { requested: 151, remaining: 150 }));
    /// it.advance(150)?; // to the very end
    /// assert_eq!((it.state().idx(), it.state().done(), it.remaining()), (3, 0, 0));
    /// # Ok::<(), BvecError>(())
    /// ```
    #[inline]
    pub fn advance(&mut self, bytes: u32) -> Result<(), BvecError> {
        let size = self.state.size();
        let Some(new_size) = size.checked_sub(bytes) else {
            return Err(past_end(bytes, size));
        };
        let mut idx = self.state.idx() as usize;
        let mut rem = u64::from(self.state.done()) + u64::from(bytes);
        while rem > 0 {
            // `bytes <= size` and the size invariant keep `idx` inside the table while `rem > 0`.
            let Some(bv) = self.table.get(idx) else {
                return Err(past_end(bytes, size));
            };
            let len = u64::from(bv.len());
            if rem < len {
                break;
            }
            rem -= len;
            idx += 1;
        }
        // Both fit: `rem < table[idx].len()` (or 0) and `idx <= table.len() <= u32::MAX`.
        let (Ok(done), Ok(idx)) = (u32::try_from(rem), u32::try_from(idx)) else {
            return Err(past_end(bytes, size));
        };
        let sector = self.state.sector().wrapping_add(sectors(bytes));
        // INVARIANT: the walk consumed exactly `done + bytes` bytes from the segment starts, so the
        // new position is `bytes` further on and `new_size` bytes still follow it; landing on a
        // segment end moved to the next segment, so `done < len` (or `idx == len`, `size == 0`).
        self.state = IterState::new(sector, new_size, idx, done);
        Ok(())
    }

    /// Moves forward by `bytes` inside the current segment (`bvec_iter_advance_single`).
    ///
    /// This is the step of the per-segment loops: O(1), no walk. Reaching the end of the segment
    /// moves to the start of the next one.
    ///
    /// # Errors
    ///
    /// - [`BvecError::PastEnd`] when `bytes > self.remaining()`.
    /// - [`BvecError::BeyondSegment`] when `bytes` is more than what is left of the current
    ///   segment (the kernel leaves this unchecked).
    ///
    /// The iterator is unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, BvecError, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(1), 0, 100)?];
    /// let mut it = BvecIter::new(&table, 0, 200)?;
    /// it.advance_single(60)?;
    /// assert_eq!(
    ///     it.advance_single(41),
    ///     Err(BvecError::BeyondSegment { requested: 41, available: 40 })
    /// );
    /// it.advance_single(40)?;
    /// assert_eq!((it.state().idx(), it.state().done()), (1, 0));
    /// # Ok::<(), BvecError>(())
    /// ```
    #[inline]
    pub fn advance_single(&mut self, bytes: u32) -> Result<(), BvecError> {
        if bytes == 0 {
            return Ok(());
        }
        let size = self.state.size();
        if bytes > size {
            return Err(past_end(bytes, size));
        }
        // `size > 0` here, so by the invariant `idx` is inside the table.
        let Some(bv) = self.table.get(self.state.idx() as usize) else {
            return Err(past_end(bytes, size));
        };
        let left = bv.len().saturating_sub(self.state.done());
        if bytes > left {
            return Err(beyond_segment(bytes, left));
        }
        self.step_in_segment(bv.len(), bytes);
        Ok(())
    }

    /// Moves over `bytes` of the current segment, whose length is `seg_len`: the step of
    /// [`BvecIter::advance_single`] once its checks have passed, shared with
    /// [`crate::Segments`], whose `window` has made the same checks.
    ///
    /// The caller guarantees `0 < bytes <= seg_len - done` and `bytes <= size`, so neither the
    /// sum nor the difference below wraps.
    #[inline]
    pub(crate) fn step_in_segment(&mut self, seg_len: u32, bytes: u32) {
        let s = self.state;
        let done = s.done().wrapping_add(bytes);
        let (idx, done) = if done == seg_len {
            // `idx < table.len() <= u32::MAX`, so this cannot wrap.
            (s.idx().wrapping_add(1), 0)
        } else {
            (s.idx(), done)
        };
        // INVARIANT: `bytes` stays inside the current segment (caller), so the position stays
        // inside segment `idx` or moves to the start of the next one; the size shrinks by
        // exactly the bytes moved over.
        self.state = IterState::new(
            s.sector().wrapping_add(sectors(bytes)),
            s.size().wrapping_sub(bytes),
            idx,
            done,
        );
    }

    /// Shrinks the remaining size to `min(size, remaining)`, keeping the position.
    #[inline]
    pub(crate) fn set_size(&mut self, size: u32) {
        let s = self.state;
        // INVARIANT: the position is unchanged and the size can only shrink, so fewer bytes than
        // before need to follow the position.
        self.state = IterState::new(s.sector(), size.min(s.size()), s.idx(), s.done());
    }

    /// Replaces the state wholesale, for the other modules of this crate.
    ///
    /// The caller must have checked that `state` satisfies the invariants of [`BvecIter`] for
    /// this table (each call site carries an `// INVARIANT:` comment saying why).
    #[inline]
    pub(crate) fn replace_state(&mut self, state: IterState) {
        self.state = state;
    }
}

/// The `BeyondSegment` error, out of line because it is the unlikely path.
#[cold]
fn beyond_segment(requested: u32, available: u32) -> BvecError {
    BvecError::BeyondSegment {
        requested,
        available,
    }
}
