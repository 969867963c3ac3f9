//! Moving the position: advance, revert, truncate, reexpand, save/restore.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)

use core::cmp::min;
use core::marker::PhantomData;

use bvec::Page;

use crate::iter::{IterType, Kind, MAX_RW_COUNT};
use crate::segment::SegLen;
use crate::table::strided_landing;
use crate::{Direction, IovError, IovIter};

/// `iov_iter_iovec_advance` / `iov_iter_bvec_advance` / `iov_iter_folioq_advance`: moves
/// `size` bytes on from (`idx`, `off`), skipping empty and finished segments, so that the result
/// is normalised (`off < len` of the current segment, or the end of the table).
#[inline]
fn seg_advance<T: SegLen>(table: &[T], idx: &mut usize, off: &mut usize, size: usize) {
    let mut size = size.saturating_add(*off);
    let mut i = *idx;
    while let Some(seg) = table.get(i) {
        let len = seg.seg_len();
        if size < len {
            break;
        }
        size -= len;
        i += 1;
    }
    *idx = i;
    *off = size;
}

/// The backward walk of `iov_iter_revert` once `unroll > off`: crosses empty segments and lands
/// normalised (`off < len`). Returns false if it would pass the table start (callers prevent it).
fn seg_revert<T: SegLen>(table: &[T], idx: &mut usize, off: &mut usize, unroll: usize) -> bool {
    let mut unroll = unroll - *off;
    let mut i = *idx;
    loop {
        let Some(prev) = i.checked_sub(1) else {
            return false;
        };
        i = prev;
        let n = table.get(i).map_or(0, SegLen::seg_len);
        if unroll <= n {
            *idx = i;
            *off = n - unroll;
            return true;
        }
        unroll -= n;
    }
}

/// What a saved position is relative to: the kind and the segment table (address and length;
/// the buffer address for UBUF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Origin {
    kind: IterType,
    addr: usize,
    len: usize,
}

/// A snapshot of an iterator's position (`struct iov_iter_state`), plus the bytes consumed since
/// construction so that the revert bound survives a restore, and the table it is a position in.
///
/// The kernel's state is only three numbers, and `iov_iter_restore` trusts the caller to apply it
/// to the iterator it came from. Here a state borrows (for `'a`) the table of the iterator it was
/// saved from, so that table stays alive and unchanged while the state exists, and
/// [`IovIter::restore`] accepts the state only for an iterator over that same table: the
/// position then lies inside the table, `consumed` bytes after its start, as before.
///
/// # Examples
///
/// ```
/// use iov::{IovError, IovIter, Kvec, Source};
/// let a = [Kvec::new(0x1000, 100)];
/// let b = [Kvec::new(0x2000, 20), Kvec::new(0x3000, 3)];
/// let mut ia = IovIter::<bvec::Pfn, Source>::kvec(&a, 10)?;
/// ia.advance(9);
/// let s = ia.save_state();
/// let mut ib = IovIter::<bvec::Pfn, Source>::kvec(&b, 20)?;
/// assert_eq!(ib.restore(&s), Err(IovError::BadState)); // another iterator's table
/// let mut clone = ia.clone();
/// clone.advance(1);
/// clone.restore(&s)?;                                   // same table: fine
/// assert_eq!((clone.count(), clone.iov_offset()), (1, 9));
/// # Ok::<(), IovError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IovState<'a> {
    iov_offset: usize,
    count: usize,
    nr_segs: usize,
    consumed: usize,
    origin: Origin,
    _table: PhantomData<&'a ()>,
}

impl IovState<'_> {
    /// The saved `iov_offset`.
    pub fn iov_offset(&self) -> usize {
        self.iov_offset
    }
    /// The saved `count`.
    pub fn count(&self) -> usize {
        self.count
    }
    /// The saved `nr_segs`.
    pub fn nr_segs(&self) -> usize {
        self.nr_segs
    }
}

impl<'a, P: Page, D: Direction> IovIter<'a, P, D> {
    /// The kind and table this iterator's positions are relative to.
    fn origin(&self) -> Origin {
        let (addr, len) = match self.kind {
            Kind::Ubuf { base } => (base, 0),
            Kind::Iovec(t) => (t.as_ptr() as usize, t.len()),
            Kind::Kvec(t) => (t.as_ptr() as usize, t.len()),
            Kind::Bvec { table, .. } => (table.as_ptr() as usize, table.len()),
            Kind::PageList(t) => (t.as_ptr() as usize, t.len()),
            Kind::Discard => (0, 0),
        };
        Origin {
            kind: self.iter_type(),
            addr,
            len,
        }
    }

    /// Moves `size` bytes on without touching memory (`iov_iter_advance`); `size` is clamped to
    /// the count.
    ///
    /// Vector kinds skip empty and finished segments, even for `size == 0` when bytes are left;
    /// nothing moves when the count is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Kvec, Dest};
    /// let t = [Kvec::new(0, 0), Kvec::new(100, 4), Kvec::new(200, 0), Kvec::new(300, 4)];
    /// let mut it = IovIter::<bvec::Pfn, Dest>::kvec(&t, 8)?;
    /// it.advance(0); // skips the empty head
    /// assert_eq!((it.nr_segs(), it.iov_offset()), (3, 0));
    /// it.advance(4); // lands past the empty segment too
    /// assert_eq!((it.nr_segs(), it.count()), (1, 4));
    /// it.advance(99);
    /// assert_eq!((it.nr_segs(), it.count()), (0, 0));
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn advance(&mut self, size: usize) {
        let size = min(size, self.count);
        match self.kind {
            Kind::Ubuf { .. } => self.iov_offset += size,
            Kind::Discard => {}
            _ if self.count == 0 => return,
            // A strided checked table (`BvecTable`): the position `consumed + size` bytes from
            // the table start (every BVEC iterator starts there) is arithmetic, as
            // io_uring/rsrc.c `io_import_fixed()` computes it. `size <= capacity - consumed`,
            // so the sum is at most the capacity: inside the table, or its end only when the
            // advance reaches the capacity.
            Kind::Bvec { table, shape } if shape.stride_shift().is_some() => {
                let shift = shape.stride_shift().unwrap_or(0);
                let at_capacity = size == self.capacity - self.consumed;
                (self.idx, self.iov_offset) =
                    strided_landing(table, shift, self.consumed + size, at_capacity);
            }
            // Reaching the end of the construction count lands where construction found it ends,
            // wherever the walk would have started: O(1), so handing a whole bvec table to a bio
            // costs the same for 1 or 256 segments (seed 000).
            _ if size == self.capacity - self.consumed => (self.idx, self.iov_offset) = self.end,
            Kind::Iovec(t) => seg_advance(t, &mut self.idx, &mut self.iov_offset, size),
            Kind::Kvec(t) => seg_advance(t, &mut self.idx, &mut self.iov_offset, size),
            Kind::Bvec { table, .. } => {
                seg_advance(table, &mut self.idx, &mut self.iov_offset, size)
            }
            Kind::PageList(t) => seg_advance(t, &mut self.idx, &mut self.iov_offset, size),
        }
        // INVARIANT: size <= count; the position moved by exactly `size` bytes.
        self.count -= size;
        self.consumed += size;
    }

    /// Moves `unroll` bytes back (`iov_iter_revert`), crossing empty segments.
    ///
    /// # Errors
    ///
    /// [`IovError::RevertTooLarge`] above `MAX_RW_COUNT` (the kernel WARNs and ignores it),
    /// [`IovError::RevertTooFar`] beyond the bytes consumed since construction (the kernel BUGs
    /// or walks off the array). The iterator is unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovError, IovIter, Iovec, Source};
    /// let t = [Iovec::new(0, 3), Iovec::new(9, 0), Iovec::new(20, 3)];
    /// let mut it = IovIter::<bvec::Pfn, Source>::iovec(&t, 6)?;
    /// it.advance(4);
    /// it.revert(2)?; // back over the empty segment into the first
    /// assert_eq!((it.count(), it.nr_segs(), it.iov_offset()), (4, 3, 2));
    /// assert_eq!(it.revert(3), Err(IovError::RevertTooFar { requested: 3, available: 2 }));
    /// # Ok::<(), IovError>(())
    /// ```
    pub fn revert(&mut self, unroll: usize) -> Result<(), IovError> {
        if unroll == 0 {
            return Ok(());
        }
        if unroll > MAX_RW_COUNT {
            return Err(IovError::RevertTooLarge { requested: unroll });
        }
        if unroll > self.consumed {
            return Err(IovError::RevertTooFar {
                requested: unroll,
                available: self.consumed,
            });
        }
        if !matches!(self.kind, Kind::Discard) && unroll > self.iov_offset {
            let ok = match self.kind {
                Kind::Iovec(t) => seg_revert(t, &mut self.idx, &mut self.iov_offset, unroll),
                Kind::Kvec(t) => seg_revert(t, &mut self.idx, &mut self.iov_offset, unroll),
                Kind::Bvec { table, .. } => {
                    seg_revert(table, &mut self.idx, &mut self.iov_offset, unroll)
                }
                Kind::PageList(t) => seg_revert(t, &mut self.idx, &mut self.iov_offset, unroll),
                // UBUF: iov_offset == consumed >= unroll, so this is unreachable.
                Kind::Ubuf { .. } | Kind::Discard => false,
            };
            if !ok {
                return Err(IovError::BadState);
            }
        } else if !matches!(self.kind, Kind::Discard) {
            self.iov_offset -= unroll;
        }
        // INVARIANT: unroll <= consumed; the position moved back by exactly `unroll` bytes, which
        // the segments hold, so count + unroll <= capacity - (consumed - unroll).
        self.count += unroll;
        self.consumed -= unroll;
        Ok(())
    }

    /// Lowers the count to `n` if it is larger (`iov_iter_truncate`; never grows).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut it = iov::IovIter::<bvec::Pfn, iov::Dest>::discard(10);
    /// it.truncate(20);
    /// assert_eq!(it.count(), 10);
    /// it.truncate(3);
    /// assert_eq!(it.count(), 3);
    /// ```
    pub fn truncate(&mut self, n: u64) {
        if (self.count as u64) > n {
            // INVARIANT: the count only shrinks. `n < count` fits usize.
            self.count = n as usize;
        }
    }

    /// Sets the count to `n` (`iov_iter_reexpand`), as long as `n` does not reach past the count
    /// given at construction: like the kernel's, it may only undo a truncation.
    ///
    /// # Errors
    ///
    /// [`IovError::CountExceedsSegments`] otherwise, with `available` the bytes left of the
    /// construction count (the kernel does not check).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = [iov::Kvec::new(0, 8)];
    /// let mut it = iov::IovIter::<bvec::Pfn, iov::Dest>::kvec(&t, 8)?;
    /// it.truncate(2);
    /// it.reexpand(8)?;
    /// assert!(it.reexpand(9).is_err());
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn reexpand(&mut self, n: usize) -> Result<(), IovError> {
        let available = self.capacity - self.consumed;
        if n > available {
            return Err(IovError::CountExceedsSegments {
                count: n,
                available,
            });
        }
        // INVARIANT: n <= capacity - consumed, checked above.
        self.count = n;
        Ok(())
    }

    /// Saves the position (`iov_iter_save_state`); the state borrows this iterator's table.
    pub fn save_state(&self) -> IovState<'a> {
        IovState {
            iov_offset: self.iov_offset,
            count: self.count,
            nr_segs: self.nr_segs(),
            consumed: self.consumed,
            origin: self.origin(),
            _table: PhantomData,
        }
    }

    /// Goes back (or forth) to a saved position (`iov_iter_restore`).
    ///
    /// # Errors
    ///
    /// [`IovError::RestoreUnsupported`] for page lists and DISCARD (the kernel WARNs and does
    /// nothing); [`IovError::BadState`] for a state saved from an iterator over another table
    /// (or another UBUF buffer), or whose count does not fit this iterator's construction count
    /// (the kernel applies any state, and a foreign one leaves its segments holding fewer bytes
    /// than `count`). The iterator is unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = [iov::Iovec::new(0, 4), iov::Iovec::new(8, 4)];
    /// let mut it = iov::IovIter::<bvec::Pfn, iov::Source>::iovec(&t, 8)?;
    /// let s = it.save_state();
    /// it.advance(6);
    /// it.restore(&s)?;
    /// assert_eq!((it.count(), it.nr_segs(), it.iov_offset()), (8, 2, 0));
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn restore(&mut self, state: &IovState<'_>) -> Result<(), IovError> {
        if matches!(self.kind, Kind::PageList(_) | Kind::Discard) {
            return Err(IovError::RestoreUnsupported);
        }
        // Both tables are borrowed (the state's for its lifetime), so equal address, length and
        // kind mean the same, unchanged, table: the saved position is valid in it.
        if state.origin != self.origin()
            || state.consumed > self.capacity
            || state.count > self.capacity - state.consumed
        {
            return Err(IovError::BadState);
        }
        let seg_ok = |len: usize| state.nr_segs <= len;
        let ok = match self.kind {
            Kind::Ubuf { .. } => state.nr_segs == 1 && state.iov_offset == state.consumed,
            Kind::Iovec(t) => seg_ok(t.len()),
            Kind::Kvec(t) => seg_ok(t.len()),
            Kind::Bvec { table, .. } => seg_ok(table.len()),
            Kind::PageList(_) | Kind::Discard => return Err(IovError::RestoreUnsupported),
        };
        if !ok {
            return Err(IovError::BadState);
        }
        let total = match self.kind {
            Kind::Iovec(t) => t.len(),
            Kind::Kvec(t) => t.len(),
            Kind::Bvec { table, .. } => table.len(),
            _ => 1,
        };
        // INVARIANT: count <= capacity - consumed was checked; the state came from an iterator
        // over this very table (same start: only page lists, which cannot restore, start at an
        // offset), so (idx, iov_offset) lies `consumed` bytes after the start, inside the table.
        if !matches!(self.kind, Kind::Ubuf { .. }) {
            self.idx = total - state.nr_segs;
        }
        self.iov_offset = state.iov_offset;
        self.count = state.count;
        self.consumed = state.consumed;
        Ok(())
    }
}
