//! criterion entry point: iov copy geometries, step dispatch, npages, bio construction and PRPs.
//!
//! Run with `cargo bench -p iovstack-benches` (add a filter such as `iov/copy_from_iter` to run
//! one group). Methodology and results: `BENCHMARKS.md`.
use std::hint::black_box;
use std::time::Duration;

use bio::{Bio, BvecArray, LimitsConfig, Op, QueueLimits};
use bvec::{Pfn, PAGE_SIZE};
use criterion::{criterion_main, BatchSize, Criterion, Throughput};
use iov::{IovIter, Source};
use iovstack_benches::bio_paths::{
    bio_borrow, bio_copy, fixed_buffer_bio, prps_from_tag, prps_per_io, scattered_table, tag_pages,
    FIXED_1G_ENTRIES, MAX_SG,
};
use iovstack_benches::kunit::{self, Tables, CHUNK, NPAGES, PAGE_BVEC, TOTAL};
use iovstack_benches::npages::{ragged_table, table_bytes, walk_npages};
use iovstack_benches::tiled::{AlignedBuf, TiledMem};
use nvme::{DmaSegment, PremappedPages, PrpListPage, PrpLists};

/// Refuses to time a benchmark whose work is not the whole 256 MiB.
fn expect_total(name: &str, moved: usize) {
    assert_eq!(
        moved, TOTAL,
        "{name} moved {moved} bytes instead of {TOTAL}"
    );
}

/// Builds one geometry's iterator over prepared tables.
type MakeIter = for<'t> fn(&'t Tables) -> Option<IovIter<'t, Pfn, Source>>;

/// Builds an iterator, refusing to benchmark if the tables are rejected.
fn make<'t>(name: &str, f: MakeIter, t: &'t Tables) -> IovIter<'t, Pfn, Source> {
    f(t).unwrap_or_else(|| panic!("{name}: tables rejected"))
}

/// The 256 MiB settings: 10 samples, 1 s warm-up, 6 s measurement, throughput in bytes.
fn big(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.throughput(Throughput::Bytes(TOTAL as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
}

/// The kunit geometries (§8.3), each moving 256 MiB out of the iterator, plus the ceilings.
/// IOVEC, KVEC, BVEC and page list time the copy only (the kernel builds the iterator before
/// reading the clock); UBUF and bvec_split time the whole loop, iterator set-up included.
fn copy_from_iter(c: &mut Criterion) {
    let t = Tables::new(NPAGES);
    let mut mem = TiledMem::new(TOTAL);
    let mut scratch = AlignedBuf::new(CHUNK);
    type Run = fn(&mut TiledMem, &Tables, &mut [u8]) -> usize;
    let whole: [(&str, Run); 4] = [
        ("memcpy_4k", |m, _, s| kunit::memcpy_4k(m, NPAGES, s)),
        ("ubuf", |m, _, s| kunit::ubuf(m, NPAGES, s)),
        ("memcpy", |m, t, s| kunit::memcpy_chunked(m, t.total, s)),
        ("bvec_split", |m, _, s| kunit::bvec_split(m, NPAGES, s)),
    ];
    let iters: [(&str, MakeIter); 4] = [
        ("iovec", kunit::iovec_iter),
        ("kvec", kunit::kvec_iter),
        ("bvec", kunit::bvec_iter),
        ("page_list", kunit::page_list_iter),
    ];
    let mut g = c.benchmark_group("iov/copy_from_iter");
    big(&mut g);
    for (name, run) in whole {
        expect_total(name, run(&mut mem, &t, scratch.as_mut_slice()));
        g.bench_function(name, |b| {
            b.iter(|| run(&mut mem, black_box(&t), scratch.as_mut_slice()))
        });
    }
    for (name, f) in iters {
        let moved = kunit::copy_all(&mut mem, &mut make(name, f, &t), scratch.as_mut_slice());
        expect_total(name, moved);
        g.bench_function(name, |b| {
            b.iter_batched_ref(
                || make(name, f, black_box(&t)),
                |it| kunit::copy_all(&mut mem, it, scratch.as_mut_slice()),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// The same BVEC copy with the step monomorphised into the engine and through `dyn Step`; then
/// the same walk with a step that touches one byte per page (dispatch-bound).
fn step_dispatch(c: &mut Criterion) {
    let t = Tables::new(NPAGES);
    let mem = TiledMem::new(TOTAL);
    let mut scratch = AlignedBuf::new(CHUNK);
    type Drain = fn(&TiledMem, &mut IovIter<'_, Pfn, Source>, &mut [u8]) -> usize;
    let runs: [(&str, Drain); 2] = [
        ("bvec_generic", kunit::copy_all_generic_step),
        ("bvec_dyn", kunit::copy_all_dyn_step),
    ];
    let mut g = c.benchmark_group("iov/step");
    big(&mut g);
    for (name, run) in runs {
        let mut it = make(name, kunit::bvec_iter, &t);
        expect_total(name, run(&mem, &mut it, scratch.as_mut_slice()));
        g.bench_function(name, |b| {
            b.iter_batched_ref(
                || make(name, kunit::bvec_iter, black_box(&t)),
                |it| run(&mem, it, scratch.as_mut_slice()),
                BatchSize::PerIteration,
            )
        });
    }
    type Touch = fn(&TiledMem, &mut IovIter<'_, Pfn, Source>) -> usize;
    let touch: [(&str, Touch); 2] = [
        ("bvec_touch_generic", kunit::touch_all_generic_step),
        ("bvec_touch_dyn", kunit::touch_all_dyn_step),
    ];
    for (name, run) in touch {
        expect_total(name, run(&mem, &mut make(name, kunit::bvec_iter, &t)));
        g.bench_function(name, |b| {
            b.iter_batched_ref(
                || make(name, kunit::bvec_iter, black_box(&t)),
                |it| run(&mem, it),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// Iterator construction over 65,536 segments (outside the copy benchmarks' timed region).
fn iter_init(c: &mut Criterion) {
    let t = Tables::new(NPAGES);
    let iters: [(&str, MakeIter); 3] = [
        ("iovec65536", kunit::iovec_iter),
        ("bvec65536", kunit::bvec_iter),
        ("page_list65536", kunit::page_list_iter),
    ];
    let mut g = c.benchmark_group("iov/iter_init");
    small(&mut g);
    for (name, f) in iters {
        g.bench_function(name, |b| b.iter(|| f(black_box(&t)).map(|it| it.count())));
    }
    g.finish();
}

/// The small-benchmark settings: 20 samples, 0.3 s warm-up, 1 s measurement.
fn small(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
}

/// `npages` on a 65,536-segment BVEC iterator positioned 100 bytes in.
fn npages(c: &mut Criterion) {
    let uniform = vec![PAGE_BVEC; NPAGES];
    let ragged = ragged_table(NPAGES);
    let make = |table| {
        let mut it = IovIter::<Pfn, Source>::bvec(table, table_bytes(table)).ok()?;
        it.advance(100);
        Some(it)
    };
    let (Some(u), Some(r)) = (make(&uniform), make(&ragged)) else {
        panic!("benchmark tables rejected");
    };
    let mut g = c.benchmark_group("iov/npages");
    small(&mut g);
    g.bench_function("bvec65536/crate_o1", |b| {
        b.iter(|| black_box(&u).npages(black_box(usize::MAX)))
    });
    g.bench_function("bvec65536/walk", |b| {
        b.iter(|| {
            let it = black_box(&u);
            let (rest, skip) = it.bvec_table().unwrap_or((&[], 0));
            walk_npages(rest, skip, it.count(), black_box(usize::MAX))
        })
    });
    g.bench_function("bvec65536/crate_ragged_walk", |b| {
        b.iter(|| black_box(&r).npages(black_box(usize::MAX)))
    });
    g.finish();
}

/// Bio from a BVEC iterator: borrowing its table vs copying it, by segment count.
fn bio_from_bvec_iter(c: &mut Criterion) {
    let lim = QueueLimits::new(&LimitsConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut mem = TiledMem::new(1 << 30);
    let mut storage = BvecArray::<Pfn, 256>::new(PAGE_BVEC);
    let mut pages = [Pfn(0); 256];
    let mut g = c.benchmark_group("bio/from_bvec_iter");
    small(&mut g);
    for nsegs in [1usize, 8, 16, 64, 128, 256] {
        let table = scattered_table(nsegs);
        let len = nsegs * PAGE_SIZE;
        let it = IovIter::<Pfn, Source>::bvec(&table, len).unwrap_or_else(|e| panic!("{e}"));
        let sizes = (
            bio_borrow(&it).map(|b| b.size()),
            bio_copy(&it, storage.as_mut_slice(), &mut pages, &lim, &mut mem).map(|b| b.size()),
        );
        assert_eq!(
            sizes,
            (Some(len as u32), Some(len as u32)),
            "{nsegs} segments"
        );
        g.bench_function(format!("borrow/{nsegs}"), |b| {
            b.iter(|| bio_borrow(black_box(&it)).map(|b| black_box(b).size()))
        });
        g.bench_function(format!("borrow_with_iter_init/{nsegs}"), |b| {
            b.iter(|| {
                let it = IovIter::<Pfn, Source>::bvec(black_box(&table), len).ok()?;
                bio_borrow(&it).map(|b| black_box(b).size())
            })
        });
        g.bench_function(format!("copy/{nsegs}"), |b| {
            b.iter(|| {
                bio_copy(
                    black_box(&it),
                    storage.as_mut_slice(),
                    &mut pages,
                    &lim,
                    &mut mem,
                )
                .map(|b| black_box(b).size())
            })
        });
    }
    g.finish();
}

/// An I/O on an io_uring fixed buffer: build the BVEC iterator over the I/O's entries of the
/// registration's table, then borrow it into a bio. The 1 GiB registration (262,144 entries) is
/// timed against a 32-entry one (128 KiB, the smallest holding a 128 KiB I/O); the I/O starts in
/// the middle of the registration.
fn bio_fixed_buffer(c: &mut Criterion) {
    let big_reg = scattered_table(FIXED_1G_ENTRIES);
    let small_reg = scattered_table(32);
    let mut g = c.benchmark_group("bio/fixed_buffer");
    small(&mut g);
    for (reg_name, table) in [("", &big_reg), ("small_reg/", &small_reg)] {
        for (io_name, io_len) in [("4k", 4096usize), ("128k", 128 * 1024)] {
            let start = (table.len() - io_len / PAGE_SIZE) / 2;
            let size = fixed_buffer_bio(table, start, io_len).map(|b| b.size() as usize);
            assert_eq!(size, Some(io_len), "{reg_name}{io_name}");
            g.bench_function(format!("{reg_name}{io_name}"), |b| {
                b.iter(|| {
                    fixed_buffer_bio(black_box(table), black_box(start), black_box(io_len))
                        .map(|b| black_box(b).size())
                })
            });
        }
    }
    g.finish();
}

/// NVMe PRPs: mapping the request per I/O vs arithmetic on a premapped DMA tag.
fn prps(c: &mut Criterion) {
    let lim = QueueLimits::new(&LimitsConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut list_pages: [PrpListPage; 1] = [[0; 512]];
    let list_dma = [0x8000_0000u64];
    let mut sg = [(0u64, 0u32); MAX_SG];
    let mut dma = [DmaSegment::new(0, 0); MAX_SG];
    let mut g = c.benchmark_group("bio/prps");
    small(&mut g);
    for kib in [4usize, 16, 64, 128] {
        let npages = kib * 1024 / PAGE_SIZE;
        let len = (kib * 1024) as u32;
        let table = scattered_table(npages);
        let bio = Bio::from_table(Op::Write, 0, &table, len).unwrap_or_else(|e| panic!("{e}"));
        let tag_table = tag_pages(&table);
        let tag =
            PremappedPages::new(&tag_table, 0, u64::from(len)).unwrap_or_else(|e| panic!("{e}"));
        g.bench_function(format!("per_io/{kib}K"), |b| {
            b.iter(|| {
                let mut lists = PrpLists::new(&mut list_pages, &list_dma).ok()?;
                prps_per_io(black_box(&bio), &lim, &mut sg, &mut dma, &mut lists)
            })
        });
        g.bench_function(format!("tag/{kib}K"), |b| {
            b.iter(|| {
                let mut lists = PrpLists::new(&mut list_pages, &list_dma).ok()?;
                prps_from_tag(black_box(&tag), black_box(len), &mut lists)
            })
        });
    }
    g.finish();
}

/// The benchmark list (`criterion_group!` makes an undocumented `pub fn`, hence the module).
mod group {
    #![allow(missing_docs)]
    use super::{
        bio_fixed_buffer, bio_from_bvec_iter, copy_from_iter, iter_init, npages, prps,
        step_dispatch,
    };
    criterion::criterion_group!(
        benches,
        copy_from_iter,
        step_dispatch,
        iter_init,
        npages,
        bio_from_bvec_iter,
        bio_fixed_buffer,
        prps
    );
}
criterion_main!(group::benches);
