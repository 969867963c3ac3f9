// SPDX-License-Identifier: GPL-2.0

//! `struct page *` as a [`bvec::Page`] handle, and the `struct bio_vec` layout check.
//!
//! C header: [`include/linux/mm_types.h`](srctree/include/linux/mm_types.h)

use core::mem::{align_of, offset_of, size_of};

use bvec::{Bvec, Page};
use kernel::bindings;

use crate::helpers;

/// A handle naming one `struct page` (the kernel's `struct page *`).
///
/// A `KPage` is a pointer *value*. Making one, copying it and doing arithmetic on it
/// ([`Page::nth`] is `page + n`) never touches memory; [`Page::phys`] (`page_to_phys`) is
/// arithmetic on the value with `CONFIG_SPARSEMEM_VMEMMAP` (required), so it works for any value
/// (a meaningless address for a pointer that is not a `struct page`). Only a
/// page memory (`kernel_glue_testing::PagePool`) dereferences handles, and it first checks that the handle is
/// a page of an allocation it owns. A `KPage` may therefore name any page, or none, and building
/// one is safe.
///
/// `#[repr(transparent)]` over the pointer: `Bvec<KPage>` has the layout of `struct bio_vec`
/// (checked at compile time in this file), so a table of segments can be handed to C as is.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KPage(*mut bindings::page);

impl KPage {
    /// Wraps a raw `struct page *`; the pointer is not dereferenced (see the type docs).
    #[inline]
    pub const fn from_ptr(ptr: *mut bindings::page) -> Self {
        Self(ptr)
    }

    /// The raw `struct page *`.
    #[inline]
    pub const fn as_ptr(self) -> *mut bindings::page {
        self.0
    }

    /// The pointer as an integer, for range checks.
    #[inline]
    pub(crate) fn addr(self) -> usize {
        self.0 as usize
    }
}

// `KPage::nth` is `page + n`, which names the page `n` frames on only when all `struct page`s
// live in one virtual array.
#[cfg(not(CONFIG_SPARSEMEM_VMEMMAP))]
compile_error!("kernel-glue needs CONFIG_SPARSEMEM_VMEMMAP: KPage::nth is `page + n`");

impl Page for KPage {
    #[inline]
    fn phys(self) -> u64 {
        // SAFETY: `rnvme_glue_page_to_phys` accepts any pointer value: with
        // `CONFIG_SPARSEMEM_VMEMMAP` (required above) it is arithmetic on the value and never
        // dereferences it (see helpers.c).
        unsafe { helpers::rnvme_glue_page_to_phys(self.0) }
    }

    #[inline]
    fn nth(self, n: usize) -> Self {
        // `page + n` on the vmemmap array; wrapping, never dereferenced here.
        Self(self.0.wrapping_add(n))
    }
}

/// Whether `b` starts in physical memory right where `a` ends: the address test of
/// `biovec_phys_mergeable()` (`block/blk.h`), `page_to_phys(a) + a.offset + a.len ==
/// page_to_phys(b) + b.offset`, without calling `page_to_phys`. With the vmemmap (required
/// above) two pages' physical addresses differ by `PAGE_SIZE` per `struct page` between their
/// handles, so the test is arithmetic on the handles (wrapping, as `page_to_phys` is), with
/// no call into C per segment.
#[inline]
pub fn phys_follows(a: &Bvec<KPage>, b: &Bvec<KPage>) -> bool {
    // Signed and exact: `struct page` need not be a power of two in size, and `b` may lie
    // below `a` (the vmemmap spans far less than 2^63 bytes, so the difference of two real
    // handles is exact; for other values the answer means nothing but is still defined).
    let step = size_of::<bindings::page>() as i64;
    let d = (b.page().addr() as i64).wrapping_sub(a.page().addr() as i64);
    if d % step != 0 {
        return false;
    }
    let frames = d / step;
    let a_end = u64::from(a.offset()) + u64::from(a.len());
    (frames as u64)
        .wrapping_mul(bindings::PAGE_SIZE as u64)
        .wrapping_add(u64::from(b.offset()))
        == a_end
}

// `struct bio_vec { struct page *bv_page; unsigned int bv_len; unsigned int bv_offset; }`:
// `Bvec<KPage>` must be the same size and alignment, with the fields in the same places. The
// field offsets of `Bvec` are private to the bvec crate, so the order is checked by value: a
// segment built with distinct length and offset must read back the same through the C type.
const _: () = {
    assert!(size_of::<Bvec<KPage>>() == size_of::<bindings::bio_vec>());
    assert!(align_of::<Bvec<KPage>>() == align_of::<bindings::bio_vec>());
    assert!(offset_of!(bindings::bio_vec, bv_page) == 0);
    assert!(size_of::<*mut bindings::page>() == 8);
    assert!(offset_of!(bindings::bio_vec, bv_len) == 8);
    assert!(offset_of!(bindings::bio_vec, bv_offset) == 12);

    let Ok(bv) = Bvec::new(KPage(core::ptr::null_mut()), 0x1234, 0x5678) else {
        panic!("Bvec::new refused a valid segment");
    };
    // SAFETY: both types have the same size (checked above); `Bvec<KPage>` is a pointer and two
    // `u32` (one non-zero), and every bit pattern of those is a valid `bio_vec`.
    let raw: bindings::bio_vec = unsafe { core::mem::transmute::<Bvec<KPage>, _>(bv) };
    assert!(raw.bv_len == 0x5678);
    assert!(raw.bv_offset == 0x1234);
};

/// Views a table of segments as the `struct bio_vec` array C expects.
///
/// The pointer is valid for reads of `table.len()` elements for as long as `table` is borrowed.
#[inline]
pub fn bio_vec_ptr(table: &[Bvec<KPage>]) -> *const bindings::bio_vec {
    // Same layout: checked by the `const` block above.
    table.as_ptr().cast::<bindings::bio_vec>()
}
