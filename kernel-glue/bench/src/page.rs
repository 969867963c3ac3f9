// SPDX-License-Identifier: GPL-2.0

//! One zeroed page owned by the benchmark: the page every segment of a tiled table names.
//!
//! C header: [`include/linux/gfp.h`](srctree/include/linux/gfp.h)

use bvec::PAGE_SIZE;
use kernel::{alloc::AllocError, bindings};

use kernel_glue::KPage;

use crate::helpers;

/// A page from `alloc_page(GFP_KERNEL | __GFP_ZERO)`, freed on drop.
///
/// # Invariants
///
/// `page` was returned (non-NULL) by `alloc_page` and is owned by this value; `virt` is its
/// direct-map address (`page_address`), valid for `PAGE_SIZE` bytes while `self` lives.
#[derive(Debug)]
pub struct BenchPage {
    page: *mut bindings::page,
    virt: *mut u8,
}

impl BenchPage {
    /// Allocates a zeroed page.
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the page allocator fails.
    pub fn new() -> Result<Self, AllocError> {
        // SAFETY: plain page allocation.
        let page = unsafe { helpers::rnvme_glue_bench_alloc_page() };
        if page.is_null() {
            return Err(AllocError);
        }
        // SAFETY: `page` is a lowmem page we own (GFP_KERNEL, no highmem on x86-64).
        let virt = unsafe { helpers::rnvme_glue_bench_page_address(page) }.cast::<u8>();
        // INVARIANT: allocated above, its address from `page_address`.
        Ok(Self { page, virt })
    }

    /// The page handle.
    #[inline]
    pub fn kpage(&self) -> KPage {
        KPage::from_ptr(self.page)
    }

    /// The raw `struct page *` (for C helpers of this crate).
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut bindings::page {
        self.page
    }

    /// Direct-map address of the first byte (valid for [`PAGE_SIZE`] bytes).
    #[inline]
    pub(crate) fn virt(&self) -> *mut u8 {
        self.virt
    }

    /// Fills the page with `byte`.
    pub fn fill(&mut self, byte: u8) {
        // SAFETY: `virt` is valid for `PAGE_SIZE` bytes (type invariant) and only reachable
        // through `self`, borrowed mutably here.
        unsafe { core::ptr::write_bytes(self.virt, byte, PAGE_SIZE) };
    }
}

impl Drop for BenchPage {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc_page` and owned (type invariant); every borrow of it
        // (vmaps, memories, tables checked against it) ended before the drop.
        unsafe { helpers::rnvme_glue_bench_free_page(self.page) };
    }
}
