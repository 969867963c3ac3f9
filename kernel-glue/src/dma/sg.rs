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

use core::mem::MaybeUninit;

use bvec::Bvec;
use kernel::{bindings, prelude::*, sync::Arc};

use super::{Direction, MappedSegment};
use crate::{helpers, pci, KPage};

/// Up to `N` page segments, collected with [`SgMapping::add`] and then mapped for one
/// direction by one call ([`SgMapping::map`]); unmapped on drop. Large (48 bytes per entry):
/// built on the heap ([`SgMapping::new_boxed`]).
///
/// # Invariants
///
/// `n <= cap <= N`. The first `cap` entries of `sgl` are initialised scatterlist entries (one
/// table, `sg_init_table()`); the first `n` of them are set to pages that are data of the
/// caller's request. When `nsegs > 0` those `n` entries are one live mapping of `dev` in
/// direction `dir` (`dma_map_sg_attrs`), unmapped only by the drop, and the first
/// `nsegs <= n` entries of `segs` are its DMA segments.
pub struct SgMapping<const N: usize> {
    dev: Arc<pci::Device>,
    dir: Direction,
    sgl: [MaybeUninit<bindings::scatterlist>; N],
    segs: [MaybeUninit<MappedSegment>; N],
    cap: u32,
    n: u32,
    nsegs: u32,
}

impl<const N: usize> SgMapping<N> {
    /// An empty table for `dev` and `dir` on the heap (`flags`: allocation context), ready
    /// for up to `entries` segments (at most `N`): only those entries are cleared.
    pub fn new_boxed(
        dev: &Arc<pci::Device>,
        dir: Direction,
        entries: usize,
        flags: kernel::alloc::Flags,
    ) -> Result<KBox<Self>> {
        let cap = u32::try_from(entries.min(N)).map_err(|_| EINVAL)?;
        let mut b = KBox::<Self>::new_uninit(flags)?;
        let p = b.as_mut_ptr();
        // SAFETY: `p` is valid, aligned, uninitialised memory for a `Self`; every field but the
        // two tables is written once below, and the tables are arrays of `MaybeUninit`; the
        // first `cap <= N` entries of `sgl` are cleared by the helper (`sg_init_table()`).
        unsafe {
            core::ptr::addr_of_mut!((*p).dev).write(dev.clone());
            core::ptr::addr_of_mut!((*p).dir).write(dir);
            core::ptr::addr_of_mut!((*p).cap).write(cap);
            core::ptr::addr_of_mut!((*p).n).write(0);
            core::ptr::addr_of_mut!((*p).nsegs).write(0);
            if cap > 0 {
                let sgl = core::ptr::addr_of_mut!((*p).sgl).cast::<bindings::scatterlist>();
                helpers::rnvme_glue_sg_init(sgl, cap);
            }
        }
        // INVARIANT: no entry set, nothing mapped; `cap` entries cleared.
        // SAFETY: all fields initialised above.
        Ok(unsafe { b.assume_init() })
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
                self.sgl.as_mut_ptr().cast(),
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
        // SAFETY: `dev` is valid; the first `n` entries are set scatterlist entries of the
        // request's pages (type invariant); `segs` has room for `n >= ` the DMA segments
        // written (the helper writes at most `n`), and `MappedSegment` is the helper's
        // segment type (`helpers::rnvme_glue_dma_seg`).
        let nsegs = unsafe {
            helpers::rnvme_glue_sg_map(
                self.dev.device_raw(),
                self.sgl.as_mut_ptr().cast(),
                self.n,
                self.dir == Direction::ToDevice,
                self.segs.as_mut_ptr().cast::<MappedSegment>(),
            )
        };
        if nsegs == 0 || nsegs > self.n {
            return Err(EIO);
        }
        // INVARIANT: the `n` entries are one live mapping; its `nsegs` DMA segments are in
        // `segs`.
        self.nsegs = nsegs;
        Ok(())
    }

    /// The DMA segments of the mapping, in order (none before [`SgMapping::map`]).
    pub fn segments(&self) -> &[MappedSegment] {
        let live = self.segs.get(..self.nsegs as usize).unwrap_or(&[]);
        // SAFETY: the first `nsegs` entries are initialised (type invariant), and
        // `MaybeUninit<MappedSegment>` has the layout of `MappedSegment`.
        unsafe { core::slice::from_raw_parts(live.as_ptr().cast::<MappedSegment>(), live.len()) }
    }
}

impl<const N: usize> Drop for SgMapping<N> {
    fn drop(&mut self) {
        if self.nsegs == 0 {
            return;
        }
        // SAFETY: the first `n` entries are one live mapping of `dev` in `dir` (type
        // invariant, `nsegs > 0`), unmapped once here with the same entries.
        unsafe {
            helpers::rnvme_glue_sg_unmap(
                self.dev.device_raw(),
                self.sgl.as_mut_ptr().cast(),
                self.n,
                self.dir == Direction::ToDevice,
            )
        };
    }
}
