// SPDX-License-Identifier: GPL-2.0

//! The kernel's `struct bvec_iter` walked by its own inline functions (`bio_advance_iter`,
//! `mp_bvec_iter_bvec`, `bvec_iter_bvec`), behind a safe API, for differential tests of
//! `bvec::BvecIter`.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)

use bvec::Bvec;
use kernel::bindings;

use kernel_glue::{bio_vec_ptr, KPage};

use crate::helpers;

/// One segment as the kernel computed it: page, offset and length (a `struct bio_vec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CBvecView {
    /// `bv_page`.
    pub page: KPage,
    /// `bv_offset`.
    pub offset: u32,
    /// `bv_len`.
    pub len: u32,
}

impl From<bindings::bio_vec> for CBvecView {
    fn from(bv: bindings::bio_vec) -> Self {
        Self {
            page: KPage::from_ptr(bv.bv_page),
            offset: bv.bv_offset,
            len: bv.bv_len,
        }
    }
}

/// A kernel `struct bvec_iter` over a table of segments.
///
/// The kernel's helpers trust the iterator: advancing past `bi_size` `WARN`s, and
/// `bvec_iter_advance_single` past the current segment or any view of an exhausted iterator
/// reads past the table. The methods refuse exactly those inputs.
///
/// # Invariants
///
/// `bi_idx <= table.len()`, `bi_bvec_done` is less than the length of segment `bi_idx` (or 0 at
/// the end of the table), and `bi_size` does not exceed the bytes of the table from that
/// position.
pub struct CBvecIter<'a> {
    table: &'a [Bvec<KPage>],
    iter: bindings::bvec_iter,
}

impl core::fmt::Debug for CBvecIter<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CBvecIter")
            .field("segments", &self.table.len())
            .field("state", &self.state())
            .finish()
    }
}

impl<'a> CBvecIter<'a> {
    /// An iterator at the start of `table` over `size` bytes starting at `sector`; `None` if
    /// `size` exceeds the table.
    pub fn new(table: &'a [Bvec<KPage>], sector: u64, size: u32) -> Option<Self> {
        let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
        if u64::from(size) > total {
            return None;
        }
        let iter = bindings::bvec_iter {
            bi_sector: sector,
            bi_size: size,
            bi_idx: 0,
            bi_bvec_done: 0,
        };
        // INVARIANT: the start of the table, with `size` checked against it.
        Some(Self { table, iter })
    }

    /// `(bi_sector, bi_size, bi_idx, bi_bvec_done)`.
    pub fn state(&self) -> (u64, u32, u32, u32) {
        let it = self.iter;
        (it.bi_sector, it.bi_size, it.bi_idx, it.bi_bvec_done)
    }

    /// `bio_advance_iter(bio, iter, bytes)` for a read bio over the table; `false` (nothing
    /// done) if `bytes > bi_size` (the kernel would WARN).
    pub fn advance(&mut self, bytes: u32) -> bool {
        if bytes > self.iter.bi_size {
            return false;
        }
        // SAFETY: the table has the layout of `struct bio_vec` and is borrowed; with
        // `bytes <= bi_size` the walk stays inside it (type invariant), which it keeps.
        unsafe {
            helpers::rnvme_glue_bio_advance_iter(
                bio_vec_ptr(self.table),
                &mut self.iter,
                bytes,
                false,
            )
        };
        true
    }

    /// `bio_advance_iter_single(bio, iter, bytes)`; `false` (nothing done) if `bytes` exceeds
    /// `bi_size` or what is left of the current segment (the kernel does not check).
    /// `bytes == 0` does nothing and returns `true`.
    pub fn advance_single(&mut self, bytes: u32) -> bool {
        if bytes == 0 {
            return true;
        }
        let it = self.iter;
        let Some(seg) = self.table.get(it.bi_idx as usize) else {
            return false;
        };
        if bytes > it.bi_size || bytes > seg.len().saturating_sub(it.bi_bvec_done) {
            return false;
        }
        // SAFETY: as in `advance`; `bytes` stays inside the current segment, which exists.
        unsafe {
            helpers::rnvme_glue_bio_advance_iter(
                bio_vec_ptr(self.table),
                &mut self.iter,
                bytes,
                true,
            )
        };
        true
    }

    /// `(mp_bvec_iter_bvec, bvec_iter_bvec)`: the rest of the current segment and its part in
    /// the current page; `None` when `bi_size == 0` (the kernel would read past the table).
    pub fn views(&self) -> Option<(CBvecView, CBvecView)> {
        if self.iter.bi_size == 0 || self.iter.bi_idx as usize >= self.table.len() {
            return None;
        }
        let mut mp = bindings::bio_vec::default();
        let mut sp = bindings::bio_vec::default();
        // SAFETY: `bi_idx` indexes an entry of the borrowed table (checked above); the helper
        // only reads it and computes `page + n` without dereferencing.
        unsafe {
            helpers::rnvme_glue_bvec_iter_views(
                bio_vec_ptr(self.table),
                &self.iter,
                &mut mp,
                &mut sp,
            )
        };
        Some((mp.into(), sp.into()))
    }
}
