//! Interleaved A/B timing of every copy geometry against its memcpy ceiling, robust to a loaded
//! machine: each round times the ceiling and then the geometry, back to back, and the report
//! gives the minimum and median time of each and the median of the per-round ratios.
//! Timed regions are those of the criterion benchmarks (iterator construction excluded for
//! IOVEC, KVEC, BVEC and page list).
//!
//! `cargo run --profile bench -p iovstack-benches --example paired -- [rounds]`
use std::hint::black_box;
use std::time::Instant;

use bvec::Pfn;
use iov::{IovIter, Source};
use iovstack_benches::kunit::{self, Tables, CHUNK, NPAGES, TOTAL};
use iovstack_benches::tiled::{AlignedBuf, TiledMem};

/// What one timed run does.
#[derive(Clone, Copy)]
enum Run {
    /// A whole-loop function.
    Whole(fn(&mut TiledMem, &Tables, &mut [u8]) -> usize),
    /// Build an iterator (untimed), then drain it (timed).
    Drain(
        for<'t> fn(&'t Tables) -> Option<IovIter<'t, Pfn, Source>>,
        fn(&mut TiledMem, &mut IovIter<'_, Pfn, Source>, &mut [u8]) -> usize,
    ),
}

fn time(run: Run, mem: &mut TiledMem, t: &Tables, s: &mut [u8]) -> f64 {
    let (ns, moved) = match run {
        Run::Whole(f) => {
            let start = Instant::now();
            let moved = f(mem, black_box(t), s);
            (start.elapsed().as_nanos() as f64, moved)
        }
        Run::Drain(make, drain) => {
            let Some(mut it) = make(black_box(t)) else {
                panic!("tables rejected");
            };
            let start = Instant::now();
            let moved = drain(mem, &mut it, s);
            (start.elapsed().as_nanos() as f64, moved)
        }
    };
    assert_eq!(moved, TOTAL, "short copy");
    ns
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(31);
    let t = Tables::new(NPAGES);
    let mut mem = TiledMem::new(TOTAL);
    let mut scratch = AlignedBuf::new(CHUNK);
    let memcpy = Run::Whole(|m, t, s| kunit::memcpy_chunked(m, t.total, s));
    let memcpy_4k = Run::Whole(|m, _, s| kunit::memcpy_4k(m, NPAGES, s));
    let generic = Run::Drain(kunit::bvec_iter, |m, it, s| {
        kunit::copy_all_generic_step(m, it, s)
    });
    let dyn_step = Run::Drain(kunit::bvec_iter, |m, it, s| {
        kunit::copy_all_dyn_step(m, it, s)
    });
    let touch_generic = Run::Drain(kunit::bvec_iter, |m, it, _| {
        kunit::touch_all_generic_step(m, it)
    });
    let touch_dyn = Run::Drain(kunit::bvec_iter, |m, it, _| {
        kunit::touch_all_dyn_step(m, it)
    });
    let runs: [(&str, Run, Run); 10] = [
        (
            "ubuf",
            Run::Whole(|m, _, s| kunit::ubuf(m, NPAGES, s)),
            memcpy_4k,
        ),
        (
            "iovec",
            Run::Drain(kunit::iovec_iter, kunit::copy_all),
            memcpy,
        ),
        (
            "kvec",
            Run::Drain(kunit::kvec_iter, kunit::copy_all),
            memcpy,
        ),
        (
            "bvec",
            Run::Drain(kunit::bvec_iter, kunit::copy_all),
            memcpy,
        ),
        (
            "bvec_split",
            Run::Whole(|m, _, s| kunit::bvec_split(m, NPAGES, s)),
            memcpy,
        ),
        (
            "page_list",
            Run::Drain(kunit::page_list_iter, kunit::copy_all),
            memcpy,
        ),
        ("step_generic", generic, memcpy),
        ("step_dyn", dyn_step, memcpy),
        ("step_dyn/generic", dyn_step, generic),
        ("touch_dyn/generic", touch_dyn, touch_generic),
    ];
    println!("{rounds} rounds; ms per 256 MiB; ratio = median over rounds of run/ceiling");
    println!(
        "{:<18} {:>8} {:>8} {:>9} {:>9} {:>7} {:>7}",
        "run", "min", "median", "ceil min", "ceil med", "ratio", "min/min"
    );
    for (name, run, ceil) in runs {
        let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
        time(ceil, &mut mem, &t, scratch.as_mut_slice());
        time(run, &mut mem, &t, scratch.as_mut_slice());
        for _ in 0..rounds {
            let c = time(ceil, &mut mem, &t, scratch.as_mut_slice());
            let x = time(run, &mut mem, &t, scratch.as_mut_slice());
            a.push(x);
            b.push(c);
            r.push(x / c);
        }
        let amin = a.iter().copied().fold(f64::INFINITY, f64::min);
        let bmin = b.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{:<18} {:>8.3} {:>8.3} {:>9.3} {:>9.3} {:>7.3} {:>7.3}",
            name,
            amin / 1e6,
            median(&mut a) / 1e6,
            bmin / 1e6,
            median(&mut b) / 1e6,
            median(&mut r),
            amin / bmin
        );
    }
}
