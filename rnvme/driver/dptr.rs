// SPDX-License-Identifier: GPL-2.0

//! NVMe data pointers for a request: its segments mapped with the DMA API, then PRPs.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The request's own `bio_vec` tables are walked as `bvec` segments
//! (`kernel_glue::block::mq::Request::for_each_segment`, no copy) and each segment is mapped
//! with `dma_map_page_attrs` (`kernel_glue::dma::Mapping`). PRPs follow the rules of
//! `nvme_pci_setup_prps()` in `drivers/nvme/host/pci.c`: PRP1 is the first byte (dword
//! aligned), every further entry a controller page; with two entries PRP2 is the second page
//! (`nvme_setup_prp_simple()`), with more PRP2 is the bus address of a PRP list page from the
//! driver's DMA pool, and when the entries need more than one list page the pages are chained
//! (the last slot of a page points at the next one while more than one entry remains), laid
//! out by `nvme::PrpListLayout`. The queue limits (at most 8 MiB, 4 KiB virtual boundary) bound
//! a list to `nvme::PRP_MAX_LIST_PAGES` (5) pages (`NVME_MAX_NR_ALLOCATIONS`), held by the
//! command in a fixed array ([`ListPages`]) until it completes. Debugfs
//! `rnvme/rnvme<C>/prp` counts lists, chained lists, list pages (live ones too), commands
//! above 2 MiB, requests mapped by one scatterlist call (behind an IOMMU, `io::RqOwned`) and
//! commands described by an SGL (one descriptor, or a list).
//!
//! With a controller that supports SGLs, [`build_sgl`] describes the segments instead: one
//! inline Data Block descriptor, or a Last Segment descriptor pointing at a pool page of Data
//! Block descriptors (`nvme_pci_setup_sgls()`); SGLs have no alignment rules. Which form a
//! request gets is `nvme_map_data()`'s choice (`nvme::SglPolicy::layout`, [`build_layout`]):
//! one segment within two controller pages PRP1/PRP2, another single segment one SGL
//! descriptor, other requests SGLs when their average segment is large (`nvme_pci_use_sgls()`)
//! or they are user passthrough commands.

use kernel::{c_str, prelude::*, sync::Arc};
use kernel_glue::{
    debugfs::DebugCounters,
    dma::{DmaPool, MappedSegment, PoolBlock},
};
use nvme::{
    DataLayout, DataPointer, DmaSegment, PrpListLayout, SglDescriptor, SglPolicy,
    NVME_CTRL_PAGE_SIZE,
};

/// Most list pages of one command (`NVME_MAX_NR_ALLOCATIONS`).
const MAX_LIST_PAGES: usize = nvme::PRP_MAX_LIST_PAGES;

/// Transfers above this size could not be described before lists were chained (one list page
/// of 512 entries); counted apart to show they reach the controller as one command.
const ONE_PAGE_LIST_BYTES: u64 = 2 * 1024 * 1024;

/// Counter names of debugfs `rnvme/rnvme<C>/prp`, in [`Counter`] order.
static NAMES: [&kernel::str::CStr; 8] = [
    c_str!("prp_lists"),
    c_str!("prp_chained"),
    c_str!("list_pages"),
    c_str!("list_pages_live"),
    c_str!("io_over_2mib"),
    c_str!("sg_maps"),
    c_str!("sgl_simple"),
    c_str!("sgl_lists"),
];

/// The counters of debugfs `rnvme/rnvme<C>/prp`.
#[derive(Clone, Copy)]
enum Counter {
    /// Commands whose PRP2 points at a list.
    Lists = 0,
    /// Commands whose list is more than one page (chained).
    Chained = 1,
    /// List pages allocated for PRP lists, in total.
    Pages = 2,
    /// PRP list pages allocated and not yet freed (0 when no command is in flight).
    PagesLive = 3,
    /// Commands with a PRP transfer above 2 MiB.
    Over2Mib = 4,
    /// Requests whose segments were mapped by one `dma_map_sg_attrs()` (behind an IOMMU).
    SgMaps = 5,
    /// Commands whose data is one SGL Data Block descriptor in the command.
    SglSimple = 6,
    /// Commands whose data is an SGL list (a Last Segment descriptor pointing at a page).
    SglLists = 7,
}

/// The PRP list counters of one controller (debugfs `rnvme/rnvme<C>/prp`).
pub(crate) struct PrpStats {
    counters: Option<DebugCounters<{ NAMES.len() }>>,
}

impl PrpStats {
    /// Creates the counters of controller `instance` (without the debugfs file if that fails).
    pub(crate) fn new(instance: u32) -> Result<Arc<Self>> {
        let counters =
            DebugCounters::new(format_args!("rnvme{}", instance), c_str!("prp"), &NAMES).ok();
        Ok(Arc::new(Self { counters }, GFP_KERNEL)?)
    }

    /// Counts a request mapped by one scatterlist call.
    pub(crate) fn sg_mapped(&self) {
        self.add(Counter::SgMaps, 1);
    }

    fn add(&self, c: Counter, v: i64) {
        if let Some(counters) = &self.counters {
            counters.add(c as usize, v);
        }
    }
}

/// The list pages (PRP, SGL or DSM ranges) of one command, held until it completes and
/// returned to the pool on drop. A fixed array: no allocation besides the pool blocks.
pub(crate) struct ListPages {
    pages: [Option<PoolBlock>; MAX_LIST_PAGES],
    /// Set for PRP list pages: counted live until dropped.
    stats: Option<Arc<PrpStats>>,
}

impl ListPages {
    /// No page.
    pub(crate) const fn none() -> Self {
        const NONE: Option<PoolBlock> = None;
        Self {
            pages: [NONE; MAX_LIST_PAGES],
            stats: None,
        }
    }

    /// One page (an SGL or DSM range list).
    pub(crate) fn one(page: PoolBlock) -> Self {
        let mut this = Self::none();
        if let Some(slot) = this.pages.first_mut() {
            *slot = Some(page);
        }
        this
    }

    /// Number of pages held.
    pub(crate) fn len(&self) -> usize {
        self.pages.iter().filter(|p| p.is_some()).count()
    }

    /// `block`, filled as a one-page PRP list, counted in `stats` as [`ListPages::prp_list`]
    /// counts one.
    fn prp_page(block: PoolBlock, stats: &Arc<PrpStats>) -> Self {
        let mut this = Self::none();
        if let Some(slot) = this.pages.first_mut() {
            *slot = Some(block);
        }
        stats.add(Counter::PagesLive, 1);
        stats.add(Counter::Pages, 1);
        stats.add(Counter::Lists, 1);
        this.stats = Some(stats.clone());
        this
    }

    /// `n` pages from `pool` for a PRP list, counted in `stats`.
    fn alloc(pool: &Arc<DmaPool>, n: usize, stats: &Arc<PrpStats>) -> Result<Self> {
        if n > MAX_LIST_PAGES {
            return Err(EINVAL);
        }
        let mut this = Self::none();
        for slot in this.pages.iter_mut().take(n) {
            // On failure the pages so far are freed by the drop (not yet counted as live).
            *slot = Some(DmaPool::alloc(pool)?);
        }
        stats.add(Counter::PagesLive, n as i64);
        stats.add(Counter::Pages, n as i64);
        this.stats = Some(stats.clone());
        Ok(this)
    }

    /// Fills a PRP list of `n` entries taken from `entries` into new pages from `pool`, laid
    /// out and chained as `nvme::PrpListLayout::new` says; returns the first page's bus address
    /// (PRP2) and the pages.
    pub(crate) fn prp_list(
        pool: &Arc<DmaPool>,
        stats: &Arc<PrpStats>,
        n: usize,
        entries: impl Iterator<Item = u64>,
    ) -> Result<(u64, Self)> {
        let layout = PrpListLayout::new(n);
        let lists = Self::alloc(pool, layout.pages(), stats)?;
        let mut dma = [0u64; MAX_LIST_PAGES];
        for (d, p) in dma.iter_mut().zip(lists.pages.iter().flatten()) {
            *d = p.dma_handle();
        }
        let dma = dma.get(..layout.pages()).ok_or(EINVAL)?;
        let mut taken = 0usize;
        let counted = entries.inspect(|_| taken += 1);
        for (page, slot, value) in layout.stores(counted, dma).map_err(|_| EINVAL)? {
            let block = lists
                .pages
                .get(page)
                .and_then(|p| p.as_ref())
                .ok_or(EINVAL)?;
            block.write_u64(slot * 8, value)?;
        }
        // Fewer entries than the layout: a list the controller would walk past its end.
        if taken != n {
            return Err(EINVAL);
        }
        stats.add(Counter::Lists, 1);
        if layout.pages() > 1 {
            stats.add(Counter::Chained, 1);
        }
        Ok((*dma.first().ok_or(EINVAL)?, lists))
    }
}

impl Drop for ListPages {
    fn drop(&mut self) {
        // The pages go back to the pool when the array is dropped, after this. Only PRP list
        // pages are counted (and carry `stats`); the pages are not walked for the others, which
        // are most requests, holding none.
        if let Some(stats) = self.stats.take() {
            stats.add(Counter::PagesLive, -(self.len() as i64));
        }
    }
}

/// The segments as the `nvme` crate's type.
fn dma_segs(segs: &[MappedSegment]) -> impl Iterator<Item = DmaSegment> + '_ {
    segs.iter().map(|s| DmaSegment::new(s.addr, s.len))
}

/// The form `nvme_map_data()` gives a request of `bytes` whose data is mapped into `segs`:
/// `nr_phys_segments` is its physical segment count (`blk_rq_nr_phys_segments()`), and with one
/// the single-segment forms are tried first (`nvme::SglPolicy::layout`).
#[inline]
pub(crate) fn layout_of(
    policy: &SglPolicy,
    nr_phys_segments: u16,
    bytes: u32,
    segs: &[MappedSegment],
) -> DataLayout {
    let single = match segs {
        [one] if nr_phys_segments == 1 => Some((one.addr, one.len)),
        _ => None,
    };
    let nseg = u32::try_from(segs.len()).unwrap_or(u32::MAX);
    policy.layout(single, u64::from(bytes), nseg)
}

/// Builds the data pointer of `segs` in the form `layout` (`nvme::SglPolicy::layout`) with
/// [`build`] or [`build_sgl`]. A simple layout given other than one segment is built as the
/// general one of its kind. A single segment that the PRP rules refuse (not dword aligned) is
/// refused by [`build`] (`EINVAL`): the C driver would hand such a PRP1 to the controller.
#[inline(always)]
pub(crate) fn build_layout(
    layout: DataLayout,
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
    stats: &Arc<PrpStats>,
    lists: &mut Option<ListPages>,
) -> Result<DataPointer> {
    match layout {
        DataLayout::PrpSimple | DataLayout::Prps => build(segs, pool, stats, lists),
        DataLayout::SglSimple | DataLayout::Sgls => build_sgl(segs, pool, stats, lists),
    }
}

/// Builds the PRPs of `segs` (`nvme::plan_prps_iter` checks the PRP rules); list pages, if
/// needed, come from `pool` and are stored in `lists` (they must stay allocated until the
/// command completes). `lists` is written in place, not returned: the table is 128 bytes,
/// and most I/O needs no page (`lists` is then left as it is).
///
/// Inline: the common case, one segment in at most two controller pages, is a few
/// instructions in the caller; everything else is [`build_list`]'s, out of line.
#[inline(always)]
pub(crate) fn build(
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
    stats: &Arc<PrpStats>,
    lists: &mut Option<ListPages>,
) -> Result<DataPointer> {
    // One segment in at most two controller pages (most small I/O): no plan, no iterator
    // (`nvme_setup_prp_simple()`).
    if let [one] = segs {
        if let Some((prp1, prp2)) = nvme::prp_simple(DmaSegment::new(one.addr, one.len)) {
            return Ok(DataPointer::prp(prp1, prp2));
        }
    }
    build_list(segs, pool, stats, lists)
}

/// [`build`] for segments that need more than PRP1 and PRP2 of one segment: a list page, or
/// the PRP rules checked across several segments.
#[inline(never)]
fn build_list(
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
    stats: &Arc<PrpStats>,
    lists: &mut Option<ListPages>,
) -> Result<DataPointer> {
    // Else the entries go straight into a list page in one pass over the segments
    // (`nvme::prp_fill` checks every rule and counts the entries, also those past the page):
    // no pass to count them first. A list that fits one page (transfers up to 2 MiB) is
    // used as it is; a list of one entry is PRP2 itself and the page goes back to the pool
    // (multi-segment transfers of two controller pages: rare).
    let mut block = DmaPool::alloc(pool)?;
    // SAFETY: allocated just above: no command names it yet.
    let words = unsafe { block.as_words_mut() };
    let room = words.len();
    let fill = nvme::prp_fill(dma_segs(segs), words).map_err(|_| EINVAL)?;
    match fill.list_entries {
        0 => return Ok(DataPointer::prp(fill.prp1, 0)),
        1 => {
            let prp2 = words.first().map(|&w| u64::from_le(w)).ok_or(EINVAL)?;
            return Ok(DataPointer::prp(fill.prp1, prp2));
        }
        n if n <= room => {
            let prp2 = block.dma_handle();
            *lists = Some(ListPages::prp_page(block, stats));
            return Ok(DataPointer::prp(fill.prp1, prp2));
        }
        // More than a page holds (or a pool block smaller than a page, not this driver's):
        // chained list pages, below.
        _ => drop(block),
    }
    let plan = nvme::plan_prps_iter(dma_segs(segs)).map_err(|_| EINVAL)?;
    let mut entries = nvme::prp_entries(dma_segs(segs));
    let prp1 = entries.next().ok_or(EINVAL)?;
    match plan.entries {
        1 => Ok(DataPointer::prp(prp1, 0)),
        2 => Ok(DataPointer::prp(prp1, entries.next().ok_or(EINVAL)?)),
        _ => {
            let (prp2, pages) = ListPages::prp_list(pool, stats, plan.list_entries, entries)?;
            *lists = Some(pages);
            let bytes: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
            if bytes > ONE_PAGE_LIST_BYTES {
                stats.add(Counter::Over2Mib, 1);
            }
            Ok(DataPointer::prp(prp1, prp2))
        }
    }
}

/// Builds the SGL of `segs`; a descriptor list page, if needed, comes from `pool` and is
/// stored in `lists` (it must stay allocated until the command completes). Counted in `stats`
/// (`sgl_simple` for one descriptor, `sgl_lists` for a list).
#[inline(never)]
pub(crate) fn build_sgl(
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
    stats: &Arc<PrpStats>,
    lists: &mut Option<ListPages>,
) -> Result<DataPointer> {
    let (dp, counter) = match segs {
        [] => return Err(EINVAL),
        [one] => (
            SglDescriptor::data_block(one.addr, one.len),
            Counter::SglSimple,
        ),
        many => {
            if many.len() > NVME_CTRL_PAGE_SIZE as usize / 16 {
                return Err(EINVAL);
            }
            let list = DmaPool::alloc(pool)?;
            for (i, s) in many.iter().enumerate() {
                let [lo, hi] = SglDescriptor::data_block(s.addr, s.len).to_qwords();
                list.write_u64(i * 16, lo)?;
                list.write_u64(i * 16 + 8, hi)?;
            }
            let len = u32::try_from(many.len() * 16).map_err(|_| EINVAL)?;
            let dma = list.dma_handle();
            *lists = Some(ListPages::one(list));
            (SglDescriptor::last_segment(dma, len), Counter::SglLists)
        }
    };
    stats.add(counter, 1);
    Ok(dp.into())
}
