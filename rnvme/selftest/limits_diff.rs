// SPDX-License-Identifier: GPL-2.0

//! Differential test of [`QueueLimits::new`] against the kernel's `blk_validate_limits`, and of
//! [`Bio::split_point`] against the kernel's `bio_split_to_limits` on real bios and a real queue
//! (block/blk-settings.c, block/blk-merge.c, block/blk.h).
//!
//! Each case draws a queue-limit configuration (logical blocks 512 to 4096 and a few invalid
//! sizes, physical blocks up to 16 logical ones, `io_min`/`io_opt`, any `chunk_sectors`, discard
//! limit/granularity/alignment, write-zeroes limit, segment limits and masks, some values only the
//! kernel accepts), never one the kernel `WARN`s about. The kernel validates it on a gendisk's
//! queue ([`SplitDisk`]); both verdicts and, when both accept, every validated field must be
//! equal. A configuration the kernel accepts and the crate refuses counts as the documented
//! deviation (docs/DEVIATIONS.md) when it is one of those listed there, else as a mismatch.
//!
//! When both accept, a bio is split by both sides: a read or write over a random table (whole
//! sectors; sub-sector entry lengths padded to a block; or one entry inside one page, the
//! `bio_may_need_split() == false` case), a discard or a write-zeroes of up to 4 GiB, at a
//! block-aligned sector. Ours `Whole` must be the kernel not splitting, ours `Front { bytes }` the
//! kernel splitting off `bytes >> 9` sectors and queueing the rest; ours `CannotSplit` is the
//! documented deviation where the kernel sends the bio whole.

use bio::{Bio, BioError, LimitsConfig, Op, QueueLimits, SplitPoint};
use bvec::{Bvec, Page, PAGE_SIZE};
use kernel::prelude::*;
use kernel_glue::KPage;
use kernel_glue_testing::{
    c_split::{KernelLimits, KernelSplit, SplitDisk},
    PagePool,
};

use crate::rng::Rng;

/// Mismatches printed in full.
const MAX_REPORTED: usize = 5;
/// Most entries of a generated table.
const MAX_SEGS: usize = 12;

/// Totals of a limits/split differential run.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Cases run.
    pub(crate) cases: usize,
    /// Cases where the two sides disagreed beyond the documented deviations.
    pub(crate) mismatches: usize,
    /// Both refused the limits.
    pub(crate) refused: usize,
    /// The kernel accepted limits the crate refuses on purpose (documented).
    pub(crate) crate_refuses: usize,
    /// Reads/writes, discards and write-zeroes compared.
    pub(crate) by_op: [usize; 3],
    /// Of those: both sent the bio whole.
    pub(crate) whole: usize,
    /// Of those: the single-page shortcut (`bio_may_need_split` false) let a read/write through.
    pub(crate) shortcut: usize,
    /// Of those: both split at the same sector.
    pub(crate) front: usize,
    /// Ours `CannotSplit`, the kernel sends the bio whole (documented).
    pub(crate) cannot_split: usize,
}

fn pick<T: Copy + Default>(rng: &mut Rng, v: &[T]) -> T {
    // `v` is never empty at the call sites; the default only avoids a panic path.
    v.get(rng.below(v.len())).copied().unwrap_or_default()
}

/// A configuration the kernel validates without a `WARN_ON_ONCE` (those are refused by both and
/// covered by the host property tests): `max_hw_sectors >= 8`, `seg_boundary_mask >= 4095`,
/// `max_segment_size >= 4096` without a virtual boundary, `dma_alignment <= 4096`.
fn gen_config(rng: &mut Rng) -> LimitsConfig {
    let lbs = match rng.below(20) {
        0 => pick(rng, &[256u32, 1000, 8192]),
        1 => 0,
        _ => 512 << rng.below(4),
    };
    let base = lbs.clamp(512, 4096);
    // The values only the kernel accepts (docs/DEVIATIONS.md) come up in about one case in
    // eight, so that most cases reach a split.
    let vbm = match rng.below(40) {
        0..=23 => 0,
        24..=33 => 4095,
        34..=38 => 511,
        _ => pick(rng, &[0x300u32, 0x1fff, 4096]),
    };
    LimitsConfig {
        logical_block_size: lbs,
        physical_block_size: match rng.below(24) {
            0..=4 => 0,
            5..=9 => base,
            10..=19 => base << rng.range(1, 4),
            20..=22 => 512,
            _ => 3000,
        },
        io_min: match rng.below(5) {
            0 | 1 => 0,
            2 => 512 * rng.range(1, 64) as u32,
            3 => pick(rng, &[2u32 << 20, 3 << 20, 3_000_000]),
            _ => 4096,
        },
        io_opt: match rng.below(4) {
            0 | 1 => 0,
            2 => 512 * rng.range(1, 16384) as u32,
            _ => pick(rng, &[2u32 << 20, 4 << 20, 10_000]),
        },
        max_hw_sectors: match rng.below(8) {
            0 => 0,
            1 => pick(rng, &[100_000u32, u32::MAX]),
            2..=4 => rng.range(8, 64) as u32,
            _ => rng.range(8, 4096) as u32,
        },
        max_user_sectors: match rng.below(8) {
            0..=3 => 0,
            4 => rng.range(1, 8) as u32,
            5 => u32::MAX,
            _ => rng.range(8, 4096) as u32,
        },
        max_segments: match rng.below(4) {
            0 => 0,
            1 => rng.range(1, 8) as u16,
            2 => 128,
            _ => rng.range(1, 65536) as u16,
        },
        max_segment_size: if vbm != 0 {
            pick(rng, &[0u32, 0, u32::MAX, 65536, 0, u32::MAX, 65536, 1024])
        } else {
            pick(rng, &[0u32, 4096, 6000, 65536, u32::MAX])
        },
        seg_boundary_mask: if rng.chance(3) {
            0x1000
        } else {
            pick(rng, &[0u64, 0xfff, 0x1fff, 0xffff, 0xffff_ffff, u64::MAX])
        },
        virt_boundary_mask: vbm,
        dma_alignment: pick(rng, &[0u32, 3, 6, 511, 4095, 4096]),
        chunk_sectors: match rng.below(4) {
            0 | 1 => 0,
            2 => rng.range(1, 1024) as u32,
            _ => 64 << rng.below(5),
        },
        max_discard_sectors: match rng.below(4) {
            0 => 0,
            1 => u32::MAX,
            _ => rng.range(1, 4096) as u32,
        },
        discard_granularity: pick(rng, &[0u32, 512, 4096, 6144, 65536]),
        discard_alignment: pick(rng, &[0u32, 0, 512, 1024]),
        max_write_zeroes_sectors: match rng.below(4) {
            0 => 0,
            1 => u32::MAX,
            _ => rng.range(1, 4096) as u32,
        },
    }
}

/// The limits the kernel accepts and the crate refuses on purpose (docs/DEVIATIONS.md).
fn documented_refusal(k: &KernelLimits) -> bool {
    let low_mask = |v: u64| v & v.wrapping_add(1) == 0;
    !k.physical_block_size.is_power_of_two()
        || !low_mask(k.seg_boundary_mask)
        || !low_mask(k.virt_boundary_mask)
        || k.virt_boundary_mask >= PAGE_SIZE as u64
        || (k.max_segment_size as usize) < PAGE_SIZE
}

/// A read/write table whose total is `lbs`-aligned: whole sectors (0), 4-byte lengths padded to a
/// block (1), or one entry inside one page (2).
fn gen_table(rng: &mut Rng, pool: &PagePool, lbs: u32) -> Result<KVec<Bvec<KPage>>> {
    let allocs = pool.allocations();
    let mode = rng.below(3);
    let n = if mode == 2 { 1 } else { rng.range(1, MAX_SEGS) };
    let mut v = KVec::with_capacity(n + 1, GFP_KERNEL)?;
    let mut total: u32 = 0;
    for _ in 0..n {
        let a = allocs.get(rng.below(allocs.len())).ok_or(EINVAL)?;
        let bv = if mode == 2 {
            // One entry inside one page, a whole number of blocks.
            let blocks = PAGE_SIZE as u32 / lbs;
            let len = lbs * rng.range(1, blocks as usize) as u32;
            let off = 4 * rng.below((PAGE_SIZE - len as usize) / 4 + 1) as u32;
            Bvec::new(a.page().nth(rng.below(a.nr_pages())), off, len)
        } else {
            let unit = if mode == 0 { 512 } else { 4 };
            let start = unit * rng.below((a.len() - unit) / unit);
            let room = (a.len() - start) / unit;
            let len = unit * rng.range(1, room.min(3 * PAGE_SIZE / unit));
            Bvec::new(
                a.page().nth(start / PAGE_SIZE),
                (start % PAGE_SIZE) as u32,
                len as u32,
            )
        }
        .map_err(|_| EINVAL)?;
        total += bv.len();
        v.push(bv, GFP_KERNEL)?;
    }
    let pad = total.wrapping_neg() & (lbs - 1);
    if pad != 0 {
        let a = allocs.first().ok_or(EINVAL)?;
        v.push(Bvec::new(a.page(), 0, pad).map_err(|_| EINVAL)?, GFP_KERNEL)?;
    }
    Ok(v)
}

/// One bio for both sides.
struct BioCase {
    op: Op,
    sector: u64,
    size: u32,
    table: KVec<Bvec<KPage>>,
}

fn gen_bio(rng: &mut Rng, pool: &PagePool, lim: &QueueLimits) -> Result<BioCase> {
    let lbs = lim.logical_block_size();
    let lbs_sectors = u64::from(lbs >> 9);
    let sector = match rng.below(3) {
        0 => rng.below(1 << 20) as u64,
        // Below 2^51: inside the kernel side's disk (`SplitDisk`).
        1 => rng.next_u64() >> 13,
        _ => rng.below(4096) as u64,
    } & !(lbs_sectors - 1);
    let op = match rng.below(4) {
        0 if lim.max_discard_sectors() != 0 => Op::Discard,
        1 if lim.max_write_zeroes_sectors() != 0 => Op::WriteZeroes,
        0..=2 => Op::Read,
        _ => Op::Write,
    };
    if !op.has_data() {
        let size = match rng.below(3) {
            0 => (rng.next_u64() as u32) & !(lbs - 1),
            1 => lbs * rng.range(1, 4096) as u32,
            _ => lbs * rng.range(1, 64) as u32,
        };
        return Ok(BioCase {
            op,
            sector,
            size,
            table: KVec::new(),
        });
    }
    let table = gen_table(rng, pool, lbs)?;
    let size = table.iter().map(|b| b.len()).sum();
    Ok(BioCase {
        op,
        sector,
        size,
        table,
    })
}

/// How a split case came out when both sides agreed.
enum Outcome {
    Whole,
    Shortcut,
    Front,
    CannotSplit,
}

fn compare(
    case: &BioCase,
    bio: &Bio<'_, KPage>,
    lim: &QueueLimits,
    ours: &core::result::Result<SplitPoint, BioError>,
    k: &KernelSplit,
) -> Option<Outcome> {
    match *ours {
        Ok(SplitPoint::Whole { .. }) => (k.front_sectors == 0 && !k.queued).then_some(
            if case.op.has_data() && !bio.may_need_split(lim) {
                Outcome::Shortcut
            } else {
                Outcome::Whole
            },
        ),
        Ok(SplitPoint::Front { bytes, .. }) => (u64::from(k.front_sectors) << 9
            == u64::from(bytes)
            && k.queued
            && u64::from(k.rest_sectors) << 9 == u64::from(case.size - bytes))
        .then_some(Outcome::Front),
        Err(BioError::CannotSplit { .. }) => {
            (k.front_sectors == 0 && !k.queued).then_some(Outcome::CannotSplit)
        }
        Err(_) => None,
    }
}

fn report(idx: usize, cfg: &LimitsConfig, what: &str) {
    pr_err!(
        "bio-differential mismatch in limits case {}: {}\n",
        idx,
        what
    );
    pr_err!("  config {:?}\n", cfg);
}

/// Runs `cases` random cases from `rng` with tables from `pool`.
pub(crate) fn run(rng: &mut Rng, pool: &PagePool, cases: usize) -> Result<Summary> {
    let mut disk = SplitDisk::new()?;
    let mut sum = Summary::default();
    for idx in 0..cases {
        if idx % 64 == 0 {
            kernel_glue::sched::cond_resched();
        }
        sum.cases += 1;
        let cfg = gen_config(rng);
        let kernel = disk.set_limits(&cfg);
        let lim = match (kernel, QueueLimits::new(&cfg)) {
            (Err(_), Err(_)) => {
                sum.refused += 1;
                continue;
            }
            (Ok(k), Err(_)) if documented_refusal(&k) => {
                sum.crate_refuses += 1;
                continue;
            }
            (Ok(k), Ok(l)) if KernelLimits::of(&l) == k => l,
            (k, l) => {
                if sum.mismatches < MAX_REPORTED {
                    report(idx, &cfg, "validation");
                    pr_err!(
                        "  kernel {:?}\n  ours   {:?}\n",
                        k.map_err(|e| e.to_errno()),
                        l
                    );
                }
                sum.mismatches += 1;
                continue;
            }
        };
        let case = gen_bio(rng, pool, &lim)?;
        let bio = if case.op.has_data() {
            Bio::from_table(case.op, case.sector, &case.table, case.size)
        } else {
            Bio::range(case.op, case.sector, case.size)
        }
        .map_err(|_| EINVAL)?;
        let ours = bio.split_point(&lim);
        let k = disk.split(case.op, case.sector, &case.table, case.size)?;
        match case.op {
            Op::Discard => sum.by_op[1] += 1,
            Op::WriteZeroes => sum.by_op[2] += 1,
            _ => sum.by_op[0] += 1,
        }
        match compare(&case, &bio, &lim, &ours, &k) {
            Some(Outcome::Whole) => sum.whole += 1,
            Some(Outcome::Shortcut) => sum.shortcut += 1,
            Some(Outcome::Front) => sum.front += 1,
            Some(Outcome::CannotSplit) => sum.cannot_split += 1,
            None => {
                if sum.mismatches < MAX_REPORTED {
                    report(idx, &cfg, "split");
                    pr_err!(
                        "  {:?} at sector {} of {} bytes, {} entries\n",
                        case.op,
                        case.sector,
                        case.size,
                        case.table.len()
                    );
                    for (i, bv) in case.table.iter().enumerate() {
                        pr_err!("  [{}] offset {} len {}\n", i, bv.offset(), bv.len());
                    }
                    pr_err!("  kernel: {:?}\n  ours:   {:?}\n", k, ours);
                }
                sum.mismatches += 1;
            }
        }
    }
    Ok(sum)
}
