//! Unit tests of the nvme crate: data-pointer edge cases (moved here from the bio crate) and
//! controller bring-up against a scripted register file.

mod dma_tag;
mod init;
mod ns_geometry;
mod ns_ids;
mod prp;
mod recovery;
mod sgl;
mod zeroing;
