//! Runs one copy geometry a few times, for `valgrind --tool=callgrind` or `perf` (no criterion).
//!
//! `cargo build --profile bench -p iovstack-benches --example profile_copy`, then
//! `valgrind --tool=callgrind --toggle-collect='profile_copy::timed' \
//!   $CARGO_TARGET_DIR/release/examples/profile_copy bvec 4096 4`, or
//! `python3 benches/instr.py` for every geometry.
//!
//! Everything the criterion benchmark times happens inside [`timed`] (never inlined), and
//! nothing else does: iterators of the IOVEC, KVEC, BVEC and page-list geometries are built
//! before the call, as in the kernel benchmarks, so `--toggle-collect` on it counts exactly the
//! timed work.
use std::hint::black_box;

use bvec::Pfn;
use iov::{IovIter, Source};
use iovstack_benches::kunit::{self, Tables};
use iovstack_benches::tiled::{AlignedBuf, TiledMem};

/// Builds the iterator of the geometries that build it outside the timed region.
fn make<'t>(name: &str, t: &'t Tables) -> Option<IovIter<'t, Pfn, Source>> {
    match name {
        "iovec" => kunit::iovec_iter(t),
        "kvec" => kunit::kvec_iter(t),
        "bvec" | "generic" | "dyn" | "touch_generic" | "touch_dyn" => kunit::bvec_iter(t),
        "page_list" => kunit::page_list_iter(t),
        _ => None,
    }
}

/// The timed work of geometry `name` (the criterion benchmark's timed region).
#[inline(never)]
fn timed(
    name: &str,
    mem: &mut TiledMem,
    it: Option<&mut IovIter<'_, Pfn, Source>>,
    npages: usize,
    total: usize,
    s: &mut [u8],
) -> Option<usize> {
    Some(match (name, it) {
        ("memcpy", _) => kunit::memcpy_chunked(mem, total, s),
        ("memcpy_4k", _) => kunit::memcpy_4k(mem, npages, s),
        ("ubuf", _) => kunit::ubuf(mem, npages, s),
        ("bvec_split", _) => kunit::bvec_split(mem, npages, s),
        ("iovec" | "kvec" | "bvec" | "page_list", Some(it)) => kunit::copy_all(mem, it, s),
        ("generic", Some(it)) => kunit::copy_all_generic_step(mem, it, s),
        ("dyn", Some(it)) => kunit::copy_all_dyn_step(mem, it, s),
        ("touch_generic", Some(it)) => kunit::touch_all_generic_step(mem, it),
        ("touch_dyn", Some(it)) => kunit::touch_all_dyn_step(mem, it),
        _ => return None,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("bvec", String::as_str);
    let npages: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4);
    let t = Tables::new(npages);
    let mut mem = TiledMem::new(t.total);
    let mut scratch = AlignedBuf::new(kunit::CHUNK);
    let s = scratch.as_mut_slice();
    let mut moved = 0;
    for _ in 0..reps {
        let mut it = make(name, black_box(&t));
        let Some(n) = timed(name, &mut mem, it.as_mut(), npages, t.total, s) else {
            eprintln!("unknown geometry {name}");
            std::process::exit(2);
        };
        moved += n;
    }
    println!("{name}: {moved} bytes in {reps} runs of {npages} pages");
}
