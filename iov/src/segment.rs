//! Segment types of the vector kinds: `struct iovec`, `struct kvec` and folio entries.
//!
//! C header: [`include/uapi/linux/uio.h`](srctree/include/uapi/linux/uio.h),
//! [`include/linux/uio.h`](srctree/include/linux/uio.h)

use bvec::{Page, PAGE_SIZE};

use crate::IovError;

/// One user-space segment: `len` bytes at user address `base` (`struct iovec`).
///
/// The layout is that of `struct iovec` (`void __user *iov_base; size_t iov_len;`), so a table
/// copied in from user space can be viewed as `&[Iovec]`. Zero lengths are legal (`readv` accepts
/// them) and are skipped by every walk, as in the kernel.
///
/// # Examples
///
/// ```
/// use iov::Iovec;
/// let v = Iovec::new(0x7000_0000, 0);
/// assert_eq!((v.base, v.len), (0x7000_0000, 0));
/// assert_eq!(core::mem::size_of::<Iovec>(), 2 * core::mem::size_of::<usize>());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Iovec {
    /// User address of the first byte (`iov_base`).
    pub base: usize,
    /// Length in bytes (`iov_len`); may be zero.
    pub len: usize,
}

impl Iovec {
    /// Builds a segment of `len` bytes at user address `base`.
    #[inline]
    pub const fn new(base: usize, len: usize) -> Self {
        Self { base, len }
    }
}

/// One kernel segment: `len` bytes at kernel virtual address `base` (`struct kvec`).
///
/// Same layout as [`Iovec`] (the kernel relies on that too, `iov_iter.c:1569`). Zero lengths are
/// legal and skipped.
///
/// # Examples
///
/// ```
/// use iov::Kvec;
/// let v = Kvec::new(0xffff_8880_0000_0000, 4096);
/// assert_eq!(v.len, 4096);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Kvec {
    /// Kernel virtual address of the first byte (`iov_base`).
    pub base: usize,
    /// Length in bytes (`iov_len`); may be zero.
    pub len: usize,
}

impl Kvec {
    /// Builds a segment of `len` bytes at kernel address `base`.
    #[inline]
    pub const fn new(base: usize, len: usize) -> Self {
        Self { base, len }
    }
}

/// Largest folio order accepted: 1 GiB folios with 4 KiB pages (PUD-sized hugetlb).
pub const MAX_FOLIO_ORDER: u8 = 18;

/// One folio of a page-list iterator: `PAGE_SIZE << order` bytes starting at `page`.
///
/// The pages of the folio are `page.nth(0)`, `page.nth(1)`, ... (`folio_page(folio, n)`).
///
/// # Invariants
///
/// `order <= MAX_FOLIO_ORDER`, so [`Folio::size`] never overflows.
///
/// # Examples
///
/// ```
/// use bvec::{Pfn, PAGE_SIZE};
/// use iov::{Folio, IovError};
/// let f = Folio::new(Pfn(8), 2)?;
/// assert_eq!(f.size(), 4 * PAGE_SIZE);
/// assert_eq!(Folio::page(Pfn(3)).size(), PAGE_SIZE);
/// assert_eq!(Folio::new(Pfn(0), 40), Err(IovError::FolioOrder { order: 40 }));
/// # Ok::<(), IovError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Folio<P> {
    head: P,
    order: u8,
}

impl<P: Page> Folio<P> {
    /// Builds a folio of `PAGE_SIZE << order` bytes whose first page is `head`.
    ///
    /// # Errors
    ///
    /// [`IovError::FolioOrder`] when `order > MAX_FOLIO_ORDER`.
    #[inline]
    pub const fn new(head: P, order: u8) -> Result<Self, IovError> {
        if order > MAX_FOLIO_ORDER {
            return Err(IovError::FolioOrder { order });
        }
        // INVARIANT: order checked above.
        Ok(Self { head, order })
    }

    /// A single-page folio (order 0).
    #[inline]
    pub const fn page(head: P) -> Self {
        // INVARIANT: 0 <= MAX_FOLIO_ORDER.
        Self { head, order: 0 }
    }

    /// The first page of the folio.
    #[inline]
    pub const fn head(&self) -> P {
        self.head
    }

    /// log2 of the number of pages in the folio.
    #[inline]
    pub const fn order(&self) -> u8 {
        self.order
    }

    /// Size in bytes (`folio_size`).
    #[inline]
    pub const fn size(&self) -> usize {
        // No overflow: order <= MAX_FOLIO_ORDER by the invariant. Wrapping so that the kernel
        // build (`CONFIG_RUST_OVERFLOW_CHECKS`) does not test the shift amount on every page.
        PAGE_SIZE.wrapping_shl(self.order as u32)
    }
}

/// Length of one table entry, shared by the walks of every vector kind.
pub(crate) trait SegLen {
    /// Whether every entry's length is below 2^32, so that a few of them sum without wrapping.
    const LEN_FITS_U32: bool = false;
    /// Bytes the entry holds.
    fn seg_len(&self) -> usize;
}

impl SegLen for Iovec {
    #[inline(always)]
    fn seg_len(&self) -> usize {
        self.len
    }
}

impl SegLen for Kvec {
    #[inline(always)]
    fn seg_len(&self) -> usize {
        self.len
    }
}

impl<P: Page> SegLen for bvec::Bvec<P> {
    const LEN_FITS_U32: bool = true; // `bv_len` is a `u32`
    #[inline(always)]
    fn seg_len(&self) -> usize {
        self.len() as usize
    }
}

impl<P: Page> SegLen for Folio<P> {
    #[inline(always)]
    fn seg_len(&self) -> usize {
        self.size()
    }
}
