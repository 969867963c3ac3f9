// SPDX-License-Identifier: GPL-2.0

//! Test-only kernel glue: checked page memory, a user mapping, and the kernel's own iterators.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! The differential self-test (`iovstack_selftest.ko`) runs the `bvec`, `iov` and `bio` crates
//! and the kernel's own functions over the same bytes. What it needs beyond the production glue
//! (`kernel_glue`) lives here, so the driver module (`rnvme.ko`) links none of it:
//!
//! - [`PagePool`]: a set of allocations whose pages are reached with `kmap_local_page`;
//! - [`UserMapping`]: an anonymous mapping in the current process (`vm_mmap`);
//! - [`CheckedMemory`]: pages, kernel buffers and a user mapping, every access range-checked;
//! - [`UserPins`]: pins on user pages (`pin_user_pages_fast`), released on drop;
//! - [`c_iov`], [`c_bvec`], [`c_bio`]: the kernel's own `struct iov_iter`, `struct bvec_iter`
//!   and `bio_split_rw_at`, for differential tests;
//! - [`c_split`]: a gendisk whose queue limits the kernel validates, and `bio_split_to_limits`
//!   on real bios;
//! - [`c_batch`]: the kernel's `blk_mq_add_to_batch()` beside the production glue's copy.
//!
//! Built by Kbuild only (see `rnvme/selftest/Kbuild`), which adds `#![no_std]` and the kernel's
//! lints.

mod helpers;
mod memory;
mod pins;
mod pool;
mod user;

pub mod c_batch;
pub mod c_bio;
pub mod c_bvec;
pub mod c_iov;
pub mod c_split;

pub use memory::CheckedMemory;
pub use pins::UserPins;
pub use pool::PagePool;
pub use user::UserMapping;
