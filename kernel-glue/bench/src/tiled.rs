// SPDX-License-Identifier: GPL-2.0

//! A large virtual buffer backed by one page, as the kunit iov_iter benchmarks build theirs.
//!
//! C header: [`include/linux/vmalloc.h`](srctree/include/linux/vmalloc.h)

use bvec::PAGE_SIZE;
use kernel::alloc::AllocError;

use kernel_glue::KPage;

use crate::{helpers, BenchPage};

/// `npages` mappings of one [`BenchPage`] in a row (`vmap`), unmapped on drop; the page is
/// borrowed mutably, so its bytes are reached only through this value.
///
/// Every 4 KiB window of the buffer shows the same physical page, so a 256 MiB copy through
/// it stays cache-resident: the benchmark measures the iterators plus a hot `memcpy`, as the
/// kernel's does.
///
/// # Invariants
///
/// `addr .. addr + len` was returned by `vmap` of the page borrowed (mutably) for `'p`, `len` is
/// `npages * PAGE_SIZE > 0`, and the range and the page are reachable only through this value.
#[derive(Debug)]
pub struct TiledVmap<'p> {
    addr: *mut u8,
    len: usize,
    page: &'p mut BenchPage,
}

impl<'p> TiledVmap<'p> {
    /// Maps `page` `npages` times in a row.
    ///
    /// # Errors
    ///
    /// [`AllocError`] for `npages == 0`, an overflowing size or when `vmap` fails.
    pub fn new(page: &'p mut BenchPage, npages: usize) -> Result<Self, AllocError> {
        let len = npages.checked_mul(PAGE_SIZE).ok_or(AllocError)?;
        // SAFETY: `page` is a live page we own; the helper only maps it.
        let addr = unsafe { helpers::rnvme_glue_bench_vmap_tiled(page.as_ptr(), npages as _) };
        if addr.is_null() {
            return Err(AllocError);
        }
        // INVARIANT: a fresh vmap of `npages` copies of `page` (non-zero: vmap refuses 0).
        Ok(Self {
            addr: addr.cast(),
            len,
            page,
        })
    }

    /// Kernel address of the first byte.
    #[inline]
    pub fn addr(&self) -> usize {
        self.addr as usize
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a mapping is at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The whole buffer as bytes (every 4 KiB window is the same physical page).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `addr .. addr + len` is mapped and reachable only through `self` (type
        // invariant), borrowed mutably for the slice's lifetime. Distinct addresses of the slice
        // showing one physical page is invisible to Rust: no two live references share an address.
        unsafe { core::slice::from_raw_parts_mut(self.addr, self.len) }
    }

    /// The tiled page's handle.
    #[inline]
    pub fn page(&self) -> KPage {
        self.page.kpage()
    }

    /// The tiled page's raw `struct page *` (for C helpers of this crate).
    #[inline]
    pub(crate) fn page_ptr(&self) -> *mut kernel::bindings::page {
        self.page.as_ptr()
    }

    /// Direct-map address of the tiled page.
    #[inline]
    pub(crate) fn page_virt(&self) -> *mut u8 {
        self.page.virt()
    }

    /// Raw pointer for the C helpers of this crate.
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.addr
    }
}

impl Drop for TiledVmap<'_> {
    fn drop(&mut self) {
        // SAFETY: `addr` came from `vmap` (type invariant) and no borrow of it outlives `self`.
        unsafe { helpers::rnvme_glue_bench_vunmap(self.addr.cast_const().cast()) };
    }
}
