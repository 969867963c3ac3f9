//! Direction of an iterator as a type: `ITER_SOURCE` / `ITER_DEST`.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! The kernel stores the direction in `iov_iter::data_source` and WARNs (returning 0) when
//! `copy_to_iter` meets a SOURCE iterator or `copy_from_iter` a DEST one. Here the direction is
//! the type parameter `D` of [`IovIter`](crate::IovIter): with [`Source`] or [`Dest`] the wrong
//! copy does not compile; [`AnyDir`] keeps the direction at run time (for iterators built from a C
//! `iov_iter`) and reproduces the kernel's "return 0" path.
//!
//! ```
//! fn fill<M: iov::Memory<bvec::Pfn>>(mem: &mut M) -> usize {
//!     let mut it = iov::IovIter::<bvec::Pfn, iov::Dest>::ubuf(0, 1);
//!     it.copy_to_iter(mem, &[0])
//! }
//! ```
//!
//! The same copy into a SOURCE iterator is rejected at compile time:
//!
//! ```compile_fail
//! fn fill<M: iov::Memory<bvec::Pfn>>(mem: &mut M) -> usize {
//!     let mut it = iov::IovIter::<bvec::Pfn, iov::Source>::ubuf(0, 1);
//!     it.copy_to_iter(mem, &[0])
//! }
//! ```
//!
//! and so are copies out of a DEST iterator, and a SOURCE DISCARD:
//!
//! ```compile_fail
//! fn drain<M: iov::Memory<bvec::Pfn>>(mem: &mut M) -> usize {
//!     let mut it = iov::IovIter::<bvec::Pfn, iov::Dest>::ubuf(0, 1);
//!     it.copy_from_iter(mem, &mut [0])
//! }
//! ```
//!
//! ```compile_fail
//! let it = iov::IovIter::<bvec::Pfn, iov::Source>::discard(1);
//! ```

/// Marker: the iterator holds the data (`ITER_SOURCE`, `WRITE`); only `copy_from_iter` exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Source;

/// Marker: the iterator receives data (`ITER_DEST`, `READ`); only `copy_to_iter` exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dest;

/// Marker: the direction is only known at run time; both copies exist and the wrong one returns 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnyDir;

#[allow(unreachable_pub)]
mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for Source {}
impl sealed::Sealed for Dest {}
impl sealed::Sealed for AnyDir {}

/// A direction marker: [`Source`], [`Dest`] or [`AnyDir`]. Sealed.
pub trait Direction: sealed::Sealed + Copy + core::fmt::Debug {
    /// `Some(is_source)` when the type fixes the direction, `None` for [`AnyDir`].
    const FIXED: Option<bool>;
}

impl Direction for Source {
    const FIXED: Option<bool> = Some(true);
}

impl Direction for Dest {
    const FIXED: Option<bool> = Some(false);
}

impl Direction for AnyDir {
    const FIXED: Option<bool> = None;
}

/// A direction fixed by the type ([`Source`] or [`Dest`]): the constructors live here.
pub trait FixedDirection: Direction {}
impl FixedDirection for Source {}
impl FixedDirection for Dest {}

/// Directions that may receive data (`copy_to_iter`, `copy_page_to_iter`).
pub trait CanReceive: Direction {}
impl CanReceive for Dest {}
impl CanReceive for AnyDir {}

/// Directions that may supply data (`copy_from_iter`, `copy_page_from_iter`).
pub trait CanSupply: Direction {}
impl CanSupply for Source {}
impl CanSupply for AnyDir {}
