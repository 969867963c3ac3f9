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
//! # How the kernel driver uses it
//!
//! - **Bring-up** (probe, reset): implement [`Registers`] over BAR0, run [`Enable`] with the
//!   admin queue's bus addresses, sleeping as told: `loop { match en.poll(&regs, now_ms)? {
//!   Poll::Wait(ms) => msleep(ms), Poll::Done => break } }`. [`Disable`] and [`ShutdownSeq`]
//!   work the same way. Doorbell offsets come from [`Doorbells`], checked against the BAR.
//! - **Admin commands**: build them with [`SubmissionEntry::identify`],
//!   [`SubmissionEntry::set_num_queues`], [`SubmissionEntry::create_cq`], ...; parse the
//!   results with [`IdentifyController`], [`IdentifyNamespace`], [`active_namespaces`],
//!   [`QueueGrant`] and plan the I/O queues with [`QueuePlan`].
//! - **I/O** (`queue_rq`): get a command id for the request's tag from [`CidTable::start`],
//!   build the data pointer from the mapped segments ([`build_prps`], [`build_sgl`]) and the
//!   command ([`SubmissionEntry::read`], [`SubmissionEntry::write`], ...), [`SubmissionQueue::push`]
//!   it, and on `bd->last` write [`SubmissionQueue::commit`]'s value to the tail doorbell.
//! - **Completion** (IRQ handler or poll): drain [`CompletionQueue::next`]; for each valid
//!   entry [`accept_completion`] checks the command id ([`CidTable`]) and the SQ head
//!   ([`SubmissionQueue`]) before applying either (an error means: log rate-limited, ignore the
//!   whole entry), then end the request with [`BlkStatus::from_nvme`]; finally write
//!   [`CompletionQueue::doorbell`]'s value.
//! - **Submit and complete on different locks** (what `rnvme.ko` does, as the C driver takes
//!   only `nvmeq->sq_lock` to submit): command ids from a [`SharedCidTable`] (atomic, `&self`),
//!   the SQ head tracked by the completion path in an [`SqHead`] against the tail the
//!   submitters last published, both checked together by [`accept_shared`].
//!
//! ```
//! use nvme::*;
//!
//! // Queue memory as the kernel glue provides it (DMA-coherent there, plain memory here).
//! struct Sq(Vec<SubmissionEntry>);
//! impl SubmissionMemory for Sq {
//!     fn write_entry(&mut self, i: u16, e: &SubmissionEntry) {
//!         if let Some(s) = self.0.get_mut(usize::from(i)) { *s = *e; }
//!     }
//! }
//! struct Cq(Vec<CompletionEntry>);
//! impl CompletionMemory for Cq {
//!     fn read_status(&self, i: u16) -> u16 { self.0.get(usize::from(i)).map_or(0, |e| e.raw_status()) }
//!     fn read_entry(&self, i: u16) -> CompletionEntry { self.0.get(usize::from(i)).copied().unwrap_or_default() }
//! }
//! let (mut sqm, mut cqm) = (Sq(vec![SubmissionEntry::default(); 64]), Cq(vec![CompletionEntry::default(); 64]));
//! let mut sq = SubmissionQueue::new(1, 64).unwrap();
//! let mut cq = CompletionQueue::new(1, 64, 1, 64).unwrap();
//! let mut cids = CidTable::<64>::new(63).unwrap();
//!
//! // queue_rq for blk-mq tag 5: a 4 KiB read of LBA 8 (512-byte blocks) of namespace 1.
//! let prps = build_prps(&[DmaSegment::new(0x1234_5000, 4096)], &mut PrpLists::new(&mut [], &[]).unwrap()).unwrap();
//! let mut cmd = SubmissionEntry::read(1, 8, 8, prps.into()).unwrap();
//! cmd.set_cid(cids.start(5).unwrap());
//! sq.push(&mut sqm, &cmd).unwrap();
//! assert_eq!(sq.commit(), Some(1));                 // writel(1, SQ 1 tail doorbell)
//!
//! // The device posts a success completion (phase 1) for it, and a duplicate of it.
//! cqm.0[0] = CompletionEntry::new(0, 1, 1, cmd.cid(), 1);
//! cqm.0[1] = cqm.0[0];
//! let mut ended = Vec::new();
//! while let Some(r) = cq.next(&cqm) {
//!     let Ok(c) = r else { continue };              // log and ignore
//!     match accept_completion(&mut sq, &mut cids, &c) {
//!         Ok(tag) => ended.push((tag, BlkStatus::from_nvme(c.status))),
//!         Err(e) => assert_eq!(e, ReapError::Cid(CidError::NotInFlight { tag: 5 })),   // the duplicate
//!     }
//! }
//! assert_eq!(ended, [(5, BlkStatus::Ok)]);
//! assert_eq!(cq.doorbell(), Some(2));               // writel(2, CQ 1 head doorbell)
//! ```
#![cfg_attr(not(kbuild), no_std)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

mod admin;
mod blk_status;
mod cid;
mod cid_shared;
mod cmd;
mod cq;
mod data_layout;
mod dbbuf;
mod dma_tag;
mod dptr;
mod identify_ctrl;
mod identify_ctrl_nvm;
mod identify_ns;
mod init;
mod io;
mod limits;
mod ns_geometry;
mod ns_ids;
mod passthru;
mod premap_list;
mod prp;
mod prp_chain;
mod queues;
mod reap;
mod recovery;
mod reg_values;
mod regs;
mod sgl;
mod shutdown;
mod sq;
mod status;
#[cfg(test)]
mod tests;

pub use admin::{opcode, CmdError, Cns, FEAT_NUM_QUEUES, FEAT_VOLATILE_WC, MAX_QUEUE_ENTRIES};
pub use blk_status::BlkStatus;
pub use cid::{make_cid, split_cid, CidError, CidTable, CID_TAG_BITS, MAX_TAGS};
pub use cid_shared::SharedCidTable;
pub use cmd::{CompletionEntry, DataPointer, SubmissionEntry, CQE_SIZE, SQE_SIZE};
pub use cq::{Completion, CompletionMemory, CompletionQueue, CqError};
pub use data_layout::DataLayout;
pub use dbbuf::{
    dbbuf_need_event, DbbufError, DbbufLayout, ShadowDoorbell, ShadowMemory, DBBUF_BYTES,
};
pub use dma_tag::{
    build_prps_from_tag, build_sgl_from_tag, tag_segments, DmaPageTable, PremappedPages, TagRange,
};
pub use dptr::{DmaSegment, DptrError, NVME_CTRL_PAGE_SHIFT, NVME_CTRL_PAGE_SIZE};
pub use identify_ctrl::{IdentifyController, IdentifyError, IDENTIFY_SIZE};
pub use identify_ctrl_nvm::{
    zeroing_limits, IdentifyControllerNvm, ZeroingLimits, NVM_IDENTIFY_MIN_VERSION,
};
pub use identify_ns::{
    active_namespaces, IdentifyNamespace, MAX_LBADS, MIN_LBADS, NS_LIST_ENTRIES,
};
pub use init::{AdminQueue, Disable, Enable, InitError, Phase, Poll, POLL_INTERVAL_MS};
pub use io::{
    io_opcode, DsmRange, DSM_AD, DSM_MAX_RANGES, MAX_BLOCKS_PER_COMMAND, RW_FUA, WZ_DEAC,
};
pub use limits::{
    namespace_limits, nvme_max_hw_sectors, nvme_pci_max_hw_sectors, pci_queue_limits, queue_limits,
    NVME_MAX_HW_SECTORS, NVME_MAX_SEGS,
};
pub use ns_geometry::{ns_geometry, NsGeometry, NsIoHints};
pub use ns_ids::{bogus_nid, NsDescError, NsIds, Wwid, NS_DESC_MIN_VERSION};
pub use passthru::{
    cmd_allowed, cmd_permission, Caller, IoEffects, PassthruError, Permission, UserCmd,
    EFFECTS_CSUPP, EFFECTS_LBCC, IOCTL_ADMIN64_CMD, IOCTL_ADMIN_CMD, IOCTL_ID, IOCTL_IO64_CMD,
    IOCTL_IO_CMD, LOG_CMD_EFFECTS, PASSTHRU_CMD64_SIZE, PASSTHRU_CMD_SIZE, RESULT64_OFFSET,
    RESULT_OFFSET, URING_CMD_ADMIN, URING_CMD_IO, URING_CMD_SIZE,
};
pub use premap_list::{
    premap_list_entries, premap_list_pages, premap_list_slot, premap_prps, PremapPrps,
    PREMAP_LIST_DATA_SLOTS,
};
pub use prp::{
    build_prps, plan_prps, plan_prps_iter, prp_entries, prp_fill, prp_simple, PrpEntries, PrpFill,
    PrpListPage, PrpLists, PrpPlan, PrpPool, Prps, PRPS_PER_PAGE, PRP_SMALL_POOL_ENTRIES,
};
pub use prp_chain::{
    chained_slot, PrpListLayout, PrpListRun, PRP_LIST_DATA_SLOTS, PRP_MAX_LIST_PAGES,
};
pub use queues::{QueueGrant, QueuePlan, QueuePlanError};
pub use reap::{accept_completion, accept_shared, ReapError};
pub use recovery::{
    decide_disposition, delete_queues_before_disable, CtrlState, Disposition, TimeoutStep,
    MAX_RETRIES,
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
pub use shutdown::{
    shutdown_timeout_ms, ShutdownSeq, SHUTDOWN_TIMEOUT_DEFAULT_MS, SHUTDOWN_TIMEOUT_MAX_MS,
};
pub use sq::{SqError, SqHead, SubmissionMemory, SubmissionQueue};
pub use status::{Status, StatusCodeType};
