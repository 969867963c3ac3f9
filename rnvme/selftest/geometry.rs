// SPDX-License-Identifier: GPL-2.0

//! Random iterator geometries and operation sequences for the differential test.

use core::fmt;

use bvec::{Bvec, Page, PAGE_SIZE};
use iov::{Folio, Iovec, Kvec};
use kernel::prelude::*;
use kernel_glue::KPage;

use crate::arena::{Arena, MAX_COPY};
use crate::rng::Rng;

/// Most segments in one table.
const MAX_SEGS: usize = 8;
/// Most entries in one bvec table: more than two of the eight-entry blocks `IovIter::bvec`
/// checks its count in, so that tables end in a block, after one, and between.
const MAX_BVEC_SEGS: usize = 20;
/// Most operations in one case.
const MAX_OPS: usize = 12;

/// The iterator kinds under test, in the order cases cycle through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KindSel {
    Bvec,
    Kvec,
    Ubuf,
    Iovec,
    /// `iov::IovIter::page_list` against the kernel's `ITER_FOLIOQ`.
    PageList,
}

impl KindSel {
    pub(crate) const ALL: [KindSel; 5] = [
        KindSel::Bvec,
        KindSel::Kvec,
        KindSel::Ubuf,
        KindSel::Iovec,
        KindSel::PageList,
    ];

    pub(crate) fn needs_user(self) -> bool {
        matches!(self, KindSel::Ubuf | KindSel::Iovec)
    }
}

/// A segment table (or user buffer) of one case.
pub(crate) enum Table {
    Bvec(KVec<Bvec<KPage>>),
    Kvec(KVec<Kvec>),
    Iovec(KVec<Iovec>),
    Ubuf {
        addr: usize,
    },
    /// A folio list (one `struct folio_queue` on the kernel side) entered `offset` bytes into
    /// the first folio.
    Folios {
        folios: KVec<Folio<KPage>>,
        offset: usize,
    },
}

/// One operation, applied to both iterators.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// `copy_to_iter` (DEST) or `copy_from_iter` (SOURCE) of this many bytes.
    Copy(usize),
    /// `iov_iter_zero`.
    Zero(usize),
    /// `iov_iter_advance`.
    Advance(usize),
    /// `iov_iter_revert` of `r % (consumed + 1)` bytes.
    Revert(usize),
    /// `iov_iter_npages(maxpages)`.
    Npages(i32),
    /// `iov_iter_alignment`.
    Alignment,
    /// `iov_iter_is_aligned(addr_mask, len_mask)`.
    IsAligned(u32, u32),
    /// `iov_iter_single_seg_count`.
    SingleSeg,
    /// `copy_page_to_iter` (DEST) or `copy_page_from_iter` (SOURCE) of `bytes` at `offset` of
    /// the arena's spare page.
    CopyPage { offset: usize, bytes: usize },
    /// `iov_iter_extract_pages(maxsize, maxpages)`; UBUF/IOVEC pages are pinned on both sides
    /// and unpinned after the observation.
    Extract { maxsize: usize, maxpages: usize },
    /// `iov_iter_gap_alignment` (UBUF and IOVEC only: the kernel WARNs on the other kinds).
    GapAlignment,
    /// `iov_iter_save_state`, kept for the next `Restore`.
    Save,
    /// `iov_iter_restore` to the last `Save` (not run without one, or on a page list, where the
    /// kernel WARNs).
    Restore,
}

/// A complete case: table, direction, count and operations.
pub(crate) struct Case {
    pub(crate) kind: KindSel,
    pub(crate) table: Table,
    pub(crate) source: bool,
    pub(crate) count: usize,
    /// BVEC only: `Some(offset)` imports the `count` bytes at `offset` as io_uring/rsrc.c
    /// `io_import_fixed()` does: the kernel's side builds over `offset + count` and advances by
    /// `offset`, ours checks the table once (`iov::BvecTable`) and calls
    /// `IovIter::import_fixed` (arithmetic on a strided table).
    pub(crate) import: Option<usize>,
    pub(crate) ops: KVec<Op>,
}

/// A length in `1..=max`, biased towards small values and page-sized ones.
fn seg_len(rng: &mut Rng, max: usize) -> usize {
    if max == 0 {
        return 0;
    }
    match rng.below(4) {
        0 => rng.range(1, max.min(64)),
        1 => rng.range(1, max.min(PAGE_SIZE)),
        2 => max.min(PAGE_SIZE * rng.range(1, 3)),
        _ => rng.range(1, max),
    }
}

/// Most folio table entries (fits one kernel `struct folio_queue`).
const MAX_FOLIOS: usize = {
    let m = kernel_glue_testing::c_iov::MAX_FOLIOS;
    if m < MAX_SEGS {
        m
    } else {
        MAX_SEGS
    }
};

/// A folio table over the arena's page allocations: each folio is an aligned power-of-two run of
/// pages inside one allocation (the whole allocation, or a part of it); the start offset lies
/// anywhere in the first folio, its end included.
fn gen_folios(rng: &mut Rng, arena: &Arena) -> Result<(KVec<Folio<KPage>>, usize)> {
    let all = arena.mem.pool().allocations();
    let allocs = all.get(..arena.table_allocs).unwrap_or(all);
    let n = rng.range(1, MAX_FOLIOS);
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        let Some(a) = allocs.get(rng.below(allocs.len())) else {
            break;
        };
        let order = rng.below(a.order() as usize + 1);
        let first = rng.below(a.nr_pages() >> order) << order;
        v.push(
            Folio::new(a.page().nth(first), order as u8).map_err(|_| EINVAL)?,
            GFP_KERNEL,
        )?;
    }
    let size = v.first().map_or(0, |f| f.size());
    let offset = match rng.below(4) {
        0 => 0,
        1 => size,
        _ => rng.range(0, size),
    };
    Ok((v, offset))
}

pub(crate) fn gen_bvec(rng: &mut Rng, arena: &Arena) -> Result<KVec<Bvec<KPage>>> {
    let all = arena.mem.pool().allocations();
    let allocs = all.get(..arena.table_allocs).unwrap_or(all);
    let n = rng.range(1, MAX_BVEC_SEGS);
    // Sometimes every entry page-aligned at both ends (the iterator then takes its page-aligned
    // shortcuts, e.g. an O(1) `npages`), perhaps but for one entry anywhere in the table.
    let aligned = rng.chance(30);
    let odd_one = if rng.chance(50) { rng.below(n) } else { n };
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for i in 0..n {
        let Some(a) = allocs.get(rng.below(allocs.len())) else {
            break;
        };
        let first = rng.below(a.nr_pages());
        let room = a.len() - first * PAGE_SIZE;
        let (offset, len) = if aligned && i != odd_one {
            let pages = room / PAGE_SIZE;
            let skip = rng.below(pages);
            (skip * PAGE_SIZE, rng.range(1, pages - skip) * PAGE_SIZE)
        } else if aligned {
            // The odd one: near a page end, so that it usually crosses into the next page.
            let offset = PAGE_SIZE - rng.range(1, 64);
            (offset, seg_len(rng, room - offset))
        } else {
            // In-page offset, near the page end, or anywhere (bv_offset >= PAGE_SIZE).
            let offset = match rng.below(3) {
                0 => rng.below(PAGE_SIZE),
                1 => PAGE_SIZE - rng.range(1, 64),
                _ => rng.below(room),
            };
            (offset, seg_len(rng, room - offset))
        };
        let bv = Bvec::new(a.page().nth(first), offset as u32, len as u32).map_err(|_| EINVAL)?;
        v.push(bv, GFP_KERNEL)?;
    }
    Ok(v)
}

/// A registered-buffer-shaped bvec table: a first entry from an in-page offset (to the page
/// end, or shorter when it is the only one), whole pages, a last entry of at most a page; each
/// entry on a random page of the arena (what io_uring/rsrc.c `io_sqe_buffer_register()` builds
/// for a buffer of 4 KiB pages), so positions in it are arithmetic.
pub(crate) fn gen_strided_bvec(rng: &mut Rng, arena: &Arena) -> Result<KVec<Bvec<KPage>>> {
    let all = arena.mem.pool().allocations();
    let allocs = all.get(..arena.table_allocs).unwrap_or(all);
    let n = rng.range(1, MAX_BVEC_SEGS);
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for i in 0..n {
        let Some(a) = allocs.get(rng.below(allocs.len())) else {
            break;
        };
        let page = a.page().nth(rng.below(a.nr_pages()));
        let (offset, len) = if i == 0 {
            let offset = rng.below(PAGE_SIZE);
            let len = if n == 1 {
                rng.range(1, PAGE_SIZE - offset)
            } else {
                PAGE_SIZE - offset
            };
            (offset, len)
        } else if i + 1 == n {
            (0, rng.range(1, PAGE_SIZE))
        } else {
            (0, PAGE_SIZE)
        };
        let bv = Bvec::new(page, offset as u32, len as u32).map_err(|_| EINVAL)?;
        v.push(bv, GFP_KERNEL)?;
    }
    Ok(v)
}

/// A user segment that faults: in the never-mapped first page, or at a kernel address
/// (`access_ok` fails). Copies through it must come up short identically on both sides.
fn faulting_user_seg(rng: &mut Rng) -> (usize, usize) {
    if rng.chance(50) {
        let start = rng.below(PAGE_SIZE);
        (start, rng.range(1, PAGE_SIZE - start))
    } else {
        (
            0xffff_ffff_ff00_0000 + rng.below(PAGE_SIZE),
            rng.range(1, 300),
        )
    }
}

/// Segments inside `regions` (start, length); zero lengths included. With `faults`, some
/// segments are faulting user segments.
fn gen_addr_segs(
    rng: &mut Rng,
    regions: &[(usize, usize)],
    faults: bool,
) -> Result<KVec<(usize, usize)>> {
    let n = if rng.chance(3) {
        0
    } else {
        rng.range(1, MAX_SEGS)
    };
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        if faults && rng.chance(8) {
            v.push(faulting_user_seg(rng), GFP_KERNEL)?;
            continue;
        }
        let Some(&(addr, len)) = regions.get(rng.below(regions.len())) else {
            break;
        };
        let start = rng.below(len + 1);
        let l = if rng.chance(20) {
            0
        } else {
            seg_len(rng, len - start)
        };
        v.push((addr + start, l), GFP_KERNEL)?;
    }
    Ok(v)
}

fn gen_ops(rng: &mut Rng, count: usize) -> Result<KVec<Op>> {
    let n = rng.range(1, MAX_OPS);
    let mut ops = KVec::with_capacity(n + 1, GFP_KERNEL)?;
    // Often first, uncapped: the pages of the whole count as construction left them (what the
    // constructors record about their tables shows there first).
    if rng.chance(40) {
        ops.push(Op::Npages(i32::MAX), GFP_KERNEL)?;
    }
    let bytes = |rng: &mut Rng| -> usize {
        let v = match rng.below(4) {
            0 | 1 => rng.range(0, count),
            2 => count + rng.range(0, 100),
            _ => rng.range(0, 64),
        };
        v.min(MAX_COPY)
    };
    const MASKS: [u32; 5] = [0, 1, 3, 511, 4095];
    for _ in 0..n {
        let op = match rng.below(120) {
            0..=29 => Op::Copy(bytes(rng)),
            30..=33 => Op::Zero(bytes(rng)),
            34..=45 => Op::Advance(bytes(rng)),
            46..=57 => Op::Revert(rng.below(usize::MAX)),
            58..=65 => Op::Npages(pick(rng, &[1, 2, 3, 16, i32::MAX])),
            66..=71 => Op::Alignment,
            72..=77 => Op::IsAligned(pick(rng, &MASKS), pick(rng, &MASKS)),
            78..=81 => Op::SingleSeg,
            82..=90 => {
                let offset = rng.below(PAGE_SIZE);
                Op::CopyPage {
                    offset,
                    bytes: rng.range(0, PAGE_SIZE - offset),
                }
            }
            91..=99 => Op::Extract {
                maxsize: bytes(rng),
                maxpages: rng.range(1, 6),
            },
            100..=105 => Op::GapAlignment,
            106..=112 => Op::Save,
            _ => Op::Restore,
        };
        ops.push(op, GFP_KERNEL)?;
    }
    Ok(ops)
}

/// A random element of `choices` (the default value for an empty slice).
fn pick<T: Copy + Default>(rng: &mut Rng, choices: &[T]) -> T {
    choices
        .get(rng.below(choices.len()))
        .copied()
        .unwrap_or_default()
}

/// Draws a count: usually the whole table, sometimes less.
fn gen_count(rng: &mut Rng, total: usize) -> usize {
    if rng.chance(75) {
        total
    } else {
        rng.range(0, total)
    }
}

impl Case {
    /// A random case of kind `kind` over `arena`'s memory.
    pub(crate) fn generate(rng: &mut Rng, arena: &Arena, kind: KindSel) -> Result<Self> {
        let source = rng.chance(50);
        let user = arena.mem.user().map_or((0, 0), |u| (u.addr(), u.len()));
        let mut import = None;
        let (table, total) = match kind {
            KindSel::Bvec if rng.chance(30) => {
                // An I/O imported from a registered buffer: usually a strided table (the
                // arithmetic path), sometimes any table (the walking path).
                let v = if rng.chance(75) {
                    gen_strided_bvec(rng, arena)?
                } else {
                    gen_bvec(rng, arena)?
                };
                let total: usize = v.iter().map(|b| b.len() as usize).sum();
                let offset = match rng.below(4) {
                    0 => 0,
                    1 => total,
                    _ => rng.below(total + 1),
                };
                import = Some(offset);
                (Table::Bvec(v), total - offset)
            }
            KindSel::Bvec => {
                let v = gen_bvec(rng, arena)?;
                let total = v.iter().map(|b| b.len() as usize).sum();
                (Table::Bvec(v), total)
            }
            KindSel::Kvec => {
                let mut regions = KVec::with_capacity(arena.kregions.len(), GFP_KERNEL)?;
                for r in arena.kregions.iter() {
                    regions.push((r.addr, r.len), GFP_KERNEL)?;
                }
                let segs = gen_addr_segs(rng, &regions, false)?;
                let mut v = KVec::with_capacity(segs.len(), GFP_KERNEL)?;
                for &(base, len) in segs.iter() {
                    v.push(Kvec::new(base, len), GFP_KERNEL)?;
                }
                let total = v.iter().map(|k| k.len).sum();
                (Table::Kvec(v), total)
            }
            KindSel::Iovec => {
                let segs = gen_addr_segs(rng, &[user], true)?;
                let mut v = KVec::with_capacity(segs.len(), GFP_KERNEL)?;
                for &(base, len) in segs.iter() {
                    v.push(Iovec::new(base, len), GFP_KERNEL)?;
                }
                let total = v.iter().map(|k| k.len).sum();
                (Table::Iovec(v), total)
            }
            KindSel::PageList => {
                let (folios, offset) = gen_folios(rng, arena)?;
                let total: usize = folios.iter().map(|f| f.size()).sum();
                (Table::Folios { folios, offset }, total - offset)
            }
            KindSel::Ubuf if rng.chance(5) => {
                let (addr, len) = faulting_user_seg(rng);
                (Table::Ubuf { addr }, len)
            }
            KindSel::Ubuf => {
                let off = rng.below(user.1 + 1);
                let len = seg_len(rng, user.1 - off);
                (Table::Ubuf { addr: user.0 + off }, len)
            }
        };
        let count = gen_count(rng, total);
        Ok(Self {
            kind,
            table,
            source,
            count,
            import,
            ops: gen_ops(rng, count)?,
        })
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = if self.source { "SOURCE" } else { "DEST" };
        write!(f, "{:?} {} count={}", self.kind, dir, self.count)?;
        if let Some(offset) = self.import {
            write!(f, " import_fixed offset={offset}")?;
        }
        match &self.table {
            Table::Bvec(v) => {
                for (i, b) in v.iter().enumerate() {
                    write!(
                        f,
                        " [{i}: page={:#x} off={} len={}]",
                        b.page().phys(),
                        b.offset(),
                        b.len()
                    )?;
                }
            }
            Table::Kvec(v) => {
                for (i, k) in v.iter().enumerate() {
                    write!(f, " [{i}: base={:#x} len={}]", k.base, k.len)?;
                }
            }
            Table::Iovec(v) => {
                for (i, k) in v.iter().enumerate() {
                    write!(f, " [{i}: base={:#x} len={}]", k.base, k.len)?;
                }
            }
            Table::Ubuf { addr } => write!(f, " ubuf={addr:#x}")?,
            Table::Folios { folios, offset } => {
                write!(f, " offset={offset}")?;
                for (i, x) in folios.iter().enumerate() {
                    write!(
                        f,
                        " [{i}: folio={:#x} order={}]",
                        x.head().phys(),
                        x.order()
                    )?;
                }
            }
        }
        write!(f, " ops=")?;
        for op in self.ops.iter() {
            write!(f, "{op:?};")?;
        }
        Ok(())
    }
}
