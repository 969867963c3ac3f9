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
//! - [`params`]: C-declared module parameters; [`sched`]: `cond_resched`;
//! - for drivers: [`pci`] (driver registration by class, enable, bus mastering, DMA mask),
//!   [`io`] (bounds-checked MMIO on a BAR), [`irq`] (MSI-X/MSI/INTx vectors and handlers),
//!   [`sync`] and [`mutex`] (IRQ-safe spinlock, interruptible sleeping lock),
//!   [`dma`] (coherent buffers, pools, streaming mappings), [`block::mq`] (tag sets, requests
//!   with a PDU, disks), [`error`] (errno and `blk_status_t`), [`time`] (`msleep`).
//!
//! The wrappers only the differential self-test needs (checked page memory, a user mapping, the
//! kernel's own `iov_iter`/`bvec_iter`/bio split and `blk_mq_add_to_batch()`) are in the
//! `kernel_glue_testing` crate (`kernel-glue/testing/`), so the driver module links none of
//! them.
//!
//! Built by Kbuild only (see `rnvme/kbuild/crates.mk`), which adds `#![no_std]` and the kernel's
//! lints.

mod helpers;
mod kpage;
mod owned_pages;

pub mod block;
pub mod chardev;
pub mod completion;
pub mod debugfs;
pub mod dma;
pub mod error;
pub mod io;
pub mod irq;
pub mod mutex;
pub mod params;
pub mod pci;
pub mod premap;
pub mod sched;
pub mod sync;
pub mod time;
pub mod user_rq;

pub use kpage::{bio_vec_ptr, phys_follows, KPage};
pub use owned_pages::{OwnedPages, MAX_ORDER};
