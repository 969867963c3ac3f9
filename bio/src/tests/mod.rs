//! Unit tests of the bio crate (edge cases with the numbers of the reference, §6-§7).

mod bio;
mod builder;
mod limits;
mod split;

use std::vec::Vec;

use bvec::{Bvec, Page, Pfn, PAGE_SIZE};

/// A page handle whose physical address is independent of its identity, to tell physical
/// contiguity from handle contiguity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TestPage {
    pub(super) id: u64,
    pub(super) phys: u64,
}

impl Page for TestPage {
    fn phys(self) -> u64 {
        self.phys
    }
    fn nth(self, n: usize) -> Self {
        Self {
            id: self.id + n as u64,
            phys: self.phys + (n * PAGE_SIZE) as u64,
        }
    }
}

/// A table of `(pfn, offset, len)` segments.
pub(super) fn table(spec: &[(u64, u32, u32)]) -> Vec<Bvec<Pfn>> {
    spec.iter()
        .map(|&(p, o, l)| Bvec::new(Pfn(p), o, l).unwrap())
        .collect()
}
