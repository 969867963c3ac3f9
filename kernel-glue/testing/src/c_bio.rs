// SPDX-License-Identifier: GPL-2.0

//! The kernel's exported `bio_split_rw_at` on a real `struct bio`, behind a safe API, for the
//! differential test of `bio::split_rw_at`.
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)

use bio::QueueLimits;
use bvec::Bvec;
use kernel::prelude::*;

use kernel_glue::{bio_vec_ptr, KPage};

use crate::helpers;

/// Most segments of a table handed to the kernel (`BIO_MAX_VECS`).
pub const MAX_VECS: usize = 256;

// `unsigned long` (`usize` in the bindings) holds a `u64` boundary mask exactly.
const _: () = assert!(core::mem::size_of::<usize>() == core::mem::size_of::<u64>());

/// What the kernel's `bio_split_rw_at` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CSplit {
    /// The return value: sectors of the front part, 0 for "no split", or a negative errno.
    pub sectors: i32,
    /// `*segs`: the segments it counted.
    pub segs: u32,
}

/// Runs the kernel's `bio_split_rw_at(bio, lim, &segs, max_bytes)` on a freshly allocated bio
/// holding `table` (entry for entry, not merged) with `bi_size = size`, a `write` or read, and
/// a `struct queue_limits` carrying `lim`'s logical block size, segment limits and boundary
/// masks (every other field 0, so no zone write granularity).
///
/// `lim` is validated ([`QueueLimits`] invariants), which is what keeps the kernel's walk well
/// defined: `max_segment_size >= PAGE_SIZE` (a zero size with an all-ones boundary mask would make
/// its segment loop spin forever), power-of-two block size and `2^n - 1` masks.
///
/// # Errors
///
/// `EINVAL` if `table` is empty or longer than [`MAX_VECS`], or if `size` exceeds the table's
/// bytes or the table holds more than `u32::MAX` bytes (`__bio_add_page` would warn);
/// `ENOMEM` if the bio cannot be allocated.
pub fn bio_split_rw_at(
    table: &[Bvec<KPage>],
    size: u32,
    write: bool,
    lim: &QueueLimits,
    max_bytes: u32,
) -> Result<CSplit> {
    if table.is_empty() || table.len() > MAX_VECS {
        return Err(EINVAL);
    }
    let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
    if total > u64::from(u32::MAX) || u64::from(size) > total {
        return Err(EINVAL);
    }
    let mut sectors: i32 = 0;
    let mut segs: u32 = 0;
    // SAFETY: `bio_vec_ptr(table)` is valid for reads of `table.len()` (1..=256, so the `u16`
    // cast is exact) `struct bio_vec`s while `table` is borrowed; the helper copies them into
    // its own bio, whose byte count cannot overflow (`total <= u32::MAX`) and whose `bi_size`
    // stays within the table (`size <= total`). The kernel's walk only does arithmetic on the
    // page pointers (`page_to_phys`, `page + n` with the vmemmap) and never dereferences them.
    // The limits are valid (`QueueLimits` invariants). `sectors` and `segs` are valid for
    // writes. The bio is freed by the helper.
    let ret = unsafe {
        helpers::rnvme_glue_bio_split_rw_at(
            bio_vec_ptr(table),
            table.len() as u16,
            size,
            write,
            lim.logical_block_size(),
            lim.max_segments(),
            lim.max_segment_size(),
            // `unsigned long` is 64 bits (checked below), so both are exact.
            lim.seg_boundary_mask() as usize,
            lim.virt_boundary_mask() as usize,
            max_bytes,
            &mut sectors,
            &mut segs,
        )
    };
    if ret != 0 {
        return Err(ENOMEM);
    }
    Ok(CSplit { sectors, segs })
}
