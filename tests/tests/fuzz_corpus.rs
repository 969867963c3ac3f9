//! Replays every file of every `fuzz/corpus/<target>/` directory through that target's `run`, on
//! stable, so the fuzz oracles run in every `cargo test`.
//!
//! To add a fuzz target, add one line to [`TARGETS`]. A corpus directory or a
//! `fuzz/fuzz_targets/*.rs` file without an entry there fails [`every_target_is_registered`].
//!
//! Regenerate the bvec seed corpora with
//! `cargo test -p iovstack-tests --test fuzz_corpus -- --ignored write_bvec_seed_corpus`.

use std::fs;
use std::path::{Path, PathBuf};

use iovstack_tests::fuzz;

/// A fuzz target's entry point.
type RunFn = fn(&[u8]);

/// Fuzz target name (directory under `fuzz/corpus`, file under `fuzz/fuzz_targets`) → its `run`.
const TARGETS: &[(&str, RunFn)] = &[
    ("bvec_advance", fuzz::bvec_advance::run),
    ("bvec_split", fuzz::bvec_split::run),
    ("bio_split", fuzz::bio_split::run),
    ("prp_build", fuzz::prp_build::run),
    ("iov_ops", fuzz::iov_ops::run),
    ("nvme_completion", fuzz::nvme_completion::run),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn target(name: &str) -> Option<RunFn> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Names of the entries of `dir` (file stems when `ext` is given), sorted; empty if it is missing.
fn names(dir: &Path, ext: Option<&str>) -> Vec<String> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)))
        .filter_map(|p| {
            let name = if ext.is_some() {
                p.file_stem()
            } else {
                p.file_name()
            };
            name.map(|n| n.to_string_lossy().into_owned())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_target_is_registered() {
    let dir = fuzz_dir();
    for name in names(&dir.join("corpus"), None) {
        assert!(
            target(&name).is_some(),
            "fuzz/corpus/{name} has no entry in TARGETS (tests/tests/fuzz_corpus.rs)"
        );
    }
    for name in names(&dir.join("fuzz_targets"), Some("rs")) {
        assert!(
            target(&name).is_some(),
            "fuzz/fuzz_targets/{name}.rs has no entry in TARGETS (tests/tests/fuzz_corpus.rs)"
        );
    }
}

#[test]
fn replay_corpus() {
    let corpus = fuzz_dir().join("corpus");
    let mut replayed = 0;
    for name in names(&corpus, None) {
        let Some(run) = target(&name) else {
            continue; // reported by `every_target_is_registered`
        };
        for file in names(&corpus.join(&name), None) {
            let path = corpus.join(&name).join(&file);
            let data = match fs::read(&path) {
                Ok(data) => data,
                // A fuzzer running in that directory right now may have merged the file away.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => panic!("{}: {e}", path.display()),
            };
            run(&data);
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no corpus files under {}", corpus.display());
}

#[test]
fn bvec_seeds_run_and_are_committed() {
    let corpus = fuzz_dir().join("corpus");
    for (name, seeds) in bvec_seeds() {
        let run = target(name).expect("bvec targets are registered");
        let committed = names(&corpus.join(name), None).len();
        assert!(
            committed >= seeds.len(),
            "fuzz/corpus/{name} has {committed} files, fewer than the {} generated seeds",
            seeds.len()
        );
        for s in &seeds {
            run(s);
        }
    }
}

fn bvec_seeds() -> [(&'static str, Vec<Vec<u8>>); 2] {
    [
        ("bvec_advance", fuzz::bvec_advance::seeds()),
        ("bvec_split", fuzz::bvec_split::seeds()),
    ]
}

#[test]
#[ignore = "writes fuzz/corpus/bvec_*; run by hand after changing the input format or seeds"]
fn write_bvec_seed_corpus() {
    for (name, seeds) in bvec_seeds() {
        let dir = fuzz_dir().join("corpus").join(name);
        fs::create_dir_all(&dir).expect("create corpus dir");
        for (i, s) in seeds.iter().enumerate() {
            fs::write(dir.join(format!("seed-{i:03}")), s).expect("write seed");
        }
    }
}
