//! Segment merge and gap rules (`bvec_try_merge_page`, `biovec_phys_mergeable`, `bvec_gap_to_prev`).
//!
//! C header: [`block/blk.h`](srctree/block/blk.h)
//!
//! These decide when new bytes may extend the last segment of a bio, and whether two
//! neighbouring segments may be one hardware segment or leave a forbidden gap.

use bvec::{Bvec, Page, PAGE_SIZE};

use crate::QueueLimits;

const PAGE_MASK: u64 = !(PAGE_SIZE as u64 - 1);

/// The result of a successful merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merged<P> {
    /// The grown segment (same page handle and offset, longer length).
    pub bvec: Bvec<P>,
    /// The new bytes start in the page holding the segment's last byte (the kernel uses this to
    /// drop a duplicate page pin).
    pub same_page: bool,
}

/// Tries to append `len` bytes at `off` in `page` to the segment `bv` (`bvec_try_merge_page`).
///
/// The bytes must start exactly where `bv` ends physically. When they start in a different page,
/// that page must also be the next page handle (`bv.page() + n`), which keeps the multipage
/// invariant of [`Bvec`]. `None` when the merge is impossible, when `len` is 0, or when the
/// grown segment would overflow `u32`. No size limit applies here: callers check the bio size.
///
/// # Examples
///
/// ```
/// use bio::try_merge_page;
/// use bvec::{Bvec, Pfn};
/// let bv = Bvec::new(Pfn(1), 0, 4096)?;
/// let m = try_merge_page(&bv, Pfn(2), 0, 100).unwrap();        // next page: multipage segment
/// assert_eq!((m.bvec.len(), m.same_page), (4196, false));
/// let m = try_merge_page(&m.bvec, Pfn(2), 100, 50).unwrap();   // same page
/// assert!(m.same_page);
/// assert!(try_merge_page(&bv, Pfn(3), 0, 100).is_none());      // not contiguous
/// assert!(try_merge_page(&bv, Pfn(2), 0, 0).is_none());        // nothing to add
/// # Ok::<(), bvec::BvecError>(())
/// ```
pub fn try_merge_page<P: Page>(bv: &Bvec<P>, page: P, off: u32, len: u32) -> Option<Merged<P>> {
    if len == 0 {
        return None;
    }
    let vec_end = bv.phys().checked_add(u64::from(bv.len()))?;
    let new_start = page.phys().checked_add(u64::from(off))?;
    if vec_end != new_start {
        return None;
    }
    let same_page = (vec_end - 1) & PAGE_MASK == new_start & PAGE_MASK;
    if !same_page {
        let bv_next = bv.page().nth(bv.end() as usize / PAGE_SIZE);
        if bv_next != page.nth(off as usize / PAGE_SIZE) {
            return None;
        }
    }
    let bvec = Bvec::new(bv.page(), bv.offset(), bv.len().checked_add(len)?).ok()?;
    Some(Merged { bvec, same_page })
}

/// [`try_merge_page`] under hardware limits (`bvec_try_merge_hw_page`): the grown segment must
/// stay inside one segment-boundary window and within the maximum segment size.
///
/// # Examples
///
/// ```
/// use bio::{try_merge_hw_page, LimitsConfig, QueueLimits};
/// use bvec::{Bvec, Pfn};
/// let lim = QueueLimits::new(&LimitsConfig { seg_boundary_mask: 0x1fff, ..LimitsConfig::default() })?;
/// let bv = Bvec::new(Pfn(0), 0, 4096).unwrap();
/// assert!(try_merge_hw_page(&lim, &bv, Pfn(1), 0, 4096).is_some());
/// let bv = Bvec::new(Pfn(1), 0, 4096).unwrap();
/// assert!(try_merge_hw_page(&lim, &bv, Pfn(2), 0, 512).is_none()); // crosses 0x2000
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn try_merge_hw_page<P: Page>(
    lim: &QueueLimits,
    bv: &Bvec<P>,
    page: P,
    off: u32,
    len: u32,
) -> Option<Merged<P>> {
    let sbm = lim.seg_boundary_mask();
    let last = page
        .phys()
        .checked_add(u64::from(off))?
        .checked_add(u64::from(len))?
        .checked_sub(1)?;
    if bv.phys() | sbm != last | sbm {
        return None;
    }
    if len > lim.max_segment_size().checked_sub(bv.len())? {
        return None;
    }
    try_merge_page(bv, page, off, len)
}

/// Whether `v2` may continue `v1` in one hardware segment (`biovec_phys_mergeable`): physically
/// contiguous and inside one segment-boundary window. The maximum segment size is not checked.
///
/// # Examples
///
/// ```
/// use bio::{phys_mergeable, QueueLimits};
/// use bvec::{Bvec, Pfn};
/// let lim = QueueLimits::nvme(512, 0, 0)?;
/// let a = Bvec::new(Pfn(4), 0, 4096).unwrap();
/// assert!(phys_mergeable(&lim, &a, &Bvec::new(Pfn(5), 0, 10).unwrap()));
/// assert!(!phys_mergeable(&lim, &a, &Bvec::new(Pfn(5), 1, 10).unwrap()));
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn phys_mergeable<P: Page>(lim: &QueueLimits, v1: &Bvec<P>, v2: &Bvec<P>) -> bool {
    let sbm = lim.seg_boundary_mask();
    let Some(end1) = v1.phys().checked_add(u64::from(v1.len())) else {
        return false;
    };
    let Some(last2) = v2.phys().checked_add(u64::from(v2.len() - 1)) else {
        return false;
    };
    end1 == v2.phys() && v1.phys() | sbm == last2 | sbm
}

/// Whether a segment starting at in-page offset `offset` after `prev` would leave a gap the
/// device cannot describe (`bvec_gap_to_prev`): with a virtual boundary, `prev` must end and the
/// next segment must start on it. Always `false` without a virtual boundary.
///
/// # Examples
///
/// ```
/// use bio::{gap_to_prev, QueueLimits};
/// use bvec::{Bvec, Pfn};
/// let nvme = QueueLimits::nvme(512, 0, 0)?;
/// let full = Bvec::new(Pfn(1), 0, 4096).unwrap();
/// let half = Bvec::new(Pfn(1), 0, 2048).unwrap();
/// assert!(!gap_to_prev(&nvme, &full, 0));
/// assert!(gap_to_prev(&nvme, &full, 512));  // next starts mid-page
/// assert!(gap_to_prev(&nvme, &half, 0));    // previous ends mid-page
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn gap_to_prev<P: Page>(lim: &QueueLimits, prev: &Bvec<P>, offset: u32) -> bool {
    let vbm = lim.virt_boundary_mask();
    vbm != 0 && (offset & vbm != 0 || prev.end() & vbm != 0)
}
