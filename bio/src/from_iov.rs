//! Building bios from iov iterators (`bio_iov_iter_get_pages`, `bio_iov_bvec_set`,
//! `bio_iov_vecs_to_alloc`).
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! A BVEC iterator's table is borrowed as it is, with no copy: the bio's window starts at the
//! iterator's position and covers its count. Every other kind has its pages extracted into
//! caller storage through a [`BioBuilder`], trimmed to whole logical blocks.

use bvec::{Page, PAGE_SIZE};
use iov::{Direction, IovIter, IterType, Memory};

use crate::{Bio, BioBuilder, BioError, Op, QueueLimits, BIO_MAX_SECTORS, SECTOR_SHIFT};

/// Largest bio size in bytes: whole sectors that fit in `u32`.
const BIO_MAX_BYTES: u32 = BIO_MAX_SECTORS << SECTOR_SHIFT;

/// How many vecs to allocate for a bio built from `iter`, at most `max`
/// (`bio_iov_vecs_to_alloc`): 0 for a BVEC iterator, whose table is reused, otherwise the pages
/// its bytes span.
///
/// # Examples
///
/// ```
/// use bio::vecs_to_alloc;
/// use bvec::{Bvec, Pfn};
/// use iov::{IovIter, Iovec, Source};
/// let t = [Bvec::new(Pfn(1), 0, 8192)?];
/// assert_eq!(vecs_to_alloc(&IovIter::<Pfn, Source>::bvec(&t, 8192).unwrap(), 257), 0);
/// let v = [Iovec::new(0x1800, 8192)];
/// assert_eq!(vecs_to_alloc(&IovIter::<Pfn, Source>::iovec(&v, 8192).unwrap(), 257), 3);
/// assert_eq!(vecs_to_alloc(&IovIter::<Pfn, Source>::iovec(&v, 8192).unwrap(), 2), 2);
/// # Ok::<(), bvec::BvecError>(())
/// ```
pub fn vecs_to_alloc<P: Page, D: Direction>(iter: &IovIter<'_, P, D>, max: usize) -> usize {
    if iter.iter_type() == IterType::Bvec {
        0
    } else {
        iter.npages(max)
    }
}

/// Checks that the iterator's direction matches the operation: a read fills a destination, a
/// write drains a source.
fn check_direction<P: Page, D: Direction>(
    op: Op,
    iter: &IovIter<'_, P, D>,
) -> Result<(), BioError> {
    match op {
        Op::Read if !iter.is_source() => Ok(()),
        Op::Write if iter.is_source() => Ok(()),
        _ => Err(BioError::WrongOp { op }),
    }
}

impl<'a, P: Page> Bio<'a, P> {
    /// Borrows a BVEC iterator's table with no copy and advances the iterator past it
    /// (`bio_iov_bvec_set` + `iov_iter_advance`).
    ///
    /// The bio's window starts at the iterator's current segment and offset and covers its count,
    /// capped at the largest whole-sector `u32` (the kernel truncates to `u32` instead). The table
    /// and its pages must stay alive until the I/O completes, which the lifetime enforces.
    ///
    /// # Errors
    ///
    /// [`BioError::UnsupportedIter`] for other kinds, [`BioError::WrongOp`] when `op` is not a read
    /// of a destination or a write of a source; the iterator is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// use bvec::{Bvec, Pfn};
    /// use iov::{IovIter, Source};
    /// let t = [Bvec::new(Pfn(1), 0, 4096)?, Bvec::new(Pfn(9), 0, 4096)?];
    /// let mut it = IovIter::<Pfn, Source>::bvec(&t, 8192).unwrap();
    /// it.advance(1024);
    /// let bio = Bio::from_bvec_iov(Op::Write, 16, &mut it).unwrap();
    /// assert_eq!((bio.sector(), bio.size(), it.count()), (16, 7168, 0));
    /// assert!(core::ptr::eq(bio.table(), &t[..]));        // borrowed, not copied
    /// assert_eq!(bio.segments().next(), Some(Bvec::new(Pfn(1), 1024, 3072)?));
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn from_bvec_iov<'t: 'a, D: Direction>(
        op: Op,
        sector: u64,
        iter: &mut IovIter<'t, P, D>,
    ) -> Result<Self, BioError> {
        check_direction(op, iter)?;
        // O(1) for any number of segments: the table is borrowed as it is, and advancing the
        // iterator past all of it is a jump (seed 000: reuse the iterator's bvec array).
        let bi = iter
            .bvec_iter(sector, BIO_MAX_BYTES)
            .ok_or(BioError::UnsupportedIter)?;
        let size = bi.remaining();
        let bio = Self::new(op, bi)?;
        iter.advance(size as usize);
        Ok(bio)
    }

    /// Builds a read or write from any iterator (`bio_iov_iter_get_pages`): a BVEC iterator is
    /// borrowed ([`Self::from_bvec_iov`]; `storage` is not used), any other kind has its pages
    /// extracted into `storage` ([`BioBuilder::add_iov`]). The iterator is advanced past the
    /// bytes the bio covers, which may be fewer than its count (table full, or not a whole
    /// logical block left): call again with fresh storage for the rest.
    ///
    /// # Errors
    ///
    /// As [`Self::from_bvec_iov`] and [`BioBuilder::add_iov`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// use iov::{FlatMemory, IovIter, Iovec, Source};
    /// let mut bytes = vec![0u8; 8 * 4096];
    /// let mut mem = FlatMemory::new(&mut bytes);     // user address a is byte a, in page a / 4096
    /// let lim = QueueLimits::nvme(512, 0, 0).unwrap();
    /// // Whole blocks per iovec, as block-device direct I/O requires (a partial block ends the bio).
    /// let v = [Iovec::new(0x1000, 2560), Iovec::new(0x1000 + 2560, 2560)];
    /// let mut it = IovIter::<Pfn, Source>::iovec(&v, 5120).unwrap();
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 4];
    /// let mut scratch = [Pfn(0); 4];
    /// let bio = Bio::from_iov(Op::Write, 0, &mut it, &lim, &mut storage, &mut scratch, &mut mem, |_| {})?;
    /// // The two iovecs are contiguous: one multipage segment.
    /// assert_eq!(bio.segments().collect::<Vec<_>>(), [Bvec::new(Pfn(1), 0, 5120)?]);
    /// assert_eq!(it.count(), 0);
    /// # Ok::<(), bio::BioError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn from_iov<'t: 'a, 's: 'a, D: Direction, M: Memory<P>>(
        op: Op,
        sector: u64,
        iter: &mut IovIter<'t, P, D>,
        lim: &QueueLimits,
        storage: &'s mut [bvec::Bvec<P>],
        scratch: &mut [P],
        mem: &mut M,
        unpin: impl FnMut(P),
    ) -> Result<Self, BioError> {
        if iter.iter_type() == IterType::Bvec {
            return Self::from_bvec_iov(op, sector, iter);
        }
        let mut b = BioBuilder::new(op, sector, storage)?;
        b.add_iov(iter, lim, scratch, mem, unpin)?;
        b.finish()
    }
}

impl<P: Page> BioBuilder<'_, P> {
    /// Extracts pages from `iter` and adds them (`__bio_iov_iter_get_pages` in a loop) until the
    /// iterator is empty, the table is full, or the size would overflow `u32`.
    ///
    /// Each round extracts at most `min(scratch.len(), free vecs)` pages into `scratch`, drops the
    /// tail that is not a whole logical block (reverting it on the iterator, so no zero-length
    /// segment is ever made), and adds the pages, merging where [`BioBuilder::add_page`] allows.
    /// Returns the bytes added.
    ///
    /// For user-backed iterators every extracted page is pinned; `unpin` is called for each pin
    /// the bio does not keep (pages only in the dropped tail, and a page merged into the segment
    /// already holding it), so afterwards the pins are exactly one per page per segment. It is
    /// never called for other kinds, which take no pins.
    ///
    /// # Errors
    ///
    /// [`BioError::UnsupportedIter`] for a discard iterator, [`BioError::WrongOp`] for a direction
    /// that does not match the operation, [`BioError::NoProgress`] when nothing at all could be
    /// added (including a remaining count below one logical block), [`BioError::Iov`] when the
    /// first extraction fails. Later failures end the loop with the bytes added so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, BioError, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// use iov::{FlatMemory, IovIter, Source};
    /// let mut bytes = vec![0u8; 8 * 4096];
    /// let mut mem = FlatMemory::new(&mut bytes);
    /// let lim = QueueLimits::nvme(4096, 0, 0).unwrap();
    /// let mut it = IovIter::<Pfn, Source>::ubuf(0x1000, 4096 + 100);
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 4];
    /// let mut b = BioBuilder::new(Op::Write, 0, &mut storage)?;
    /// let mut unpinned = Vec::new();
    /// assert_eq!(b.add_iov(&mut it, &lim, &mut [Pfn(0); 4], &mut mem, |p| unpinned.push(p)), Ok(4096));
    /// assert_eq!(it.count(), 100);                 // the partial block stays in the iterator
    /// assert_eq!(unpinned, [Pfn(2), Pfn(2)]);      // its page was pinned twice, released twice
    /// assert_eq!(b.add_iov(&mut it, &lim, &mut [Pfn(0); 4], &mut mem, |_| {}), Err(BioError::NoProgress));
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn add_iov<D: Direction, M: Memory<P>>(
        &mut self,
        iter: &mut IovIter<'_, P, D>,
        lim: &QueueLimits,
        scratch: &mut [P],
        mem: &mut M,
        mut unpin: impl FnMut(P),
    ) -> Result<u32, BioError> {
        if iter.iter_type() == IterType::Discard {
            return Err(BioError::UnsupportedIter);
        }
        check_direction(self.op(), iter)?;
        let pinned = iter.user_backed();
        let lbs = lim.logical_block_size() as usize;
        let start = self.size();
        while iter.count() > 0 && !self.is_full(0) {
            let free = self.max_vecs() - self.vcnt();
            let want = scratch.len().min(free);
            let Some(pages) = scratch.get_mut(..want) else {
                break;
            };
            let room = (u32::MAX - self.size()) as usize;
            let before = iter.count();
            let (got, offset) = match iter.extract_pages(mem, pages, room) {
                Ok(r) => r,
                Err(e) if self.size() == start => return Err(BioError::Iov(e)),
                Err(_) => break,
            };
            if got == 0 {
                // Only empty segments were stepped over; go on while that makes progress.
                if iter.count() == before {
                    break;
                }
                continue;
            }
            let nr_pages = (offset + got).div_ceil(PAGE_SIZE);
            // `lbs` is a power of two (validated limits).
            let trim = got & lbs.wrapping_sub(1);
            if trim != 0 {
                // `trim` bytes were just extracted, so they can be reverted.
                iter.revert(trim).map_err(BioError::Iov)?;
            }
            let size = got - trim;
            let used = if size == 0 {
                0
            } else {
                (offset + size).div_ceil(PAGE_SIZE)
            };
            if pinned {
                for &p in pages.iter().take(nr_pages).skip(used) {
                    unpin(p);
                }
            }
            if size == 0 {
                break;
            }
            let mut left = size;
            let mut off = offset;
            for &page in pages.iter().take(used) {
                let len = (PAGE_SIZE - off).min(left);
                // len <= PAGE_SIZE and off < PAGE_SIZE: both fit in u32.
                let Some(same_page) = self.add_page_inner(page, len as u32, off as u32) else {
                    // Cannot happen (room and free vecs were reserved); give the rest back.
                    iter.revert(left).map_err(BioError::Iov)?;
                    break;
                };
                if pinned && same_page {
                    unpin(page);
                }
                left -= len;
                off = 0;
            }
        }
        let added = self.size() - start;
        if added == 0 {
            return Err(BioError::NoProgress);
        }
        Ok(added)
    }
}
