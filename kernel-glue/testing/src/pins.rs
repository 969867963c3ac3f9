// SPDX-License-Identifier: GPL-2.0

//! Pins on user pages (`FOLL_PIN`), released together when their owner is dropped.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)
//!
//! Both sides of the extraction differential pin: the kernel's `iov_iter_extract_pages` on a
//! user-backed iterator (`iov_iter_extract_user_pages` calls `pin_user_pages_fast`), and our
//! `iov::IovIter::extract_pages` through [`crate::CheckedMemory`]'s GUP, which calls
//! `pin_user_pages_fast` here. Every pin taken is recorded in a [`UserPins`] and released with
//! `unpin_user_pages` when it is dropped (or [`UserPins::release`]d), so no path leaks one.

use kernel::{
    alloc::{flags::GFP_KERNEL, KVec},
    bindings, ffi,
};

use kernel_glue::KPage;

/// Pages pinned with `FOLL_PIN`, unpinned with `unpin_user_pages` on drop.
///
/// # Invariants
///
/// Each entry of `pages` is a page on which one pin was taken on behalf of this value and not
/// yet released (a page pinned twice appears twice).
#[derive(Debug, Default)]
pub struct UserPins {
    pages: KVec<KPage>,
}

impl UserPins {
    /// No pins.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of pins held.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether no pin is held.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The pinned pages, in the order they were pinned.
    pub fn pages(&self) -> &[KPage] {
        &self.pages
    }

    /// `pin_user_pages_fast(addr, slots.len(), flags, slots)`: pins up to `slots.len()` pages
    /// from the page-aligned user address `addr` (`FOLL_WRITE` with `write`, `FOLL_NOFAULT` with
    /// `nofault`), stores them in `slots` and keeps the pins. Returns how many were pinned (0 on
    /// any error: a fault, a kernel address, or no room to record the pins).
    pub fn pin_fast(
        &mut self,
        addr: usize,
        write: bool,
        nofault: bool,
        slots: &mut [KPage],
    ) -> usize {
        let Ok(n) = ffi::c_int::try_from(slots.len()) else {
            return 0;
        };
        if n == 0 || self.pages.reserve(slots.len(), GFP_KERNEL).is_err() {
            return 0;
        }
        let mut flags = 0;
        if write {
            flags |= bindings::FOLL_WRITE;
        }
        if nofault {
            flags |= bindings::FOLL_NOFAULT;
        }
        // SAFETY: `slots` has room for `n` `struct page *` (`KPage` is a transparent
        // `struct page *`); `pin_user_pages_fast` checks `access_ok` and handles any user
        // address, returning the number of pages pinned or a negative errno.
        let got = unsafe {
            bindings::pin_user_pages_fast(
                addr as ffi::c_ulong,
                n,
                flags as ffi::c_uint,
                slots.as_mut_ptr().cast::<*mut bindings::page>(),
            )
        };
        let got = usize::try_from(got).unwrap_or(0).min(slots.len());
        // SAFETY: `pin_user_pages_fast` pinned the first `got` pages it stored in `slots`.
        unsafe { self.adopt(slots.get(..got).unwrap_or(&[])) };
        got
    }

    /// Takes over one pin on each page of `pages`, to be released by this value.
    ///
    /// If no room can be found to record them, the pins are released at once (never leaked).
    ///
    /// # Safety
    ///
    /// The caller must own one `FOLL_PIN` pin on each entry of `pages` (as returned by
    /// `pin_user_pages_fast` or `iov_iter_extract_pages` on a user-backed iterator) and hand it
    /// over: it must not release it itself.
    pub unsafe fn adopt(&mut self, pages: &[KPage]) {
        if self.pages.reserve(pages.len(), GFP_KERNEL).is_ok() {
            for &p in pages {
                // INVARIANT: the caller hands over one pin on `p`. Capacity was reserved, so the
                // push cannot fail; if it did, the pin is dropped at once below.
                if self.pages.push(p, GFP_KERNEL).is_err() {
                    // SAFETY: the caller handed over this pin (function contract).
                    unsafe { bindings::unpin_user_page(p.as_ptr()) };
                }
            }
            return;
        }
        for &p in pages {
            // SAFETY: as above: one pin on `p` is ours to release.
            unsafe { bindings::unpin_user_page(p.as_ptr()) };
        }
    }

    /// Releases every pin held (`unpin_user_pages`).
    pub fn release(&mut self) {
        if self.pages.is_empty() {
            return;
        }
        let n = self.pages.len() as ffi::c_ulong;
        // SAFETY: each entry carries one pin owned by this value (type invariant); the array is
        // valid for `n` entries and `unpin_user_pages` releases exactly one pin per entry.
        unsafe {
            bindings::unpin_user_pages(self.pages.as_mut_ptr().cast::<*mut bindings::page>(), n)
        };
        // SAFETY: 0 is not above the length; `KPage` is `Copy`, so nothing needs dropping.
        // INVARIANT: every pin was released just above.
        unsafe { self.pages.set_len(0) };
    }
}

impl Drop for UserPins {
    fn drop(&mut self) {
        self.release();
    }
}
