//! Reference models used by the property tests (written independently of the crates under test).

pub mod bvec_model;
