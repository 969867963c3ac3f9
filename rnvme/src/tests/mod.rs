//! Unit tests of the nvme crate: data-pointer edge cases moved here from the bio crate.

mod dma_tag;
mod prp;
mod sgl;
