//! Typed model of the kernel's `struct bio_vec` and `struct bvec_iter`.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)
//!
//! The kernel only documents the rules of a bvec table; this crate makes them part of the types:
//!
//! - a [`Bvec`] segment never has length zero (its length is a [`core::num::NonZeroU32`]) and its
//!   `offset + len` never overflows `u32`;
//! - the pages a multipage segment spans are `page.nth(0)`, `page.nth(1)`, ... which the [`Page`]
//!   trait promises are physically contiguous;
//! - memory is only reached through [`PageMemory`], so the crate itself contains no `unsafe`;
//! - a [`BvecIter`] (table + [`IterState`]) refuses to advance past its end or revert before the
//!   start of its table, leaving itself unchanged, and splits without copying the table.
//!
//! The crate is `no_std`, uses `core` only and never allocates.
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]

mod count;
mod error;
mod iter;
mod memory;
mod page;
mod revert;
mod segment;
mod split;
mod state;
#[cfg(test)]
mod tests;
mod views;

pub use error::BvecError;
pub use iter::BvecIter;
pub use memory::PageMemory;
pub use page::{Page, Pfn, PAGE_SHIFT, PAGE_SIZE};
pub use segment::Bvec;
pub use state::IterState;
pub use views::{Pages, Segments};
