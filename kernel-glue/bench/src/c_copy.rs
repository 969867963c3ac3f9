// SPDX-License-Identifier: GPL-2.0

//! The kernel's own `iov_iter` copies, as timed loops in C, behind checks that make them safe.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! Every function drains an `ITER_SOURCE` iterator with `copy_from_iter()` into a scratch
//! [`TiledVmap`] (the kunit benchmarks' recipe) and returns the time of the C timed region and
//! the bytes copied, or `None` (nothing run) when the arguments would let the C walkers leave
//! the memory they describe: a count above the segments, a kernel segment outside the source
//! vmap, a page segment not on the source page, a copy longer than the scratch buffer.

use core::mem::size_of;

use bvec::{Bvec, PAGE_SIZE};
use iov::{Iovec, Kvec};
use kernel::bindings;

use kernel_glue::{bio_vec_ptr, KPage};

use crate::{helpers, CFolioQueue, TiledVmap, UserMapping};

/// Result of one timed C run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timed {
    /// Nanoseconds of the timed region (`ktime_get_ns` before and after, in C).
    pub ns: u64,
    /// Bytes copied (or, for [`bvec_op`], a checksum of the results).
    pub copied: usize,
}

// The iov crate's segment types are handed to C as `struct iovec` / `struct kvec`.
const _: () = {
    assert!(size_of::<Iovec>() == size_of::<bindings::iovec>());
    assert!(size_of::<Kvec>() == size_of::<bindings::kvec>());
};

/// `ubuf`: `n` x { `iov_iter_ubuf(user, len)`; `copy_from_iter(scratch, len)` }, all timed.
/// `None` if `len` exceeds the user buffer or the scratch buffer.
pub fn ubuf(user: &UserMapping, len: usize, n: usize, scratch: &mut TiledVmap<'_>) -> Option<Timed> {
    if len > user.len() || len > scratch.len() {
        return None;
    }
    let mut copied = 0usize;
    // SAFETY: writes at most `len <= scratch.len()` bytes to the scratch buffer, borrowed
    // mutably; reads user memory only through the user-copy functions.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_ubuf(
            user.addr() as *mut _,
            len,
            n as _,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// Sum of the segment lengths, if `count` does not exceed it and the scratch buffer holds it.
fn fits(lens: impl Iterator<Item = usize>, count: usize, scratch: &TiledVmap<'_>) -> bool {
    let total: u64 = lens.map(|l| l as u64).sum();
    count as u64 <= total && count <= scratch.len()
}

/// `iovec`: `iov_iter_init(table, count)` untimed, one timed `copy_from_iter(scratch, count)`.
/// `None` if `count` exceeds the table or the scratch buffer.
pub fn iovec(table: &[Iovec], count: usize, scratch: &mut TiledVmap<'_>) -> Option<Timed> {
    if !fits(table.iter().map(|v| v.len), count, scratch) {
        return None;
    }
    let mut copied = 0usize;
    // SAFETY: the table has the layout of `struct iovec` (checked above) and covers `count`;
    // user memory is read only through the user-copy functions; the scratch buffer (borrowed
    // mutably) holds `count` bytes.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_iovec(
            table.as_ptr().cast(),
            table.len() as _,
            count,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// `kvec`: `iov_iter_kvec(table, count)` untimed, one timed `copy_from_iter(scratch, count)`.
/// `None` if a non-empty segment lies outside `src`, or `count` exceeds the table or the scratch.
pub fn kvec(
    table: &[Kvec],
    count: usize,
    src: &TiledVmap<'_>,
    scratch: &mut TiledVmap<'_>,
) -> Option<Timed> {
    let inside = |k: &Kvec| {
        let off = k.base.wrapping_sub(src.addr());
        k.len == 0 || (off <= src.len() && k.len <= src.len() - off)
    };
    if !table.iter().all(inside) || !fits(table.iter().map(|k| k.len), count, scratch) {
        return None;
    }
    let mut copied = 0usize;
    // SAFETY: the table has the layout of `struct kvec` (checked above), its non-empty
    // segments lie in `src` (only read) and cover `count`; the scratch (borrowed mutably, a
    // different mapping) holds `count` bytes.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_kvec(
            table.as_ptr().cast(),
            table.len() as _,
            count,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// Whether every segment lies within the tiled page of `src`.
fn on_page(table: &[Bvec<KPage>], src: &TiledVmap<'_>) -> bool {
    table
        .iter()
        .all(|b| b.page() == src.page() && b.offset() as usize + b.len() as usize <= PAGE_SIZE)
}

/// `bvec`: `iov_iter_bvec(table, count)` untimed, one timed `copy_from_iter(scratch, count)`.
/// `None` if a segment is not within `src`'s page, or `count` exceeds the table or the scratch.
pub fn bvec(
    table: &[Bvec<KPage>],
    count: usize,
    src: &TiledVmap<'_>,
    scratch: &mut TiledVmap<'_>,
) -> Option<Timed> {
    if !on_page(table, src) || !fits(table.iter().map(|b| b.len() as usize), count, scratch) {
        return None;
    }
    let mut copied = 0usize;
    // SAFETY: the table has the layout of `struct bio_vec` (kernel-glue), every segment lies in
    // `src`'s page (only read) and they cover `count`; the scratch holds `count` bytes.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_bvec(
            bio_vec_ptr(table),
            table.len() as _,
            count,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// Pages per `bvec_split` chunk (the kunit benchmark's 64: 256 KiB).
pub const SPLIT_PAGES: usize = 64;

/// `bvec_split`: `chunks` x { fill a 64-entry table with `{page, 4096, 0}`; `iov_iter_bvec`;
/// `copy_from_iter(scratch, 256 KiB)` }, all timed. `None` if the scratch is shorter than a
/// chunk.
pub fn bvec_split(
    src: &TiledVmap<'_>,
    chunks: usize,
    scratch: &mut TiledVmap<'_>,
) -> Option<Timed> {
    if SPLIT_PAGES * PAGE_SIZE > scratch.len() {
        return None;
    }
    let mut table = [bindings::bio_vec::default(); SPLIT_PAGES];
    let mut copied = 0usize;
    // SAFETY: the helper fills the `SPLIT_PAGES` entries of `table` with whole-page segments of
    // `src`'s page (only read) and copies 256 KiB per chunk into the scratch, which holds it.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_bvec_split(
            src.page_ptr(),
            table.as_mut_ptr(),
            SPLIT_PAGES as _,
            chunks as _,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// `folioq`: `iov_iter_folio_queue(fq, 0, 0, count)` untimed, one timed
/// `copy_from_iter(scratch, count)`. `None` if `count` exceeds the queue or the scratch.
pub fn folioq(fq: &CFolioQueue<'_>, count: usize, scratch: &mut TiledVmap<'_>) -> Option<Timed> {
    if count > fq.bytes() || count > scratch.len() {
        return None;
    }
    let mut copied = 0usize;
    // SAFETY: the chain holds `count` bytes of folios of a live page (only read); the scratch
    // holds `count` bytes.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_folioq(
            fq.head(),
            count,
            scratch.as_mut_ptr().cast(),
            &mut copied,
        )
    };
    Some(Timed { ns, copied })
}

/// An iterator operation on a bvec table, for [`bvec_op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BvecOp {
    /// `iov_iter_bvec(table, count)`.
    Init,
    /// `iov_iter_bvec(table, count)` + `iov_iter_advance(skip)`.
    InitAdvance,
    /// `iov_iter_npages(INT_MAX)` on an iterator built (untimed) with `count`.
    Npages,
    /// An I/O of `count` bytes at byte `skip` of a registered buffer of page-sized entries, as
    /// io_uring/rsrc.c:io_import_fixed() imports it: the user range checked against the
    /// registration, `iov_iter_bvec(table, skip + count)`, then whole entries skipped by the
    /// folio shift (needs `skip + count` within the table, and a table of at most `u32::MAX`
    /// bytes: `io_mapped_ubuf::len` is an `unsigned int`).
    FixedImport,
}

/// `reps` x `op` on `table`, all timed; [`Timed::copied`] is a checksum of the results. `None`
/// if `count` exceeds the table or `skip` exceeds `count` ([`BvecOp::FixedImport`]: if
/// `skip + count` exceeds the table, the table `u32::MAX` bytes or an entry is not a whole
/// page). The pages are never touched.
pub fn bvec_op(
    op: BvecOp,
    table: &[Bvec<KPage>],
    count: usize,
    skip: usize,
    reps: usize,
) -> Option<Timed> {
    let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
    let ok = match op {
        BvecOp::FixedImport => {
            // io_import_fixed's arithmetic assumes page-sized entries.
            table
                .iter()
                .all(|b| b.offset() == 0 && b.len() as usize == PAGE_SIZE)
                && total <= u64::from(u32::MAX)
                && (count as u64)
                    .checked_add(skip as u64)
                    .is_some_and(|e| e <= total)
        }
        _ => count as u64 <= total && skip <= count,
    };
    if !ok {
        return None;
    }
    let raw = match op {
        BvecOp::Init => 0,
        BvecOp::InitAdvance => 1,
        BvecOp::Npages => 2,
        BvecOp::FixedImport => 3,
    };
    let mut sink: kernel::ffi::c_ulong = 0;
    // SAFETY: the table has the layout of `struct bio_vec` and covers `count >= skip` (for the
    // import: `skip + count`, in whole pages, so the entry skip stays inside it), so the walks of
    // `iov_iter_advance` and `iov_iter_npages` stay inside it; no page is accessed.
    let ns = unsafe {
        helpers::rnvme_glue_bench_c_bvec_op(
            raw,
            bio_vec_ptr(table),
            table.len() as _,
            count,
            skip,
            reps as _,
            &mut sink,
        )
    };
    Some(Timed {
        ns,
        copied: sink as usize,
    })
}
