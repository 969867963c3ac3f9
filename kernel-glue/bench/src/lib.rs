// SPDX-License-Identifier: GPL-2.0

//! Benchmark-only kernel glue: the memory the in-kernel iov benchmark copies through, and the
//! kernel's own `iov_iter` copies as timed C loops.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! `iovstack_bench.ko` (`rnvme/bench/`) copies the same bytes with the kernel's exported
//! `iov_iter` functions and with the `iov` crate, in the same boot. What it needs beyond the
//! production glue (`kernel_glue`) lives here, so neither the driver nor the self-test links it:
//!
//! - [`BenchPage`], [`TiledVmap`]: one page mapped many times in a row (`vmap`), the source and
//!   destination of the kunit iov_iter benchmarks;
//! - [`UserMapping`]: an anonymous mapping in the loading process (`vm_mmap`), the test glue's
//!   (`kernel_glue_testing`), re-exported;
//! - [`BenchMemory`]: [`iov::Memory`] over those, checked with one compare per access;
//! - [`CFolioQueue`]: a `folio_queue` chain over the tiled page (`ITER_FOLIOQ`);
//! - [`c_copy`]: the C side's timed loops, and [`now_ns`] the clock both sides use.
//!
//! Built by Kbuild only (see `rnvme/bench/Kbuild`), which adds `#![no_std]` and the kernel's
//! lints.

mod clock;
mod folioq;
mod helpers;
mod memory;
mod page;
mod tiled;

pub mod c_copy;

pub use clock::now_ns;
pub use folioq::CFolioQueue;
pub use memory::BenchMemory;
pub use page::BenchPage;
pub use tiled::TiledVmap;
pub use kernel_glue_testing::UserMapping;
