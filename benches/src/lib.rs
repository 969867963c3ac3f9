//! Shared set-up for the criterion benchmarks of the bvec, iov and bio crates.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! - [`tiled`]: the benchmark memory, one 4 KiB page tiled over every address (iov-semantics
//!   §8.4), and page-aligned scratch buffers;
//! - [`kunit`]: the kunit iov_iter benchmark geometries (§8.3), direction SOURCE, with memcpy
//!   ceilings and the generic-vs-dyn step comparison;
//! - [`npages`]: the walk `iov_iter_npages` is compared against;
//! - [`bio_paths`]: bio construction (borrow vs copy) and PRP building (per I/O vs DMA tag).
//!
//! Everything is safe Rust; the timed code lives in `benches/main.rs`. Methodology and results
//! are in `BENCHMARKS.md`.
#![forbid(unsafe_code)]

pub mod bio_paths;
pub mod kunit;
pub mod npages;
pub mod tiled;
