// SPDX-License-Identifier: GPL-2.0

//! Page-level operations of [`CIovIter`]: `copy_page_{to,from}_iter` and
//! `iov_iter_extract_pages`.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)

use bvec::{Page, PAGE_SIZE};
use kernel::bindings;

use kernel_glue::KPage;

use super::{CDirection, CIovIter, Segs};
use crate::UserPins;

impl CIovIter<'_> {
    /// Whether bytes `offset .. offset + len` of pool page `page` overlap the iterator's memory.
    fn overlaps(&self, page: KPage, offset: usize, len: usize) -> bool {
        match self.segs {
            Segs::Iovec | Segs::Ubuf => false,
            Segs::Bvec(t) => {
                let start = page.phys() + offset as u64;
                let end = start + len as u64;
                t.iter().any(|bv| {
                    let s = bv.phys();
                    s < end && start < s + u64::from(bv.len())
                })
            }
            Segs::Folioq(t) => {
                let start = page.phys() + offset as u64;
                let end = start + len as u64;
                t.iter().any(|f| {
                    let s = f.head().phys();
                    s < end && start < s + f.size() as u64
                })
            }
            Segs::Kvec(t) => {
                let Some(v) = self.mem.page_virt(page, offset) else {
                    return true;
                };
                t.iter()
                    .any(|k| k.len > 0 && k.base < v + len && v < k.base.saturating_add(k.len))
            }
        }
    }

    /// Whether the page range may be handed to `copy_page_{to,from}_iter`: inside one page of
    /// the pool (`page_copy_sane` would WARN otherwise) and disjoint from the iterator's memory
    /// (the kernel's `memcpy` must not see overlapping buffers).
    fn page_range_ok(&self, page: KPage, offset: usize, bytes: usize) -> bool {
        offset
            .checked_add(bytes)
            .is_some_and(|end| end <= PAGE_SIZE)
            && self
                .mem
                .pool()
                .contains_range(page, offset as u64, bytes as u64)
            && !self.overlaps(page, offset, bytes)
    }

    /// `copy_page_to_iter(page, offset, bytes, iter)`; `None` on a source iterator or for a page
    /// range refused by the checks above.
    pub fn copy_page_to_iter(&mut self, page: KPage, offset: usize, bytes: usize) -> Option<usize> {
        if self.dir != CDirection::Dest || !self.page_range_ok(page, offset, bytes) {
            return None;
        }
        // SAFETY: the range lies in one page of the pool (mapped, owned by `mem`, borrowed by
        // `self`) and does not overlap the iterator's memory; the iterator writes only to
        // checked memory or user space (type invariant).
        Some(unsafe { bindings::copy_page_to_iter(page.as_ptr(), offset, bytes, &mut self.iter) })
    }

    /// `copy_page_from_iter(page, offset, bytes, iter)`; `None` on a destination iterator or for
    /// a refused page range.
    pub fn copy_page_from_iter(
        &mut self,
        page: KPage,
        offset: usize,
        bytes: usize,
    ) -> Option<usize> {
        if self.dir != CDirection::Source || !self.page_range_ok(page, offset, bytes) {
            return None;
        }
        // SAFETY: as in `copy_page_to_iter`, with the page as the destination.
        Some(unsafe { bindings::copy_page_from_iter(page.as_ptr(), offset, bytes, &mut self.iter) })
    }

    /// `iov_iter_extract_pages(iter, &pages, maxsize, pages.len(), 0, &offset0)`: `Ok((size,
    /// offset0))` or `Err(errno)`; `None` (not run) for an empty `pages` (the kernel WARNs).
    ///
    /// On a user-backed iterator (UBUF, IOVEC) the kernel pins the pages it returns
    /// (`pin_user_pages_fast`); those pins are handed to `pins`, which releases them.
    pub fn extract_pages(
        &mut self,
        pages: &mut [KPage],
        maxsize: usize,
        pins: &mut UserPins,
    ) -> Option<Result<(usize, usize), i32>> {
        if pages.is_empty() {
            return None;
        }
        let user = matches!(self.segs, Segs::Iovec | Segs::Ubuf);
        let maxpages = u32::try_from(pages.len()).unwrap_or(u32::MAX);
        let mut arr = pages.as_mut_ptr().cast::<*mut bindings::page>();
        let mut offset0 = 0usize;
        // SAFETY: `arr` points to `pages.len()` writable slots of `struct page *` (`KPage` is a
        // transparent `struct page *`); as it is non-NULL the kernel fills it instead of
        // allocating. BVEC/KVEC/FOLIOQ extraction takes no references and reads only the table
        // within `count` (type invariant); UBUF/IOVEC extraction pins user pages through GUP,
        // which checks the addresses, and the pins are handed over below.
        let r = unsafe {
            bindings::iov_iter_extract_pages(
                &mut self.iter,
                &mut arr,
                maxsize,
                maxpages,
                0,
                &mut offset0,
            )
        };
        if r < 0 {
            return Some(Err(r as i32));
        }
        let size = r as usize;
        if user && size > 0 {
            // `iov_iter_extract_user_pages` pinned `res` pages and returned at most
            // `res * PAGE_SIZE - offset0` bytes, at least one byte in the last of them.
            let n = (offset0 + size).div_ceil(PAGE_SIZE).min(pages.len());
            if let Some(pinned) = pages.get(..n) {
                // SAFETY: the kernel took one pin on each of these pages for us (above).
                unsafe { pins.adopt(pinned) };
            }
        }
        Some(Ok((size, offset0)))
    }
}
