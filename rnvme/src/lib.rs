//! The NVMe protocol core of the rnvme driver: commands, completions, status mapping,
//! controller registers and bring-up, queues, command ids, Identify parsing and data pointers.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Everything here is safe `no_std` code with no allocation: the kernel glue owns the memory
//! (the queues in DMA-coherent memory, the register BAR) and reaches it through small traits
//! ([`Registers`]), so the same logic runs in the kernel and against a simulated controller in
//! user-space tests. Every value that comes from the device (registers, completion entries,
//! Identify data) is validated before it is used; invalid values are typed errors, never panics.
//!
//! # Building commands
//!
//! ```
//! use nvme::{BlkStatus, CompletionEntry, DataPointer, Status, SubmissionEntry};
//! // A 4 KiB read of LBA 8 (512-byte blocks) of namespace 1 into one controller page.
//! let mut cmd = SubmissionEntry::read(1, 8, 8, DataPointer::prp(0x1234_5000, 0))?;
//! cmd.set_cid(7);
//! let wire: [u8; 64] = cmd.to_bytes();           // what the submission queue slot holds
//! assert_eq!(wire[0], 0x02);
//! // The device's answer: success, phase 1.
//! let cqe = CompletionEntry::new(0, 1, 1, 7, 1);
//! assert_eq!(BlkStatus::from_nvme(cqe.status()), BlkStatus::Ok);
//! # Ok::<(), nvme::CmdError>(())
//! ```
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

mod admin;
mod blk_status;
mod cmd;
mod dma_tag;
mod dptr;
mod io;
mod limits;
mod prp;
mod reg_values;
mod regs;
mod sgl;
mod status;
#[cfg(test)]
mod tests;

pub use admin::{opcode, CmdError, Cns, FEAT_NUM_QUEUES, FEAT_VOLATILE_WC, MAX_QUEUE_ENTRIES};
pub use blk_status::BlkStatus;
pub use cmd::{CompletionEntry, DataPointer, SubmissionEntry, CQE_SIZE, SQE_SIZE};
pub use dma_tag::{
    build_prps_from_tag, build_sgl_from_tag, tag_segments, DmaPageTable, PremappedPages, TagRange,
};
pub use dptr::{DmaSegment, DptrError, NVME_CTRL_PAGE_SHIFT, NVME_CTRL_PAGE_SIZE};
pub use io::{
    io_opcode, DsmRange, DSM_AD, DSM_MAX_RANGES, MAX_BLOCKS_PER_COMMAND, RW_FUA, WZ_DEAC,
};
pub use limits::{nvme_max_hw_sectors, queue_limits, NVME_MAX_HW_SECTORS, NVME_MAX_SEGS};
pub use prp::{
    build_prps, plan_prps, PrpListPage, PrpLists, PrpPlan, PrpPool, Prps, PRPS_PER_PAGE,
    PRP_SMALL_POOL_ENTRIES,
};
pub use reg_values::{Aqa, Cap, Cc, Csts, Shutdown, ShutdownStatus};
pub use regs::{
    DoorbellError, Doorbells, Registers, REG_ACQ, REG_AQA, REG_ASQ, REG_CAP, REG_CC, REG_CSTS,
    REG_DBS, REG_INTMC, REG_INTMS, REG_NSSR, REG_VS,
};
pub use sgl::{
    build_sgl, Sgl, SglDescriptor, SglKind, SglPolicy, SglPool, SGES_PER_PAGE,
    SGL_SMALL_POOL_ENTRIES, SGL_THRESHOLD_DEFAULT,
};
pub use status::{Status, StatusCodeType};
