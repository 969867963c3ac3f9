// SPDX-License-Identifier: GPL-2.0

//! A request's segments mapped by one call (`dma_map_sg_attrs()`), unmapped on drop.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)
//!
//! [`Mapping`](super::Mapping) maps each segment with its own `dma_map_page_attrs()`: without
//! an IOMMU that is all the DMA layer does anyway (`dma_direct_map_sg()` is a loop over the
//! segments). Behind an IOMMU every such call allocates an IOVA range, maps it and, on unmap,
//! frees and queues an IOTLB flush for it; a scatterlist mapped in one call
//! (`iommu_dma_map_sg()` in `drivers/iommu/dma-iommu.c`) gets one IOVA range for all its
//! segments, mapped and unmapped once, and usually comes back as one DMA segment. The C NVMe
//! driver maps every multi-segment request that way (`nvme_map_data()` in
//! `drivers/nvme/host/pci.c`, `dma_map_sgtable()`); rnvme does where it pays: behind an IOMMU.

use core::ptr::NonNull;

use bvec::Bvec;
use kernel::{bindings, prelude::*, sync::Arc};

use super::{Direction, MappedSegment};
use crate::{helpers, pci, KPage};

/// A request's page segments, collected with [`SgMapping::add`] and then mapped for one
/// direction by one call ([`SgMapping::map`]); unmapped and freed on drop. The scatterlist
/// and the room for the DMA segments are one allocation of 48 bytes per entry, sized for the
/// request (`GFP_ATOMIC`: made in `queue_rq`); the C driver takes a 4 KiB table from a mempool
/// for every such request.
///
/// # Invariants
///
/// `sgl` is a live allocation of `rnvme_glue_sg_alloc(cap)`, owned by this value and freed only
/// by its drop: `cap` initialised scatterlist entries (one table, `sg_init_table()`), then room
/// for `cap` DMA segments right after them (`sgl + cap`). `n <= cap`, and the first `n`
/// entries are set to pages that are data of the caller's request. When `nsegs > 0` those `n`
/// entries are one live mapping of `dev` in direction `dir` (`dma_map_sg_attrs`), unmapped only
/// by the drop, and the first `nsegs <= n` segments of the room are its DMA segments.
pub struct SgMapping {
    dev: Arc<pci::Device>,
    dir: Direction,
    sgl: NonNull<bindings::scatterlist>,
    cap: u32,
    n: u32,
    nsegs: u32,
}

// SAFETY: the table is owned by the value alone (type invariant), like a `KBox`'s memory; the
// DMA API calls on it may be made from any CPU.
unsafe impl Send for SgMapping {}
// SAFETY: a shared reference only reads the DMA segments.
unsafe impl Sync for SgMapping {}

impl SgMapping {
    /// An empty table for `dev` and `dir`, for up to `entries` segments.
    ///
    /// # Errors
    ///
    /// `EINVAL` for no entries or more than `u32::MAX`, `ENOMEM` without memory.
    pub fn new(dev: &Arc<pci::Device>, dir: Direction, entries: usize) -> Result<Self> {
        let cap = u32::try_from(entries).map_err(|_| EINVAL)?;
        if cap == 0 {
            return Err(EINVAL);
        }
        // SAFETY: any count may be asked for; the helper checks the size and returns NULL
        // without memory.
        let sgl = NonNull::new(unsafe { helpers::rnvme_glue_sg_alloc(cap) }).ok_or(ENOMEM)?;
        // INVARIANT: a fresh table of `cap` entries, none set, nothing mapped.
        Ok(Self {
            dev: dev.clone(),
            dir,
            sgl,
            cap,
            n: 0,
            nsegs: 0,
        })
    }

    /// Adds `seg` (physically contiguous pages) as the next entry.
    ///
    /// # Errors
    ///
    /// `ENOSPC` when the entries asked for at creation are set, `EBUSY` once the table is
    /// mapped.
    ///
    /// # Safety
    ///
    /// `seg` must name memory that stays allocated, and that nothing but the device accesses
    /// against the direction (e.g. the pages of an in-flight request), until this value is
    /// dropped.
    pub unsafe fn add(&mut self, seg: &Bvec<KPage>) -> Result {
        if self.nsegs != 0 {
            return Err(EBUSY);
        }
        if self.n >= self.cap {
            return Err(ENOSPC);
        }
        // SAFETY: entry `n < cap` is a cleared entry of this value's table (type invariant);
        // `seg` is `len` bytes at `offset` of physically contiguous pages (`Bvec` invariant).
        unsafe {
            helpers::rnvme_glue_sg_set(
                self.sgl.as_ptr(),
                self.n,
                seg.page().as_ptr(),
                seg.len(),
                seg.offset(),
            )
        };
        // INVARIANT: entry `n` now holds a segment of the request (the contract).
        self.n += 1;
        Ok(())
    }

    /// Maps the entries added, by one call.
    ///
    /// # Errors
    ///
    /// `EINVAL` without entries or when already mapped, `EIO` when the DMA API refuses
    /// (nothing is mapped then).
    pub fn map(&mut self) -> Result {
        if self.n == 0 || self.nsegs != 0 {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is valid; the first `n <= cap` entries of the table of `cap` are set
        // scatterlist entries of the request's pages (type invariant); the helper writes at
        // most `n` segments into the table's own room.
        let nsegs = unsafe {
            helpers::rnvme_glue_sg_map(
                self.dev.device_raw(),
                self.sgl.as_ptr(),
                self.n,
                self.cap,
                self.dir == Direction::ToDevice,
            )
        };
        if nsegs == 0 || nsegs > self.n {
            return Err(EIO);
        }
        // INVARIANT: the `n` entries are one live mapping; its `nsegs` DMA segments are in the
        // room.
        self.nsegs = nsegs;
        Ok(())
    }

    /// The DMA segments of the mapping, in order (none before [`SgMapping::map`]).
    pub fn segments(&self) -> &[MappedSegment] {
        if self.nsegs == 0 {
            return &[];
        }
        // SAFETY: the table is live with room for `cap` segments right after its `cap`
        // entries (`sgl + cap` in C, the same `struct scatterlist` as bindgen's), of which the
        // first `nsegs` are written (type invariant); `MappedSegment` is the helper's segment
        // type (`helpers::rnvme_glue_dma_seg`); the room lives as long as `self`.
        unsafe {
            let segs = self.sgl.as_ptr().add(self.cap as usize).cast::<MappedSegment>();
            core::slice::from_raw_parts(segs.cast_const(), self.nsegs as usize)
        }
    }
}

impl Drop for SgMapping {
    fn drop(&mut self) {
        if self.nsegs != 0 {
            // SAFETY: the first `n` entries are one live mapping of `dev` in `dir` (type
            // invariant, `nsegs > 0`), unmapped once here with the same entries.
            unsafe {
                helpers::rnvme_glue_sg_unmap(
                    self.dev.device_raw(),
                    self.sgl.as_ptr(),
                    self.n,
                    self.dir == Direction::ToDevice,
                )
            };
        }
        // SAFETY: the table's allocation, owned by this value and not used after this.
        unsafe { helpers::rnvme_glue_sg_free(self.sgl.as_ptr()) };
    }
}
