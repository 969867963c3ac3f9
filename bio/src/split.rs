//! Splitting reads and writes to queue limits and counting physical segments
//! (`bio_split_rw_at`, `bvec_split_segs`, `get_max_segment_size`, `blk_recalc_rq_segments`).
//!
//! C header: [`block/blk.h`](srctree/block/blk.h)
//!
//! The functions here take the bio's data as its multipage segments (the `bio_for_each_bvec`
//! view, see [`bvec::BvecIter::segments`]), so they work on any window of a vec table.

use bvec::{Bvec, Page, PAGE_SIZE};

use crate::{gap_to_prev, BioError, QueueLimits};

/// Where a read or write has to be split to fit the queue limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPoint {
    /// The whole bio fits; it is `nsegs` physical segments.
    Whole {
        /// Physical segments of the whole bio.
        nsegs: u32,
    },
    /// Only the first `bytes` fit (a non-zero multiple of the logical block size, smaller than
    /// the bio); they form `nsegs` physical segments.
    Front {
        /// Bytes of the largest valid front part.
        bytes: u32,
        /// Physical segments of that front part, counted exactly.
        nsegs: u32,
    },
}

/// Bytes of the hardware segment that starts at physical address `paddr` when `len` bytes
/// remain (`get_max_segment_size`): it stops at the end of the segment-boundary window and
/// at the maximum segment size. Never 0 when `len` is not.
///
/// # Examples
///
/// ```
/// use bio::{max_segment_bytes, LimitsConfig, QueueLimits};
/// let lim = QueueLimits::new(&LimitsConfig { seg_boundary_mask: 0xffff, ..LimitsConfig::default() })?;
/// assert_eq!(max_segment_bytes(&lim, 0x1_0000, 1 << 20), 65536); // max_segment_size
/// assert_eq!(max_segment_bytes(&lim, 0x1_f000, 1 << 20), 4096);  // boundary window ends
/// assert_eq!(max_segment_bytes(&lim, 0x1_f000, 100), 100);
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn max_segment_bytes(lim: &QueueLimits, paddr: u64, len: u32) -> u32 {
    let sbm = lim.seg_boundary_mask();
    let to_boundary = sbm - (sbm & paddr);
    let mss = u64::from(lim.max_segment_size() - 1);
    let max = if to_boundary < mss { to_boundary } else { mss } + 1;
    if u64::from(len) < max {
        len
    } else {
        // max <= max_segment_size, a u32.
        max as u32
    }
}

/// Running totals of a segment scan.
struct Scan {
    bytes: u32,
    nsegs: u32,
}

impl Scan {
    /// Counts the hardware segments of `bv` that fit under `max_segs` and `max_bytes`
    /// (`bvec_split_segs`). Returns `true` when not all of `bv` fitted.
    fn split_segs<P: Page>(
        &mut self,
        lim: &QueueLimits,
        bv: &Bvec<P>,
        max_segs: u32,
        max_bytes: u32,
    ) -> bool {
        let max_len = max_bytes.saturating_sub(self.bytes);
        let mut len = if bv.len() < max_len {
            bv.len()
        } else {
            max_len
        };
        let vbm = lim.virt_boundary_mask();
        let mut total: u32 = 0;
        while len > 0 && self.nsegs < max_segs {
            let seg = max_segment_bytes(lim, bv.phys().wrapping_add(u64::from(total)), len);
            self.nsegs += 1;
            total += seg;
            len -= seg;
            if bv.offset().wrapping_add(total) & vbm != 0 {
                break;
            }
        }
        // total <= max_len = max_bytes - bytes.
        self.bytes += total;
        len > 0 || bv.len() > max_len
    }

    /// Walks `segs` until a limit is exceeded (a virtual-boundary gap counts only when `gaps`).
    /// Returns `true` when the walk stopped early.
    fn run<P: Page>(
        &mut self,
        segs: impl IntoIterator<Item = Bvec<P>>,
        lim: &QueueLimits,
        max_segs: u32,
        max_bytes: u32,
        gaps: bool,
    ) -> bool {
        let mut prev: Option<Bvec<P>> = None;
        for bv in segs {
            if let Some(p) = &prev {
                if gaps && gap_to_prev(lim, p, bv.offset()) {
                    return true;
                }
            }
            let fits_bytes = self
                .bytes
                .checked_add(bv.len())
                .is_some_and(|b| b <= max_bytes);
            if self.nsegs < max_segs && fits_bytes && bv.end() as usize <= PAGE_SIZE {
                // Cannot overflow: checked just above.
                self.nsegs += 1;
                self.bytes += bv.len();
            } else if self.split_segs(lim, &bv, max_segs, max_bytes) {
                return true;
            }
            prev = Some(bv);
        }
        false
    }
}

/// Finds the largest front part of a read or write that fits `lim` and at most `max_bytes`
/// (`bio_split_rw_at`), counting its physical segments.
///
/// `segs` are the bio's multipage segments in order. Segments are counted exactly as the kernel
/// does: a segment inside one page is one hardware segment; a longer one is cut at every
/// segment-boundary window and at the maximum segment size. The walk stops at a virtual-boundary
/// gap, at `max_segments`, or at `max_bytes`; the front is then aligned down to the logical block
/// size and its segments are counted again, so `nsegs` is exact (the kernel keeps the count from
/// before the alignment, an over-estimate).
///
/// # Errors
///
/// [`BioError::CannotSplit`] when the aligned front would be empty: the kernel returns "no
/// split" there and issues a request that violates the limits.
///
/// # Examples
///
/// ```
/// use bio::{split_rw_at, BioError, QueueLimits, SplitPoint};
/// use bvec::{Bvec, Pfn};
/// let nvme = QueueLimits::nvme(512, 0, 0).unwrap();
/// let segs = [Bvec::new(Pfn(0), 512, 3584)?, Bvec::new(Pfn(9), 0, 8192)?];
/// assert_eq!(split_rw_at(segs, &nvme, 1 << 20), Ok(SplitPoint::Whole { nsegs: 2 }));
/// assert_eq!(split_rw_at(segs, &nvme, 8192), Ok(SplitPoint::Front { bytes: 8192, nsegs: 2 }));
/// // A gap after a half page that is not a whole logical block: no valid split.
/// let bad = [Bvec::new(Pfn(0), 0, 100)?, Bvec::new(Pfn(9), 0, 412)?];
/// assert_eq!(split_rw_at(bad, &nvme, 1 << 20), Err(BioError::CannotSplit { fitted: 100, logical_block_size: 512 }));
/// # Ok::<(), BioError>(())
/// ```
pub fn split_rw_at<P, I>(segs: I, lim: &QueueLimits, max_bytes: u32) -> Result<SplitPoint, BioError>
where
    P: Page,
    I: IntoIterator<Item = Bvec<P>> + Clone,
{
    let mut scan = Scan { bytes: 0, nsegs: 0 };
    if !scan.run(
        segs.clone(),
        lim,
        u32::from(lim.max_segments()),
        max_bytes,
        true,
    ) {
        return Ok(SplitPoint::Whole { nsegs: scan.nsegs });
    }
    let lbs = lim.logical_block_size();
    // `lbs` is a power of two (validated limits).
    let bytes = scan.bytes & !lbs.wrapping_sub(1);
    if bytes == 0 {
        return Err(BioError::CannotSplit {
            fitted: scan.bytes,
            logical_block_size: lbs,
        });
    }
    let mut front = Scan { bytes: 0, nsegs: 0 };
    front.run(segs, lim, u32::MAX, bytes, false);
    Ok(SplitPoint::Front {
        bytes,
        nsegs: front.nsegs,
    })
}

/// Counts the physical segments of `segs` with no segment or size cap
/// (`blk_recalc_rq_segments`), i.e. what `nr_phys_segments` should be.
///
/// Virtual-boundary gaps are not looked at (a bio split to limits has none); counting stops after
/// `u32::MAX` bytes.
///
/// # Examples
///
/// ```
/// use bio::{count_phys_segments, LimitsConfig, QueueLimits};
/// use bvec::{Bvec, Pfn};
/// let lim = QueueLimits::new(&LimitsConfig::default())?;   // 64 KiB maximum segment
/// let segs = [Bvec::new(Pfn(0), 0, 200 * 1024).unwrap()];
/// assert_eq!(count_phys_segments(segs, &lim), 4);
/// assert_eq!(count_phys_segments::<Pfn>([], &lim), 0);
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn count_phys_segments<P: Page>(
    segs: impl IntoIterator<Item = Bvec<P>>,
    lim: &QueueLimits,
) -> u32 {
    let mut scan = Scan { bytes: 0, nsegs: 0 };
    scan.run(segs, lim, u32::MAX, u32::MAX, false);
    scan.nsegs
}
