// SPDX-License-Identifier: GPL-2.0

//! The kernel's own `struct iov_iter`, behind a safe API, as the reference for differential tests.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! The C walkers trust their input: `count` larger than the segments, a segment outside valid
//! memory or a revert past the start make them read or write out of bounds (or `BUG()`). Every
//! constructor here therefore checks the segment table against a [`CheckedMemory`] it borrows
//! mutably for the iterator's lifetime, and every method refuses (returns `None`/`false`) the
//! inputs on which the C code would misbehave or `WARN` (wrong-direction copies, reverts past the
//! start). Within those limits every call is the kernel's exported function, unchanged.

use core::mem::{offset_of, size_of};

use bvec::Bvec;
use kernel::{bindings, ffi};

use kernel_glue::{bio_vec_ptr, KPage};

use crate::{helpers, CheckedMemory};

mod folioq;
mod pages;

pub use folioq::MAX_FOLIOS;

/// `MAX_RW_COUNT` (`INT_MAX & PAGE_MASK`): `iov_iter_revert` WARNs above it.
const MAX_RW_COUNT: usize = (i32::MAX as usize) & !(bindings::PAGE_SIZE - 1);

/// Direction of a C iterator (`ITER_SOURCE` / `ITER_DEST`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CDirection {
    /// The iterator holds the data (`ITER_SOURCE`, `WRITE`): `copy_from_iter` reads it.
    Source,
    /// The iterator receives data (`ITER_DEST`, `READ`): `copy_to_iter` writes it.
    Dest,
}

impl CDirection {
    fn raw(self) -> ffi::c_uint {
        match self {
            Self::Source => bindings::ITER_SOURCE,
            Self::Dest => bindings::ITER_DEST,
        }
    }
}

/// Why a C iterator could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CIterError {
    /// `count` exceeds the total length of the segments (the C walkers would run off the table).
    CountTooLarge {
        /// Requested count.
        count: usize,
        /// Sum of the segment lengths.
        total: u64,
    },
    /// Segment `idx` does not lie in the memory the iterator borrows.
    OutsideMemory {
        /// Index of the segment.
        idx: usize,
    },
    /// A folio table longer than one `struct folio_queue` segment ([`MAX_FOLIOS`]).
    TooManyFolios {
        /// Folios in the table.
        nr: usize,
    },
    /// A folio-queue start offset beyond the first folio (or above `u32::MAX`).
    BadOffset {
        /// Requested offset.
        offset: usize,
    },
    /// The `struct folio_queue` could not be allocated.
    NoMemory,
}

impl core::fmt::Display for CIterError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Self::CountTooLarge { count, total } => {
                write!(f, "count {count} exceeds the {total} bytes of the segments")
            }
            Self::OutsideMemory { idx } => write!(f, "segment {idx} lies outside the memory"),
            Self::TooManyFolios { nr } => {
                write!(f, "{nr} folios do not fit one folio_queue ({MAX_FOLIOS})")
            }
            Self::BadOffset { offset } => {
                write!(f, "start offset {offset} lies beyond the first folio")
            }
            Self::NoMemory => write!(f, "cannot allocate the folio_queue"),
        }
    }
}

/// `iov_offset`, `count` and `nr_segs` of an iterator (`struct iov_iter_state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CIterState {
    /// Offset into the current segment (`iov_offset`).
    pub iov_offset: usize,
    /// Bytes left (`count`).
    pub count: usize,
    /// Segments left, current included (`nr_segs`).
    pub nr_segs: usize,
}

// `struct kvec` and `struct iovec` are `{ void *base; size_t len; }`; the iov crate's segment
// types must match so their tables can be handed to C.
const _: () = {
    assert!(size_of::<iov::Kvec>() == size_of::<bindings::kvec>());
    assert!(offset_of!(iov::Kvec, base) == offset_of!(bindings::kvec, iov_base));
    assert!(offset_of!(iov::Kvec, len) == offset_of!(bindings::kvec, iov_len));
    assert!(size_of::<iov::Iovec>() == size_of::<bindings::iovec>());
    assert!(offset_of!(iov::Iovec, base) == offset_of!(bindings::iovec, iov_base));
    assert!(offset_of!(iov::Iovec, len) == offset_of!(bindings::iovec, iov_len));
};

/// A kernel `struct iov_iter` over checked segments.
///
/// # Invariants
///
/// - `iter` was initialised by `iov_iter_bvec`, `iov_iter_kvec`, `iov_iter_init`,
///   `iov_iter_ubuf` or `iov_iter_folio_queue` over the segment table `segs` (borrowed for `'a`;
///   for a folio queue, the queue `queue` built from it and owned by this value), whose segments
///   lie in `mem` (borrowed exclusively for `'a`; pages and kernel buffers) or in user space, and
///   with a `count` no larger than the segments' total.
/// - `iter` is only changed by the kernel's iterator functions, with arguments that keep the
///   above true (`revert` never goes before the start), or set back to `saved`.
/// - `saved`, if any, is a copy of `iter` taken earlier, so it satisfies the above too.
/// - `start_count` is the count at construction, so `start_count - count` bytes can be reverted.
pub struct CIovIter<'a> {
    iter: bindings::iov_iter,
    dir: CDirection,
    segs: Segs<'a>,
    start_count: usize,
    mem: &'a mut CheckedMemory,
    queue: Option<folioq::FolioQueue>,
    saved: Option<bindings::iov_iter>,
}

/// The segment table an iterator was built over.
#[derive(Clone, Copy)]
enum Segs<'a> {
    Bvec(&'a [Bvec<KPage>]),
    Kvec(&'a [iov::Kvec]),
    Iovec,
    Ubuf,
    Folioq(&'a [iov::Folio<KPage>]),
}

impl core::fmt::Debug for CIovIter<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CIovIter")
            .field("dir", &self.dir)
            .field("state", &self.state())
            .finish()
    }
}

fn check_count(count: usize, total: u64) -> Result<(), CIterError> {
    if count as u64 > total {
        return Err(CIterError::CountTooLarge { count, total });
    }
    Ok(())
}

impl<'a> CIovIter<'a> {
    /// `iov_iter_bvec(dir, table, table.len(), count)`.
    ///
    /// # Errors
    ///
    /// [`CIterError`] if `count` exceeds the table or a segment's pages are not all in the
    /// memory's page pool.
    pub fn bvec(
        dir: CDirection,
        table: &'a [Bvec<KPage>],
        mem: &'a mut CheckedMemory,
        count: usize,
    ) -> Result<Self, CIterError> {
        let mut total = 0u64;
        for (idx, bv) in table.iter().enumerate() {
            if !mem
                .pool()
                .contains_range(bv.page(), bv.offset().into(), bv.len().into())
            {
                return Err(CIterError::OutsideMemory { idx });
            }
            total += u64::from(bv.len());
        }
        check_count(count, total)?;
        let mut iter = bindings::iov_iter::default();
        // SAFETY: `iter` is a valid iov_iter to initialise; the table is valid for
        // `table.len()` elements for `'a` and has the layout of `struct bio_vec` (checked in
        // kpage.rs); its pages are in memory borrowed mutably for `'a`; `count` fits.
        unsafe {
            bindings::iov_iter_bvec(&mut iter, dir.raw(), bio_vec_ptr(table), table.len(), count)
        };
        // INVARIANT: initialised by `iov_iter_bvec` over checked segments and count.
        Ok(Self::new(iter, dir, Segs::Bvec(table), count, mem))
    }

    /// `iov_iter_kvec(dir, table, table.len(), count)`.
    ///
    /// # Errors
    ///
    /// [`CIterError`] if `count` exceeds the table or a non-empty segment is not inside one of
    /// the memory's kernel regions.
    pub fn kvec(
        dir: CDirection,
        table: &'a [iov::Kvec],
        mem: &'a mut CheckedMemory,
        count: usize,
    ) -> Result<Self, CIterError> {
        let mut total = 0u64;
        for (idx, kv) in table.iter().enumerate() {
            if !mem.contains_kernel_range(kv.base, kv.len) {
                return Err(CIterError::OutsideMemory { idx });
            }
            total += kv.len as u64;
        }
        check_count(count, total)?;
        let mut iter = bindings::iov_iter::default();
        // SAFETY: as for `bvec`: the table matches `struct kvec` (checked above), is borrowed for
        // `'a`, and every non-empty segment lies in memory borrowed mutably for `'a` (empty ones
        // are never dereferenced by the C walkers).
        unsafe {
            bindings::iov_iter_kvec(
                &mut iter,
                dir.raw(),
                table.as_ptr().cast::<bindings::kvec>(),
                table.len(),
                count,
            )
        };
        // INVARIANT: initialised by `iov_iter_kvec` over checked segments and count.
        Ok(Self::new(iter, dir, Segs::Kvec(table), count, mem))
    }

    /// `iov_iter_init(dir, table, table.len(), count)`: an `ITER_IOVEC` over user addresses.
    ///
    /// User addresses need no check: every access goes through `copy_*_user`.
    ///
    /// # Errors
    ///
    /// [`CIterError::CountTooLarge`] if `count` exceeds the table.
    pub fn iovec(
        dir: CDirection,
        table: &'a [iov::Iovec],
        mem: &'a mut CheckedMemory,
        count: usize,
    ) -> Result<Self, CIterError> {
        let total = table.iter().map(|v| v.len as u64).sum();
        check_count(count, total)?;
        let mut iter = bindings::iov_iter::default();
        // SAFETY: the table matches `struct iovec` (checked above) and is borrowed for `'a`;
        // the segments are user addresses, accessed only through `copy_*_user`.
        unsafe {
            bindings::iov_iter_init(
                &mut iter,
                dir.raw(),
                table.as_ptr().cast::<bindings::iovec>(),
                table.len(),
                count,
            )
        };
        // INVARIANT: initialised by `iov_iter_init` over a table of sufficient total length.
        Ok(Self::new(iter, dir, Segs::Iovec, count, mem))
    }

    /// `iov_iter_ubuf(dir, addr, count)`: one user buffer.
    ///
    /// `mem` is borrowed only for [`Self::copy_page_to_iter`] and friends.
    pub fn ubuf(dir: CDirection, addr: usize, mem: &'a mut CheckedMemory, count: usize) -> Self {
        let mut iter = bindings::iov_iter::default();
        // SAFETY: `iter` is valid to initialise; the buffer is a user address, accessed only
        // through `copy_*_user`.
        unsafe { helpers::rnvme_glue_iov_iter_ubuf(&mut iter, dir.raw(), addr as *mut _, count) };
        // INVARIANT: initialised by `iov_iter_ubuf`; a user buffer has no table to run off.
        Self::new(iter, dir, Segs::Ubuf, count, mem)
    }

    fn new(
        iter: bindings::iov_iter,
        dir: CDirection,
        segs: Segs<'a>,
        count: usize,
        mem: &'a mut CheckedMemory,
    ) -> Self {
        Self {
            iter,
            dir,
            segs,
            start_count: count,
            mem,
            queue: None,
            saved: None,
        }
    }

    /// Direction given at construction.
    pub fn direction(&self) -> CDirection {
        self.dir
    }

    /// `iov_offset`, `count` and `nr_segs` (`iov_iter_save_state`).
    pub fn state(&self) -> CIterState {
        let mut st = bindings::iov_iter_state::default();
        // SAFETY: `iter` is initialised (type invariant); the helper only reads it.
        unsafe { helpers::rnvme_glue_iov_iter_save_state(&self.iter, &mut st) };
        CIterState {
            iov_offset: st.iov_offset,
            count: st.count,
            nr_segs: st.nr_segs,
        }
    }

    /// Bytes left (`iov_iter_count`).
    pub fn count(&self) -> usize {
        self.state().count
    }

    /// Bytes consumed since construction: the most [`Self::revert`] accepts.
    pub fn consumed(&self) -> usize {
        self.start_count.saturating_sub(self.count())
    }

    /// `_copy_to_iter(src, src.len(), iter)`; `None` on a source iterator (the kernel WARNs).
    pub fn copy_to_iter(&mut self, src: &[u8]) -> Option<usize> {
        if self.dir != CDirection::Dest {
            return None;
        }
        // SAFETY: `src` is valid for reads of its length; the iterator only writes to checked
        // memory borrowed mutably for `'a` or to user space (type invariant).
        Some(unsafe { bindings::_copy_to_iter(src.as_ptr().cast(), src.len(), &mut self.iter) })
    }

    /// `_copy_from_iter(dst, dst.len(), iter)`; `None` on a destination iterator.
    pub fn copy_from_iter(&mut self, dst: &mut [u8]) -> Option<usize> {
        if self.dir != CDirection::Source {
            return None;
        }
        // SAFETY: `dst` is valid for writes of its length and cannot alias the iterator's
        // memory, which is borrowed mutably by `self`; the iterator only reads checked memory.
        Some(unsafe {
            bindings::_copy_from_iter(dst.as_mut_ptr().cast(), dst.len(), &mut self.iter)
        })
    }

    /// `iov_iter_zero(bytes, iter)` (no direction check, as in the kernel).
    pub fn zero(&mut self, bytes: usize) -> usize {
        // SAFETY: writes only to the iterator's checked memory or user space (type invariant).
        unsafe { bindings::iov_iter_zero(bytes, &mut self.iter) }
    }

    /// `iov_iter_advance(iter, bytes)`.
    pub fn advance(&mut self, bytes: usize) {
        // SAFETY: the walk stays inside the table because `count` never exceeds the remaining
        // segments (type invariant); no memory is accessed.
        unsafe { bindings::iov_iter_advance(&mut self.iter, bytes) };
    }

    /// `iov_iter_revert(iter, bytes)`; `false` (and nothing done) if `bytes` exceeds what was
    /// consumed since construction or `MAX_RW_COUNT` (the kernel would walk off the table, `BUG()`
    /// or `WARN`).
    pub fn revert(&mut self, bytes: usize) -> bool {
        if bytes > self.consumed() || bytes > MAX_RW_COUNT {
            return false;
        }
        // SAFETY: `bytes` does not exceed what was consumed, so the backward walk stays inside
        // the table and the invariant on `count` is kept.
        unsafe { bindings::iov_iter_revert(&mut self.iter, bytes) };
        true
    }

    /// `iov_iter_npages(iter, maxpages)`.
    pub fn npages(&self, maxpages: i32) -> i32 {
        // SAFETY: reads the table within `count` (type invariant).
        unsafe { bindings::iov_iter_npages(&self.iter, maxpages) }
    }

    /// `iov_iter_single_seg_count(iter)`.
    pub fn single_seg_count(&self) -> usize {
        // SAFETY: reads the current segment only when `nr_segs > 1`, i.e. when it exists.
        unsafe { bindings::iov_iter_single_seg_count(&self.iter) }
    }

    /// Whether the current segment pointer of a vector iterator is past the end of its table
    /// (a folio queue's alignment reads no table).
    fn exhausted_vector(&self) -> bool {
        let st = self.state();
        !matches!(self.segs, Segs::Ubuf | Segs::Folioq(_)) && st.count == 0 && st.nr_segs == 0
    }

    /// `iov_iter_alignment(iter)`; `None` for an exhausted vector iterator, where the kernel's
    /// do-while would read one segment past the table.
    pub fn alignment(&self) -> Option<usize> {
        if self.exhausted_vector() {
            return None;
        }
        // SAFETY: with `count > 0` the walk stays within `count` bytes of segments; with
        // `count == 0` it reads only the current segment, which exists (checked above).
        Some(unsafe { bindings::iov_iter_alignment(&self.iter) })
    }

    /// `iov_iter_is_aligned(iter, addr_mask, len_mask)`; `None` as for [`Self::alignment`].
    pub fn is_aligned(&self, addr_mask: u32, len_mask: u32) -> Option<bool> {
        if self.exhausted_vector() {
            return None;
        }
        // SAFETY: as for `alignment`.
        Some(unsafe { bindings::iov_iter_is_aligned(&self.iter, addr_mask, len_mask) })
    }

    /// `iov_iter_gap_alignment(iter)`; `None` except on IOVEC and UBUF iterators (the kernel
    /// WARNs on the other kinds).
    pub fn gap_alignment(&self) -> Option<usize> {
        if !matches!(self.segs, Segs::Iovec | Segs::Ubuf) {
            return None;
        }
        // SAFETY: the walk reads at most `nr_segs` entries from the current one, all inside the
        // table (type invariant); user addresses are not dereferenced.
        Some(unsafe { bindings::iov_iter_gap_alignment(&self.iter) } as usize)
    }

    /// Saves the iterator (`iov_iter_save_state`) for a later [`Self::restore`], replacing any
    /// earlier save; returns the saved state.
    ///
    /// `iov_iter_restore` is not exported to modules, so the save keeps a copy of the whole
    /// `struct iov_iter`: restoring it sets `iov_offset`, `count`, `nr_segs` and the segment
    /// pointer back exactly as `iov_iter_restore` does for the kinds it supports.
    pub fn save(&mut self) -> CIterState {
        // SAFETY: `struct iov_iter` is plain data (integers, pointers and unions of them, no
        // drop glue), so a bitwise copy is a valid value.
        self.saved = Some(unsafe { core::ptr::read(&self.iter) });
        self.state()
    }

    /// Goes back (or forth) to the last [`Self::save`]; `false` (nothing done) if there was none
    /// or on a folio queue (`iov_iter_restore` WARNs and does nothing there).
    pub fn restore(&mut self) -> bool {
        match &self.saved {
            Some(saved) if !matches!(self.segs, Segs::Folioq(_)) => {
                // SAFETY: as in `save`: a bitwise copy of plain data.
                // INVARIANT: `saved` is an earlier state of this iterator (type invariant).
                self.iter = unsafe { core::ptr::read(saved) };
                true
            }
            _ => false,
        }
    }
}
