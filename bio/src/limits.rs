//! Queue limits: what a device accepts in one request (`struct queue_limits`).
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! A [`QueueLimits`] can only be obtained through validation ([`QueueLimits::new`], modelled on
//! `blk_validate_limits`), so every function that splits or counts segments may rely on its
//! invariants instead of re-checking them on each I/O.

use bvec::PAGE_SIZE;

use crate::LimitsError;

mod max_io;

pub(crate) use max_io::DiscardCut;

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
    /// Physical block size in bytes (default, and at least: the logical block size).
    pub physical_block_size: u32,
    /// Minimum I/O size in bytes (default, and at least: the physical block size).
    pub io_min: u32,
    /// Optimal I/O size in bytes (default 0: none; rounded down to the physical block size).
    pub io_opt: u32,
    /// Hardware transfer limit in sectors (default 255).
    pub max_hw_sectors: u32,
    /// Administrator limit in sectors (default: none, which caps at 2560, or at `io_opt` or
    /// `io_min` when they are larger).
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
    /// Alignment mask of buffer addresses and lengths (default 511, at most `PAGE_SIZE`).
    pub dma_alignment: u32,
    /// Reads, writes and write-zeroes never cross a multiple of this many sectors (default 0: no
    /// chunking). Discards ignore it, as the kernel's do.
    pub chunk_sectors: u32,
    /// Largest discard in sectors (default 0: discard unsupported).
    pub max_discard_sectors: u32,
    /// Preferred discard granularity in bytes (raised to the physical block size when discard is
    /// supported; 0 when it is not).
    pub discard_granularity: u32,
    /// Offset in bytes of the first aligned discard granule (default 0).
    pub discard_alignment: u32,
    /// Largest write-zeroes in sectors (default 0: write-zeroes unsupported).
    pub max_write_zeroes_sectors: u32,
}

/// Validated queue limits.
///
/// # Invariants
///
/// - `logical_block_size` is a power of two in `512..=PAGE_SIZE`; `physical_block_size` is a power
///   of two `>= logical_block_size`; `io_min >= physical_block_size`; `io_opt` is a multiple of
///   `physical_block_size`.
/// - `PAGE_SIZE / 512 <= max_sectors <= max_hw_sectors`, both multiples of the logical block size
///   in sectors (they may exceed what fits a bio: byte conversions clamp, see
///   [`QueueLimits::max_io_bytes`]).
/// - `max_segments >= 1`; `max_segment_size >= PAGE_SIZE`.
/// - `seg_boundary_mask` is `2^n - 1 >= PAGE_SIZE - 1`; `virt_boundary_mask` is 0 or `2^n - 1 <
///   PAGE_SIZE`.
/// - `1 <= dma_alignment <= PAGE_SIZE` (used as an AND mask, as the kernel does).
/// - `discard_granularity` is 0 exactly when `max_discard_sectors` is 0, and otherwise at least
///   `physical_block_size`.
///
/// `chunk_sectors`, `discard_alignment`, `max_discard_sectors` and `max_write_zeroes_sectors` may
/// hold any value, as in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    logical_block_size: u32,
    physical_block_size: u32,
    io_min: u32,
    io_opt: u32,
    max_hw_sectors: u32,
    max_sectors: u32,
    max_segments: u16,
    max_segment_size: u32,
    seg_boundary_mask: u64,
    virt_boundary_mask: u32,
    dma_alignment: u32,
    chunk_sectors: u32,
    max_discard_sectors: u32,
    discard_granularity: u32,
    discard_alignment: u32,
    max_write_zeroes_sectors: u32,
}

/// `v` is of the form `2^n - 1` (including 0).
const fn is_low_mask(v: u64) -> bool {
    v & v.wrapping_add(1) == 0
}

impl QueueLimits {
    /// Validates `cfg` and fills in defaults, like `blk_validate_limits` (block/blk-settings.c)
    /// for the fields modelled here, in the kernel's order.
    ///
    /// Accepted and refused exactly as the kernel does, except for three values the kernel
    /// accepts but that no block-size or boundary rule can mean, which are refused (listed in
    /// `docs/DEVIATIONS.md`): a physical block size that is not a power of two, a segment
    /// boundary mask or a virtual boundary mask that is not `2^n - 1` (or, for the virtual
    /// boundary, not below `PAGE_SIZE`), and a maximum segment size below `PAGE_SIZE` together
    /// with a virtual boundary.
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
    /// // The kernel accepts any DMA alignment up to PAGE_SIZE, and nothing above it.
    /// let ok = LimitsConfig { dma_alignment: 6, ..LimitsConfig::default() };
    /// assert_eq!(QueueLimits::new(&ok)?.dma_alignment(), 6);
    /// let bad = LimitsConfig { dma_alignment: 0xffff, ..LimitsConfig::default() };
    /// assert_eq!(QueueLimits::new(&bad), Err(LimitsError::DmaAlignment(0xffff)));
    /// // A physical block smaller than the logical one is raised to it.
    /// let l = QueueLimits::new(&LimitsConfig { logical_block_size: 4096, physical_block_size: 512, ..LimitsConfig::default() })?;
    /// assert_eq!((l.physical_block_size(), l.io_min()), (4096, 4096));
    /// # Ok::<(), LimitsError>(())
    /// ```
    pub fn new(cfg: &LimitsConfig) -> Result<Self, LimitsError> {
        let lbs = match cfg.logical_block_size {
            0 => SECTOR_SIZE,
            v if v.is_power_of_two() && (SECTOR_SIZE..=PAGE_SIZE as u32).contains(&v) => v,
            v => return Err(LimitsError::LogicalBlockSize(v)),
        };
        let pbs = match cfg.physical_block_size {
            v if v < lbs => lbs,
            v if v.is_power_of_two() => v,
            v => return Err(LimitsError::PhysicalBlockSize(v)),
        };
        let io_min = if cfg.io_min < pbs { pbs } else { cfg.io_min };
        let io_opt = round_down(cfg.io_opt, pbs);
        let lbs_sectors = lbs >> SECTOR_SHIFT;
        let max_hw = match cfg.max_hw_sectors {
            0 => BLK_SAFE_MAX_SECTORS,
            v if v < PAGE_SECTORS => return Err(LimitsError::MaxSectors(v)),
            v => v,
        };
        // lbs_sectors <= PAGE_SECTORS <= max_hw, so the kernel's second check cannot fail.
        let max_hw = round_down(max_hw, lbs_sectors);
        let cap_bytes = BLK_DEF_MAX_SECTORS_CAP << SECTOR_SHIFT;
        let max_sectors = match cfg.max_user_sectors {
            0 if io_opt > cap_bytes => io_opt >> SECTOR_SHIFT,
            0 if io_min > cap_bytes => io_min >> SECTOR_SHIFT,
            0 => BLK_DEF_MAX_SECTORS_CAP,
            v if v < PAGE_SECTORS => return Err(LimitsError::MaxSectors(v)),
            v => v,
        };
        let max_sectors = round_down(max_sectors.min(max_hw), lbs_sectors);
        let max_discard_sectors = cfg.max_discard_sectors;
        let discard_granularity = match max_discard_sectors {
            0 => 0,
            _ => cfg.discard_granularity.max(pbs),
        };
        let sbm = match cfg.seg_boundary_mask {
            0 => BLK_SEG_BOUNDARY_MASK,
            v if is_low_mask(v) && v >= PAGE_SIZE as u64 - 1 => v,
            v => return Err(LimitsError::SegBoundaryMask(v)),
        };
        let vbm = cfg.virt_boundary_mask;
        if !is_low_mask(u64::from(vbm)) || vbm as usize >= PAGE_SIZE {
            return Err(LimitsError::VirtBoundaryMask(vbm));
        }
        let max_segment_size = match (vbm, cfg.max_segment_size) {
            (0, 0) => BLK_MAX_SEGMENT_SIZE,
            (_, 0) => u32::MAX,
            (_, v) if v as usize >= PAGE_SIZE => v,
            (_, v) => return Err(LimitsError::MaxSegmentSize(v)),
        };
        let dma_alignment = match cfg.dma_alignment {
            0 => SECTOR_SIZE - 1,
            v if v as usize <= PAGE_SIZE => v,
            v => return Err(LimitsError::DmaAlignment(v)),
        };
        // INVARIANT: every field was checked or defaulted above; the roundings keep the sector
        // limits >= PAGE_SECTORS because lbs_sectors <= PAGE_SECTORS divides PAGE_SECTORS, and
        // max_sectors was taken as a minimum with max_hw (both multiples of lbs_sectors).
        Ok(Self {
            logical_block_size: lbs,
            physical_block_size: pbs,
            io_min,
            io_opt,
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
            max_discard_sectors,
            discard_granularity,
            discard_alignment: cfg.discard_alignment,
            max_write_zeroes_sectors: cfg.max_write_zeroes_sectors,
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
    /// Minimum I/O size in bytes (at least the physical block size).
    pub const fn io_min(&self) -> u32 {
        self.io_min
    }
    /// Optimal I/O size in bytes (0: none).
    pub const fn io_opt(&self) -> u32 {
        self.io_opt
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
    /// Discard granularity in bytes (0 when discard is unsupported).
    pub const fn discard_granularity(&self) -> u32 {
        self.discard_granularity
    }
    /// Offset in bytes of the first aligned discard granule.
    pub const fn discard_alignment(&self) -> u32 {
        self.discard_alignment
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
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { io_opt: 2 << 20, max_write_zeroes_sectors: 64, ..LimitsConfig::default() })?;
    /// assert_eq!(l.max_sectors(), 255); // io_opt raises the cap, max_hw_sectors still bounds it
    /// let l = QueueLimits::new(&LimitsConfig { max_write_zeroes_sectors: 0, ..l.config() })?;
    /// assert_eq!(l.max_write_zeroes_sectors(), 0);
    /// assert_eq!(QueueLimits::new(&l.config()), Ok(l));
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub const fn config(&self) -> LimitsConfig {
        LimitsConfig {
            logical_block_size: self.logical_block_size,
            physical_block_size: self.physical_block_size,
            io_min: self.io_min,
            io_opt: self.io_opt,
            max_hw_sectors: self.max_hw_sectors,
            max_user_sectors: self.max_sectors,
            max_segments: self.max_segments,
            max_segment_size: self.max_segment_size,
            seg_boundary_mask: self.seg_boundary_mask,
            virt_boundary_mask: self.virt_boundary_mask,
            dma_alignment: self.dma_alignment,
            chunk_sectors: self.chunk_sectors,
            max_discard_sectors: self.max_discard_sectors,
            discard_granularity: self.discard_granularity,
            discard_alignment: self.discard_alignment,
            max_write_zeroes_sectors: self.max_write_zeroes_sectors,
        }
    }

    /// Whether a buffer at `addr` satisfies the DMA alignment.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{LimitsConfig, QueueLimits};
    /// let l = QueueLimits::new(&LimitsConfig { dma_alignment: 3, ..LimitsConfig::default() })?;
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
