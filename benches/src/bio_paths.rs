//! The per-I/O work of turning a registered buffer into a bio and NVMe PRPs, done two ways each.
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! - Bio from a BVEC iterator: borrowing the iterator's table (seed 000, `bio_iov_bvec_set`)
//!   against copying it into the bio's own table through page extraction and `bio_add_page`
//!   (what the kernel did before seed 000, and still does for every other kind).
//! - PRPs for a request: mapping it per I/O (seed 001's "premapped bvec" path: walk the bio's
//!   segments into a scatterlist merging physically contiguous ones, `dma_map_sg` each entry,
//!   then `nvme_pci_setup_prps`) against arithmetic on a DMA tag's page table mapped once at
//!   registration (`build_prps_from_tag`).
//!
//! The buffer's pages are physically discontiguous (`Pfn(2i + 1)`), so nothing merges and a
//! request of `n` pages has `n` segments, the worst case for the per-I/O paths.

use bio::{Bio, BioBuilder, Op, QueueLimits};
use bvec::{Bvec, Page, Pfn, PAGE_SIZE};
use iov::{IovIter, Source};
use nvme::{build_prps, build_prps_from_tag, DmaSegment, PremappedPages, PrpLists, Prps, TagRange};

use crate::tiled::TiledMem;

/// Bus address of physical address 0: direct mapping without an IOMMU (`phys_to_dma`).
pub const DMA_OFFSET: u64 = 0;
/// Highest bus address the device reaches: a 64-bit capable NVMe controller on a host whose
/// physical addresses have 52 bits (`min(dma_mask, bus_dma_limit)` in `dma_capable`).
pub const DMA_MASK: u64 = (1 << 52) - 1;
/// Most scatterlist entries a request may use (`NVME_MAX_SEGS` is 128; 256 covers a full bio).
pub const MAX_SG: usize = 256;

/// `nsegs` single-page segments on physically discontiguous pages `Pfn(2i + 1)`.
///
/// # Examples
///
/// ```
/// use bvec::Pfn;
/// let t = iovstack_benches::bio_paths::scattered_table(3);
/// assert_eq!(t.iter().map(|b| b.page()).collect::<Vec<_>>(), [Pfn(1), Pfn(3), Pfn(5)]);
/// ```
pub fn scattered_table(nsegs: usize) -> Vec<Bvec<Pfn>> {
    (0..nsegs)
        .filter_map(|i| Bvec::new(Pfn(2 * i as u64 + 1), 0, PAGE_SIZE as u32).ok())
        .collect()
}

/// Entries in the page table of a 1 GiB registered buffer of 4 KiB pages (an io_uring fixed
/// buffer).
pub const FIXED_1G_ENTRIES: usize = 262_144;

/// One I/O on a registered buffer (io_uring `io_import_fixed` + `bio_iov_bvec_set`): a BVEC
/// iterator over the `io_len` bytes starting at entry `start` of the registration's table, built
/// per I/O and borrowed into a bio. `None` when the range is not inside the table.
///
/// # Examples
///
/// ```
/// use iovstack_benches::bio_paths::{fixed_buffer_bio, scattered_table};
/// let t = scattered_table(8);
/// let b = fixed_buffer_bio(&t, 2, 3 * 4096).unwrap();
/// assert_eq!((b.size(), b.segments().count()), (3 * 4096, 3));
/// assert_eq!(b.segments().next().map(|s| s.page()), Some(bvec::Pfn(5)));
/// assert!(fixed_buffer_bio(&t, 6, 3 * 4096).is_none()); // one page past the registration
/// ```
#[inline]
pub fn fixed_buffer_bio(table: &[Bvec<Pfn>], start: usize, io_len: usize) -> Option<Bio<'_, Pfn>> {
    let mut it = IovIter::<Pfn, Source>::bvec(table.get(start..)?, io_len).ok()?;
    Bio::from_bvec_iov(Op::Write, 0, &mut it).ok()
}

/// Borrows the iterator's table: `Bio::from_bvec_iov` on a copy of `it` (the iterator of an
/// I/O on a registered buffer).
#[inline]
pub fn bio_borrow<'t>(it: &IovIter<'t, Pfn, Source>) -> Option<Bio<'t, Pfn>> {
    let mut it = it.clone();
    Bio::from_bvec_iov(Op::Write, 0, &mut it).ok()
}

/// Copies the iterator's table into `storage`: page extraction plus `bio_add_page` per page
/// (`BioBuilder::add_iov`), with `pages` as the extraction array.
#[inline]
pub fn bio_copy<'s>(
    it: &IovIter<'_, Pfn, Source>,
    storage: &'s mut [Bvec<Pfn>],
    pages: &mut [Pfn],
    lim: &QueueLimits,
    mem: &mut TiledMem,
) -> Option<Bio<'s, Pfn>> {
    let mut it = it.clone();
    let mut b = BioBuilder::new(Op::Write, 0, storage).ok()?;
    b.add_iov(&mut it, lim, pages, mem, |_| {}).ok()?;
    b.finish().ok()
}

/// `dma_map_page` on a direct-mapped system (`dma_direct_map_page`): the bus address of `len`
/// bytes at `phys`, refused when the device cannot reach it (`dma_capable`).
#[inline(always)]
pub fn dma_map_direct(phys: u64, len: u32) -> Option<u64> {
    let dma = phys.checked_add(DMA_OFFSET)?;
    let last = dma.checked_add(u64::from(len).checked_sub(1)?)?;
    (last <= DMA_MASK).then_some(dma)
}

/// The per-I/O PRP path for a request: `blk_rq_map_sg` (walk the bio's segments into `sg`,
/// merging a segment into the previous entry when physically contiguous and within the queue's
/// segment size and boundary), `dma_map_sg` (map every entry into `dma`), then
/// `nvme_pci_setup_prps` ([`build_prps`]). `None` when the request does not fit or cannot be
/// mapped.
pub fn prps_per_io(
    bio: &Bio<'_, Pfn>,
    lim: &QueueLimits,
    sg: &mut [(u64, u32)],
    dma: &mut [DmaSegment],
    lists: &mut PrpLists<'_>,
) -> Option<Prps> {
    let max_seg = u64::from(lim.max_segment_size());
    let boundary = lim.seg_boundary_mask();
    let mut n = 0usize;
    for bv in bio.segments() {
        let phys = bv.page().phys().checked_add(u64::from(bv.offset()))?;
        let len = bv.len();
        if let Some(prev) = n.checked_sub(1).and_then(|i| sg.get_mut(i)) {
            let end = prev.0 + u64::from(prev.1);
            let merged = u64::from(prev.1) + u64::from(len);
            if end == phys
                && merged <= max_seg
                && prev.0 | boundary == (phys + u64::from(len) - 1) | boundary
            {
                prev.1 = merged as u32;
                continue;
            }
        }
        *sg.get_mut(n)? = (phys, len);
        n += 1;
    }
    for (&(phys, len), out) in sg.get(..n)?.iter().zip(dma.iter_mut()) {
        *out = DmaSegment::new(dma_map_direct(phys, len)?, len);
    }
    build_prps(dma.get(..n)?, lists).ok()
}

/// Bus address of every page of `table`, computed once when the buffer is registered.
pub fn tag_pages(table: &[Bvec<Pfn>]) -> Vec<u64> {
    table
        .iter()
        .filter_map(|b| dma_map_direct(b.page().phys(), b.len()))
        .collect()
}

/// The premapped PRP path: PRPs for the first `len` bytes of the registered buffer `tag`.
#[inline]
pub fn prps_from_tag(tag: &PremappedPages<'_>, len: u32, lists: &mut PrpLists<'_>) -> Option<Prps> {
    build_prps_from_tag(tag, TagRange { offset: 0, len }, lists).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bio::LimitsConfig;
    use nvme::PrpListPage;

    #[test]
    fn borrow_shares_and_copy_fills_storage() {
        let table = scattered_table(16);
        let it = IovIter::<Pfn, Source>::bvec(&table, 16 * PAGE_SIZE).unwrap();
        let b = bio_borrow(&it).unwrap();
        assert!(core::ptr::eq(b.table(), &table[..]));
        let lim = QueueLimits::new(&LimitsConfig::default()).unwrap();
        let mut storage = vec![table[0]; 256];
        let mut pages = vec![Pfn(0); 256];
        let mut mem = TiledMem::new(1 << 20);
        let c = bio_copy(&it, &mut storage, &mut pages, &lim, &mut mem).unwrap();
        assert_eq!(c.size() as usize, 16 * PAGE_SIZE);
        assert_eq!(c.table(), &table[..]);
        assert!(!core::ptr::eq(c.table(), &table[..]));
    }

    #[test]
    fn per_io_prps_equal_tag_prps() {
        let lim = QueueLimits::new(&LimitsConfig::default()).unwrap();
        for npages in [1usize, 2, 4, 16, 32] {
            let table = scattered_table(npages);
            let len = (npages * PAGE_SIZE) as u32;
            let bio = Bio::from_table(Op::Write, 0, &table, len).unwrap();
            let mut sg = [(0u64, 0u32); MAX_SG];
            let mut dma = [DmaSegment::new(0, 0); MAX_SG];
            let mut pa: [PrpListPage; 1] = [[0; 512]];
            let mut pb: [PrpListPage; 1] = [[0; 512]];
            let list_dma = [0x8000_0000u64];
            let mut la = PrpLists::new(&mut pa, &list_dma).unwrap();
            let a = prps_per_io(&bio, &lim, &mut sg, &mut dma, &mut la).unwrap();
            let pages = tag_pages(&table);
            let tag = PremappedPages::new(&pages, 0, u64::from(len)).unwrap();
            let mut lb = PrpLists::new(&mut pb, &list_dma).unwrap();
            let b = prps_from_tag(&tag, len, &mut lb).unwrap();
            assert_eq!(a, b, "{npages} pages");
            assert_eq!(a.prp1, 4096, "first page is Pfn(1)");
            assert_eq!(la.pages(), lb.pages());
        }
    }

    #[test]
    fn contiguous_pages_merge_into_one_sg_entry() {
        let lim = QueueLimits::new(&LimitsConfig::default()).unwrap();
        let table: Vec<_> = (0..4)
            .map(|i| Bvec::new(Pfn(10 + i), 0, 4096).unwrap())
            .collect();
        let bio = Bio::from_table(Op::Write, 0, &table, 4 * 4096).unwrap();
        let mut sg = [(0u64, 0u32); 4];
        let mut dma = [DmaSegment::new(0, 0); 4];
        let mut pages: [PrpListPage; 1] = [[0; 512]];
        let mut lists = PrpLists::new(&mut pages, &[0x1000]).unwrap();
        let p = prps_per_io(&bio, &lim, &mut sg, &mut dma, &mut lists).unwrap();
        assert_eq!(sg[0], (10 * 4096, 4 * 4096));
        assert_eq!(sg[1], (0, 0));
        assert_eq!((p.prp1, p.prp2, p.plan.entries), (10 * 4096, 0x1000, 4));
    }
}
