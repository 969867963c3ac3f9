// SPDX-License-Identifier: GPL-2.0

//! What a request holds until it completes: the DMA mappings of its data (in the PDU for one
//! or two physical segments, on the heap beyond; one IOVA range behind an IOMMU) and its list
//! pages, released when it drops (`nvme_map_data()` and `nvme_unmap_data()` in
//! `drivers/nvme/host/pci.c`).

use bvec::Bvec;
use kernel::prelude::*;
use kernel_glue::{
    block::mq::Request,
    dma::{Direction, MappedSegment, Mapping, SgMapping},
    phys_follows, KPage,
};

use super::{IoData, IoOps};
use crate::{dptr::ListPages, held::Held};

/// Most data segments of one request (`max_segments`).
pub(crate) const MAX_SEGS: usize = 128;

/// Requests of at most this many physical segments have their mapping table in the PDU, not
/// on the heap: no allocation, zeroing and freeing of a 2 KiB table per I/O (the C driver maps
/// a one-segment request without its scatterlist, `nvme_setup_prp_simple()` in
/// `drivers/nvme/host/pci.c`).
const INLINE_SEGS: usize = 2;

/// Calls `f` for each physically contiguous run of the data segments of `rq`, in order:
/// contiguous segments are merged into one, as the block layer counts them
/// (`biovec_phys_mergeable()`, `blk_rq_map_sg()`), so only the merged run has to end on a
/// controller page for the PRP rules.
fn for_each_run(rq: &Request<IoOps>, mut f: impl FnMut(&Bvec<KPage>) -> Result) -> Result {
    // The run waiting to be handed on: merged with the next segment while that one follows it
    // in physical memory.
    let mut pending: Option<Bvec<KPage>> = None;
    rq.for_each_segment(|seg| {
        if let Some(p) = pending {
            if let Some(m) = merge(&p, seg) {
                pending = Some(m);
                return Ok(());
            }
            f(&p)?;
        }
        pending = Some(*seg);
        Ok(())
    })?;
    match pending {
        Some(p) => f(&p),
        None => Ok(()),
    }
}

/// Maps the data of `rq` into `map`, each contiguous run by its own call (`ENOSPC` when it
/// has no room for them all).
pub(crate) fn map_data<const N: usize>(rq: &Request<IoOps>, map: &mut Mapping<N>) -> Result {
    // SAFETY: each run is data of `rq` (a bio's pages, user pages pinned for a passthrough
    // command, or a registered buffer's pages held by the ring), kept allocated and untouched
    // by the CPU (against the direction) until the request ends; the mapping is dropped
    // before it ends (`complete`, `end_batched`).
    for_each_run(rq, |run| unsafe { map.map(run) })
}

/// Maps the data of `rq` into `map` by one call (one IOVA range behind an IOMMU).
fn map_data_sg(rq: &Request<IoOps>, map: &mut SgMapping) -> Result {
    // SAFETY: as in `map_data`.
    for_each_run(rq, |run| unsafe { map.add(run) })?;
    map.map()
}

/// A request's mapping table on the heap: one mapping call per run, or (behind an IOMMU) one
/// for the whole request.
enum HeapMapping {
    /// Each run mapped by its own `dma_map_page_attrs()`.
    Pages(KBox<Mapping<MAX_SEGS>>),
    /// All runs mapped by one `dma_map_sg_attrs()` (its table sized for the request).
    Sg(SgMapping),
}

/// The resources of a request's command: what must live until completion.
///
/// # Invariants
///
/// A value lives only in a request's owned state ([`IoOwned`](super::IoOwned), built in place by
/// [`IoOps::prep`] and never moved out), so it never outlives the tag set's [`IoData`]: its
/// inline mappings use `IoData::dev` without a reference of their own.
pub(crate) struct RqOwned {
    /// Mappings of up to [`INLINE_SEGS`] data segments, held in the request's PDU (unmapped
    /// on drop).
    inline: Held<Mapping<INLINE_SEGS>>,
    /// Mappings of up to [`MAX_SEGS`] data segments, on the heap: the table is 2 KiB (a
    /// scatterlist: 48 bytes per segment of the request) and `queue_rq`'s stack frame must
    /// stay small (issue 7: 8.9 KiB when it was held by value).
    boxed: Held<HeapMapping>,
    /// PRP list pages (chained), SGL or DSM range page (freed on drop); `None`, one store,
    /// for most requests, which need none (an empty table is 128 bytes to clear).
    lists: Option<ListPages>,
}

impl RqOwned {
    /// Nothing held.
    pub(super) fn none() -> Self {
        Self {
            inline: Held::none(),
            boxed: Held::none(),
            lists: None,
        }
    }

    /// The list pages' slot, for a user passthrough command on a premapped tag (`passthru`),
    /// which maps nothing but may need a list of its own.
    pub(crate) fn lists_slot(&mut self) -> &mut Option<ListPages> {
        &mut self.lists
    }

    /// Maps the data of `rq` for `dir` (none mapped yet) as cheaply as the request allows, as
    /// `nvme_map_data()` does: one `bio_vec` entry (most small I/O) as it is, with no table walk
    /// and no merging; a few segments (blk-mq's count; merging never gives more) in the PDU;
    /// more in a table on the heap (`queue_rq` may not sleep: `GFP_ATOMIC`). Behind an IOMMU
    /// a request of several segments is mapped by one call into one IOVA range instead
    /// (`dma_map_sgtable()` in `nvme_map_data()`). Block requests and user passthrough
    /// commands mapped per I/O both come here. Returns the mapped segments, in
    /// order, and the (empty) list pages' slot for the data pointer built from them.
    ///
    /// # Errors
    ///
    /// `ENOSPC` for more than [`MAX_SEGS`] segments, `ENOMEM` without memory for the heap
    /// table, `EIO` when the DMA API refuses a segment or a bio's table does not hold what its
    /// iterator says. Whatever was mapped stays in `self` (unmapped when it drops).
    ///
    /// Inline: the one-entry case is a few instructions in the caller (`prep`); every other
    /// request goes to [`RqOwned::map_segments`], out of line.
    #[inline(always)]
    pub(crate) fn map(
        &mut self,
        data: &IoData,
        rq: &Request<IoOps>,
        dir: Direction,
    ) -> Result<(&[MappedSegment], &mut Option<ListPages>)> {
        if self.inline.is_some() || self.boxed.is_some() {
            // Mapped already (the contract says none is): refused, never replaced.
            return Err(EINVAL);
        }
        let Some(seg) = rq.single_segment() else {
            return self.map_segments(data, rq, dir);
        };
        // Filled in place (`Held::get_or_insert_with`: no drop call for the empty value).
        let m = self.inline.get_or_insert_with(|| {
            // SAFETY: `self` lives only in a request's owned state (type invariant), which
            // never outlives the tag set's data (`Operations::Owned`), and `data` is that
            // data, which holds the device.
            unsafe { Mapping::new_unheld(&data.dev, dir) }
        });
        // SAFETY: as in `map_data`: the request's data, kept until it ends; the mapping is
        // dropped before.
        unsafe { m.map(&seg) }?;
        Ok((m.segments(), &mut self.lists))
    }

    /// [`RqOwned::map`] for a request that is not one `bio_vec` entry (nothing mapped yet).
    #[inline(never)]
    fn map_segments(
        &mut self,
        data: &IoData,
        rq: &Request<IoOps>,
        dir: Direction,
    ) -> Result<(&[MappedSegment], &mut Option<ListPages>)> {
        if data.one_iova {
            // Behind an IOMMU: every segment in one IOVA range, mapped by one call (the C
            // driver's `dma_map_sgtable()`), whatever the count.
            let nr = usize::from(rq.nr_phys_segments());
            let mut m = SgMapping::new(&data.dev, dir, nr.max(1))?;
            match map_data_sg(rq, &mut m) {
                Ok(()) => {
                    data.prp_stats.sg_mapped();
                    self.boxed.put(HeapMapping::Sg(m));
                }
                // More runs than counted: nothing mapped; one call per run below.
                Err(e) if e == ENOSPC => {}
                Err(e) => return Err(e),
            }
        } else if usize::from(rq.nr_phys_segments()) <= INLINE_SEGS {
            let m = self.inline.get_or_insert_with(|| {
                // SAFETY: as above.
                unsafe { Mapping::new_unheld(&data.dev, dir) }
            });
            match map_data(rq, m) {
                Ok(()) => {}
                // More than counted: unmapped, mapped again below.
                Err(e) if e == ENOSPC => *self.inline = None,
                Err(e) => return Err(e),
            }
        }
        if self.inline.is_none() && self.boxed.is_none() {
            // Built on the heap: never on `queue_rq`'s stack.
            // Whatever `map_data` maps before an error stays in `self` (unmapped on drop).
            let b = self.boxed.put(HeapMapping::Pages(Mapping::new_boxed(
                &data.dev, dir, GFP_ATOMIC,
            )?));
            if let HeapMapping::Pages(m) = b {
                map_data(rq, m)?;
            }
        }
        Ok((Self::segments(&self.inline, &self.boxed), &mut self.lists))
    }

    /// The mapped data segments, in order, of the mappings `inline` and `boxed` (fields of
    /// one `RqOwned`, borrowed apart from its list pages).
    fn segments<'a>(
        inline: &'a Option<Mapping<INLINE_SEGS>>,
        boxed: &'a Option<HeapMapping>,
    ) -> &'a [MappedSegment] {
        match (inline, boxed) {
            (Some(m), _) => m.segments(),
            (None, Some(HeapMapping::Pages(m))) => m.segments(),
            (None, Some(HeapMapping::Sg(m))) => m.segments(),
            (None, None) => &[],
        }
    }
}

/// `a` and `b` as one segment if `b` starts where `a` ends in physical memory.
#[inline]
fn merge(a: &Bvec<KPage>, b: &Bvec<KPage>) -> Option<Bvec<KPage>> {
    if !phys_follows(a, b) {
        return None;
    }
    Bvec::new(a.page(), a.offset(), a.len().checked_add(b.len())?).ok()
}
