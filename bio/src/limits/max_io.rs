//! How much of a bio one request may carry: `get_max_io_size`, `blk_boundary_sectors_left`,
//! `bio_allowed_max_sectors` and the discard cut of `__bio_split_discard` (block/blk-merge.c).
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! The sector arithmetic follows the kernel's 32-bit `unsigned int` types, wrap-around included,
//! so that every value equals the kernel's for every limit it accepts. Only the conversion to a
//! byte count differs: the kernel shifts a sector limit of 8 Mi sectors or more past 32 bits
//! (`get_max_io_size(..) << SECTOR_SHIFT` in `bio_split_rw`), this crate clamps it to the largest
//! bio instead (`docs/DEVIATIONS.md`).

use core::num::{NonZeroU32, NonZeroU64};

use super::{QueueLimits, SECTOR_SHIFT};

/// What `__bio_split_discard` decides for a discard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DiscardCut {
    /// The whole discard goes in one request.
    Whole,
    /// The first this many sectors go in one request (more than 0, fewer than the discard).
    Front(u32),
    /// The limit rounded down to the discard granularity is 0 and the discard is larger than the
    /// limit: the kernel sends it whole anyway.
    Impossible,
}

impl QueueLimits {
    /// Distance in sectors from `sector` to the next chunk boundary, or `u32::MAX` without chunks
    /// (`blk_boundary_sectors_left`; any chunk size, not only powers of two).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { chunk_sectors: 256, ..LimitsConfig::default() })?;
    /// assert_eq!((l.chunk_sectors_left(0), l.chunk_sectors_left(255), l.chunk_sectors_left(256)), (256, 1, 256));
    /// let odd = QueueLimits::new(&LimitsConfig { chunk_sectors: 24, ..LimitsConfig::default() })?;
    /// assert_eq!(odd.chunk_sectors_left(50), 22);
    /// assert_eq!(QueueLimits::new(&LimitsConfig::default())?.chunk_sectors_left(7), u32::MAX);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn chunk_sectors_left(&self, sector: u64) -> u32 {
        let Some(chunk) = NonZeroU64::new(u64::from(self.chunk_sectors)) else {
            return u32::MAX;
        };
        // The remainder is below chunk_sectors, a u32.
        self.chunk_sectors - (sector % chunk) as u32
    }

    /// `get_max_io_size` for a bio starting at `sector` whose operation allows `max_sectors`:
    /// clamped to the chunk boundary, then shortened to end on a physical-block boundary when
    /// that leaves something, else rounded down to logical blocks.
    fn max_io_size(&self, max_sectors: u32, sector: u64) -> u32 {
        let max = max_sectors.min(self.chunk_sectors_left(sector));
        let pbs_mask = (self.physical_block_size >> SECTOR_SHIFT).wrapping_sub(1);
        let lbs_mask = (self.logical_block_size >> SECTOR_SHIFT).wrapping_sub(1);
        // `start` keeps the low bits of the sector, as the kernel's `unsigned` does.
        let start = (sector as u32) & pbs_mask;
        let end = start.wrapping_add(max) & !pbs_mask;
        if end > start {
            end - start
        } else {
            max & !lbs_mask
        }
    }

    /// Largest read/write starting at `sector`, in sectors (`get_max_io_size`).
    ///
    /// `max_sectors`, clamped so that the request does not cross a chunk boundary, then shortened
    /// so that it ends on a physical-block boundary when that leaves something; otherwise
    /// rounded down to logical blocks (which may give 0 for a sector just before a chunk
    /// boundary that is not logical-block aligned).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig {
    ///     physical_block_size: 4096, max_hw_sectors: 64, max_user_sectors: 64, chunk_sectors: 128,
    ///     ..LimitsConfig::default()
    /// })?;
    /// assert_eq!(l.max_io_sectors(0), 64);
    /// assert_eq!(l.max_io_sectors(1), 63);   // ends at sector 64, a physical-block boundary
    /// assert_eq!(l.max_io_sectors(100), 28); // chunk boundary at 128
    /// assert_eq!(l.max_io_sectors(127), 1);  // one sector to the chunk boundary
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn max_io_sectors(&self, sector: u64) -> u32 {
        self.max_io_size(self.max_sectors, sector)
    }

    /// Largest write-zeroes starting at `sector`, in sectors: `get_max_io_size` with
    /// `max_write_zeroes_sectors` (chunk boundary and physical-block end included), as
    /// `bio_split_write_zeroes` uses it. 0 when write-zeroes is unsupported.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig {
    ///     physical_block_size: 4096, max_write_zeroes_sectors: 64, ..LimitsConfig::default()
    /// })?;
    /// assert_eq!(l.max_write_zeroes_io_sectors(0), 64);
    /// assert_eq!(l.max_write_zeroes_io_sectors(1), 63);  // ends at sector 64
    /// assert_eq!(QueueLimits::new(&LimitsConfig::default())?.max_write_zeroes_io_sectors(1), 0);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn max_write_zeroes_io_sectors(&self, sector: u64) -> u32 {
        self.max_io_size(self.max_write_zeroes_sectors, sector)
    }

    /// The largest bio in sectors: `u32::MAX` bytes rounded down to the logical block size
    /// (`bio_allowed_max_sectors`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { logical_block_size: 4096, ..LimitsConfig::default() })?;
    /// assert_eq!(l.bio_allowed_max_sectors(), (u32::MAX >> 9) & !7);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub const fn bio_allowed_max_sectors(&self) -> u32 {
        (u32::MAX & !(self.logical_block_size - 1)) >> SECTOR_SHIFT
    }

    /// [`Self::max_io_sectors`] in bytes, clamped to [`Self::bio_allowed_max_sectors`] (the
    /// kernel's shift wraps above 8 Mi sectors; no bio is that large, so the clamp never changes
    /// a split of a bio whose segments fit the other limits).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { max_hw_sectors: 256, max_user_sectors: 256, ..LimitsConfig::default() })?;
    /// assert_eq!(l.max_io_bytes(0), 128 * 1024);
    /// let huge = QueueLimits::new(&LimitsConfig { max_hw_sectors: u32::MAX, max_user_sectors: u32::MAX, ..LimitsConfig::default() })?;
    /// assert_eq!(huge.max_io_bytes(0), u32::MAX & !511);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn max_io_bytes(&self, sector: u64) -> u32 {
        self.max_io_sectors(sector)
            .min(self.bio_allowed_max_sectors())
            << SECTOR_SHIFT
    }

    /// The discard cut of `__bio_split_discard` for a discard of `sectors` sectors at `sector`:
    /// the limit (at most the largest bio) rounded down to the discard granularity, then
    /// shortened so that the next piece starts on a granule (shifted by `discard_alignment`).
    /// `chunk_sectors` plays no part. The caller has checked that discard is supported.
    pub(crate) fn discard_cut(&self, sector: u64, sectors: u32) -> DiscardCut {
        let granularity =
            NonZeroU32::new(self.discard_granularity >> SECTOR_SHIFT).unwrap_or(NonZeroU32::MIN);
        let mut max = self.max_discard_sectors.min(self.bio_allowed_max_sectors());
        max -= max % granularity;
        if max == 0 {
            return if sectors <= self.max_discard_sectors {
                DiscardCut::Whole
            } else {
                DiscardCut::Impossible
            };
        }
        if sectors <= max {
            return DiscardCut::Whole;
        }
        let align = (self.discard_alignment >> SECTOR_SHIFT) % granularity;
        let next = sector
            .wrapping_add(u64::from(max))
            .wrapping_sub(u64::from(align));
        let tmp = next % NonZeroU64::from(granularity);
        // tmp < granularity <= u32::MAX.
        let tmp = tmp as u32;
        DiscardCut::Front(if max > tmp { max - tmp } else { max })
    }
}
