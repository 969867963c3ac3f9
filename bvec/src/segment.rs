//! One segment of a bvec table: `struct bio_vec`.

use core::num::NonZeroU32;

use crate::{BvecError, Page, PAGE_SHIFT, PAGE_SIZE};

/// One segment of I/O memory: `len` bytes starting `offset` bytes into `page`.
///
/// The layout is that of the kernel's `struct bio_vec` (page handle, then `bv_len`, then
/// `bv_offset`) when `P` is a pointer-sized `#[repr(transparent)]` handle, so C bvec tables can be
/// viewed through this type after validation.
///
/// `offset` may exceed [`PAGE_SIZE`] and `len` may cross pages: that is a *multipage* segment, which
/// covers `page.nth(offset / PAGE_SIZE)` up to the page holding its last byte.
///
/// # Invariants
///
/// - `len != 0` (held by the [`NonZeroU32`]).
/// - `offset + len <= u32::MAX`.
///
/// # Examples
///
/// ```
/// use bvec::{Bvec, BvecError, Pfn};
/// let bv = Bvec::new(Pfn(7), 4000, 200)?;
/// assert_eq!((bv.offset(), bv.len(), bv.end()), (4000, 200, 4200));
/// assert_eq!(bv.nr_pages(), 2);
/// assert_eq!(Bvec::new(Pfn(7), 0, 0), Err(BvecError::ZeroLength));
/// assert!(Bvec::new(Pfn(7), u32::MAX, 1).is_err());
/// # Ok::<(), BvecError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Bvec<P> {
    page: P,
    len: NonZeroU32,
    offset: u32,
}

// A segment is never empty by its invariant, so an `is_empty` would always return false.
#[allow(clippy::len_without_is_empty)]
impl<P: Page> Bvec<P> {
    /// Builds a segment, refusing length zero and `offset + len` overflowing `u32`.
    #[inline]
    pub const fn new(page: P, offset: u32, len: u32) -> Result<Self, BvecError> {
        let Some(len) = NonZeroU32::new(len) else {
            return Err(BvecError::ZeroLength);
        };
        Self::with_len(page, offset, len)
    }

    /// Builds a segment from an already non-zero length, refusing `offset + len` overflow.
    #[inline]
    pub const fn with_len(page: P, offset: u32, len: NonZeroU32) -> Result<Self, BvecError> {
        if offset.checked_add(len.get()).is_none() {
            return Err(BvecError::Overflow {
                offset,
                len: len.get(),
            });
        }
        // INVARIANT: `len` is non-zero and `offset + len` was checked above.
        Ok(Self { page, len, offset })
    }

    /// The page handle the offset is counted from (`bv_page`).
    #[inline]
    pub const fn page(&self) -> P {
        self.page
    }

    /// Offset of the first byte from the start of [`Self::page`] (`bv_offset`); may exceed a page.
    #[inline]
    pub const fn offset(&self) -> u32 {
        self.offset
    }

    /// Length in bytes (`bv_len`), never zero.
    #[inline]
    pub const fn len(&self) -> u32 {
        self.len.get()
    }

    /// Length as the non-zero type that proves the invariant.
    #[inline]
    pub const fn len_nonzero(&self) -> NonZeroU32 {
        self.len
    }

    /// `offset + len`: the offset one past the last byte (cannot overflow by the invariant).
    #[inline]
    pub const fn end(&self) -> u32 {
        // No overflow: invariant `offset + len <= u32::MAX`.
        self.offset + self.len.get()
    }

    /// Physical address of the first byte (`bvec_phys`).
    #[inline]
    pub fn phys(&self) -> u64 {
        self.page.phys().wrapping_add(u64::from(self.offset))
    }

    /// Number of pages the segment touches.
    #[inline]
    pub const fn nr_pages(&self) -> u32 {
        let first = self.offset >> PAGE_SHIFT;
        let last = (self.end() - 1) >> PAGE_SHIFT;
        last - first + 1
    }

    /// The page holding byte `pos` of the segment and the offset of that byte inside it.
    ///
    /// `pos` is clamped to the last byte, so the result always lies inside the segment.
    #[inline]
    pub fn page_at(&self, pos: u32) -> (P, usize) {
        let pos = if pos < self.len.get() {
            pos
        } else {
            self.len.get() - 1
        };
        // No overflow: pos < len and offset + len <= u32::MAX.
        let abs = (self.offset + pos) as usize;
        (self.page.nth(abs >> PAGE_SHIFT), abs & (PAGE_SIZE - 1))
    }

    /// The part of this segment from byte `skip` on, at most `max` bytes long
    /// (`mp_bvec_iter_bvec` for one segment). `None` when nothing is left.
    #[inline]
    pub fn window(&self, skip: u32, max: u32) -> Option<Self> {
        let left = self.len.get().checked_sub(skip)?;
        let len = NonZeroU32::new(if left < max { left } else { max })?;
        // INVARIANT: `skip < self.len` here, so `offset + skip + len <= offset + self.len`, which fits.
        Some(Self {
            page: self.page,
            len,
            offset: self.offset + skip,
        })
    }
}
