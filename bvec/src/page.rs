//! Page handles: what a segment points at.
//!
//! C header: [`include/linux/mm_types.h`](srctree/include/linux/mm_types.h)

use core::fmt::Debug;

/// log2 of the page size used throughout the model (x86-64: 4 KiB).
pub const PAGE_SHIFT: u32 = 12;
/// The page size in bytes.
pub const PAGE_SIZE: usize = 1 << PAGE_SHIFT;

/// A handle naming one page frame: a frame number in user space, a `struct page *` in the kernel.
///
/// # Implementer notes
///
/// - `nth(n)` is the kernel's `page + n` (`nth_page` on `SPARSEMEM_VMEMMAP`). A multipage [`Bvec`]
///   that starts at `page` covers `page.nth(0)`, `page.nth(1)`, ... and the implementation promises
///   that those frames are physically contiguous: `page.nth(n).phys() == page.phys() + n * PAGE_SIZE`
///   for every `n` inside a segment built from that handle. Arithmetic wraps; it never panics.
/// - `phys()` is the physical (or bus) address of the first byte of the page. Merging and DMA
///   decisions are taken from it.
///
/// This is a safe trait and nothing unsafe may depend on it being implemented correctly: the
/// crates only use it to decide how to group bytes, never to reach memory (that is
/// [`PageMemory`]'s job).
///
/// [`Bvec`]: crate::Bvec
/// [`PageMemory`]: crate::PageMemory
pub trait Page: Copy + Eq + Debug {
    /// Physical address of the first byte of this page.
    fn phys(self) -> u64;
    /// The handle of the page `n` frames after this one (`page + n`).
    fn nth(self, n: usize) -> Self;
}

/// A page frame number: the user-space model of a page handle.
///
/// Frame `n` lives at physical address `n * PAGE_SIZE`, so consecutive frame numbers are both
/// handle-contiguous and physically contiguous.
///
/// # Examples
///
/// ```
/// use bvec::{Page, Pfn, PAGE_SIZE};
/// let p = Pfn(3);
/// assert_eq!(p.phys(), 3 * PAGE_SIZE as u64);
/// assert_eq!(p.nth(2), Pfn(5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Pfn(pub u64);

impl Page for Pfn {
    #[inline]
    fn phys(self) -> u64 {
        self.0.wrapping_shl(PAGE_SHIFT)
    }

    #[inline]
    fn nth(self, n: usize) -> Self {
        Pfn(self.0.wrapping_add(n as u64))
    }
}
