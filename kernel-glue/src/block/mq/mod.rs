// SPDX-License-Identifier: GPL-2.0

//! blk-mq: tag sets, the driver operations, requests with a per-request PDU, and disks.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! A driver implements [`Operations`] and creates a [`TagSet`] (hardware queues, depth, and the
//! driver's data shared by all of them) and one [`GenDisk`] per disk on it. Each request carries
//! a PDU (`blk_mq_rq_to_pdu`) holding two parts: [`Operations::Shared`], state that the
//! completion path may touch at any time (atomics), and [`Operations::Owned`], state only the
//! owner of the request touches: [`Operations::queue_rq`] and [`Operations::complete`] get an
//! [`OwnedRequest`], every other path a shared [`Request`].
//!
//! Differences from `rust/kernel/block/mq` of Linux 6.12: a driver PDU (6.12 has none), a
//! working `complete` callback, `timeout`, `map_queues` on the device's interrupt affinity
//! (`blk_mq_map_hw_queues`), tag to request lookup for completion queues, `queue_rqs` on a
//! [`RqList`], and completion batches ([`CompBatch`]).

mod comp_batch;
mod gen_disk;
mod operations;
mod request;
mod rq_list;
mod tag_set;

pub use comp_batch::{CompBatch, LocalCompBatch};
pub use gen_disk::{GenDisk, NsAttrs, QueueLimits};
pub use operations::{Operations, TimeoutAction};
pub use request::{Op, OwnedRequest, Request};
pub use rq_list::RqList;
pub use tag_set::{HwQueue, HwTags, QueueMap, TagSet, TagSetRef};
