// SPDX-License-Identifier: GPL-2.0

//! RAII ownership of `alloc_pages` allocations.
//!
//! C header: [`include/linux/gfp.h`](srctree/include/linux/gfp.h)

use core::ptr::NonNull;

use bvec::{Page, PAGE_SIZE};
use kernel::{alloc::AllocError, bindings};

use crate::{helpers, KPage};

/// The largest allocation order the buddy allocator serves (`MAX_PAGE_ORDER`).
pub const MAX_ORDER: u32 = bindings::MAX_PAGE_ORDER;

const _: () = assert!(PAGE_SIZE == bindings::PAGE_SIZE);

/// `2^order` physically contiguous, zeroed pages from `alloc_pages`, freed by `__free_pages` when
/// dropped.
///
/// There is no way to leak or forget the allocation through this type's API: it is released
/// exactly once, in [`Drop`].
///
/// # Invariants
///
/// - `page` is the first page of an allocation of `1 << order` pages made by
///   `alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN, order)`, owned by this object.
/// - `order <= MAX_ORDER`.
/// - The memory is in the direct map (no `CONFIG_HIGHMEM`, enforced by helpers.c), so
///   `page_address(page)` maps all `PAGE_SIZE << order` bytes contiguously, and it is initialised
///   (zeroed at allocation).
///
/// # Examples
///
/// ```ignore
/// let mut pages = OwnedPages::alloc_zeroed(2)?;
/// assert_eq!(pages.len(), 4 * PAGE_SIZE);
/// pages.as_mut_slice()[PAGE_SIZE] = 1;
/// assert_eq!(pages.index_of(pages.page().nth(3)), Some(3));
/// assert_eq!(pages.index_of(pages.page().nth(4)), None);
/// ```
#[derive(Debug)]
pub struct OwnedPages {
    page: NonNull<bindings::page>,
    order: u32,
}

// SAFETY: the allocation is owned by the value and has no thread affinity; `__free_pages` may be
// called from any task.
unsafe impl Send for OwnedPages {}
// SAFETY: `&OwnedPages` only gives read access (`as_slice`, handles); writes need `&mut`.
unsafe impl Sync for OwnedPages {}

impl OwnedPages {
    /// Allocates `2^order` zeroed pages (`GFP_KERNEL`, may sleep).
    ///
    /// # Errors
    ///
    /// [`AllocError`] when `order > MAX_ORDER` or the allocator has no such block.
    pub fn alloc_zeroed(order: u32) -> Result<Self, AllocError> {
        if order > MAX_ORDER {
            return Err(AllocError);
        }
        let gfp = bindings::GFP_KERNEL | bindings::__GFP_ZERO | bindings::__GFP_NOWARN;
        // SAFETY: `alloc_pages` may be called with any flags and order in process context (it
        // may sleep with GFP_KERNEL; callers of this function are documented as sleepable).
        let page = unsafe { bindings::alloc_pages(gfp, order) };
        let page = NonNull::new(page).ok_or(AllocError)?;
        // INVARIANT: a successful `alloc_pages` of this order with `__GFP_ZERO`; ownership is
        // transferred to the new object; `order <= MAX_ORDER` was checked.
        Ok(Self { page, order })
    }

    /// Handle of the first page.
    #[inline]
    pub fn page(&self) -> KPage {
        KPage::from_ptr(self.page.as_ptr())
    }

    /// The allocation order.
    #[inline]
    pub fn order(&self) -> u32 {
        self.order
    }

    /// Number of pages (`1 << order`).
    #[inline]
    pub fn nr_pages(&self) -> usize {
        1 << self.order
    }

    /// Size in bytes (`PAGE_SIZE << order`).
    #[inline]
    pub fn len(&self) -> usize {
        PAGE_SIZE << self.order
    }

    /// Always `false`: an allocation holds at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Physical address of the first byte.
    #[inline]
    pub fn phys(&self) -> u64 {
        self.page().phys()
    }

    /// Index of `page` inside this allocation, `None` if the handle names no page of it.
    pub fn index_of(&self, page: KPage) -> Option<usize> {
        let diff = page.addr().checked_sub(self.page().addr())?;
        let size = core::mem::size_of::<bindings::page>();
        if diff % size != 0 {
            return None;
        }
        let idx = diff / size;
        (idx < self.nr_pages()).then_some(idx)
    }

    /// Kernel virtual address of the first byte (`page_address`).
    #[inline]
    pub fn virt_addr(&self) -> usize {
        self.base() as usize
    }

    fn base(&self) -> *mut u8 {
        // SAFETY: `page` is a live page we own (type invariant); `page_address` only computes
        // its direct-map address.
        unsafe { helpers::rnvme_glue_page_address(self.page.as_ptr()) }.cast::<u8>()
    }

    /// The whole allocation as bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: by the type invariants the `len()` bytes at `base()` are mapped, initialised
        // and owned by `self`; they are only written through `&mut self`, which the returned
        // shared borrow excludes.
        unsafe { core::slice::from_raw_parts(self.base(), self.len()) }
    }

    /// The whole allocation as mutable bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes the borrow exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.base(), self.len()) }
    }
}

impl Drop for OwnedPages {
    fn drop(&mut self) {
        // SAFETY: by the type invariants we own an allocation of this order starting at `page`;
        // it is freed exactly once, here, and no borrow of it can outlive `self`.
        unsafe { bindings::__free_pages(self.page.as_ptr(), self.order) };
    }
}
