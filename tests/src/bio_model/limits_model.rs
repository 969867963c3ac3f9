//! Reference model of Linux 6.12's queue-limit validation and of the split decisions that do not
//! walk a bio's segments, written from the kernel source without calling the `bio` crate's logic:
//!
//! - `blk_validate_limits` (block/blk-settings.c) for the fields `bio::LimitsConfig` has;
//! - `get_max_io_size`, `bio_allowed_max_sectors`, `__bio_split_discard` and
//!   `bio_split_write_zeroes` (block/blk-merge.c), `blk_boundary_sectors_left`
//!   (include/linux/blkdev.h);
//! - `bio_may_need_split` (block/blk.h; 6.12 has no `max_fast_segment_size`).
//!
//! Sector arithmetic is done in `u32` with explicit wrap-around where the kernel's `unsigned int`
//! would wrap. The only values read from the crate are plain fields of `LimitsConfig` (a data
//! struct) and, through [`ModelLimits`], the numbers a `QueueLimits` holds.

use bio::LimitsConfig;

use super::ModelLimits;

const PAGE_SIZE: u64 = 4096;
const PAGE_SECTORS: u64 = PAGE_SIZE / 512;
const BLK_SAFE_MAX_SECTORS: u64 = 255;
const BLK_DEF_MAX_SECTORS_CAP: u64 = 2560;
const BLK_MAX_SEGMENTS: u64 = 128;
const BLK_SEG_BOUNDARY_MASK: u64 = 0xFFFF_FFFF;
const BLK_MAX_SEGMENT_SIZE: u64 = 65536;

/// Which field `blk_validate_limits` refused (its `-EINVAL` paths, in the kernel's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `blk_validate_block_size(logical_block_size)`.
    LogicalBlockSize,
    /// `max_hw_sectors < PAGE_SECTORS` (`WARN_ON_ONCE`).
    MaxHwSectors,
    /// `max_user_sectors < PAGE_SIZE / SECTOR_SIZE`.
    MaxUserSectors,
    /// `seg_boundary_mask < PAGE_SIZE - 1`.
    SegBoundaryMask,
    /// `max_segment_size < PAGE_SIZE` without a virtual boundary.
    MaxSegmentSize,
    /// `dma_alignment > PAGE_SIZE`.
    DmaAlignment,
}

/// `round_down(x, y)` of include/linux/math.h: a mask, meaningful for powers of two only.
fn round_down(x: u64, y: u64) -> u64 {
    x & !(y.wrapping_sub(1))
}

/// `blk_validate_limits` on the fields of `cfg`, with `max_user_discard_sectors == UINT_MAX` as
/// `blk_set_default_limits` sets it.
pub fn validate(cfg: &LimitsConfig) -> Result<ModelLimits, Refused> {
    let mut lbs = u64::from(cfg.logical_block_size);
    if lbs == 0 {
        lbs = 512;
    } else if !(512..=PAGE_SIZE).contains(&lbs) || !lbs.is_power_of_two() {
        return Err(Refused::LogicalBlockSize);
    }
    let mut pbs = u64::from(cfg.physical_block_size);
    if pbs < lbs {
        pbs = lbs;
    }
    let mut io_min = u64::from(cfg.io_min);
    if io_min < pbs {
        io_min = pbs;
    }
    let io_opt = round_down(u64::from(cfg.io_opt), pbs);
    let mut max_hw = u64::from(cfg.max_hw_sectors);
    if max_hw == 0 {
        max_hw = BLK_SAFE_MAX_SECTORS;
    }
    if max_hw < PAGE_SECTORS {
        return Err(Refused::MaxHwSectors);
    }
    let lbs_sectors = lbs / 512;
    if lbs_sectors > max_hw {
        return Err(Refused::MaxHwSectors);
    }
    max_hw = round_down(max_hw, lbs_sectors);
    let user = u64::from(cfg.max_user_sectors);
    let max_sectors = if user != 0 {
        if user < PAGE_SIZE / 512 {
            return Err(Refused::MaxUserSectors);
        }
        max_hw.min(user)
    } else if io_opt > BLK_DEF_MAX_SECTORS_CAP * 512 {
        max_hw.min(io_opt / 512)
    } else if io_min > BLK_DEF_MAX_SECTORS_CAP * 512 {
        max_hw.min(io_min / 512)
    } else {
        max_hw.min(BLK_DEF_MAX_SECTORS_CAP)
    };
    let max_sectors = round_down(max_sectors, lbs_sectors);
    let max_segments = match cfg.max_segments {
        0 => BLK_MAX_SEGMENTS,
        v => u64::from(v),
    };
    let max_discard = u64::from(cfg.max_discard_sectors).min(u64::from(u32::MAX));
    let discard_granularity = if max_discard != 0 {
        u64::from(cfg.discard_granularity).max(pbs)
    } else {
        0
    };
    let mut sbm = cfg.seg_boundary_mask;
    if sbm == 0 {
        sbm = BLK_SEG_BOUNDARY_MASK;
    }
    if sbm < PAGE_SIZE - 1 {
        return Err(Refused::SegBoundaryMask);
    }
    let vbm = u64::from(cfg.virt_boundary_mask);
    let mut mss = u64::from(cfg.max_segment_size);
    if vbm != 0 {
        if mss == 0 {
            mss = u64::from(u32::MAX);
        }
    } else {
        if mss == 0 {
            mss = BLK_MAX_SEGMENT_SIZE;
        }
        if mss < PAGE_SIZE {
            return Err(Refused::MaxSegmentSize);
        }
    }
    let mut dma = u64::from(cfg.dma_alignment);
    if dma == 0 {
        dma = 511;
    }
    if dma > PAGE_SIZE {
        return Err(Refused::DmaAlignment);
    }
    Ok(ModelLimits {
        lbs,
        pbs,
        io_min,
        io_opt,
        max_hw_sectors: max_hw,
        max_sectors,
        max_segments,
        max_segment_size: mss,
        seg_boundary_mask: sbm,
        virt_boundary_mask: vbm,
        dma_alignment: dma,
        chunk_sectors: u64::from(cfg.chunk_sectors),
        max_discard_sectors: max_discard,
        discard_granularity,
        discard_alignment: u64::from(cfg.discard_alignment),
        max_write_zeroes_sectors: u64::from(cfg.max_write_zeroes_sectors),
    })
}

/// The limits the kernel accepts but the crate refuses on purpose (docs/DEVIATIONS.md): a
/// physical block size that is not a power of two, boundary masks that are not `2^n - 1` (the
/// virtual one also below `PAGE_SIZE`), a maximum segment size below `PAGE_SIZE` next to a
/// virtual boundary.
pub fn crate_refuses(m: &ModelLimits) -> bool {
    let low_mask = |v: u64| v & v.wrapping_add(1) == 0;
    !m.pbs.is_power_of_two()
        || !low_mask(m.seg_boundary_mask)
        || !low_mask(m.virt_boundary_mask)
        || m.virt_boundary_mask >= PAGE_SIZE
        || m.max_segment_size < PAGE_SIZE
}

/// `blk_boundary_sectors_left(offset, boundary)`: by division when the boundary is not a power
/// of two, by mask otherwise (the same value).
fn boundary_sectors_left(offset: u64, boundary: u32) -> u32 {
    let b = u64::from(boundary);
    if boundary.is_power_of_two() {
        (b - (offset & (b - 1))) as u32
    } else {
        (b - offset % b) as u32
    }
}

/// `get_max_io_size` for a bio at `sector` whose operation allows `max_sectors` (`max_sectors`
/// for reads and writes, `max_write_zeroes_sectors` for write-zeroes), in the kernel's `unsigned`
/// arithmetic.
pub fn get_max_io_size(lim: &ModelLimits, op_max_sectors: u64, sector: u64) -> u32 {
    let pbs = (lim.pbs >> 9) as u32;
    let lbs = (lim.lbs >> 9) as u32;
    let mut max_sectors = op_max_sectors as u32;
    if lim.chunk_sectors != 0 {
        max_sectors = max_sectors.min(boundary_sectors_left(sector, lim.chunk_sectors as u32));
    }
    // `start` is an `unsigned`: the low 32 bits of the masked sector.
    let start = (sector & u64::from(pbs.wrapping_sub(1))) as u32;
    let end = start.wrapping_add(max_sectors) & !pbs.wrapping_sub(1);
    if end > start {
        return end - start;
    }
    max_sectors & !lbs.wrapping_sub(1)
}

/// `bio_allowed_max_sectors`: `round_down(UINT_MAX, logical_block_size) >> SECTOR_SHIFT`.
pub fn bio_allowed_max_sectors(lim: &ModelLimits) -> u32 {
    (round_down(u64::from(u32::MAX), lim.lbs) >> 9) as u32
}

/// What the kernel does with a discard or write-zeroes bio of `sectors` sectors at `sector`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSplit {
    /// `submit_bio_noacct` fails it: the limit is 0.
    NotSupported,
    /// Sent whole (`return bio`), and the bio fits the operation's sector limit.
    Whole,
    /// Sent whole although it is larger than the limit allows (the limit rounds to 0).
    WholeOverLimit,
    /// Split: the first this many sectors.
    Front(u32),
}

/// `__bio_split_discard` (granularity, alignment; `chunk_sectors` is never read).
pub fn discard_split(lim: &ModelLimits, sector: u64, sectors: u32) -> RangeSplit {
    if lim.max_discard_sectors == 0 {
        return RangeSplit::NotSupported;
    }
    let granularity = ((lim.discard_granularity >> 9) as u32).max(1);
    let mut max = (lim.max_discard_sectors as u32).min(bio_allowed_max_sectors(lim));
    max -= max % granularity;
    if max == 0 {
        return if u64::from(sectors) <= lim.max_discard_sectors {
            RangeSplit::Whole
        } else {
            RangeSplit::WholeOverLimit
        };
    }
    if sectors <= max {
        return RangeSplit::Whole;
    }
    let mut split = max;
    // `sector_t tmp`: 64-bit unsigned arithmetic, then `sector_div` keeps the remainder.
    let tmp = sector
        .wrapping_add(u64::from(split))
        .wrapping_sub(u64::from(
            ((lim.discard_alignment >> 9) as u32) % granularity,
        ));
    let tmp = tmp % u64::from(granularity);
    if u64::from(split) > tmp {
        split -= tmp as u32;
    }
    RangeSplit::Front(split)
}

/// `bio_split_write_zeroes`.
pub fn write_zeroes_split(lim: &ModelLimits, sector: u64, sectors: u32) -> RangeSplit {
    if lim.max_write_zeroes_sectors == 0 {
        return RangeSplit::NotSupported;
    }
    let max = get_max_io_size(lim, lim.max_write_zeroes_sectors, sector);
    if max == 0 {
        // `return bio` before the size test: sent whole, over the limit unless it is empty.
        return if sectors == 0 {
            RangeSplit::Whole
        } else {
            RangeSplit::WholeOverLimit
        };
    }
    if sectors <= max {
        return RangeSplit::Whole;
    }
    RangeSplit::Front(max)
}

/// `bio_may_need_split`: `chunk_sectors || bi_vcnt != 1 || bv_len + bv_offset > PAGE_SIZE` of the
/// first table entry (`first` is its `(offset, len)`).
pub fn may_need_split(lim: &ModelLimits, vcnt: usize, first: Option<(u32, u32)>) -> bool {
    lim.chunk_sectors != 0
        || vcnt != 1
        || first.is_none_or(|(off, len)| u64::from(off) + u64::from(len) > PAGE_SIZE)
}
