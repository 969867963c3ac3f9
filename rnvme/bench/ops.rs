// SPDX-License-Identifier: GPL-2.0

//! Iterator construction, advance and `npages` on a registered-buffer-sized bvec table.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! An I/O on an io_uring registered buffer builds a BVEC iterator over the registration's page
//! table and advances it to the I/O's offset (io_uring/rsrc.c: `io_import_fixed`). The table
//! here has `table_mib * 256` entries of `{page, 4096, 0}` naming one page (a 1 GiB
//! registration cannot be allocated in the 2 GiB guest, and construction never touches the
//! pages). Each operation is repeated `reps` times per sample (`reps` calibrated per side so a
//! sample lasts at least [`MIN_SAMPLE_NS`]) and reported per operation.

use core::hint::black_box;

use bvec::Bvec;
use iov::{IovIter, Source};

use kernel_glue::KPage;
use kernel_glue_bench::{
    c_copy::{self, BvecOp, Timed},
    now_ns,
};

/// Shortest timed region a calibrated sample aims for (the clock's resolution under TCG can be
/// coarse).
pub(crate) const MIN_SAMPLE_NS: u64 = 2_000_000;
/// Most repetitions per sample.
const MAX_REPS: usize = 1 << 20;

/// An operation on the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Build an iterator over the whole table.
    Init,
    /// Build it and advance it to 3/4 of the table plus 512 bytes.
    InitAdvance,
    /// `npages` of an iterator over the whole table.
    Npages,
}

impl Op {
    /// Every operation, in the order they are printed.
    pub(crate) const ALL: [Op; 3] = [Op::Init, Op::InitAdvance, Op::Npages];

    /// Name in the output lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Init => "iter_init",
            Op::InitAdvance => "iter_init_advance",
            Op::Npages => "npages",
        }
    }
}

/// The table and what each operation is asked.
#[derive(Debug)]
pub(crate) struct Table<'t> {
    /// The bvec table.
    pub(crate) bvec: &'t [Bvec<KPage>],
    /// Bytes the iterators cover (the whole table).
    pub(crate) count: usize,
}

impl Table<'_> {
    /// Bytes [`Op::InitAdvance`] advances.
    pub(crate) fn skip(&self) -> usize {
        (self.count / 4 * 3).saturating_add(512).min(self.count)
    }

    /// `reps` x `op` through the kernel's functions (timed in C).
    pub(crate) fn c(&self, op: Op, reps: usize) -> Option<Timed> {
        let op = match op {
            Op::Init => BvecOp::Init,
            Op::InitAdvance => BvecOp::InitAdvance,
            Op::Npages => BvecOp::Npages,
        };
        c_copy::bvec_op(op, self.bvec, self.count, self.skip(), reps)
    }

    /// `reps` x `op` through our `iov` crate.
    pub(crate) fn rust(&self, op: Op, reps: usize) -> Option<Timed> {
        let (table, count, skip) = (self.bvec, self.count, self.skip());
        let mut acc = 0usize;
        let (t0, t1) = match op {
            Op::Init => {
                let t0 = now_ns();
                for _ in 0..reps {
                    let it = IovIter::<KPage, Source>::bvec(black_box(table), black_box(count));
                    acc = acc.wrapping_add(black_box(it.ok()?).count());
                }
                (t0, now_ns())
            }
            Op::InitAdvance => {
                let t0 = now_ns();
                for _ in 0..reps {
                    let mut it =
                        IovIter::<KPage, Source>::bvec(black_box(table), black_box(count)).ok()?;
                    it.advance(black_box(skip));
                    acc = acc.wrapping_add(black_box(&it).iov_offset() + it.nr_segs());
                }
                (t0, now_ns())
            }
            Op::Npages => {
                let it = IovIter::<KPage, Source>::bvec(table, count).ok()?;
                let t0 = now_ns();
                for _ in 0..reps {
                    acc = acc.wrapping_add(black_box(&it).npages(i32::MAX as usize));
                }
                (t0, now_ns())
            }
        };
        Some(Timed {
            ns: t1.saturating_sub(t0),
            copied: acc,
        })
    }
}

/// Repetitions per sample for `run`: multiplied by 4 from 1 until one run lasts at least
/// [`MIN_SAMPLE_NS`] (or [`MAX_REPS`]).
pub(crate) fn calibrate(mut run: impl FnMut(usize) -> Option<Timed>) -> Option<usize> {
    let mut reps = 1;
    loop {
        let t = run(reps)?;
        if t.ns >= MIN_SAMPLE_NS || reps >= MAX_REPS {
            return Some(reps);
        }
        reps *= 4;
    }
}
