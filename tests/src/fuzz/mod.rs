//! Fuzz logic, shared by the cargo-fuzz targets (`fuzz/fuzz_targets/<target>.rs`, nightly) and the
//! stable replay test `tests/tests/fuzz_corpus.rs`.
//!
//! Every target is a `pub fn run(data: &[u8])` that decodes the bytes by hand (no `arbitrary`)
//! into a table and an operation sequence, and panics when an invariant breaks. Any input is
//! valid: missing bytes read as zero.

pub mod bio_split;
pub mod bvec_advance;
pub mod bvec_split;
pub mod input;
pub mod iov_ops;
pub mod nvme_completion;
pub mod oracle;
pub mod prp_build;
