//! Reference models used by the property tests (written independently of the crates under test).

pub mod bio_model;
pub mod bvec_model;
pub mod dptr_walk;
pub mod fuzz;
pub mod iov_harness;
pub mod iov_model;
pub mod mem;
pub mod nvme_sim;
