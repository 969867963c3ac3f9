//! Reference model for the bio crate's splitting and segment counting, written from the
//! definitions (one step per byte) without calling the crate's logic.
//!
//! A bio is flattened into one [`Byte`] per data byte: its physical address and the index of the
//! vec-table entry (multipage segment) it came from. On that flat view:
//!
//! - a hardware segment is a run of bytes of one entry that stays inside one segment-boundary
//!   window and is at most `max_segment_size` long, cut greedily from the entry's first byte
//!   (entries are never merged with each other, as the block layer's counting does not);
//! - a front part is valid when it is a whole number of logical blocks, at most the largest I/O
//!   allowed at its sector, has at most `max_segments` hardware segments, and has no
//!   virtual-boundary gap: neither between two of its entries nor where one hardware segment of
//!   an entry ends and the next begins (a segment cut by `max_segment_size` or the segment
//!   boundary at an address off the virtual boundary; `bvec_split_segs` in block/blk-merge.c
//!   stops there);
//! - the split point is the largest valid front (validity only gets harder with length, so the
//!   longest valid byte prefix, rounded down to a block, is it).

use bvec::{Bvec, Pfn, PAGE_SIZE};

pub mod limits_model;

/// One data byte of a flattened bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Byte {
    /// Physical address.
    pub phys: u64,
    /// Which window entry (multipage segment) it belongs to.
    pub entry: usize,
}

/// Limits in plain numbers (the model does not use `QueueLimits` methods). Built from a
/// `QueueLimits`' values, or by the model of `blk_validate_limits`
/// ([`limits_model::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelLimits {
    /// Logical block size.
    pub lbs: u64,
    /// Physical block size.
    pub pbs: u64,
    /// `io_min` in bytes.
    pub io_min: u64,
    /// `io_opt` in bytes.
    pub io_opt: u64,
    /// `max_hw_sectors`.
    pub max_hw_sectors: u64,
    /// `max_sectors`.
    pub max_sectors: u64,
    /// `max_segments`.
    pub max_segments: u64,
    /// `max_segment_size`.
    pub max_segment_size: u64,
    /// `seg_boundary_mask`.
    pub seg_boundary_mask: u64,
    /// `virt_boundary_mask`.
    pub virt_boundary_mask: u64,
    /// `dma_alignment`.
    pub dma_alignment: u64,
    /// `chunk_sectors` (0 = none).
    pub chunk_sectors: u64,
    /// `max_discard_sectors` (0 = unsupported).
    pub max_discard_sectors: u64,
    /// `discard_granularity` in bytes.
    pub discard_granularity: u64,
    /// `discard_alignment` in bytes.
    pub discard_alignment: u64,
    /// `max_write_zeroes_sectors` (0 = unsupported).
    pub max_write_zeroes_sectors: u64,
}

impl From<&bio::QueueLimits> for ModelLimits {
    /// Copies the limit values (only their numbers: no `QueueLimits` logic is used).
    fn from(l: &bio::QueueLimits) -> Self {
        Self {
            lbs: u64::from(l.logical_block_size()),
            pbs: u64::from(l.physical_block_size()),
            io_min: u64::from(l.io_min()),
            io_opt: u64::from(l.io_opt()),
            max_hw_sectors: u64::from(l.max_hw_sectors()),
            max_sectors: u64::from(l.max_sectors()),
            max_segments: u64::from(l.max_segments()),
            max_segment_size: u64::from(l.max_segment_size()),
            seg_boundary_mask: l.seg_boundary_mask(),
            virt_boundary_mask: u64::from(l.virt_boundary_mask()),
            dma_alignment: u64::from(l.dma_alignment()),
            chunk_sectors: u64::from(l.chunk_sectors()),
            max_discard_sectors: u64::from(l.max_discard_sectors()),
            discard_granularity: u64::from(l.discard_granularity()),
            discard_alignment: u64::from(l.discard_alignment()),
            max_write_zeroes_sectors: u64::from(l.max_write_zeroes_sectors()),
        }
    }
}

/// Flattens multipage segments (already clipped to the window) into bytes.
pub fn flatten(segs: &[Bvec<Pfn>]) -> Vec<Byte> {
    let mut out = Vec::new();
    for (entry, s) in segs.iter().enumerate() {
        let start = s.page().0 * PAGE_SIZE as u64 + u64::from(s.offset());
        for k in 0..u64::from(s.len()) {
            out.push(Byte {
                phys: start + k,
                entry,
            });
        }
    }
    out
}

/// Segment-boundary window number of a physical address.
fn window(lim: &ModelLimits, phys: u64) -> u64 {
    phys & !lim.seg_boundary_mask
}

/// Number of hardware segments in `bytes` (see the module docs), counted one byte at a time.
pub fn count_segments(bytes: &[Byte], lim: &ModelLimits) -> u64 {
    let mut n = 0;
    let mut seg_start: Option<Byte> = None;
    let mut seg_len = 0u64;
    for b in bytes {
        let new = match seg_start {
            None => true,
            Some(s) => {
                s.entry != b.entry
                    || window(lim, s.phys) != window(lim, b.phys)
                    || seg_len == lim.max_segment_size
            }
        };
        if new {
            n += 1;
            seg_start = Some(*b);
            seg_len = 0;
        }
        seg_len += 1;
    }
    n
}

/// Largest read/write in bytes starting at `sector`: the kernel's `get_max_io_size` (the sector
/// limit cut at the next chunk boundary, then ending at the last physical-block boundary it
/// reaches, or rounded down to logical blocks if it reaches none), clamped to
/// `bio_allowed_max_sectors` before the conversion to bytes (where the kernel's 32-bit shift
/// would wrap; a documented deviation of the crate).
pub fn max_io_bytes(sector: u64, lim: &ModelLimits) -> u64 {
    let sectors = limits_model::get_max_io_size(lim, lim.max_sectors, sector)
        .min(limits_model::bio_allowed_max_sectors(lim));
    u64::from(sectors) * 512
}

/// Whether the entry boundary before byte `i` is a virtual-boundary gap.
fn gap_before(bytes: &[Byte], i: usize, lim: &ModelLimits) -> bool {
    if lim.virt_boundary_mask == 0 || i == 0 || bytes[i - 1].entry == bytes[i].entry {
        return false;
    }
    let prev_end = bytes[i - 1].phys + 1;
    (prev_end & lim.virt_boundary_mask) != 0 || (bytes[i].phys & lim.virt_boundary_mask) != 0
}

/// The first byte that starts a new hardware segment of the same entry (see [`count_segments`])
/// at an address off the virtual boundary: the segment before it cannot be followed by one
/// there. Segments are cut greedily from each entry's first byte, so this is the same for every
/// prefix that contains the byte.
fn first_seg_gap(bytes: &[Byte], lim: &ModelLimits) -> Option<usize> {
    if lim.virt_boundary_mask == 0 {
        return None;
    }
    let mut seg_start: Option<Byte> = None;
    let mut seg_len = 0u64;
    for (i, b) in bytes.iter().enumerate() {
        match seg_start {
            Some(s) if s.entry == b.entry => {
                if window(lim, s.phys) != window(lim, b.phys) || seg_len == lim.max_segment_size {
                    if b.phys & lim.virt_boundary_mask != 0 {
                        return Some(i);
                    }
                    seg_start = Some(*b);
                    seg_len = 0;
                }
            }
            _ => {
                seg_start = Some(*b);
                seg_len = 0;
            }
        }
        seg_len += 1;
    }
    None
}

/// Length of the longest prefix of `bytes` that breaks no limit except block alignment.
pub fn longest_valid_prefix(bytes: &[Byte], sector: u64, lim: &ModelLimits) -> u64 {
    let max_bytes = max_io_bytes(sector, lim);
    let seg_gap = first_seg_gap(bytes, lim);
    let mut n = 0u64;
    for i in 0..bytes.len() {
        if n + 1 > max_bytes || gap_before(bytes, i, lim) || seg_gap == Some(i) {
            break;
        }
        // Adding byte i must not exceed max_segments.
        if count_segments(&bytes[..=i], lim) > lim.max_segments {
            break;
        }
        n += 1;
    }
    n
}

/// Reference `__bio_split_to_limits` for a read or write: whole as one segment when
/// [`limits_model::may_need_split`] says no (`vcnt` table entries counted by the bio, `first` the
/// `(offset, len)` of the first), else [`split_point`]. `Ok(None)` also when the shortcut applies.
pub fn split_point_rw(
    bytes: &[Byte],
    sector: u64,
    lim: &ModelLimits,
    vcnt: usize,
    first: Option<(u32, u32)>,
) -> Result<Option<u64>, u64> {
    if !limits_model::may_need_split(lim, vcnt, first) {
        return Ok(None);
    }
    split_point(bytes, sector, lim)
}

/// Reference split: `Ok(None)` when the whole bio is valid, `Ok(Some(front))` for the largest
/// valid front, `Err(fitted)` when the longest valid prefix is shorter than one block.
pub fn split_point(bytes: &[Byte], sector: u64, lim: &ModelLimits) -> Result<Option<u64>, u64> {
    let p = longest_valid_prefix_fast(bytes, sector, lim);
    if p == bytes.len() as u64 {
        return Ok(None);
    }
    let front = p / lim.lbs * lim.lbs;
    if front == 0 {
        return Err(p);
    }
    Ok(Some(front))
}

/// [`longest_valid_prefix`] with the segment count kept incrementally (same definition, linear).
pub fn longest_valid_prefix_fast(bytes: &[Byte], sector: u64, lim: &ModelLimits) -> u64 {
    let max_bytes = max_io_bytes(sector, lim);
    let mut n = 0u64;
    let mut segs = 0u64;
    let mut seg_start: Option<Byte> = None;
    let mut seg_len = 0u64;
    for (i, b) in bytes.iter().enumerate() {
        if n + 1 > max_bytes || gap_before(bytes, i, lim) {
            break;
        }
        let new = match seg_start {
            None => true,
            Some(s) => {
                s.entry != b.entry
                    || window(lim, s.phys) != window(lim, b.phys)
                    || seg_len == lim.max_segment_size
            }
        };
        let same_entry = seg_start.is_some_and(|s| s.entry == b.entry);
        if new && same_entry && b.phys & lim.virt_boundary_mask != 0 {
            // A hardware segment of this entry ended off the virtual boundary.
            break;
        }
        if new {
            if segs + 1 > lim.max_segments {
                break;
            }
            segs += 1;
            seg_start = Some(*b);
            seg_len = 0;
        }
        seg_len += 1;
        n += 1;
    }
    n
}

/// Checks that a piece (its flattened bytes, starting at `sector`) satisfies every limit;
/// returns a description of the first violation.
pub fn check_piece(bytes: &[Byte], sector: u64, lim: &ModelLimits) -> Result<(), String> {
    let len = bytes.len() as u64;
    if len == 0 {
        return Err("empty piece".into());
    }
    if len % lim.lbs != 0 || sector % (lim.lbs / 512) != 0 {
        return Err(format!(
            "piece of {len} bytes at sector {sector} not block aligned"
        ));
    }
    if len > max_io_bytes(sector, lim) {
        return Err(format!(
            "piece of {len} bytes exceeds {}",
            max_io_bytes(sector, lim)
        ));
    }
    let segs = count_segments(bytes, lim);
    if segs > lim.max_segments {
        return Err(format!("{segs} segments > {}", lim.max_segments));
    }
    if let Some(i) = (1..bytes.len()).find(|&i| gap_before(bytes, i, lim)) {
        return Err(format!("virtual-boundary gap before byte {i}"));
    }
    if let Some(i) = first_seg_gap(bytes, lim) {
        return Err(format!(
            "segment of one entry ends off the virtual boundary before byte {i}"
        ));
    }
    Ok(())
}
