//! The position of a bvec iterator as plain data: `struct bvec_iter`.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)

use core::mem::{align_of, size_of};

/// A position in a bvec table plus a residual byte count (the kernel's `struct bvec_iter`).
///
/// This is plain data: a bio stores it, clones copy it, and any bit pattern is a valid
/// `IterState`. It only means something together with a table; [`BvecIter::from_state`] checks
/// it against one.
///
/// The layout is that of the kernel's `__packed __aligned(4)` struct: `bi_sector` (u64),
/// `bi_size`, `bi_idx`, `bi_bvec_done` (u32 each), 20 bytes, alignment 4.
///
/// [`BvecIter::from_state`]: crate::BvecIter::from_state
///
/// # Examples
///
/// ```
/// use bvec::IterState;
/// let s = IterState::new(8, 4096, 1, 512);
/// assert_eq!((s.sector(), s.size(), s.idx(), s.done()), (8, 4096, 1, 512));
/// assert_eq!(core::mem::size_of::<IterState>(), 20);
/// assert_eq!(IterState::default(), IterState::new(0, 0, 0, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C, packed(4))]
pub struct IterState {
    /// First sector (512-byte units) of the remaining I/O (`bi_sector`).
    sector: u64,
    /// Bytes left to iterate (`bi_size`).
    size: u32,
    /// Index of the current segment in the table (`bi_idx`).
    idx: u32,
    /// Bytes already consumed from the current segment (`bi_bvec_done`).
    done: u32,
}

const _: () = assert!(size_of::<IterState>() == 20);
const _: () = assert!(align_of::<IterState>() == 4);

impl IterState {
    /// Builds a state from its four fields; nothing is checked here.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::IterState;
    /// // Any values are accepted; `BvecIter::from_state` validates them against a table.
    /// let s = IterState::new(u64::MAX, u32::MAX, u32::MAX, u32::MAX);
    /// assert_eq!(s.idx(), u32::MAX);
    /// ```
    #[inline]
    pub const fn new(sector: u64, size: u32, idx: u32, done: u32) -> Self {
        Self {
            sector,
            size,
            idx,
            done,
        }
    }

    /// First sector of the remaining I/O (`bi_sector`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bvec::IterState::new(7, 0, 0, 0).sector(), 7);
    /// ```
    #[inline]
    pub const fn sector(&self) -> u64 {
        self.sector
    }

    /// Bytes left to iterate (`bi_size`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bvec::IterState::new(0, 512, 0, 0).size(), 512);
    /// ```
    #[inline]
    pub const fn size(&self) -> u32 {
        self.size
    }

    /// Index of the current segment (`bi_idx`); equals the table length once the table is used up.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bvec::IterState::new(0, 0, 3, 0).idx(), 3);
    /// ```
    #[inline]
    pub const fn idx(&self) -> u32 {
        self.idx
    }

    /// Bytes already consumed from the current segment (`bi_bvec_done`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bvec::IterState::new(0, 0, 0, 100).done(), 100);
    /// ```
    #[inline]
    pub const fn done(&self) -> u32 {
        self.done
    }

    /// The same state with another starting sector (a bio remapped to another device offset).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::IterState;
    /// let s = IterState::new(0, 512, 1, 2).with_sector(99);
    /// assert_eq!(s, IterState::new(99, 512, 1, 2));
    /// ```
    #[inline]
    #[must_use]
    pub const fn with_sector(self, sector: u64) -> Self {
        Self { sector, ..self }
    }
}
