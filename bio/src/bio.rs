//! A block I/O request: operation, start sector and a window on a borrowed vec table
//! (`struct bio` with its `bi_iter`).
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! A [`Bio`] never owns its vec table. The table is either borrowed from a bvec iterator (no copy,
//! like `bio_iov_bvec_set`) or filled in caller storage by a [`crate::BioBuilder`]. Advancing,
//! trimming and splitting only change the window, so split pieces share the table.

use bvec::{Bvec, BvecIter, Page, Segments};

use bvec::PAGE_SIZE;

use crate::limits::DiscardCut;
use crate::{
    count_phys_segments, split_rw_at, BioError, Op, QueueLimits, SplitPoint, SECTOR_SHIFT,
};

/// What the bio's window covers.
#[derive(Clone, Copy, Debug)]
enum Payload<'a, P: Page> {
    /// Reads and writes: the window on the vec table (sector, size and position).
    Vecs(BvecIter<'a, P>),
    /// Flush, discard and write-zeroes: a sector range and no memory.
    Range { sector: u64, size: u32 },
}

/// A block I/O: an [`Op`], a start sector and (for reads and writes) a window on a vec table.
///
/// `Bio` is `Copy`: a copy stands for the same `struct bio` (or a clone of it made by
/// `bio_alloc_clone`) sharing the table. Pieces made by [`Bio::split`] share it too; the front
/// piece is a clone and, like the kernel's, counts no vec-table entries of its own
/// ([`Bio::vcnt`] is 0).
///
/// # Invariants
///
/// Reads and writes always hold a [`BvecIter`] (whose own invariants keep the window inside the
/// table); the other operations never do, and a flush has size 0.
///
/// # Examples
///
/// ```
/// use bio::{Bio, Op};
/// use bvec::{Bvec, Pfn};
/// let table = [Bvec::new(Pfn(1), 0, 4096)?, Bvec::new(Pfn(7), 0, 4096)?];
/// let mut bio = Bio::from_table(Op::Write, 100, &table, 8192)?;
/// bio.advance(1024)?;
/// assert_eq!((bio.sector(), bio.size()), (102, 7168));
/// assert_eq!(bio.segments().next(), Some(Bvec::new(Pfn(1), 1024, 3072)?));
/// let front = bio.split(3072)?;       // `bio` keeps the remainder
/// assert_eq!((front.size(), bio.sector(), bio.size()), (3072, 108, 4096));
/// # Ok::<(), bio::BioError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Bio<'a, P: Page> {
    op: Op,
    payload: Payload<'a, P>,
    /// Made by [`Bio::split`] (`bio_alloc_clone`): `bi_vcnt` is 0.
    cloned: bool,
}

impl<'a, P: Page> Bio<'a, P> {
    /// A read or write of the window `iter` (its sector, position and size).
    ///
    /// # Errors
    ///
    /// [`BioError::WrongOp`] when `op` carries no data.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, BioError, Op};
    /// use bvec::{Bvec, BvecIter, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 4096)?];
    /// let mut it = BvecIter::new(&table, 8, 4096)?;
    /// it.advance(512)?;
    /// let bio = Bio::new(Op::Read, it)?;          // the window starts where the iterator is
    /// assert_eq!((bio.sector(), bio.size()), (9, 3584));
    /// assert_eq!(Bio::new(Op::Flush, it).unwrap_err(), BioError::WrongOp { op: Op::Flush });
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn new(op: Op, iter: BvecIter<'a, P>) -> Result<Self, BioError> {
        if !op.has_data() {
            return Err(BioError::WrongOp { op });
        }
        // INVARIANT: a data operation with an iterator.
        Ok(Self {
            op,
            payload: Payload::Vecs(iter),
            cloned: false,
        })
    }

    /// A read or write of the first `size` bytes of `table`, starting at `sector`.
    ///
    /// # Errors
    ///
    /// [`BioError::WrongOp`] for an operation without data, [`BioError::Bvec`] when the table
    /// holds fewer than `size` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 4096)?, Bvec::new(Pfn(9), 0, 512)?];
    /// assert_eq!(Bio::from_table(Op::Write, 0, &table, 4608)?.segments().count(), 2);
    /// assert_eq!(Bio::from_table(Op::Write, 0, &table, 4096)?.segments().count(), 1);
    /// assert!(Bio::from_table(Op::Write, 0, &table, 4609).is_err());
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn from_table(
        op: Op,
        sector: u64,
        table: &'a [Bvec<P>],
        size: u32,
    ) -> Result<Self, BioError> {
        Self::new(op, BvecIter::new(table, sector, size)?)
    }

    /// A cache flush (no data, no sector range).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op, QueueLimits, SplitPoint};
    /// let f = Bio::<bvec::Pfn>::flush();
    /// assert!(f.is_empty() && f.bvec_iter().is_none());
    /// let lim = QueueLimits::nvme(512, 0, 0).unwrap();
    /// assert_eq!(f.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 0 }));
    /// ```
    pub const fn flush() -> Self {
        // INVARIANT: a flush with no iterator and size 0.
        Self {
            op: Op::Flush,
            payload: Payload::Range { sector: 0, size: 0 },
            cloned: false,
        }
    }

    /// A discard or write-zeroes of `size` bytes at `sector`.
    ///
    /// # Errors
    ///
    /// [`BioError::WrongOp`] for reads, writes and flushes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// let d = Bio::<bvec::Pfn>::range(Op::Discard, 8, 1 << 20)?;
    /// assert_eq!((d.op(), d.sector(), d.size(), d.segments().count()), (Op::Discard, 8, 1 << 20, 0));
    /// assert!(Bio::<bvec::Pfn>::range(Op::Write, 8, 512).is_err());
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub const fn range(op: Op, sector: u64, size: u32) -> Result<Self, BioError> {
        match op {
            // INVARIANT: a range operation with no iterator.
            Op::Discard | Op::WriteZeroes => Ok(Self {
                op,
                payload: Payload::Range { sector, size },
                cloned: false,
            }),
            _ => Err(BioError::WrongOp { op }),
        }
    }

    /// The operation.
    pub const fn op(&self) -> Op {
        self.op
    }

    /// First sector of the remaining I/O (`bi_sector`).
    pub const fn sector(&self) -> u64 {
        match &self.payload {
            Payload::Vecs(it) => it.sector(),
            Payload::Range { sector, .. } => *sector,
        }
    }

    /// Bytes remaining (`bi_size`).
    pub const fn size(&self) -> u32 {
        match &self.payload {
            Payload::Vecs(it) => it.remaining(),
            Payload::Range { size, .. } => *size,
        }
    }

    /// Whether no bytes remain.
    pub const fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// The window on the vec table; `None` for operations without data.
    pub const fn bvec_iter(&self) -> Option<BvecIter<'a, P>> {
        match &self.payload {
            Payload::Vecs(it) => Some(*it),
            Payload::Range { .. } => None,
        }
    }

    /// The whole vec table, also outside the window (`bi_io_vec`; drivers should not need it).
    pub fn table(&self) -> &'a [Bvec<P>] {
        match &self.payload {
            Payload::Vecs(it) => it.table(),
            Payload::Range { .. } => &[],
        }
    }

    /// Vec-table entries the bio counts as its own (`bi_vcnt`): the table length, or 0 for the
    /// front piece of a [`Bio::split`] (a clone) and for operations without data.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 4096)?, Bvec::new(Pfn(5), 0, 4096)?];
    /// let mut bio = Bio::from_table(Op::Read, 0, &table, 8192)?;
    /// let front = bio.split(4096)?;
    /// assert_eq!((bio.vcnt(), front.vcnt()), (2, 0));
    /// assert_eq!(Bio::<Pfn>::flush().vcnt(), 0);
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn vcnt(&self) -> usize {
        if self.cloned {
            0
        } else {
            self.table().len()
        }
    }

    /// Whether splitting to limits has to look at this read or write at all
    /// (`bio_may_need_split`, block/blk.h in 6.12): a bio that counts exactly one vec-table entry
    /// lying inside one page, on a queue without `chunk_sectors`, is sent whole as one segment,
    /// whatever the other limits say.
    ///
    /// Later kernels also require the entry to fit `max_fast_segment_size`; 6.12 does not.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, LimitsConfig, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::new(&LimitsConfig::default())?;
    /// let one = [Bvec::new(Pfn(2), 0, 4096).unwrap()];
    /// let across = [Bvec::new(Pfn(2), 512, 4096).unwrap()];
    /// assert!(!Bio::from_table(Op::Read, 0, &one, 4096).unwrap().may_need_split(&lim));
    /// assert!(Bio::from_table(Op::Read, 0, &across, 4096).unwrap().may_need_split(&lim));
    /// let chunked = QueueLimits::new(&LimitsConfig { chunk_sectors: 64, ..LimitsConfig::default() })?;
    /// assert!(Bio::from_table(Op::Read, 0, &one, 4096).unwrap().may_need_split(&chunked));
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn may_need_split(&self, lim: &QueueLimits) -> bool {
        if lim.chunk_sectors() != 0 || self.vcnt() != 1 {
            return true;
        }
        match self.table().first() {
            Some(bv) => bv.end() as usize > PAGE_SIZE,
            None => true,
        }
    }

    /// Multipage segments of the window (`bio_for_each_bvec`); empty without data.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 3000, 2000)?];
    /// let bio = Bio::from_table(Op::Read, 0, &table, 2000)?;
    /// assert_eq!(bio.segments().count(), 1);           // one multipage segment
    /// assert_eq!(bio.pages().count(), 2);              // two pages
    /// assert_eq!(Bio::<Pfn>::flush().segments().count(), 0);
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn segments(&self) -> core::iter::Flatten<core::option::IntoIter<Segments<'a, P>>> {
        self.bvec_iter()
            .map(|it| it.segments())
            .into_iter()
            .flatten()
    }

    /// Single-page segments of the window (`bio_for_each_segment`); empty without data.
    pub fn pages(&self) -> core::iter::Flatten<core::option::IntoIter<bvec::Pages<'a, P>>> {
        self.bvec_iter().map(|it| it.pages()).into_iter().flatten()
    }

    /// Moves the start forward by `bytes` (`bio_advance`): the sector moves by `bytes >> 9`.
    ///
    /// Unlike the kernel's fast path for `bytes == size`, the sector and position are always
    /// updated.
    ///
    /// # Errors
    ///
    /// [`BioError::PastEnd`] when `bytes > self.size()`; the bio is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, BioError, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 4096)?];
    /// let mut bio = Bio::from_table(Op::Read, 0, &table, 4096)?;
    /// bio.advance(4096)?;                                 // to the very end
    /// assert_eq!((bio.sector(), bio.size()), (8, 0));
    /// assert_eq!(bio.advance(1), Err(BioError::PastEnd { requested: 1, remaining: 0 }));
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn advance(&mut self, bytes: u32) -> Result<(), BioError> {
        match &mut self.payload {
            Payload::Vecs(it) => it
                .advance(bytes)
                .map_err(|_| past_end(bytes, it.remaining())),
            Payload::Range { sector, size } => {
                let Some(left) = size.checked_sub(bytes) else {
                    return Err(past_end(bytes, *size));
                };
                *size = left;
                *sector = sector.wrapping_add(u64::from(bytes >> SECTOR_SHIFT));
                Ok(())
            }
        }
    }

    /// Keeps only `size` bytes (`bio_truncate` of the window).
    ///
    /// # Errors
    ///
    /// [`BioError::PastEnd`] when `size > self.size()`; the bio is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 4096)?];
    /// let mut bio = Bio::from_table(Op::Read, 0, &table, 4096)?;
    /// bio.truncate(1024)?;
    /// assert_eq!(bio.size(), 1024);
    /// assert!(bio.truncate(1025).is_err());
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn truncate(&mut self, size: u32) -> Result<(), BioError> {
        match &mut self.payload {
            Payload::Vecs(it) => it
                .truncate(size)
                .map_err(|_| past_end(size, it.remaining())),
            Payload::Range { size: s, .. } => {
                if size > *s {
                    return Err(past_end(size, *s));
                }
                *s = size;
                Ok(())
            }
        }
    }

    /// Keeps `size_sectors` sectors starting `offset_sectors` into the bio (`bio_trim`).
    ///
    /// # Errors
    ///
    /// [`BioError::PastEnd`] when the range is not inside the bio; the bio is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, BioError, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(1), 0, 8192)?];
    /// let mut bio = Bio::from_table(Op::Read, 0, &table, 8192)?;
    /// bio.trim(2, 4)?;
    /// assert_eq!((bio.sector(), bio.size()), (2, 2048));
    /// assert!(matches!(bio.trim(1, 4), Err(BioError::PastEnd { .. })));
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn trim(&mut self, offset_sectors: u32, size_sectors: u32) -> Result<(), BioError> {
        let off = u64::from(offset_sectors) << SECTOR_SHIFT;
        let len = u64::from(size_sectors) << SECTOR_SHIFT;
        let end = off + len;
        if end > u64::from(self.size()) {
            return Err(BioError::PastEnd {
                requested: end,
                remaining: u64::from(self.size()),
            });
        }
        // Both fit in u32: their sum is at most size().
        let mut copy = *self;
        copy.advance(off as u32)?;
        copy.truncate(len as u32)?;
        *self = copy;
        Ok(())
    }

    /// Splits off the first `bytes` bytes and returns them; `self` keeps the rest (`bio_split`).
    /// Both pieces share the table.
    ///
    /// # Errors
    ///
    /// [`BioError::BadSplit`] unless `0 < bytes < size` and `bytes` is a whole number of sectors
    /// (the kernel `BUG`s); the bio is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, BioError, Op};
    /// use bvec::{Bvec, Pfn};
    /// let table = [Bvec::new(Pfn(2), 0, 8192)?];
    /// let mut bio = Bio::from_table(Op::Write, 0, &table, 8192)?;
    /// let front = bio.split(4096)?;
    /// assert_eq!((front.size(), bio.sector(), bio.size()), (4096, 8, 4096));
    /// assert!(core::ptr::eq(front.table(), bio.table()));        // shared, not copied
    /// assert_eq!(bio.split(4096).err(), Some(BioError::BadSplit { bytes: 4096, size: 4096 }));
    /// assert!(bio.split(100).is_err());                           // not whole sectors
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn split(&mut self, bytes: u32) -> Result<Self, BioError> {
        let size = self.size();
        if bytes == 0 || bytes >= size || bytes % (1 << SECTOR_SHIFT) != 0 {
            return Err(BioError::BadSplit { bytes, size });
        }
        let mut front = *self;
        front.truncate(bytes)?;
        self.advance(bytes)?;
        // INVARIANT: the front is a clone (`bio_alloc_clone`): it shares the table but counts no
        // entries of its own.
        front.cloned = true;
        Ok(front)
    }

    /// Checks that the start and size are whole logical blocks (`bio_unaligned`).
    ///
    /// # Errors
    ///
    /// [`BioError::Unaligned`] otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::nvme(4096, 0, 0).unwrap();
    /// let table = [Bvec::new(Pfn(2), 0, 8192)?];
    /// assert!(Bio::from_table(Op::Read, 8, &table, 4096)?.check_aligned(&lim).is_ok());
    /// assert!(Bio::from_table(Op::Read, 1, &table, 4096)?.check_aligned(&lim).is_err());
    /// assert!(Bio::from_table(Op::Read, 8, &table, 512)?.check_aligned(&lim).is_err());
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn check_aligned(&self, lim: &QueueLimits) -> Result<(), BioError> {
        let lbs = lim.logical_block_size();
        let lbs_sectors = u64::from(lbs >> SECTOR_SHIFT);
        // Both are powers of two (validated limits): masks, no division.
        if self.size() & lbs.wrapping_sub(1) != 0
            || self.sector() & lbs_sectors.wrapping_sub(1) != 0
        {
            return Err(BioError::Unaligned {
                sector: self.sector(),
                size: self.size(),
                logical_block_size: lbs,
            });
        }
        Ok(())
    }

    /// Where this bio must be split to fit `lim` (`__bio_split_to_limits` without the split).
    ///
    /// - Reads and writes: whole as one segment when [`Self::may_need_split`] says no, else
    ///   [`split_rw_at`] with the largest I/O allowed at this sector
    ///   ([`QueueLimits::max_io_bytes`], `bio_split_rw`).
    /// - Discards (`bio_split_discard`): cut at `max_discard_sectors` rounded down to the discard
    ///   granularity, then so that the next piece starts on a granule; `chunk_sectors` and the
    ///   physical block size play no part. One segment.
    /// - Write-zeroes (`bio_split_write_zeroes`): cut where `get_max_io_size` with
    ///   `max_write_zeroes_sectors` says (chunk boundary, physical-block end). No segments.
    /// - A flush never splits.
    ///
    /// # Errors
    ///
    /// [`BioError::Unaligned`] for a bio that is not logical-block aligned (`bio_unaligned`),
    /// [`BioError::Unsupported`] for a discard or write-zeroes the queue does not support (the
    /// kernel's `submit_bio_noacct` fails those), [`BioError::CannotSplit`] when no valid front
    /// exists (the kernel sends such a bio whole, over the limits).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, LimitsConfig, Op, QueueLimits, SplitPoint};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::new(&LimitsConfig { virt_boundary_mask: 4095, max_discard_sectors: u32::MAX, ..LimitsConfig::default() }).unwrap();
    /// // A half page, then a page elsewhere: the virtual boundary forces a split after 2048 bytes.
    /// let table = [Bvec::new(Pfn(2), 0, 2048)?, Bvec::new(Pfn(9), 0, 4096)?];
    /// let bio = Bio::from_table(Op::Write, 0, &table, 6144)?;
    /// assert_eq!(bio.split_point(&lim), Ok(SplitPoint::Front { bytes: 2048, nsegs: 1 }));
    /// let d = Bio::<Pfn>::range(Op::Discard, 0, 1 << 30)?;
    /// assert_eq!(d.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
    /// // Discards ignore chunk_sectors.
    /// let chunked = QueueLimits::new(&LimitsConfig { chunk_sectors: 256, max_discard_sectors: 1024, ..LimitsConfig::default() }).unwrap();
    /// let d = Bio::<Pfn>::range(Op::Discard, 0, 2048 * 512)?;
    /// assert_eq!(d.split_point(&chunked), Ok(SplitPoint::Front { bytes: 1024 * 512, nsegs: 1 }));
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn split_point(&self, lim: &QueueLimits) -> Result<SplitPoint, BioError> {
        self.check_aligned(lim)?;
        let sectors = self.size() >> SECTOR_SHIFT;
        let cannot = || BioError::CannotSplit {
            fitted: 0,
            logical_block_size: lim.logical_block_size(),
        };
        match self.op {
            Op::Read | Op::Write if !self.may_need_split(lim) => Ok(SplitPoint::Whole { nsegs: 1 }),
            Op::Read | Op::Write => {
                split_rw_at(self.segments(), lim, lim.max_io_bytes(self.sector()))
            }
            Op::Flush => Ok(SplitPoint::Whole { nsegs: 0 }),
            Op::Discard if lim.max_discard_sectors() == 0 => {
                Err(BioError::Unsupported { op: self.op })
            }
            Op::Discard => match lim.discard_cut(self.sector(), sectors) {
                DiscardCut::Whole => Ok(SplitPoint::Whole { nsegs: 1 }),
                // front < sectors <= u32::MAX >> 9, so the shift fits.
                DiscardCut::Front(front) => Ok(SplitPoint::Front {
                    bytes: front << SECTOR_SHIFT,
                    nsegs: 1,
                }),
                DiscardCut::Impossible => Err(cannot()),
            },
            Op::WriteZeroes if lim.max_write_zeroes_sectors() == 0 => {
                Err(BioError::Unsupported { op: self.op })
            }
            Op::WriteZeroes => match lim.max_write_zeroes_io_sectors(self.sector()) {
                max if sectors <= max => Ok(SplitPoint::Whole { nsegs: 0 }),
                0 => Err(cannot()),
                // max < sectors <= u32::MAX >> 9, so the shift fits.
                max => Ok(SplitPoint::Front {
                    bytes: max << SECTOR_SHIFT,
                    nsegs: 0,
                }),
            },
        }
    }

    /// Splits off the largest front piece that fits `lim` and returns it with its number of
    /// physical segments; `self` keeps the rest, and is left empty when the whole bio fitted
    /// (`bio_split_to_limits`).
    ///
    /// # Errors
    ///
    /// As [`Self::split_point`]; the bio is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::nvme(512, 5, 0).unwrap(); // 128 KiB per request
    /// let table = [Bvec::new(Pfn(0), 0, 300 * 1024)?];
    /// let mut bio = Bio::from_table(Op::Read, 0, &table, 300 * 1024)?;
    /// let mut pieces = 0;
    /// while !bio.is_empty() {
    ///     let (piece, nsegs) = bio.split_to_limits(&lim)?;
    ///     assert!(piece.size() <= 128 * 1024 && nsegs == 1);
    ///     pieces += 1;
    /// }
    /// assert_eq!(pieces, 3);
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn split_to_limits(&mut self, lim: &QueueLimits) -> Result<(Self, u32), BioError> {
        match self.split_point(lim)? {
            SplitPoint::Whole { nsegs } => {
                let whole = *self;
                self.advance(self.size())?;
                Ok((whole, nsegs))
            }
            SplitPoint::Front { bytes, nsegs } => Ok((self.split(bytes)?, nsegs)),
        }
    }

    /// The number of physical segments of the window under `lim` (`nr_phys_segments`, as
    /// `blk_recalc_rq_segments` counts it): 1 for a discard, 0 for a flush or write-zeroes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, LimitsConfig, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::new(&LimitsConfig { seg_boundary_mask: 0xffff, ..LimitsConfig::default() }).unwrap();
    /// let table = [Bvec::new(Pfn(15), 0, 8192)?];   // crosses a 64 KiB window
    /// assert_eq!(Bio::from_table(Op::Read, 0, &table, 8192)?.nr_phys_segments(&lim), 2);
    /// assert_eq!(Bio::<Pfn>::flush().nr_phys_segments(&lim), 0);
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn nr_phys_segments(&self, lim: &QueueLimits) -> u32 {
        match self.op {
            Op::Read | Op::Write => count_phys_segments(self.segments(), lim),
            Op::Discard => 1,
            Op::Flush | Op::WriteZeroes => 0,
        }
    }

    /// Whether every segment's physical address and length satisfy the DMA alignment
    /// (`blk_rq_aligned` for each segment).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{Bio, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let nvme = QueueLimits::nvme(512, 0, 0).unwrap();     // 4-byte alignment
    /// let ok = [Bvec::new(Pfn(2), 4, 512)?];
    /// let odd = [Bvec::new(Pfn(2), 2, 512)?];
    /// assert!(Bio::from_table(Op::Read, 0, &ok, 512)?.dma_aligned(&nvme));
    /// assert!(!Bio::from_table(Op::Read, 0, &odd, 512)?.dma_aligned(&nvme));
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn dma_aligned(&self, lim: &QueueLimits) -> bool {
        self.segments()
            .all(|bv| lim.dma_aligned(bv.phys() | u64::from(bv.len())))
    }
}

/// The `PastEnd` error for a request of `requested` bytes with `remaining` left.
#[cold]
fn past_end(requested: u32, remaining: u32) -> BioError {
    BioError::PastEnd {
        requested: u64::from(requested),
        remaining: u64::from(remaining),
    }
}
