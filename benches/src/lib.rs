//! Shared set-up for the criterion benchmarks.
