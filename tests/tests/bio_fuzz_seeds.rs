//! Seed corpora of the bio fuzz targets (`bio_split`, `prp_build`): every generated seed runs
//! cleanly and is committed under `fuzz/corpus/<target>/` (replayed by `fuzz_corpus.rs`).
//!
//! Regenerate with
//! `cargo test -p iovstack-tests --test bio_fuzz_seeds -- --ignored write_bio_seed_corpus`.

use std::fs;
use std::path::{Path, PathBuf};

use iovstack_tests::fuzz;

/// A target: its name, its `run`, and its generated seeds.
type Target = (&'static str, fn(&[u8]), Vec<Vec<u8>>);

fn seeds() -> [Target; 2] {
    [
        ("bio_split", fuzz::bio_split::run, fuzz::bio_split::seeds()),
        ("prp_build", fuzz::prp_build::run, fuzz::prp_build::seeds()),
    ]
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name)
}

#[test]
fn bio_seeds_run_and_are_committed() {
    for (name, run, seeds) in seeds() {
        for s in &seeds {
            run(s);
        }
        let committed = fs::read_dir(corpus(name)).map(|d| d.count()).unwrap_or(0);
        assert!(
            committed >= seeds.len(),
            "fuzz/corpus/{name} has {committed} files, fewer than the {} generated seeds",
            seeds.len()
        );
    }
}

#[test]
#[ignore = "writes fuzz/corpus/{bio_split,prp_build}; run by hand after changing the seeds"]
fn write_bio_seed_corpus() {
    for (name, _, seeds) in seeds() {
        let dir = corpus(name);
        fs::create_dir_all(&dir).expect("create corpus dir");
        for (i, s) in seeds.iter().enumerate() {
            fs::write(dir.join(format!("seed-{i:03}")), s).expect("write seed");
        }
    }
}
