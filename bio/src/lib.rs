//! Block I/O requests as the NVMe driver sees them: bios, queue limits and splitting. (The NVMe
//! data pointers, PRP lists and SGLs, live in the `nvme` crate.)
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! The crate is `no_std`, uses `core` only, never allocates (vec tables and descriptor lists are
//! caller-provided) and contains no `unsafe`.
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

mod bio;
mod builder;
mod error;
mod from_iov;
mod limits;
mod merge;
mod nvme_limits;
mod op;
mod split;
#[cfg(test)]
mod tests;

pub use bio::Bio;
pub use builder::{BioBuilder, BvecArray, BIO_MAX_VECS};
pub use error::{BioError, LimitsError};
pub use from_iov::vecs_to_alloc;
pub use limits::{
    LimitsConfig, QueueLimits, BIO_MAX_SECTORS, BLK_DEF_MAX_SECTORS_CAP, BLK_MAX_SEGMENTS,
    BLK_MAX_SEGMENT_SIZE, BLK_SAFE_MAX_SECTORS, BLK_SEG_BOUNDARY_MASK, SECTOR_SHIFT, SECTOR_SIZE,
};
pub use merge::{gap_to_prev, phys_mergeable, try_merge_hw_page, try_merge_page, Merged};
pub use nvme_limits::{
    nvme_max_hw_sectors, nvme_pci_max_hw_sectors, NVME_MAX_HW_SECTORS, NVME_MAX_SEGS,
};
pub use op::Op;
pub use split::{count_phys_segments, max_segment_bytes, split_rw_at, SplitPoint};
