// SPDX-License-Identifier: GPL-2.0

//! The kernel's own queue-limit validation and `bio_split_to_limits` on real bios and a real
//! request queue, behind a safe API, for the differential test of `bio::QueueLimits::new` and
//! `bio::Bio::split_point`.
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! `bio_split_to_limits` (block/blk-merge.c, exported) reads the limits of the bio's block
//! device's queue and, when it splits, allocates the front from the disk's `bio_split` set and
//! resubmits the remainder with `submit_bio_noacct`. So it needs a gendisk: [`SplitDisk`] is one
//! from `blk_alloc_disk` that is never added (capacity 2^52 sectors, so `bio_check_eod` passes
//! for sectors below 2^51), whose limits
//! are set per case with `queue_limits_start_update` + `queue_limits_commit_update` (which runs
//! `blk_validate_limits`). During the call `current->bio_list` points to a local list, so the
//! resubmitted remainder is only queued there (as inside any `->submit_bio`), inspected, and
//! ended; no I/O is ever issued.

use core::ptr::NonNull;

use bio::{LimitsConfig, Op};
use bvec::Bvec;
use kernel::bindings;
use kernel::prelude::*;

use kernel_glue::{bio_vec_ptr, KPage};

use crate::c_bio::MAX_VECS;
use crate::helpers;

/// The limits the kernel's `blk_validate_limits` produced, field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    /// `logical_block_size`.
    pub logical_block_size: u32,
    /// `physical_block_size`.
    pub physical_block_size: u32,
    /// `io_min`.
    pub io_min: u32,
    /// `io_opt`.
    pub io_opt: u32,
    /// `max_hw_sectors`.
    pub max_hw_sectors: u32,
    /// `max_sectors`.
    pub max_sectors: u32,
    /// `max_segments`.
    pub max_segments: u16,
    /// `max_segment_size`.
    pub max_segment_size: u32,
    /// `seg_boundary_mask`.
    pub seg_boundary_mask: u64,
    /// `virt_boundary_mask`.
    pub virt_boundary_mask: u64,
    /// `dma_alignment`.
    pub dma_alignment: u32,
    /// `chunk_sectors`.
    pub chunk_sectors: u32,
    /// `max_discard_sectors`.
    pub max_discard_sectors: u32,
    /// `discard_granularity`.
    pub discard_granularity: u32,
    /// `discard_alignment`.
    pub discard_alignment: u32,
    /// `max_write_zeroes_sectors`.
    pub max_write_zeroes_sectors: u32,
}

impl KernelLimits {
    /// The same fields of validated crate limits, for comparison.
    pub fn of(l: &bio::QueueLimits) -> Self {
        Self {
            logical_block_size: l.logical_block_size(),
            physical_block_size: l.physical_block_size(),
            io_min: l.io_min(),
            io_opt: l.io_opt(),
            max_hw_sectors: l.max_hw_sectors(),
            max_sectors: l.max_sectors(),
            max_segments: l.max_segments(),
            max_segment_size: l.max_segment_size(),
            seg_boundary_mask: l.seg_boundary_mask(),
            virt_boundary_mask: u64::from(l.virt_boundary_mask()),
            dma_alignment: l.dma_alignment(),
            chunk_sectors: l.chunk_sectors(),
            max_discard_sectors: l.max_discard_sectors(),
            discard_granularity: l.discard_granularity(),
            discard_alignment: l.discard_alignment(),
            max_write_zeroes_sectors: l.max_write_zeroes_sectors(),
        }
    }
}

/// What the kernel's `bio_split_to_limits` did with one bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSplit {
    /// Sectors of the split-off front, 0 when the bio went on whole.
    pub front_sectors: u32,
    /// Sectors of the remainder it resubmitted (0 when none was queued).
    pub rest_sectors: u32,
    /// Whether the remainder (the original bio) was queued for resubmission.
    pub queued: bool,
}

/// A gendisk that is never added, whose queue's limits are set per case (module docs).
///
/// # Invariants
///
/// `disk` came from `rnvme_glue_split_disk_alloc` and is released only in `drop`.
pub struct SplitDisk {
    disk: NonNull<bindings::gendisk>,
}

impl SplitDisk {
    /// Allocates the disk.
    ///
    /// # Errors
    ///
    /// `ENOMEM` if `blk_alloc_disk` fails.
    pub fn new() -> Result<Self> {
        // SAFETY: no preconditions; the helper returns a new disk or NULL.
        let disk = unsafe { helpers::rnvme_glue_split_disk_alloc() };
        // INVARIANT: a disk from the helper, owned by the new value.
        Ok(Self {
            disk: NonNull::new(disk).ok_or(ENOMEM)?,
        })
    }

    /// Gives the queue the limits `cfg` asks for and returns what `blk_validate_limits` made of
    /// them (with `max_user_discard_sectors = UINT_MAX`, as for a new queue).
    ///
    /// # Errors
    ///
    /// The kernel's errno (`EINVAL`) when it refuses them; the queue keeps its previous limits.
    pub fn set_limits(&mut self, cfg: &LimitsConfig) -> Result<KernelLimits> {
        // SAFETY: `struct queue_limits` is plain data for which all-zero is the "nothing set"
        // value the kernel itself starts from (`struct queue_limits lim = {}`).
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        lim.logical_block_size = cfg.logical_block_size;
        lim.physical_block_size = cfg.physical_block_size;
        lim.io_min = cfg.io_min;
        lim.io_opt = cfg.io_opt;
        lim.max_hw_sectors = cfg.max_hw_sectors;
        lim.max_user_sectors = cfg.max_user_sectors;
        lim.max_segments = cfg.max_segments;
        lim.max_segment_size = cfg.max_segment_size;
        // `unsigned long` is 64 bits (checked in `c_bio`): exact.
        lim.seg_boundary_mask = cfg.seg_boundary_mask as _;
        lim.virt_boundary_mask = cfg.virt_boundary_mask as _;
        lim.dma_alignment = cfg.dma_alignment;
        lim.chunk_sectors = cfg.chunk_sectors;
        lim.max_hw_discard_sectors = cfg.max_discard_sectors;
        lim.discard_granularity = cfg.discard_granularity;
        lim.discard_alignment = cfg.discard_alignment;
        lim.max_write_zeroes_sectors = cfg.max_write_zeroes_sectors;
        // SAFETY: `self.disk` is a live disk (invariant) and `lim` a valid `queue_limits` we
        // own; the helper validates it and copies the result back into it.
        let ret =
            unsafe { helpers::rnvme_glue_split_disk_set_limits(self.disk.as_ptr(), &mut lim) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(KernelLimits {
            logical_block_size: lim.logical_block_size,
            physical_block_size: lim.physical_block_size,
            io_min: lim.io_min,
            io_opt: lim.io_opt,
            max_hw_sectors: lim.max_hw_sectors,
            max_sectors: lim.max_sectors,
            max_segments: lim.max_segments,
            max_segment_size: lim.max_segment_size,
            seg_boundary_mask: lim.seg_boundary_mask as u64,
            virt_boundary_mask: lim.virt_boundary_mask as u64,
            dma_alignment: lim.dma_alignment,
            chunk_sectors: lim.chunk_sectors,
            max_discard_sectors: lim.max_discard_sectors,
            discard_granularity: lim.discard_granularity,
            discard_alignment: lim.discard_alignment,
            max_write_zeroes_sectors: lim.max_write_zeroes_sectors,
        })
    }

    /// Runs `bio_split_to_limits` on a new bio of `op` at `sector` with `bi_size = size` whose
    /// table is `table` entry for entry (empty for discard and write-zeroes), under the limits
    /// last set with [`Self::set_limits`].
    ///
    /// # Errors
    ///
    /// `EINVAL` for a flush, an empty table for a read or write, a table longer than
    /// [`MAX_VECS`], or a `size` above the table's bytes for a read or write; `ENOMEM` if the
    /// bio cannot be allocated; the errno of a bio the kernel ended with an error.
    pub fn split(
        &mut self,
        op: Op,
        sector: u64,
        table: &[Bvec<KPage>],
        size: u32,
    ) -> Result<KernelSplit> {
        let code = match op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Discard => 2,
            Op::WriteZeroes => 3,
            Op::Flush => return Err(EINVAL),
        };
        if table.len() > MAX_VECS || (op.has_data() && table.is_empty()) {
            return Err(EINVAL);
        }
        let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
        if total > u64::from(u32::MAX) || (op.has_data() && u64::from(size) > total) {
            return Err(EINVAL);
        }
        let (mut front, mut rest, mut queued) = (0u32, 0u32, false);
        // SAFETY: `self.disk` is live (invariant), with limits the kernel validated (or its
        // defaults). `bio_vec_ptr(table)` is valid for reads of `table.len()` (at most 256, so
        // the `u16` cast is exact) `struct bio_vec`s while `table` is borrowed; the helper copies
        // them into its own bio whose byte count cannot overflow (`total <= u32::MAX`) and whose
        // `bi_size` stays within the table for data bios. The kernel's split only does
        // arithmetic on the page pointers and never dereferences them. `front`, `rest` and
        // `queued` are valid for writes. Every bio is ended and freed by the helper.
        let ret = unsafe {
            helpers::rnvme_glue_bio_split_to_limits(
                self.disk.as_ptr(),
                bio_vec_ptr(table),
                table.len() as u16,
                code,
                sector,
                size,
                &mut front,
                &mut rest,
                &mut queued,
            )
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(KernelSplit {
            front_sectors: front,
            rest_sectors: rest,
            queued,
        })
    }
}

impl Drop for SplitDisk {
    fn drop(&mut self) {
        // SAFETY: `self.disk` came from the allocation helper and is released only here.
        unsafe { helpers::rnvme_glue_split_disk_free(self.disk.as_ptr()) };
    }
}
