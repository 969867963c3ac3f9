// SPDX-License-Identifier: GPL-2.0

//! Iterator construction, advance, `npages` and I/O import on a registered-buffer-sized table.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! An I/O on an io_uring registered buffer builds a BVEC iterator over the registration's page
//! table and advances it to the I/O's offset (io_uring/rsrc.c: `io_import_fixed`). Our side
//! checks the table once, untimed, as registration does (`iov::BvecTable::new`, O(entries), like
//! io_uring/rsrc.c `io_sqe_buffer_register()` walking the pages), and builds every iterator from
//! that checked table (`IovIter::bvec_checked`, `IovIter::import_fixed`). The table
//! here has `table_mib * 256` entries of `{page, 4096, 0}` naming one page (a 1 GiB
//! registration cannot be allocated in the 2 GiB guest, and construction never touches the
//! pages). Each operation is repeated `reps` times per sample (`reps` calibrated per side so a
//! sample lasts at least [`MIN_SAMPLE_NS`]) and reported per operation.
//!
//! Both loops see the same inputs and do the same work around the operation: one loop per
//! operation (no dispatch inside it), the sizes as loop-invariant values (in C, the helper's
//! arguments), and the table read afresh in every repetition (the registration or checked table
//! escapes once before the loop, and each repetition ends with an opaque use of its result that
//! may write any escaped memory: C's `barrier_data()`, Rust's `black_box`), so neither compiler
//! can hoist an operation out of its loop.

use core::hint::black_box;

use bvec::Bvec;
use iov::{BvecTable, IovIter, Source};

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
    /// A 128 KiB I/O at the advance offset, imported as io_uring imports a registered buffer:
    /// the kernel as io_uring/rsrc.c:io_import_fixed() (an iterator over the table from its
    /// start, whole entries skipped by arithmetic), ours with `IovIter::import_fixed` on the
    /// checked table (the same arithmetic).
    FixedImport,
}

impl Op {
    /// Every operation, in the order they are printed.
    pub(crate) const ALL: [Op; 4] = [Op::Init, Op::InitAdvance, Op::Npages, Op::FixedImport];

    /// Name in the output lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Init => "iter_init",
            Op::InitAdvance => "iter_init_advance",
            Op::Npages => "npages",
            Op::FixedImport => "fixed_io_128k",
        }
    }
}

/// Bytes of the [`Op::FixedImport`] I/O.
pub(crate) const IO_LEN: usize = 128 * 1024;

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

    /// Byte offset of the [`Op::FixedImport`] I/O: the advance offset, moved back so the I/O
    /// fits the table.
    pub(crate) fn import_skip(&self) -> usize {
        self.skip().min(self.count.saturating_sub(IO_LEN))
    }

    /// `reps` x `op` through the kernel's functions (timed in C).
    pub(crate) fn c(&self, op: Op, reps: usize) -> Option<Timed> {
        let (op, count, skip) = match op {
            Op::Init => (BvecOp::Init, self.count, self.skip()),
            Op::InitAdvance => (BvecOp::InitAdvance, self.count, self.skip()),
            Op::Npages => (BvecOp::Npages, self.count, self.skip()),
            Op::FixedImport => (BvecOp::FixedImport, IO_LEN, self.import_skip()),
        };
        c_copy::bvec_op(op, self.bvec, count, skip, reps)
    }

    /// `reps` x `op` through our `iov` crate, on the table checked once (untimed) as a
    /// registration would.
    pub(crate) fn rust(&self, op: Op, reps: usize) -> Option<Timed> {
        let reg = BvecTable::new(self.bvec).ok()?;
        // The checked table escapes here, so each repetition's `black_box` of its result (an
        // opaque use that may write any escaped memory, as C's `barrier_data()`) makes the next
        // repetition read the table again.
        black_box(&reg);
        let (count, skip) = (self.count, self.skip());
        let mut acc = 0usize;
        let (t0, t1) = match op {
            Op::Init => {
                let t0 = now_ns();
                for _ in 0..reps {
                    let it = IovIter::<KPage, Source>::bvec_checked(&reg, count);
                    acc = acc.wrapping_add(black_box(it.ok()?).count());
                }
                (t0, now_ns())
            }
            Op::InitAdvance => {
                let t0 = now_ns();
                for _ in 0..reps {
                    let mut it = IovIter::<KPage, Source>::bvec_checked(&reg, count).ok()?;
                    it.advance(skip);
                    acc = acc.wrapping_add(black_box(&it).iov_offset().wrapping_add(it.nr_segs()));
                }
                (t0, now_ns())
            }
            Op::FixedImport => {
                let skip = self.import_skip();
                let t0 = now_ns();
                for _ in 0..reps {
                    let it = IovIter::<KPage, Source>::import_fixed(&reg, skip, IO_LEN).ok()?;
                    let it = black_box(&it);
                    // Wrapping, as the C loop's unsigned sum (no overflow-check branches).
                    let sum = it.iov_offset().wrapping_add(it.nr_segs());
                    acc = acc.wrapping_add(sum.wrapping_add(it.count()));
                }
                (t0, now_ns())
            }
            Op::Npages => {
                let it = IovIter::<KPage, Source>::bvec_checked(&reg, count).ok()?;
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
