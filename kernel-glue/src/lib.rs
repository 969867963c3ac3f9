// SPDX-License-Identifier: GPL-2.0

//! Kernel side of the iovstack crates: page handles, page memory and C interop.
//!
//! C header: [`include/linux/highmem.h`](srctree/include/linux/highmem.h)
//!
//! The `bvec`, `iov` and `bio` crates are safe, `no_std` models of the kernel's I/O vector types.
//! They reach memory only through traits (`bvec::Page`, `bvec::PageMemory`, `iov::Memory`). This
//! crate implements those traits over real kernel objects and is the only place of the stack that
//! names `kernel::bindings` or contains `unsafe`:
//!
//! - [`KPage`]: a `struct page *` handle, layout-checked so `bvec::Bvec<KPage>` *is* a
//!   `struct bio_vec`;
//! - [`OwnedPages`]: an `alloc_pages` allocation freed on drop;
//! - [`PagePool`]: a set of allocations whose pages are reached with `kmap_local_page`;
//! - [`UserMapping`]: an anonymous mapping in the current process (`vm_mmap`);
//! - [`CheckedMemory`]: pages, kernel buffers and a user mapping, every access range-checked;
//! - [`c_iov`], [`c_bvec`], [`c_bio`]: the kernel's own `struct iov_iter`, `struct bvec_iter`
//!   and `bio_split_rw_at`, for differential tests;
//! - [`params`]: C-declared module parameters; [`sched`]: `cond_resched`.
//!
//! Built by Kbuild only (see `rnvme/Kbuild`), which adds `#![no_std]` and the kernel's lints.

mod helpers;
mod kpage;
mod memory;
mod owned_pages;
mod pool;
mod user;

pub mod c_bio;
pub mod c_bvec;
pub mod c_iov;
pub mod params;
pub mod sched;

pub use kpage::KPage;
pub use memory::CheckedMemory;
pub use owned_pages::{OwnedPages, MAX_ORDER};
pub use pool::PagePool;
pub use user::UserMapping;
