// SPDX-License-Identifier: GPL-2.0

//! Self-test and differential test of the iovstack crates (bvec, iov, bio) on real kernel memory.
//!
//! At load time (in the context of the `insmod` process):
//!
//! 1. **smoke**: known-answer tests of page handles, kmap'd page memory, multipage bvec walks,
//!    `copy_to_iter`/`copy_from_iter` over bvecs and kvecs, and bio building and splitting, on
//!    pages from `alloc_pages` (order 0 to 3) and kmalloc'd buffers;
//! 2. **differential**: random cases (BVEC with multipage and page-straddling segments, KVEC with
//!    zero-length segments, UBUF and IOVEC over a `vm_mmap` user buffer, page lists against
//!    `ITER_FOLIOQ`), each run through the kernel's own `struct iov_iter` functions and through
//!    `iov::IovIter`, comparing every return value, every iterator state and the resulting memory
//!    (copies, advance/revert, the alignment and page-count queries, save/restore, and page
//!    extraction with real pins on user pages; see [`diff`]); plus `bvec_iter` cases comparing
//!    `bvec::BvecIter` with the kernel's `bio_advance_iter` and segment views;
//! 3. **bio-differential**: random segment tables and queue limits, split by `bio::split_rw_at`
//!    and by the kernel's `bio_split_rw_at` on a real `struct bio` (see [`bio_diff`] for what
//!    must be equal and the two documented deviations); then as many cases of queue-limit
//!    validation and of `bio_split_to_limits` on real bios and a real queue (reads, writes,
//!    discards, write-zeroes; see [`limits_diff`]), counted in the same summary line;
//! 4. **batch-differential**: every combination of the inputs of the kernel's
//!    `blk_mq_add_to_batch()` through it and through `kernel_glue`'s copy of it, which `rnvme.ko`
//!    runs for every completion it batches (see [`batch_diff`]).
//!
//! It prints `smoke: N checks, M failures`, `differential: N cases, M mismatches`,
//! `bio-differential: N cases, M mismatches`, `batch-differential: N cases, M mismatches` and
//! `selftest: PASS` or `selftest: FAIL`; on
//! failure `init` returns `-EINVAL`, so `insmod` fails.
//!
//! Parameters (declared in `params.c`): `inject_fault=1` corrupts one byte of one of our results
//! and one of our bio split and add-to-batch results (the run must then fail), `seed=` and
//! `cases=` choose the
//! random cases.
//!
//! This crate contains no `unsafe` code: everything that needs it is in `kernel-glue`.

use kernel::{c_str, prelude::*};
use kernel_glue::params::{param_bool, param_uint};

mod arena;
mod batch_diff;
mod bio_diff;
mod bvec_diff;
mod diff;
mod geometry;
mod limits_diff;
mod rng;
mod smoke;

module! {
    type: IovstackSelftest,
    name: "iovstack_selftest",
    author: "rnvme",
    description: "Self-test and differential test of the bvec/iov/bio crates",
    license: "GPL",
}

/// Default `iov_iter` differential cases; with the quarter as many `bvec_iter` cases the summary
/// line reports 10,000 (the value in `params.c` must be the same).
const DEFAULT_CASES: u32 = 8000;
/// Fewest differential cases for a meaningful run (the summary must say "thousands").
const MIN_CASES: usize = 1000;
/// Most bio split differential cases (`cases` is clamped to `MIN_CASES..=MAX_BIO_CASES`).
const MAX_BIO_CASES: usize = 2000;

struct IovstackSelftest;

impl kernel::Module for IovstackSelftest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let inject = param_bool(module, c_str!("inject_fault")).unwrap_or(false);
        let seed = param_uint(module, c_str!("seed")).unwrap_or(0x10f5eed);
        let cases = param_uint(module, c_str!("cases")).unwrap_or(DEFAULT_CASES) as usize;
        pr_info!("seed={:#x} cases={} inject_fault={}\n", seed, cases, inject);

        let smoke = smoke::run()?;
        pr_info!("smoke: {} checks, {} failures\n", smoke.run, smoke.failed);

        let diff = diff::run(u64::from(seed), cases, inject)?;
        let [b, k, u, i, f] = diff.per_kind;
        pr_info!(
            "differential kinds: iov_iter bvec {} kvec {} ubuf {} iovec {} folioq {}, bvec_iter {}; {} iov_iter operations, {} bytes moved, {} short copies, {} reverts, {} extractions ({} pinned from user memory), {} gap alignments, {} restores\n",
            b,
            k,
            u,
            i,
            f,
            diff.bvec_iter,
            diff.ops,
            diff.bytes,
            diff.short_copies,
            diff.reverts,
            diff.extracts,
            diff.pinned,
            diff.gaps,
            diff.restores
        );
        pr_info!(
            "differential: {} cases, {} mismatches\n",
            diff.cases,
            diff.mismatches
        );

        let split = bio_diff::run(
            u64::from(seed),
            cases.clamp(MIN_CASES, MAX_BIO_CASES),
            inject,
        )?;
        pr_info!(
            "bio-differential outcomes: {} whole, {} split, {} split with the kernel over-counting segments (documented), {} cannot split (kernel: no split; documented)\n",
            split.whole,
            split.front,
            split.overcount,
            split.cannot_split
        );
        pr_info!(
            "bio-differential: {} cases, {} mismatches\n",
            split.cases,
            split.mismatches
        );

        let batch = batch_diff::run(inject)?;
        pr_info!(
            "batch-differential outcomes: {} added to the batch, {} refused\n",
            batch.added,
            batch.cases - batch.added
        );
        pr_info!(
            "batch-differential: {} cases, {} mismatches\n",
            batch.cases,
            batch.mismatches
        );

        let pass = smoke.failed == 0
            && diff.mismatches == 0
            && diff.cases >= cases.min(MIN_CASES)
            && diff.per_kind.iter().all(|&n| n > 0)
            && (cases < MIN_CASES || (diff.pinned > 0 && diff.gaps > 0 && diff.restores > 0))
            && split.mismatches == 0
            && split.cases >= MIN_CASES
            && split.whole > 0
            && split.front > 0
            && split.cannot_split > 0
            && batch.mismatches == 0
            && batch.added > 0
            && batch.added < batch.cases;
        if pass {
            pr_info!("selftest: PASS\n");
            Ok(Self)
        } else {
            pr_err!("selftest: FAIL\n");
            Err(EINVAL)
        }
    }
}
