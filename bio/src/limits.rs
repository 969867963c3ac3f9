//! Queue limits: what a device accepts in one request (`struct queue_limits`).
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! A [`QueueLimits`] can only be obtained through validation ([`QueueLimits::new`], modelled on
//! `blk_validate_limits`), so every function that splits or counts segments may rely on its
//! invariants instead of re-checking them on each I/O.

use bvec::PAGE_SIZE;

use crate::LimitsError;

/// log2 of the block layer's sector size.
pub const SECTOR_SHIFT: u32 = 9;
/// The block layer's sector size (512 bytes), the unit of `bi_sector` and of the sector limits.
pub const SECTOR_SIZE: u32 = 1 << SECTOR_SHIFT;
/// Sectors in one page.
pub(crate) const PAGE_SECTORS: u32 = (PAGE_SIZE as u32) >> SECTOR_SHIFT;
/// Default maximum number of segments (`BLK_MAX_SEGMENTS`).
pub const BLK_MAX_SEGMENTS: u16 = 128;
/// Default `max_hw_sectors` (`BLK_SAFE_MAX_SECTORS`).
pub const BLK_SAFE_MAX_SECTORS: u32 = 255;
/// Default cap on `max_sectors` when the driver gives no user limit (`BLK_DEF_MAX_SECTORS_CAP`).
pub const BLK_DEF_MAX_SECTORS_CAP: u32 = 2560;
/// Default maximum segment size without a virtual boundary (`BLK_MAX_SEGMENT_SIZE`).
pub const BLK_MAX_SEGMENT_SIZE: u32 = 65536;
/// Default segment boundary mask (`BLK_SEG_BOUNDARY_MASK`).
pub const BLK_SEG_BOUNDARY_MASK: u64 = 0xFFFF_FFFF;
/// Largest sector count whose byte count fits in `u32` (`BIO_MAX_SECTORS`).
pub const BIO_MAX_SECTORS: u32 = u32::MAX >> SECTOR_SHIFT;

/// Requested limits, as a driver fills them in before validation. Zero means "use the default".
///
/// # Examples
///
/// ```
/// use bio::{LimitsConfig, QueueLimits};
/// let lim = QueueLimits::new(&LimitsConfig { logical_block_size: 4096, ..LimitsConfig::default() })?;
/// assert_eq!(lim.physical_block_size(), 4096);
/// assert_eq!(lim.max_sectors(), 248); // 255 rounded down to 8-sector blocks
/// # Ok::<(), bio::LimitsError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Logical block size in bytes (default 512).
    pub logical_block_size: u32,
    /// Physical block size in bytes (default: the logical block size).
    pub physical_block_size: u32,
    /// Hardware transfer limit in sectors (default 255).
    pub max_hw_sectors: u32,
    /// Administrator limit in sectors (default: none, which caps at 2560).
    pub max_user_sectors: u32,
    /// Maximum number of physical segments per request (default 128).
    pub max_segments: u16,
    /// Maximum bytes per physical segment (default 65536, or `u32::MAX` with a virtual boundary).
    pub max_segment_size: u32,
    /// A physical segment never crosses an address multiple of `mask + 1` (default `0xFFFF_FFFF`).
    pub seg_boundary_mask: u64,
    /// Segments other than the first start, and other than the last end, at a multiple of
    /// `mask + 1` (default 0: no constraint).
    pub virt_boundary_mask: u32,
    /// Required alignment mask of buffer addresses (default 511).
    pub dma_alignment: u32,
    /// Requests never cross a multiple of this many sectors (default 0: no chunking).
    pub chunk_sectors: u32,
    /// Largest discard in sectors (default 0: discard unsupported).
    pub max_discard_sectors: u32,
    /// Largest write-zeroes in sectors (default 0: write-zeroes unsupported).
    pub max_write_zeroes_sectors: u32,
}

/// Validated queue limits.
///
/// # Invariants
///
/// - `logical_block_size` is a power of two in `512..=PAGE_SIZE`; `physical_block_size` is a power
///   of two `>= logical_block_size`.
/// - `PAGE_SIZE / 512 <= max_sectors <= max_hw_sectors <= BIO_MAX_SECTORS`, both multiples of the
///   logical block size in sectors, so `max_sectors << 9` fits in `u32`.
/// - `max_segments >= 1`; `max_segment_size >= PAGE_SIZE`.
/// - `seg_boundary_mask` is `2^n - 1 >= PAGE_SIZE - 1`; `virt_boundary_mask` is 0 or `2^n - 1 <
///   PAGE_SIZE`, and when it is non-zero `max_segment_size == u32::MAX`.
/// - `dma_alignment` is `2^n - 1`; `chunk_sectors` is 0 or a multiple of the logical block size
///   in sectors.
/// - `max_discard_sectors` and `max_write_zeroes_sectors` are 0 (unsupported) or multiples of the
///   logical block size in sectors, at most `BIO_MAX_SECTORS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    logical_block_size: u32,
    physical_block_size: u32,
    max_hw_sectors: u32,
    max_sectors: u32,
    max_segments: u16,
    max_segment_size: u32,
    seg_boundary_mask: u64,
    virt_boundary_mask: u32,
    dma_alignment: u32,
    chunk_sectors: u32,
    max_discard_sectors: u32,
    max_write_zeroes_sectors: u32,
}

/// `v` is of the form `2^n - 1` (including 0).
const fn is_low_mask(v: u64) -> bool {
    v & v.wrapping_add(1) == 0
}

impl QueueLimits {
    /// Validates `cfg` and fills in defaults, like `blk_validate_limits`.
    ///
    /// Unlike the kernel, a physical block size below the logical one, a boundary mask that is not
    /// `2^n - 1`, and a chunk size that is not a whole number of logical blocks are refused rather
    /// than silently adjusted or accepted.
    ///
    /// # Errors
    ///
    /// A [`LimitsError`] naming the first invalid field.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, LimitsError, QueueLimits};
    /// let d = QueueLimits::new(&LimitsConfig::default())?;
    /// assert_eq!((d.logical_block_size(), d.max_segments(), d.max_segment_size()), (512, 128, 65536));
    /// assert_eq!(d.dma_alignment(), 511);
    /// let bad = LimitsConfig { logical_block_size: 1000, ..LimitsConfig::default() };
    /// assert_eq!(QueueLimits::new(&bad), Err(LimitsError::LogicalBlockSize(1000)));
    /// let bad = LimitsConfig { virt_boundary_mask: 4095, max_segment_size: 65536, ..LimitsConfig::default() };
    /// assert_eq!(QueueLimits::new(&bad), Err(LimitsError::MaxSegmentSize(65536)));
    /// # Ok::<(), LimitsError>(())
    /// ```
    pub fn new(cfg: &LimitsConfig) -> Result<Self, LimitsError> {
        let lbs = match cfg.logical_block_size {
            0 => SECTOR_SIZE,
            v if v.is_power_of_two() && (SECTOR_SIZE..=PAGE_SIZE as u32).contains(&v) => v,
            v => return Err(LimitsError::LogicalBlockSize(v)),
        };
        let pbs = match cfg.physical_block_size {
            0 => lbs,
            v if v.is_power_of_two() && v >= lbs => v,
            v => return Err(LimitsError::PhysicalBlockSize(v)),
        };
        let lbs_sectors = lbs >> SECTOR_SHIFT;
        let check_sectors = |v: u32| {
            if (PAGE_SECTORS..=BIO_MAX_SECTORS).contains(&v) {
                Ok(v)
            } else {
                Err(LimitsError::MaxSectors(v))
            }
        };
        let max_hw = match cfg.max_hw_sectors {
            0 => BLK_SAFE_MAX_SECTORS,
            v => check_sectors(v)?,
        };
        let max_hw = round_down(max_hw, lbs_sectors);
        let cap = match cfg.max_user_sectors {
            0 => BLK_DEF_MAX_SECTORS_CAP,
            v => check_sectors(v)?,
        };
        let max_sectors = round_down(if cap < max_hw { cap } else { max_hw }, lbs_sectors);
        let vbm = cfg.virt_boundary_mask;
        if !is_low_mask(u64::from(vbm)) || vbm as usize >= PAGE_SIZE {
            return Err(LimitsError::VirtBoundaryMask(vbm));
        }
        let max_segment_size = match (vbm, cfg.max_segment_size) {
            (0, 0) => BLK_MAX_SEGMENT_SIZE,
            (0, v) if v as usize >= PAGE_SIZE => v,
            (_, 0 | u32::MAX) if vbm != 0 => u32::MAX,
            (_, v) => return Err(LimitsError::MaxSegmentSize(v)),
        };
        let sbm = match cfg.seg_boundary_mask {
            0 => BLK_SEG_BOUNDARY_MASK,
            v if is_low_mask(v) && v >= PAGE_SIZE as u64 - 1 => v,
            v => return Err(LimitsError::SegBoundaryMask(v)),
        };
        let dma_alignment = match cfg.dma_alignment {
            0 => SECTOR_SIZE - 1,
            v if is_low_mask(u64::from(v)) => v,
            v => return Err(LimitsError::DmaAlignment(v)),
        };
        if cfg.chunk_sectors % lbs_sectors != 0 {
            return Err(LimitsError::ChunkSectors(cfg.chunk_sectors));
        }
        // Sizes above BIO_MAX_SECTORS are clamped (the kernel's UINT_MAX means "no limit").
        let clamp_special = |v: u32| round_down(v.min(BIO_MAX_SECTORS), lbs_sectors);
        // INVARIANT: every field was checked or defaulted above; the roundings keep the sector
        // limits >= PAGE_SECTORS because lbs_sectors <= PAGE_SECTORS divides PAGE_SECTORS.
        Ok(Self {
            logical_block_size: lbs,
            physical_block_size: pbs,
            max_hw_sectors: max_hw,
            max_sectors,
            max_segments: if cfg.max_segments == 0 {
                BLK_MAX_SEGMENTS
            } else {
                cfg.max_segments
            },
            max_segment_size,
            seg_boundary_mask: sbm,
            virt_boundary_mask: vbm,
            dma_alignment,
            chunk_sectors: cfg.chunk_sectors,
            max_discard_sectors: clamp_special(cfg.max_discard_sectors),
            max_write_zeroes_sectors: clamp_special(cfg.max_write_zeroes_sectors),
        })
    }

    /// Logical block size in bytes: the unit of addressing and the granularity of splits.
    pub const fn logical_block_size(&self) -> u32 {
        self.logical_block_size
    }
    /// Physical block size in bytes: splits prefer to end on its multiples.
    pub const fn physical_block_size(&self) -> u32 {
        self.physical_block_size
    }
    /// Hardware transfer limit in sectors.
    pub const fn max_hw_sectors(&self) -> u32 {
        self.max_hw_sectors
    }
    /// Transfer limit for normal reads and writes, in sectors.
    pub const fn max_sectors(&self) -> u32 {
        self.max_sectors
    }
    /// Maximum number of physical segments in one request.
    pub const fn max_segments(&self) -> u16 {
        self.max_segments
    }
    /// Maximum bytes in one physical segment.
    pub const fn max_segment_size(&self) -> u32 {
        self.max_segment_size
    }
    /// Segment boundary mask (`2^n - 1`).
    pub const fn seg_boundary_mask(&self) -> u64 {
        self.seg_boundary_mask
    }
    /// Virtual boundary mask (0 for none).
    pub const fn virt_boundary_mask(&self) -> u32 {
        self.virt_boundary_mask
    }
    /// DMA alignment mask for buffer addresses.
    pub const fn dma_alignment(&self) -> u32 {
        self.dma_alignment
    }
    /// Chunk size in sectors (0 for none).
    pub const fn chunk_sectors(&self) -> u32 {
        self.chunk_sectors
    }
    /// Largest discard in sectors (0: unsupported).
    pub const fn max_discard_sectors(&self) -> u32 {
        self.max_discard_sectors
    }
    /// Largest write-zeroes in sectors (0: unsupported).
    pub const fn max_write_zeroes_sectors(&self) -> u32 {
        self.max_write_zeroes_sectors
    }

    /// The limits as a config, to adjust a field and validate again.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::QueueLimits;
    /// let l = QueueLimits::nvme(512, 0, 0)?;
    /// let l = QueueLimits::new(&bio::LimitsConfig { max_write_zeroes_sectors: 0, ..l.config() })?;
    /// assert_eq!(l.max_write_zeroes_sectors(), 0);
    /// assert_eq!(QueueLimits::new(&l.config()), Ok(l));
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub const fn config(&self) -> LimitsConfig {
        LimitsConfig {
            logical_block_size: self.logical_block_size,
            physical_block_size: self.physical_block_size,
            max_hw_sectors: self.max_hw_sectors,
            max_user_sectors: self.max_sectors,
            max_segments: self.max_segments,
            max_segment_size: self.max_segment_size,
            seg_boundary_mask: self.seg_boundary_mask,
            virt_boundary_mask: self.virt_boundary_mask,
            dma_alignment: self.dma_alignment,
            chunk_sectors: self.chunk_sectors,
            max_discard_sectors: self.max_discard_sectors,
            max_write_zeroes_sectors: self.max_write_zeroes_sectors,
        }
    }

    /// Distance in sectors from `sector` to the next chunk boundary, or `u32::MAX` without chunks
    /// (`blk_boundary_sectors_left`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { chunk_sectors: 256, ..LimitsConfig::default() })?;
    /// assert_eq!((l.chunk_sectors_left(0), l.chunk_sectors_left(255), l.chunk_sectors_left(256)), (256, 1, 256));
    /// assert_eq!(QueueLimits::new(&LimitsConfig::default())?.chunk_sectors_left(7), u32::MAX);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn chunk_sectors_left(&self, sector: u64) -> u32 {
        if self.chunk_sectors == 0 {
            return u32::MAX;
        }
        let chunk = u64::from(self.chunk_sectors);
        // `left` is in 1..=chunk_sectors, so it fits in u32 (`checked_rem` only avoids a
        // divide-by-zero panic path: the zero case returned above).
        (chunk - sector.checked_rem(chunk).unwrap_or(0)) as u32
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
        let max = self.max_sectors.min(self.chunk_sectors_left(sector));
        let pbs = u64::from(self.physical_block_size >> SECTOR_SHIFT);
        let start = sector & (pbs - 1);
        let end = (start + u64::from(max)) & !(pbs - 1);
        if end > start {
            // end - start <= max, which is a u32.
            (end - start) as u32
        } else {
            round_down(max, self.logical_block_size >> SECTOR_SHIFT)
        }
    }

    /// [`Self::max_io_sectors`] in bytes (cannot overflow: `max_sectors <= BIO_MAX_SECTORS`).
    ///
    /// # Examples
    ///
    /// ```
    /// let l = bio::QueueLimits::nvme(512, 5, 0)?;     // 128 KiB
    /// assert_eq!(l.max_io_bytes(0), 128 * 1024);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn max_io_bytes(&self, sector: u64) -> u32 {
        self.max_io_sectors(sector) << SECTOR_SHIFT
    }

    /// Whether a buffer at `addr` satisfies the DMA alignment.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = bio::QueueLimits::nvme(512, 0, 0)?;     // mask 3
    /// assert!(l.dma_aligned(0x1004) && !l.dma_aligned(0x1002));
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub const fn dma_aligned(&self, addr: u64) -> bool {
        addr & self.dma_alignment as u64 == 0
    }
}

/// Rounds `v` down to a multiple of the power of two `m`.
///
/// A mask rather than `%`: no division, and no divide-by-zero panic path in kernel builds
/// (`m == 0` cannot come from validated limits, and would give 0).
pub(crate) const fn round_down(v: u32, m: u32) -> u32 {
    v & !m.wrapping_sub(1)
}
