//! Runs one copy geometry a few times, for `valgrind --tool=callgrind` or `perf` (no criterion).
//!
//! `cargo build --profile bench -p iovstack-benches --example profile_copy`, then
//! `valgrind --tool=callgrind target/release/examples/profile_copy bvec 4096 4`.
use std::hint::black_box;

use bvec::Pfn;
use iov::{IovIter, Source};
use iovstack_benches::kunit::{self, Tables, CHUNK};
use iovstack_benches::tiled::{AlignedBuf, TiledMem};

fn drain(mem: &mut TiledMem, it: Option<IovIter<'_, Pfn, Source>>, s: &mut [u8]) -> usize {
    it.map_or(0, |mut it| kunit::copy_all(mem, &mut it, s))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("bvec", String::as_str);
    let npages: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4);
    let t = Tables::new(npages);
    let mut mem = TiledMem::new(t.total);
    let mut scratch = AlignedBuf::new(CHUNK);
    let s = scratch.as_mut_slice();
    let mut moved = 0;
    for _ in 0..reps {
        moved += match name {
            "memcpy" => kunit::memcpy_chunked(&mem, t.total, s),
            "memcpy_4k" => kunit::memcpy_4k(&mem, npages, s),
            "ubuf" => kunit::ubuf(&mut mem, npages, s),
            "iovec" => drain(&mut mem, kunit::iovec_iter(black_box(&t)), s),
            "kvec" => drain(&mut mem, kunit::kvec_iter(black_box(&t)), s),
            "bvec" => drain(&mut mem, kunit::bvec_iter(black_box(&t)), s),
            "bvec_split" => kunit::bvec_split(&mut mem, npages, s),
            "page_list" => drain(&mut mem, kunit::page_list_iter(black_box(&t)), s),
            "generic" => kunit::bvec_iter(black_box(&t))
                .map_or(0, |mut it| kunit::copy_all_generic_step(&mem, &mut it, s)),
            "dyn" => kunit::bvec_iter(black_box(&t))
                .map_or(0, |mut it| kunit::copy_all_dyn_step(&mem, &mut it, s)),
            "touch_generic" => kunit::bvec_iter(black_box(&t))
                .map_or(0, |mut it| kunit::touch_all_generic_step(&mem, &mut it)),
            "touch_dyn" => kunit::bvec_iter(black_box(&t))
                .map_or(0, |mut it| kunit::touch_all_dyn_step(&mem, &mut it)),
            other => {
                eprintln!("unknown geometry {other}");
                std::process::exit(2);
            }
        };
    }
    println!("{name}: {moved} bytes in {reps} runs of {npages} pages");
}
