//! Safe model of the kernel's `struct iov_iter`: UBUF, IOVEC, KVEC, BVEC, page-list (FOLIOQ) and
//! DISCARD iterators with Linux 6.12 semantics.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! - [`IovIter`] borrows a segment table and keeps the kernel's position state (current segment,
//!   `iov_offset`, `count`, `nr_segs`), so results — including where the position lands around
//!   empty segments — match the kernel.
//! - The direction is a type ([`Source`], [`Dest`], [`AnyDir`]): copying the wrong way does not
//!   compile unless the direction is only known at run time.
//! - What the kernel only assumes is checked: `count` never exceeds what the segments hold,
//!   `revert` never goes before the start, `reexpand` never past the end.
//! - Memory is reached only through the [`Memory`] traits passed to each operation, so the crate
//!   has no `unsafe` and a fault is a short copy.
//! - One engine, [`IovIter::iterate_and_advance`], generic over the [`Step`], runs every copy.
//!
//! The crate is `no_std`, uses `core` only and never allocates.
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]

mod advance;
mod copy;
mod direction;
mod error;
#[cfg(not(kbuild))]
mod flat;
mod iter;
mod memory;
mod pages;
mod query;
mod segment;
mod shape;
mod step;
mod table;

pub use advance::IovState;
pub use direction::{AnyDir, CanReceive, CanSupply, Dest, Direction, FixedDirection, Source};
pub use error::{IovError, EFAULT, EINVAL, ENOMEM};
#[cfg(not(kbuild))]
pub use flat::FlatMemory;
pub use iter::{IovIter, IterType, MAX_RW_COUNT};
pub use memory::{GupFlags, KernelMemory, Memory, UserMemory};
pub use segment::{Folio, Iovec, Kvec, MAX_FOLIO_ORDER};
pub use step::Step;
pub use table::BvecTable;
