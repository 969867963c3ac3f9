// SPDX-License-Identifier: GPL-2.0

//! The differential test: the same operations through the kernel's `struct iov_iter` and through
//! [`iov::IovIter`], on the same bytes, compared operation by operation.
//!
//! Each case restores the arena from the same pattern before each side runs, so both start from
//! identical memory at identical addresses (alignment and page counts depend on addresses). After
//! every operation the return value, a digest of any bytes copied out, and the iterator state
//! (`count`, `nr_segs`, `iov_offset`) are recorded; at the end the whole arena is snapshotted.
//! Any difference is a mismatch.
//!
//! Kinds: BVEC, KVEC, UBUF, IOVEC, and page lists against `ITER_FOLIOQ` (`iov_iter_folio_queue`
//! over one `struct folio_queue`; there `nr_segs` is compared as the current slot, which shares
//! its union in `struct iov_iter`). `ITER_XARRAY` is not compared: the crate has no xarray kind,
//! and the kernel's xarray walk needs page-cache folios indexed in a real `struct xarray`.
//! Operations: copies (including `copy_page_{to,from}_iter`), zeroing, advance, revert, the
//! queries (`npages`, `alignment`, `gap_alignment`, `is_aligned`, `single_seg_count`),
//! `iov_iter_extract_pages` on every kind (UBUF/IOVEC pages pinned with `pin_user_pages_fast` on
//! both sides, compared by page and offset, unpinned after each operation), and save/restore
//! (`iov_iter_save_state`, then `iov_iter_restore` after further operations, partial and faulting
//! copies included; `iov_iter_restore` is not exported to modules, so the kernel side restores a
//! copy of its `struct iov_iter`, see `CIovIter::save`).

use bvec::{Bvec, Page, PAGE_SIZE};
use iov::{AnyDir, BvecTable, Dest, FixedDirection, Folio, IovError, IovIter, IovState, Iovec, Kvec, Source};
use kernel::prelude::*;
use kernel_glue::KPage;
use kernel_glue_testing::{
    c_iov::{CDirection, CIovIter},
    UserPins,
};

use crate::arena::Arena;
use crate::geometry::{Case, KindSel, Op, Table};
use crate::rng::{digest, Rng};

/// Value recorded for a query one side refuses to run (see [`CIovIter::alignment`]).
const NOT_RUN: u64 = u64::MAX;
/// Mismatches printed in full.
const MAX_REPORTED: usize = 5;
/// Most page slots an `Extract` operation offers.
const MAX_EXTRACT: usize = 6;

/// Observation of an extraction: the size (or negative errno) and a digest of `offset0` and the
/// physical addresses of the pages filled in.
fn extract_obs(r: Result<(usize, usize), i32>, pages: &[KPage]) -> (u64, u64) {
    match r {
        Err(e) => (e as i64 as u64, 0),
        Ok((size, offset0)) => {
            let n = if size == 0 {
                0
            } else {
                (offset0 + size).div_ceil(PAGE_SIZE)
            };
            let mut bytes = KVec::new();
            let mut h = digest(&offset0.to_le_bytes());
            for p in pages.iter().take(n) {
                if bytes
                    .extend_from_slice(&p.phys().to_le_bytes(), GFP_KERNEL)
                    .is_err()
                {
                    break;
                }
            }
            h ^= digest(&bytes).rotate_left(1);
            (size as u64, h)
        }
    }
}

/// Byte written to the destination buffer before `copy_from_iter`, to see bytes not copied.
const POISON: u8 = 0x5a;

/// What one operation observed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Obs {
    ret: u64,
    digest: u64,
    count: usize,
    nr_segs: usize,
    iov_offset: usize,
}

/// Totals of a differential run.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Cases run.
    pub(crate) cases: usize,
    /// Cases with at least one difference.
    pub(crate) mismatches: usize,
    /// Cases run per kind, in [`KindSel::ALL`] order.
    pub(crate) per_kind: [usize; 5],
    /// `bvec_iter` cases (see [`crate::bvec_diff`]), counted in `cases` too.
    pub(crate) bvec_iter: usize,
    /// Operations compared.
    pub(crate) ops: usize,
    /// Bytes the kernel's copies and zeroes moved (shows the cases are not vacuous).
    pub(crate) bytes: u64,
    /// Copies that moved fewer bytes than asked (short copies at the end of the iterator).
    pub(crate) short_copies: usize,
    /// Reverts of a non-zero amount.
    pub(crate) reverts: usize,
    /// Extractions that returned pages.
    pub(crate) extracts: usize,
    /// Of those, extractions from user memory (pages pinned on both sides).
    pub(crate) pinned: usize,
    /// `iov_iter_gap_alignment` calls compared.
    pub(crate) gaps: usize,
    /// Restores to a saved state.
    pub(crate) restores: usize,
}

/// The amount a `Revert(r)` unrolls for an iterator that consumed `consumed` bytes.
fn revert_amount(r: usize, consumed: usize) -> usize {
    r % consumed.saturating_add(1)
}

fn c_dir(source: bool) -> CDirection {
    if source {
        CDirection::Source
    } else {
        CDirection::Dest
    }
}

/// Runs `case` through the kernel's iterator, appending one observation per operation.
fn run_c(arena: &mut Arena, case: &Case, log: &mut KVec<Obs>) -> Result {
    let Arena {
        mem,
        src,
        dst,
        page_src,
        ..
    } = arena;
    let page_src = *page_src;
    let dir = c_dir(case.source);
    let mut it = match &case.table {
        Table::Bvec(v) => match case.import {
            // io_import_fixed(): an iterator over `offset + count`, moved to `offset`.
            Some(offset) => CIovIter::bvec(dir, v, mem, offset + case.count).map(|mut it| {
                it.advance(offset);
                it
            }),
            None => CIovIter::bvec(dir, v, mem, case.count),
        },
        Table::Kvec(v) => CIovIter::kvec(dir, v, mem, case.count),
        Table::Iovec(v) => CIovIter::iovec(dir, v, mem, case.count),
        Table::Ubuf { addr } => Ok(CIovIter::ubuf(dir, *addr, mem, case.count)),
        Table::Folios { folios, offset } => CIovIter::folioq(dir, folios, *offset, mem, case.count),
    }
    .map_err(|e| {
        pr_err!("cannot build the kernel iterator: {}\n", e);
        EINVAL
    })?;
    for op in case.ops.iter() {
        let (ret, dig) = match *op {
            Op::Copy(n) => {
                if case.source {
                    let out = dst.get_mut(..n).ok_or(EINVAL)?;
                    out.fill(POISON);
                    let r = it.copy_from_iter(out).map_or(NOT_RUN, |r| r as u64);
                    (r, digest(out))
                } else {
                    let input = src.get(..n).ok_or(EINVAL)?;
                    (it.copy_to_iter(input).map_or(NOT_RUN, |r| r as u64), 0)
                }
            }
            Op::Zero(n) => (it.zero(n) as u64, 0),
            Op::Advance(n) => {
                it.advance(n);
                (0, 0)
            }
            Op::Revert(r) => {
                let amount = revert_amount(r, it.consumed());
                (amount as u64, u64::from(it.revert(amount)))
            }
            Op::Npages(max) => (it.npages(max) as u64, 0),
            Op::Alignment => (it.alignment().map_or(NOT_RUN, |v| v as u64), 0),
            Op::IsAligned(am, lm) => (it.is_aligned(am, lm).map_or(NOT_RUN, u64::from), 0),
            Op::SingleSeg => (it.single_seg_count() as u64, 0),
            Op::CopyPage { offset, bytes } => {
                let r = if case.source {
                    it.copy_page_from_iter(page_src, offset, bytes)
                } else {
                    it.copy_page_to_iter(page_src, offset, bytes)
                };
                (r.map_or(NOT_RUN, |r| r as u64), 0)
            }
            Op::Extract { maxsize, maxpages } => {
                let mut pages = [page_src; MAX_EXTRACT];
                let slots = pages.get_mut(..maxpages).ok_or(EINVAL)?;
                // Pins the kernel takes on user pages are released when `pins` is dropped.
                let mut pins = UserPins::new();
                match it.extract_pages(slots, maxsize, &mut pins) {
                    None => (NOT_RUN, 0),
                    Some(r) => extract_obs(r, slots),
                }
            }
            Op::GapAlignment => (it.gap_alignment().map_or(NOT_RUN, |v| v as u64), 0),
            Op::Save => {
                it.save();
                (0, 0)
            }
            Op::Restore => (u64::from(it.restore()), 0),
        };
        let st = it.state();
        log.push(
            Obs {
                ret,
                digest: dig,
                count: st.count,
                nr_segs: st.nr_segs,
                iov_offset: st.iov_offset,
            },
            GFP_KERNEL,
        )?;
    }
    Ok(())
}

/// Builds our iterator for `case` with direction `D`, erased to [`AnyDir`].
fn build<'a, D: FixedDirection>(case: &'a Case) -> Result<IovIter<'a, KPage, AnyDir>, IovError> {
    let it = match &case.table {
        Table::Bvec(v) => match case.import {
            Some(offset) => {
                IovIter::<KPage, D>::import_fixed(&BvecTable::new(as_bvecs(v))?, offset, case.count)?
            }
            None => IovIter::<KPage, D>::bvec(as_bvecs(v), case.count)?,
        },
        Table::Kvec(v) => IovIter::<KPage, D>::kvec(as_kvecs(v), case.count)?,
        Table::Iovec(v) => IovIter::<KPage, D>::iovec(as_iovecs(v), case.count)?,
        Table::Ubuf { addr } => IovIter::<KPage, D>::ubuf(*addr, case.count),
        Table::Folios { folios, offset } => {
            IovIter::<KPage, D>::page_list(as_folios(folios), *offset, case.count)?
        }
    };
    Ok(it.into_any())
}

fn as_bvecs(v: &KVec<Bvec<KPage>>) -> &[Bvec<KPage>] {
    v
}

fn as_kvecs(v: &KVec<Kvec>) -> &[Kvec] {
    v
}

fn as_iovecs(v: &KVec<Iovec>) -> &[Iovec] {
    v
}

fn as_folios(v: &KVec<Folio<KPage>>) -> &[Folio<KPage>] {
    v
}

/// Whether the kernel's alignment queries would read past the table (the C wrapper refuses).
fn exhausted_vector(case: &Case, it: &IovIter<'_, KPage, AnyDir>) -> bool {
    !matches!(case.table, Table::Ubuf { .. } | Table::Folios { .. })
        && it.count() == 0
        && it.nr_segs() == 0
}

/// `nr_segs` as the kernel's `struct iov_iter` shows it: the current slot for a folio queue.
fn kernel_nr_segs(case: &Case, it: &IovIter<'_, KPage, AnyDir>) -> usize {
    match case.table {
        Table::Folios { .. } => it.segment_index(),
        _ => it.nr_segs(),
    }
}

/// Runs `case` through [`iov::IovIter`], appending one observation per operation.
fn run_rust(arena: &mut Arena, case: &Case, log: &mut KVec<Obs>) -> Result {
    let Arena {
        mem,
        src,
        dst,
        page_src,
        ..
    } = arena;
    let page_src = *page_src;
    let built = if case.source {
        build::<Source>(case)
    } else {
        build::<Dest>(case)
    };
    let mut it = built.map_err(|e| {
        pr_err!("cannot build our iterator: {}\n", e);
        EINVAL
    })?;
    let mut saved: Option<IovState<'_>> = None;
    for op in case.ops.iter() {
        let (ret, dig) = match *op {
            Op::Copy(n) => {
                if case.source {
                    let out = dst.get_mut(..n).ok_or(EINVAL)?;
                    out.fill(POISON);
                    let r = it.copy_from_iter(mem, out) as u64;
                    (r, digest(out))
                } else {
                    let input = src.get(..n).ok_or(EINVAL)?;
                    (it.copy_to_iter(mem, input) as u64, 0)
                }
            }
            Op::Zero(n) => (it.zero(mem, n) as u64, 0),
            Op::Advance(n) => {
                it.advance(n);
                (0, 0)
            }
            Op::Revert(r) => {
                let amount = revert_amount(r, it.consumed());
                (amount as u64, u64::from(it.revert(amount).is_ok()))
            }
            Op::Npages(max) => (it.npages(max as usize) as u64, 0),
            Op::Alignment => {
                if exhausted_vector(case, &it) {
                    (NOT_RUN, 0)
                } else {
                    (it.alignment() as u64, 0)
                }
            }
            Op::IsAligned(am, lm) => {
                if exhausted_vector(case, &it) {
                    (NOT_RUN, 0)
                } else {
                    (u64::from(it.is_aligned(am, lm)), 0)
                }
            }
            Op::SingleSeg => (it.single_seg_count() as u64, 0),
            Op::CopyPage { offset, bytes } => {
                let r = if case.source {
                    it.copy_page_from_iter(mem, page_src, offset, bytes)
                } else {
                    it.copy_page_to_iter(mem, page_src, offset, bytes)
                };
                (r as u64, 0)
            }
            Op::Extract { maxsize, maxpages } => {
                let mut pages = [page_src; MAX_EXTRACT];
                let slots = pages.get_mut(..maxpages).ok_or(EINVAL)?;
                let r = it
                    .extract_pages(mem, slots, maxsize)
                    .map_err(|e| e.to_errno());
                let obs = extract_obs(r, slots);
                // User pages were pinned through `mem` (pin_user_pages_fast): release them.
                mem.release_pins();
                obs
            }
            Op::GapAlignment => {
                if matches!(case.table, Table::Ubuf { .. } | Table::Iovec(_)) {
                    (it.gap_alignment() as u64, 0)
                } else {
                    (NOT_RUN, 0)
                }
            }
            Op::Save => {
                saved = Some(it.save_state());
                (0, 0)
            }
            Op::Restore => match &saved {
                Some(st) => (u64::from(it.restore(st).is_ok()), 0),
                None => (0, 0),
            },
        };
        log.push(
            Obs {
                ret,
                digest: dig,
                count: it.count(),
                nr_segs: kernel_nr_segs(case, &it),
                iov_offset: it.iov_offset(),
            },
            GFP_KERNEL,
        )?;
    }
    Ok(())
}

/// Compares the two runs of case `idx`; prints the first difference if `report`.
fn compare(idx: usize, case: &Case, c: &[Obs], ours: &[Obs], arena: &Arena, report: bool) -> bool {
    let first_op = c.iter().zip(ours.iter()).position(|(a, b)| a != b);
    let len_differs = c.len() != ours.len();
    let first_byte = arena
        .snap_c
        .iter()
        .zip(arena.snap_rust.iter())
        .position(|(a, b)| a != b);
    if first_op.is_none() && !len_differs && first_byte.is_none() {
        return true;
    }
    if report {
        pr_err!("mismatch in case {}: {}\n", idx, case);
        if let Some(i) = first_op {
            if let (Some(op), Some(a), Some(b)) = (case.ops.get(i), c.get(i), ours.get(i)) {
                pr_err!("  op {} {:?}: kernel {:?}\n", i, op, a);
                pr_err!("  op {} {:?}: ours   {:?}\n", i, op, b);
            }
        } else if len_differs {
            pr_err!("  {} kernel observations, {} ours\n", c.len(), ours.len());
        }
        if let Some(at) = first_byte {
            let (a, b) = (arena.snap_c.get(at), arena.snap_rust.get(at));
            pr_err!(
                "  memory differs first at arena byte {}: kernel {:?}, ours {:?}\n",
                at,
                a,
                b
            );
        }
    }
    false
}

/// Runs `total` random cases from `seed`, cycling through the kinds the arena supports.
/// With `inject`, one byte of our first case's result is corrupted, which must be reported.
pub(crate) fn run(seed: u64, total: usize, inject: bool) -> Result<Summary> {
    let mut rng = Rng::new(seed);
    let mut arena = Arena::new(&mut rng)?;
    let mut sum = Summary::default();
    let kinds = KindSel::ALL;
    let mut k = 0usize;
    while sum.cases < total {
        let kind_idx = k % kinds.len();
        k += 1;
        let Some(&kind) = kinds.get(kind_idx) else {
            continue;
        };
        if kind.needs_user() && !arena.have_user {
            if k > 4 * total + 4 {
                break;
            }
            continue;
        }
        let idx = sum.cases;
        if idx % 64 == 0 {
            kernel_glue::sched::cond_resched();
        }
        let case = Case::generate(&mut rng, &arena, kind)?;

        let mut log_c = KVec::with_capacity(case.ops.len(), GFP_KERNEL)?;
        arena.restore(idx)?;
        run_c(&mut arena, &case, &mut log_c)?;
        arena.mem.snapshot_into(&mut arena.snap_c)?;

        let mut log_rust = KVec::with_capacity(case.ops.len(), GFP_KERNEL)?;
        arena.restore(idx)?;
        run_rust(&mut arena, &case, &mut log_rust)?;
        arena.mem.snapshot_into(&mut arena.snap_rust)?;
        if inject && idx == 0 {
            if let Some(b) = arena.snap_rust.first_mut() {
                *b ^= 0xff;
                pr_info!("inject_fault: corrupted byte 0 of our result in case 0\n");
            }
        }

        let report = sum.mismatches < MAX_REPORTED;
        for (op, obs) in case.ops.iter().zip(log_c.iter()) {
            match *op {
                Op::Copy(n) | Op::Zero(n) | Op::CopyPage { bytes: n, .. } if obs.ret != NOT_RUN => {
                    sum.bytes += obs.ret;
                    if obs.ret < n as u64 {
                        sum.short_copies += 1;
                    }
                }
                Op::Extract { .. } if obs.ret != NOT_RUN && (obs.ret as i64) > 0 => {
                    sum.extracts += 1;
                    if kind.needs_user() {
                        sum.pinned += 1;
                    }
                }
                Op::GapAlignment if obs.ret != NOT_RUN => sum.gaps += 1,
                Op::Restore if obs.ret == 1 => sum.restores += 1,
                Op::Revert(_) if obs.ret > 0 => sum.reverts += 1,
                _ => {}
            }
        }
        if !compare(idx, &case, &log_c, &log_rust, &arena, report) {
            sum.mismatches += 1;
        }
        sum.cases += 1;
        sum.ops += case.ops.len();
        if let Some(n) = sum.per_kind.get_mut(kind_idx) {
            *n += 1;
        }
    }
    // The bvec_iter cases: a quarter as many again, on the same pages.
    let bvec_cases = total / 4;
    let bad = crate::bvec_diff::run(&mut rng, &arena, bvec_cases, sum.mismatches)?;
    sum.bvec_iter = bvec_cases;
    sum.cases += bvec_cases;
    sum.mismatches += bad;
    Ok(sum)
}
