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
//! driver's DMA pool. The queue limits (max_hw_sectors <= 2 MiB, virt boundary 4 KiB) keep a
//! list within one 512-entry page, so lists are never chained here.
//!
//! With a controller that supports SGLs and requests whose average segment is large
//! (`nvme_pci_use_sgls()`, `nvme::SglPolicy`), [`build_sgl`] describes the segments instead: one
//! inline Data Block descriptor, or a Last Segment descriptor pointing at a pool page of Data
//! Block descriptors (`nvme_pci_setup_sgls()`); SGLs have no alignment rules.

use kernel::{prelude::*, sync::Arc};
use kernel_glue::dma::{DmaPool, MappedSegment, PoolBlock};
use nvme::{DataPointer, SglDescriptor, NVME_CTRL_PAGE_SIZE};

/// Controller page mask.
const PAGE_MASK: u64 = NVME_CTRL_PAGE_SIZE as u64 - 1;
/// Controller page size in bytes.
const PAGE: u64 = NVME_CTRL_PAGE_SIZE as u64;
/// Entries of one PRP list page.
const LIST_ENTRIES: usize = NVME_CTRL_PAGE_SIZE as usize / 8;

/// The controller pages the segments cover, in order, checked against the PRP rules: only the
/// first segment may start inside a page (dword aligned), only the last may end inside one.
struct Pages<'a> {
    segs: &'a [MappedSegment],
    idx: usize,
    next: u64,
}

/// Checks the PRP rules for `segs` and returns how many entries they need.
fn count_entries(segs: &[MappedSegment]) -> Result<usize> {
    let last = segs.len().checked_sub(1).ok_or(EINVAL)?;
    let mut n = 0usize;
    for (i, s) in segs.iter().enumerate() {
        let end = s.addr.checked_add(u64::from(s.len)).ok_or(EINVAL)?;
        if s.len == 0 || (i == 0 && s.addr & 3 != 0) || (i != 0 && s.addr & PAGE_MASK != 0) {
            return Err(EINVAL);
        }
        if i != last && end & PAGE_MASK != 0 {
            return Err(EINVAL);
        }
        let first_page = s.addr & !PAGE_MASK;
        let pages = (end - first_page).div_ceil(PAGE);
        n = n
            .checked_add(usize::try_from(pages).map_err(|_| EINVAL)?)
            .ok_or(EINVAL)?;
    }
    Ok(n)
}

impl Iterator for Pages<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        loop {
            let s = self.segs.get(self.idx)?;
            let end = s.addr.saturating_add(u64::from(s.len));
            if self.next < end {
                let out = self.next;
                // The next entry is the next page start (the first entry may be unaligned).
                self.next = (self.next & !PAGE_MASK).saturating_add(PAGE);
                return Some(out);
            }
            self.idx += 1;
            self.next = self.segs.get(self.idx).map_or(0, |s| s.addr);
        }
    }
}

/// Builds the PRPs of `segs`; a list page, if needed, comes from `pool` and is returned (it
/// must stay allocated until the command completes).
pub(crate) fn build(
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
) -> Result<(DataPointer, Option<PoolBlock>)> {
    let n = count_entries(segs)?;
    let mut pages = Pages {
        segs,
        idx: 0,
        next: segs.first().map_or(0, |s| s.addr),
    };
    let prp1 = pages.next().ok_or(EINVAL)?;
    match n {
        1 => Ok((DataPointer::prp(prp1, 0), None)),
        2 => Ok((DataPointer::prp(prp1, pages.next().ok_or(EINVAL)?), None)),
        _ if n - 1 <= LIST_ENTRIES => {
            let list = DmaPool::alloc(pool)?;
            for (i, addr) in pages.enumerate() {
                list.write(i * 8, &addr.to_le_bytes())?;
            }
            Ok((DataPointer::prp(prp1, list.dma_handle()), Some(list)))
        }
        // More than one list page: the queue limits never allow it.
        _ => Err(EINVAL),
    }
}

/// Builds the SGL of `segs`; a descriptor list page, if needed, comes from `pool` and is
/// returned (it must stay allocated until the command completes).
pub(crate) fn build_sgl(
    segs: &[MappedSegment],
    pool: &Arc<DmaPool>,
) -> Result<(DataPointer, Option<PoolBlock>)> {
    match segs {
        [] => Err(EINVAL),
        [one] => Ok((SglDescriptor::data_block(one.addr, one.len).into(), None)),
        many => {
            if many.len() > NVME_CTRL_PAGE_SIZE as usize / 16 {
                return Err(EINVAL);
            }
            let list = DmaPool::alloc(pool)?;
            for (i, s) in many.iter().enumerate() {
                list.write(i * 16, &SglDescriptor::data_block(s.addr, s.len).to_bytes())?;
            }
            let len = u32::try_from(many.len() * 16).map_err(|_| EINVAL)?;
            Ok((
                SglDescriptor::last_segment(list.dma_handle(), len).into(),
                Some(list),
            ))
        }
    }
}
