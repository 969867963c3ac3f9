//! Interleaved timing of every copy geometry against its memcpy ceiling, robust to a loaded
//! machine: each round times the ceiling and the geometry back to back (the order alternating
//! from round to round), so load that comes and goes hits both sides of a round alike; the
//! report gives, per geometry, the median of the per-round ratios, their spread, and the load.
//!
//! `cargo run --profile bench -p iovstack-benches --example paired -- [rounds] [geometry ...]`
//!
//! Timed regions are those of the criterion benchmarks (iterator construction excluded for
//! IOVEC, KVEC, BVEC and page list), over `PAIRED_PAGES` pages (default 65,536, the kunit
//! 256 MiB; a multiple of 64). On a shared machine a 256 MiB run (4-8 ms) is often preempted,
//! so every timed run also reads this thread's context-switch count (`/proc/thread-self/schedstat`,
//! third field) before and after: a round counts only if neither of its two runs was switched
//! out, and is retried otherwise (up to [`ATTEMPTS`] times; then the round is counted as `dirty`,
//! written to the CSV and left out of the statistics). Smaller
//! `PAIRED_PAGES` (16,384 = 64 MiB, about 1 ms) make clean rounds likelier under load.
//!
//! Columns: `median` and `ceil med` the median run and ceiling times, `ratio` the median
//! per-round ratio, `p10`/`p90` the 10th and 90th percentiles of the per-round ratios,
//! `min/min` the best run time over the best ceiling time, `retry` the preempted attempts
//! discarded, `dirty` the rounds left out because every attempt was preempted, `load` the 1-minute load average (`/proc/loadavg`) read before and after every
//! round, as min-max over the rounds. With `PAIRED_CSV=path`, every round is also written there
//! (geometry, round, ceiling ns, geometry ns, load before, load after, attempts, clean).
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use bvec::{Pfn, PAGE_SIZE};
use iov::{IovIter, Source};
use iovstack_benches::kunit::{self, Tables, CHUNK, NPAGES};
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

/// Attempts per round before a preempted one is kept anyway.
const ATTEMPTS: usize = 10;

/// This thread's context-switch-in count (`pcount`, third field of `/proc/thread-self/schedstat`),
/// `None` if unavailable.
fn switches() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Times one run: nanoseconds, and whether it ran without being switched out.
fn time(run: Run, mem: &mut TiledMem, t: &Tables, s: &mut [u8]) -> (f64, bool) {
    let before = switches();
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
    let clean = before.is_some() && switches() == before;
    assert_eq!(moved, t.total, "short copy");
    (ns, clean)
}

/// One round: the ceiling and the run back to back, `ceil_first` choosing the order, retried
/// until neither was switched out (at most [`ATTEMPTS`]). Returns (ceiling ns, run ns, attempts,
/// clean).
fn round(
    run: Run,
    ceil: Run,
    ceil_first: bool,
    mem: &mut TiledMem,
    t: &Tables,
    s: &mut [u8],
) -> (f64, f64, usize, bool) {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let ((c, c_ok), (x, x_ok)) = if ceil_first {
            let c = time(ceil, mem, t, s);
            (c, time(run, mem, t, s))
        } else {
            let x = time(run, mem, t, s);
            (time(ceil, mem, t, s), x)
        };
        if (c_ok && x_ok) || attempts >= ATTEMPTS {
            return (c, x, attempts, c_ok && x_ok);
        }
    }
}

/// The 1-minute load average, NaN if `/proc/loadavg` cannot be read.
fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The `q` quantile (0..=1, nearest rank) of `v`, sorting it.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len().saturating_sub(1)) as f64 * q).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(31);
    let only: Vec<String> = args.collect();
    let npages: usize = std::env::var("PAIRED_PAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(NPAGES);
    assert!(
        npages > 0 && npages % 64 == 0,
        "PAIRED_PAGES must be a multiple of 64"
    );
    let t = Tables::new(npages);
    let mut mem = TiledMem::new(t.total);
    let mut scratch = AlignedBuf::new(CHUNK);
    let memcpy = Run::Whole(|m, t, s| kunit::memcpy_chunked(m, t.total, s));
    let memcpy_4k = Run::Whole(|m, t, s| kunit::memcpy_4k(m, t.total / PAGE_SIZE, s));
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
            Run::Whole(|m, t, s| kunit::ubuf(m, t.total / PAGE_SIZE, s)),
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
            Run::Whole(|m, t, s| kunit::bvec_split(m, t.total / PAGE_SIZE, s)),
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
    let mut csv = String::new();
    println!(
        "{rounds} rounds; ms per {} MiB; ratio = median over rounds of run/ceiling",
        t.total >> 20
    );
    println!(
        "{:<18} {:>8} {:>8} {:>8} {:>7} {:>6} {:>6} {:>7} {:>5} {:>5} {:>9}",
        "run",
        "median",
        "ceil med",
        "min",
        "ratio",
        "p10",
        "p90",
        "min/min",
        "retry",
        "dirty",
        "load"
    );
    for (name, run, ceil) in runs {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let (mut a, mut b, mut r, mut loads) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut retries, mut dirty) = (0, 0);
        round(run, ceil, true, &mut mem, &t, scratch.as_mut_slice());
        for i in 0..rounds {
            let before = load();
            let (c, x, attempts, clean) =
                round(run, ceil, i % 2 == 0, &mut mem, &t, scratch.as_mut_slice());
            let after = load();
            retries += attempts - 1;
            loads.extend([before, after]);
            if !clean {
                // Kept in the CSV, left out of the statistics: a switched-out run measures
                // the neighbours.
                dirty += 1;
            } else {
                a.push(x);
                b.push(c);
                r.push(x / c);
            }
            let _ = writeln!(
                csv,
                "{name},{i},{c:.0},{x:.0},{before},{after},{attempts},{clean}"
            );
        }
        let (amin, _) = min_max(&a);
        let (bmin, _) = min_max(&b);
        let (lmin, lmax) = min_max(&loads);
        println!(
            "{:<18} {:>8.3} {:>8.3} {:>8.3} {:>7.3} {:>6.3} {:>6.3} {:>7.3} {:>5} {:>5} {:>4.2}-{:<4.2}",
            name,
            quantile(&mut a, 0.5) / 1e6,
            quantile(&mut b, 0.5) / 1e6,
            amin / 1e6,
            quantile(&mut r, 0.5),
            quantile(&mut r, 0.1),
            quantile(&mut r, 0.9),
            amin / bmin,
            retries,
            dirty,
            lmin,
            lmax
        );
    }
    if let Ok(path) = std::env::var("PAIRED_CSV") {
        let head = "geometry,round,ceiling_ns,geometry_ns,load_before,load_after,attempts,clean\n";
        if let Err(e) = std::fs::write(&path, format!("{head}{csv}")) {
            eprintln!("{path}: {e}");
        }
    }
}
