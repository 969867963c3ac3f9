// SPDX-License-Identifier: GPL-2.0

//! Differential test of [`bio::split_rw_at`] against the kernel's exported `bio_split_rw_at`.
//!
//! Each case is a random segment table on real pages (single-page and multipage segments, page,
//! sector and 4-byte aligned starts, lengths in whole sectors, total a multiple of the logical
//! block size), random queue limits valid for both sides (logical block 512 or 4096, segment
//! count, maximum segment size, segment boundary mask, virtual boundary 0 or 4095) and a random
//! byte limit. The kernel runs on a `struct bio` built with `bio_kmalloc` + `__bio_add_page`.
//!
//! What must be equal, and the two documented deviations (see `bio/src/split.rs`):
//!
//! - ours `Whole { nsegs }`: the kernel returns 0 with the same segment count (and also 0 with
//!   512-byte blocks, so its 0 is not the "aligned front empty" case);
//! - ours `Front { bytes, nsegs }`: the kernel returns `bytes >> 9`; `nsegs` equals the kernel's
//!   own count of the front (its `bio_split_rw_at` on a bio of `bytes` bytes, with no segment or
//!   byte limit, which must not split). The kernel's `*segs` is the count from *before* aligning
//!   the front down to the logical block, so it may be larger: **deviation 1** (over-count). It
//!   is accepted only when the kernel's count does not exceed its count of the first
//!   `bytes + lbs - 1` bytes, and its front with 512-byte blocks ends in `bytes..bytes + lbs`
//!   (i.e. the alignment dropped a partial block, and only that);
//! - ours `Err(CannotSplit { fitted })`: **deviation 2**: the kernel returns 0 ("no split") for a
//!   bio that exceeds the limits. Accepted only when `fitted < lbs`, the kernel's `*segs` is its
//!   own count of the first `fitted` bytes, and with 512-byte blocks it splits at
//!   `fitted >> 9` sectors (it agrees on where the limits were hit).
//!
//! Anything else is a mismatch.
//!
//! [`run`] then runs as many cases of [`crate::limits_diff`] (queue-limit validation and
//! `bio_split_to_limits` on a real queue: discard, write-zeroes, physical blocks larger than the
//! logical one, `io_min`, `chunk_sectors`, sub-sector entries, single-page bios) and adds them
//! to the same totals.

use bio::{split_rw_at, Bio, BioError, LimitsConfig, Op, QueueLimits, SplitPoint};
use bvec::{Bvec, Page, PAGE_SIZE};
use kernel::prelude::*;
use kernel_glue::KPage;
use kernel_glue_testing::{
    c_bio::{self, CSplit},
    PagePool,
};

use crate::rng::Rng;

/// Orders of the page allocations segments are taken from (up to 16 contiguous pages).
const ORDERS: [u32; 7] = [0, 0, 1, 2, 3, 4, 4];
/// Most segments in one table (one more may be added to align the total).
const MAX_SEGS: usize = 16;
/// Mismatches printed in full.
const MAX_REPORTED: usize = 5;
/// Sector size.
const SECTOR: usize = 512;

/// Totals of a bio differential run.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Cases run.
    pub(crate) cases: usize,
    /// Cases where the two sides disagreed beyond the documented deviations.
    pub(crate) mismatches: usize,
    /// Cases where both said "no split".
    pub(crate) whole: usize,
    /// Cases split at the same point with the same segment count.
    pub(crate) front: usize,
    /// Deviation 1: split at the same point, the kernel's segment count larger (documented).
    pub(crate) overcount: usize,
    /// Deviation 2: ours `CannotSplit`, the kernel "no split" (documented).
    pub(crate) cannot_split: usize,
}

/// One random case.
struct Case {
    table: KVec<Bvec<KPage>>,
    size: u32,
    write: bool,
    lim: QueueLimits,
    max_bytes: u32,
}

/// How a case came out when both sides agreed.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    Whole,
    Front,
    Overcount,
    CannotSplit,
}

fn gen_limits(rng: &mut Rng) -> Result<QueueLimits> {
    let lbs = if rng.chance(50) { 512 } else { 4096 };
    let vbm = if rng.chance(35) { 4095 } else { 0 };
    let max_segment_size = if vbm != 0 {
        0 // u32::MAX, as blk_validate_limits sets it with a virtual boundary
    } else {
        match rng.below(6) {
            0 => 4096,
            1 => 8192,
            2 => 12288,
            3 => 65536,
            4 => 4096 * rng.range(1, 16) as u32,
            _ => u32::MAX,
        }
    };
    let seg_boundary_mask = match rng.below(6) {
        0 => 0xfff,
        1 => 0x1fff,
        2 => 0x3fff,
        3 => 0xffff,
        4 => 0xffff_ffff,
        _ => u64::MAX,
    };
    let max_segments = match rng.below(4) {
        0 => rng.range(1, 3),
        1 => rng.range(4, 8),
        2 => 128,
        _ => rng.range(1, 300),
    } as u16;
    // 4 KiB to 256 KiB, whole 4 KiB blocks.
    let max_sectors = 8 * rng.range(1, 64) as u32;
    QueueLimits::new(&LimitsConfig {
        logical_block_size: lbs,
        max_hw_sectors: max_sectors,
        max_user_sectors: max_sectors,
        max_segments,
        max_segment_size,
        seg_boundary_mask,
        virt_boundary_mask: vbm,
        ..LimitsConfig::default()
    })
    .map_err(|e| {
        pr_err!("bio-differential: generated invalid limits: {}\n", e);
        EINVAL
    })
}

fn gen_table(rng: &mut Rng, pool: &PagePool, lbs: u32) -> Result<KVec<Bvec<KPage>>> {
    let allocs = pool.allocations();
    let n = rng.range(1, MAX_SEGS);
    let mut v = KVec::with_capacity(n + 1, GFP_KERNEL)?;
    let mut prev_end: Option<(usize, usize)> = None;
    let mut total: u32 = 0;
    for _ in 0..n {
        // Sometimes continue right after the previous segment (physically contiguous).
        let (ai, start) = match prev_end {
            Some((ai, end))
                if rng.chance(20) && allocs.get(ai).is_some_and(|a| end + SECTOR <= a.len()) =>
            {
                (ai, end)
            }
            _ => {
                let ai = rng.below(allocs.len());
                let a = allocs.get(ai).ok_or(EINVAL)?;
                let len = a.len();
                let start = match rng.below(5) {
                    0 | 1 => PAGE_SIZE * rng.below(a.nr_pages()),
                    2 | 3 => SECTOR * rng.below(len / SECTOR),
                    _ => 4 * rng.below(len / 4),
                };
                (ai, start.min(len - SECTOR))
            }
        };
        let a = allocs.get(ai).ok_or(EINVAL)?;
        let room = (a.len() - start) / SECTOR;
        let sectors = match rng.below(3) {
            0 => rng.range(1, room.min(8)),
            1 => rng.range(1, room),
            _ => room,
        };
        let len = (sectors * SECTOR) as u32;
        let bv = if rng.chance(15) {
            // bv_offset beyond the first page, as bio_add_folio() makes.
            Bvec::new(a.page(), start as u32, len)
        } else {
            Bvec::new(
                a.page().nth(start / PAGE_SIZE),
                (start % PAGE_SIZE) as u32,
                len,
            )
        }
        .map_err(|_| EINVAL)?;
        v.push(bv, GFP_KERNEL)?;
        prev_end = Some((ai, start + len as usize));
        total += len;
    }
    // Pad to a whole number of logical blocks (`bio_unaligned` would refuse the bio otherwise).
    let pad = total.wrapping_neg() & (lbs - 1);
    if pad != 0 {
        let a = allocs.first().ok_or(EINVAL)?;
        v.push(Bvec::new(a.page(), 0, pad).map_err(|_| EINVAL)?, GFP_KERNEL)?;
    }
    Ok(v)
}

fn gen_case(rng: &mut Rng, pool: &PagePool) -> Result<Case> {
    let lim = gen_limits(rng)?;
    let table = gen_table(rng, pool, lim.logical_block_size())?;
    let size = table.iter().map(|b| b.len()).sum();
    let max_bytes = match rng.below(20) {
        0..=9 => lim.max_io_bytes(0),
        10..=13 => (SECTOR * rng.range(1, 512)) as u32,
        14..=16 => (rng.range(1, 64) as u32) << if rng.chance(50) { 9 } else { 12 },
        17 | 18 => u32::MAX,
        _ => rng.range(0, 4096) as u32,
    };
    Ok(Case {
        table,
        size,
        write: rng.chance(50),
        lim,
        max_bytes,
    })
}

/// The same limits with another logical block size or segment limit.
fn variant(lim: &QueueLimits, lbs: u32, max_segments: u16) -> Result<QueueLimits> {
    QueueLimits::new(&LimitsConfig {
        logical_block_size: lbs,
        max_segments,
        ..lim.config()
    })
    .map_err(|_| EINVAL)
}

/// Compares both sides on one case; `Ok(None)` is a mismatch.
fn compare(case: &Case, ours: &Result<SplitPoint, BioError>, k: CSplit) -> Result<Option<Outcome>> {
    let lim = &case.lim;
    let lbs = lim.logical_block_size();
    // The kernel counting the segments of the first `size` bytes, with no segment or byte limit.
    let count_lim = variant(lim, lbs, u16::MAX)?;
    let count =
        |size: u32| c_bio::bio_split_rw_at(&case.table, size, case.write, &count_lim, u32::MAX);
    // The kernel with 512-byte blocks: where it hit the limits, to a sector.
    let k512 = || {
        let l = variant(lim, 512, lim.max_segments())?;
        c_bio::bio_split_rw_at(&case.table, case.size, case.write, &l, case.max_bytes)
    };
    Ok(match *ours {
        Ok(SplitPoint::Whole { nsegs }) => {
            // With 512-byte blocks the kernel must not split either (a 0 from it can also mean
            // "limits hit, aligned front empty").
            let no_split = lbs == 512 || k512()?.sectors == 0;
            (k.sectors == 0 && k.segs == nsegs && no_split).then_some(Outcome::Whole)
        }
        Ok(SplitPoint::Front { bytes, nsegs }) => {
            let exact = count(bytes)?;
            let same_point = bytes % 512 == 0 && i64::from(k.sectors) == i64::from(bytes >> 9);
            if !same_point || exact.sectors != 0 || exact.segs != nsegs || k.segs < nsegs {
                None
            } else if k.segs == nsegs {
                Some(Outcome::Front)
            } else {
                let bound = count(case.size.min(bytes.saturating_add(lbs - 1)))?;
                let k5 = k512()?;
                let at = i64::from(k5.sectors) * 512;
                (k.segs <= bound.segs
                    && k5.segs == k.segs
                    && at >= i64::from(bytes)
                    && at < i64::from(bytes) + i64::from(lbs))
                .then_some(Outcome::Overcount)
            }
        }
        Err(BioError::CannotSplit {
            fitted,
            logical_block_size,
        }) => {
            let pre = count(fitted)?;
            let k5 = k512()?;
            (k.sectors == 0
                && logical_block_size == lbs
                && fitted < lbs
                && k.segs == pre.segs
                && k5.segs == k.segs
                && i64::from(k5.sectors) == i64::from(fitted >> 9))
            .then_some(Outcome::CannotSplit)
        }
        Err(_) => None,
    })
}

fn report(idx: usize, case: &Case, ours: &Result<SplitPoint, BioError>, k: CSplit) {
    pr_err!(
        "bio-differential mismatch in case {}: {} of {} bytes, max_bytes {}\n",
        idx,
        if case.write { "write" } else { "read" },
        case.size,
        case.max_bytes
    );
    pr_err!("  limits {:?}\n", case.lim);
    for (i, bv) in case.table.iter().enumerate() {
        pr_err!(
            "  [{}] phys {:#x} (page {:?}) offset {} len {}\n",
            i,
            bv.phys(),
            bv.page(),
            bv.offset(),
            bv.len()
        );
    }
    pr_err!(
        "  kernel: returned {} sectors, segs {}\n",
        k.sectors,
        k.segs
    );
    pr_err!("  ours:   {:?}\n", ours);
}

/// Runs `cases` random cases from `seed`. With `inject`, our result of case 0 is altered, which
/// must be reported as a mismatch.
pub(crate) fn run(seed: u64, cases: usize, inject: bool) -> Result<Summary> {
    let mut rng = Rng::new(seed ^ 0xb10_5b11_7000);
    let mut pool = PagePool::new();
    for order in ORDERS {
        pool.alloc(order).map_err(|_| ENOMEM)?;
    }
    let mut sum = Summary::default();
    for idx in 0..cases {
        if idx % 64 == 0 {
            kernel_glue::sched::cond_resched();
        }
        let case = gen_case(&mut rng, &pool)?;
        let op = if case.write { Op::Write } else { Op::Read };
        let bio = Bio::from_table(op, 0, &case.table, case.size).map_err(|_| EINVAL)?;
        let mut ours = split_rw_at(bio.segments(), &case.lim, case.max_bytes);
        if inject && idx == 0 {
            ours = match ours {
                Ok(SplitPoint::Whole { nsegs }) => Ok(SplitPoint::Whole { nsegs: nsegs + 1 }),
                Ok(SplitPoint::Front { bytes, nsegs }) => Ok(SplitPoint::Front {
                    bytes,
                    nsegs: nsegs.wrapping_sub(1),
                }),
                Err(_) => Ok(SplitPoint::Whole { nsegs: u32::MAX }),
            };
            pr_info!("inject_fault: altered our bio split result in case 0\n");
        }
        let k = c_bio::bio_split_rw_at(
            &case.table,
            case.size,
            case.write,
            &case.lim,
            case.max_bytes,
        )?;
        match compare(&case, &ours, k)? {
            Some(Outcome::Whole) => sum.whole += 1,
            Some(Outcome::Front) => sum.front += 1,
            Some(Outcome::Overcount) => sum.overcount += 1,
            Some(Outcome::CannotSplit) => sum.cannot_split += 1,
            None => {
                if sum.mismatches < MAX_REPORTED {
                    report(idx, &case, &ours, k);
                }
                sum.mismatches += 1;
            }
        }
        sum.cases += 1;
    }
    // Queue-limit validation and bio_split_to_limits on a real queue, as many cases again; they
    // count in the same summary line.
    let lim = crate::limits_diff::run(&mut rng, &pool, cases)?;
    pr_info!(
        "bio-differential limits: {} cases: limits refused by both {}, refused by us only (documented) {}; split read/write {}, discard {}, write-zeroes {}: {} whole, {} whole by bio_may_need_split, {} split, {} cannot split (kernel: whole; documented); {} mismatches\n",
        lim.cases,
        lim.refused,
        lim.crate_refuses,
        lim.by_op[0],
        lim.by_op[1],
        lim.by_op[2],
        lim.whole,
        lim.shortcut,
        lim.front,
        lim.cannot_split,
        lim.mismatches
    );
    sum.cases += lim.cases;
    sum.mismatches += lim.mismatches;
    Ok(sum)
}
