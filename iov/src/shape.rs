//! What a check of a bvec table found about its entries, in one byte: whether every entry is
//! page-aligned (O(1) `npages`) and the table's stride (O(1) positions), as [`BvecTable`] records
//! it and a BVEC iterator carries it.
//!
//! One byte because an iterator is built per I/O (io_uring/rsrc.c `io_import_fixed()`, block
//! layer bvec iterators): copying one byte from the table into the iterator is one load and one
//! store, where a flag and an `Option<u8>` were three of each.
//!
//! [`BvecTable`]: crate::BvecTable

/// Page alignment and stride of a bvec table.
///
/// # Invariants
///
/// Bits 0-5 hold the stride shift, at most 32, or [`Shape::NO_STRIDE`]; bit 7 is set iff every
/// entry is page-aligned at both ends; bit 6 is clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape(u8);

impl Shape {
    /// The shift bits of a table without a stride.
    const NO_STRIDE: u8 = 0x3f;
    /// The page-alignment bit.
    const ALIGNED: u8 = 0x80;

    /// The shape of a table that is page-aligned iff `page_aligned` and has stride shift
    /// `shift` (`None`, or a shift above 32, which no table has: no stride).
    #[inline]
    pub(crate) const fn new(page_aligned: bool, shift: Option<u8>) -> Self {
        let bits = match shift {
            Some(s) if s <= 32 => s,
            _ => Self::NO_STRIDE,
        };
        // INVARIANT: the shift bits are at most 32 or NO_STRIDE; bit 6 is clear in both.
        Self(if page_aligned {
            bits | Self::ALIGNED
        } else {
            bits
        })
    }

    /// Whether every entry starts and ends on a page boundary.
    #[inline]
    pub(crate) const fn page_aligned(self) -> bool {
        self.0 & Self::ALIGNED != 0
    }

    /// log2 of the stride, when positions in the table are arithmetic.
    #[inline]
    pub(crate) const fn stride_shift(self) -> Option<u8> {
        match self.0 & !Self::ALIGNED {
            Self::NO_STRIDE => None,
            s => Some(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shape;

    #[test]
    fn round_trips_every_shape() {
        for aligned in [false, true] {
            for shift in (0..=40).map(Some).chain([None, Some(u8::MAX)]) {
                let s = Shape::new(aligned, shift);
                assert_eq!(s.page_aligned(), aligned);
                assert_eq!(s.stride_shift(), shift.filter(|&v| v <= 32));
            }
        }
    }
}
