// SPDX-License-Identifier: GPL-2.0

//! The I/O path: blk-mq operations of the rnvme disks (`nvme_queue_rq()`, `nvme_pci_complete_rq()`,
//! `nvme_timeout()` in `drivers/nvme/host/pci.c` are the C counterparts).
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{
    block::mq::{
        CompBatch, HwQueue, LocalCompBatch, Op, Operations, OwnedRequest, Request, RqList, TagSet,
        TimeoutAction,
    },
    dma::{Direction, DmaPool},
    error::BlkStatus,
    irq::{Handler, HardIrq, IrqReturn},
    pci,
};
use nvme::{DsmRange, SglPolicy, SubmissionEntry, DSM_MAX_RANGES};

use crate::{
    admin::Admin,
    batch_stats::BatchStats,
    dptr::{self, ListPages, PrpStats},
    phases::{Count, Phase, Stamp},
    queue::{Done, Queue, SqBatch, SubmitError},
    ratelimit::warn_limited,
};

mod res;

pub(crate) use res::{RqOwned, MAX_SEGS};

/// A namespace: the data of one disk's request queue.
pub(crate) struct Namespace {
    /// Namespace id.
    pub(crate) nsid: u32,
    /// log2 of the logical block size.
    pub(crate) lba_shift: u32,
}

/// Data of the I/O tag set: the I/O queues and what the I/O path needs of the controller.
pub(crate) struct IoData {
    /// I/O queue pairs, hardware queue `i` is queue id `i + 1`.
    pub(crate) queues: KVec<Arc<Queue>>,
    /// PRP list, SGL and DSM range pages.
    pub(crate) pool: Arc<DmaPool>,
    /// PRP list counters (debugfs `rnvme/rnvme<C>/prp`).
    pub(crate) prp_stats: Arc<PrpStats>,
    /// The PCI device (DMA mappings; shared with each per-I/O mapping by reference count).
    pub(crate) dev: Arc<pci::Device>,
    /// The admin queue (Abort and controller disable after a timeout; also used by probe and
    /// remove).
    pub(crate) admin: Admin,
    /// The Number of Queues value asked for at probe (asked again after a reset).
    pub(crate) queue_request: u32,
    /// Controller resets done.
    pub(crate) resets: AtomicU32,
    /// The controller supports SGLs (Identify Controller SGLS).
    pub(crate) sgls: bool,
    /// The controller takes metadata by SGL (SGLS bit 19): user passthrough commands use SGLs
    /// (`nvme::SglPolicy::metadata_sgls`, as `nvme_pci_metadata_use_sgls()`).
    pub(crate) meta_sgls: bool,
    /// Streaming mappings go through an IOMMU: a request of several segments is mapped by one
    /// call into one IOVA range ([`SgMapping`]), not one call (and range) per segment.
    pub(crate) one_iova: bool,
    /// Average segment size from which SGLs are used (0: never).
    pub(crate) sgl_threshold: u32,
    /// Batched submission and completion counters (debugfs `rnvme/rnvme<C>/batch`).
    pub(crate) batch_stats: BatchStats,
    /// Passthrough premap and submit-path counters (debugfs `rnvme/rnvme<C>/premap`; here so
    /// `queue_rq` can add its part of a passthrough command's submit time).
    pub(crate) premap_stats: Arc<crate::passthru::PremapStats>,
    /// Phase timers (debugfs `rnvme/rnvme<C>/phases`; empty unless built with
    /// `RNVME_PHASES=1`).
    pub(crate) phases: crate::phases::Phases,
}

/// Per-request state the completion and timeout paths share.
#[derive(Default)]
pub(crate) struct RqShared {
    /// The `blk_status_t` to end the request with.
    status: AtomicU8,
    /// Set by whoever calls `blk_mq_complete_request` for this submission (interrupt, poll or
    /// timeout path), so it happens once.
    completing: AtomicBool,
    /// An Abort command was sent for this submission.
    aborted: AtomicBool,
    /// User passthrough command and its completion (`passthru`).
    pub(crate) pt: crate::passthru::RqPassthru,
    /// This submission was cancelled by a controller reset (`nvme_cancel_request()`), or the
    /// controller aborted it because a reset deleted its queue: the completion decides whether
    /// the request is sent again.
    cancelled: AtomicBool,
    /// Times the request was sent again after a cancellation (`nvme_req(rq)->retries`); back to
    /// 0 when the request ends.
    retries: AtomicU8,
}

/// How [`RqShared::complete`] completed a request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Completed {
    /// Another path already completes this submission.
    Not,
    /// Through `blk_mq_complete_request()` ([`Operations::complete`]).
    Single,
    /// Into a completion batch ([`Operations::end_batched`]).
    Batched,
}

impl RqShared {
    /// Completes `rq` with `status` unless another path already did; into `batch` when there
    /// is one and blk-mq allows it (`nvme_handle_cqe()`: `blk_mq_add_to_batch()` unless the
    /// request failed). Passthrough requests that succeeded are batched too, as in the C driver
    /// (6.12's `blk_mq_add_to_batch()` refuses an `end_io` only on other requests; their
    /// `end_io` reads the result from [`RqShared::pt`], stored before this). A failed one is
    /// not (6.12 would batch it whatever its error): a batch ends every request with status 0,
    /// so it is completed alone and its `end_io` gets its own status (`docs/DEVIATIONS.md`).
    #[inline]
    fn complete(rq: &Request<IoOps>, status: u8, batch: Option<&mut CompBatch<'_>>) -> Completed {
        let sh = rq.shared();
        if sh.completing.swap(true, Ordering::AcqRel) {
            return Completed::Not;
        }
        sh.status.store(status, Ordering::Relaxed);
        let failed = status != BlkStatus::OK.as_raw();
        match batch {
            Some(b) if !(failed && matches!(rq.op(), Op::Other(_))) => {
                if rq.complete_batched(Some(b), failed) {
                    Completed::Batched
                } else {
                    Completed::Single
                }
            }
            _ => {
                rq.complete();
                Completed::Single
            }
        }
    }

    /// Completes `rq`, whose command the disabled controller will never complete, as aborted
    /// by the host (`nvme_cancel_request()`), unless another path already completes it.
    pub(crate) fn cancel(rq: &Request<IoOps>) {
        let sh = rq.shared();
        if sh.completing.swap(true, Ordering::AcqRel) {
            return;
        }
        let st = nvme::Status::HOST_ABORTED;
        sh.pt.completed(st, 0);
        sh.cancelled.store(true, Ordering::Relaxed);
        sh.status
            .store(nvme::BlkStatus::from_nvme(st).value(), Ordering::Relaxed);
        rq.complete();
    }
}

/// Per-request state owned by the request's owner: the resources of its command, and the
/// command itself, built here by `prep` and copied into the ring from here (the C driver
/// keeps it in `nvme_iod::cmd`). Everything is built in place: moving a command or a
/// resource table through return values cost several copies of a few hundred bytes per I/O.
pub(crate) struct IoOwned {
    /// What must live until completion (released on drop).
    res: RqOwned,
    /// The command of this submission.
    sqe: SubmissionEntry,
    /// Whether `sqe` is prepared and not yet written into the ring.
    prepared: bool,
}

impl IoOwned {
    /// The prepared command, to be written into the ring (once: it is no longer prepared
    /// afterwards).
    fn take_cmd(&mut self) -> Option<&mut SubmissionEntry> {
        if !self.prepared {
            return None;
        }
        self.prepared = false;
        Some(&mut self.sqe)
    }
}

/// The blk-mq operations of the I/O queues.
pub(crate) struct IoOps;

/// Converts a blk status value stored by the completion path.
fn status_of(v: u8) -> BlkStatus {
    BlkStatus::from_raw(v).unwrap_or(BlkStatus::IOERR)
}

/// Maps an error of command preparation to the status blk-mq gets back.
pub(crate) fn prep_status(e: Error) -> BlkStatus {
    // Out of pool pages or mappings: let blk-mq retry later.
    if e == ENOMEM {
        BlkStatus::RESOURCE
    } else {
        BlkStatus::IOERR
    }
}

impl IoOps {
    /// Builds the command of `rq` in `cmd`; the resources it needs until completion go into
    /// `res` (empty on entry; built there in place, not moved through the calls).
    fn prepare(
        data: &IoData,
        rq: &Request<IoOps>,
        res: &mut RqOwned,
        cmd: &mut SubmissionEntry,
    ) -> Result<(), BlkStatus> {
        let ns = rq.queue_data();
        let slba = rq.sector() >> (ns.lba_shift - 9);
        let blocks = rq.bytes() >> ns.lba_shift;
        match rq.op() {
            Op::Read | Op::Write => {
                let write = rq.op() == Op::Write;
                // An atomic write the device could tear (`nvme_setup_rw()`: `BLK_STS_INVAL`).
                if write && rq.is_atomic() && !rq.atomic_write_fits() {
                    return Err(BlkStatus::INVAL);
                }
                let dir = if write {
                    Direction::ToDevice
                } else {
                    Direction::FromDevice
                };
                let (segs, lists) = res.map(data, rq, dir).map_err(prep_status)?;
                // No integrity data: metadata never goes by SGL for block requests.
                let policy = SglPolicy {
                    ctrl_supports_sgls: data.sgls,
                    admin_queue: false,
                    metadata_sgls: false,
                    passthrough: false,
                    sgl_threshold: data.sgl_threshold,
                };
                let layout = dptr::layout_of(&policy, rq.nr_phys_segments(), rq.bytes(), segs);
                let dptr = dptr::build_layout(layout, segs, &data.pool, &data.prp_stats, lists)
                    .map_err(prep_status)?;
                *cmd = if write {
                    SubmissionEntry::write(ns.nsid, slba, blocks, rq.is_fua(), dptr)
                } else {
                    SubmissionEntry::read(ns.nsid, slba, blocks, dptr)
                }
                .map_err(|_| BlkStatus::IOERR)?;
                Ok(())
            }
            Op::Flush => {
                *cmd = SubmissionEntry::flush(ns.nsid);
                Ok(())
            }
            Op::WriteZeroes => {
                *cmd = SubmissionEntry::write_zeroes(ns.nsid, slba, blocks, false)
                    .map_err(|_| BlkStatus::IOERR)?;
                Ok(())
            }
            Op::Discard => {
                let page = DmaPool::alloc(&data.pool).map_err(prep_status)?;
                let mut n = 0usize;
                rq.for_each_bio_range(|sector, bytes| {
                    if n >= DSM_MAX_RANGES {
                        return Err(EINVAL);
                    }
                    let r = DsmRange::new(sector >> (ns.lba_shift - 9), bytes >> ns.lba_shift);
                    page.write(n * 16, &r.to_bytes())?;
                    n += 1;
                    Ok(())
                })
                .map_err(|_| BlkStatus::IOERR)?;
                if n == 0 {
                    return Err(BlkStatus::IOERR);
                }
                *cmd = SubmissionEntry::dsm_deallocate(
                    ns.nsid,
                    n,
                    nvme::DataPointer::prp(page.dma_handle(), 0),
                )
                .map_err(|_| BlkStatus::IOERR)?;
                *res.lists_slot() = Some(ListPages::one(page));
                Ok(())
            }
            Op::Other(op) if crate::passthru::is_user_op(op) => {
                crate::passthru::prepare(data, rq, op, res, cmd)
            }
            Op::Other(_) => Err(BlkStatus::NOTSUPP),
        }
    }

    /// Prepares `rq` for a submission (`nvme_prep_rq()`): builds its command and keeps it
    /// and the resources it needs in the PDU, and resets the per-submission state. Returns the
    /// tag; on `Err` the request holds nothing.
    fn prep(data: &IoData, rq: &mut OwnedRequest<Self>) -> Result<u16, BlkStatus> {
        let tag = rq
            .tag()
            .and_then(|t| u16::try_from(t).ok())
            .ok_or(BlkStatus::IOERR)?;
        // The resources are built in the PDU's owner-only state itself: moving them there
        // afterwards cost several copies of a few hundred bytes per I/O (`memcpy` calls).
        let (r, owned) = rq.split_owned();
        let o = owned.insert(IoOwned {
            res: RqOwned::none(),
            sqe: SubmissionEntry::new(0, 0),
            prepared: false,
        });
        if let Err(e) = Self::prepare(data, r, &mut o.res, &mut o.sqe) {
            *owned = None;
            return Err(e);
        }
        let sh = r.shared();
        sh.status.store(BlkStatus::OK.as_raw(), Ordering::Relaxed);
        // A new submission: whoever sees its completion first completes it.
        sh.completing.store(false, Ordering::Relaxed);
        sh.aborted.store(false, Ordering::Relaxed);
        o.prepared = true;
        Ok(tag)
    }

    /// Writes the commands of `submit`, prepared requests of hardware queue `hctx_idx`, under
    /// one hold of the queue's lock and rings its doorbell once (`nvme_submit_cmds()`). A
    /// request whose command cannot be written is released, left unstarted and put on
    /// `requeue`. Returns how many were started.
    fn submit_list(
        data: &IoData,
        hctx_idx: u32,
        submit: &mut RqList<Self>,
        requeue: &mut RqList<Self>,
    ) -> u32 {
        let Some(q) = data.queues.get(hctx_idx as usize) else {
            while let Some(mut rq) = submit.pop() {
                *rq.owned_mut() = None;
                requeue.push_tail(rq);
            }
            return 0;
        };
        match submit.pop() {
            Some(first) => Self::submit_batch(data, q, first, submit, requeue),
            None => 0,
        }
    }

    /// Writes the commands of `first` and of the requests on `rest` (prepared requests of
    /// queue `q`) under one hold of its lock and rings its doorbell once; the requests whose
    /// command cannot be written go to `requeue`, unstarted. Returns how many were started.
    /// The one function that holds a batch (its lock, ring writes and doorbell inline): with
    /// two, the compiler makes the batch's push and drop calls of their own.
    #[inline(never)]
    fn submit_batch(
        data: &IoData,
        q: &Queue,
        first: OwnedRequest<Self>,
        rest: &mut RqList<Self>,
        requeue: &mut RqList<Self>,
    ) -> u32 {
        let mut batch = q.batch(&data.phases);
        let mut next = Some(first);
        while let Some(rq) = next {
            if let Err(rq) = Self::push_started(&mut batch, rq) {
                requeue.push_tail(rq);
            }
            next = rest.pop();
        }
        batch.pushed()
    }

    /// Writes the command of prepared request `rq` into `batch` and starts the request; a
    /// request whose command cannot be written is released and given back unstarted.
    #[inline(always)]
    fn push_started(
        batch: &mut SqBatch<'_>,
        mut rq: OwnedRequest<Self>,
    ) -> Result<(), OwnedRequest<Self>> {
        let tag = rq.tag().and_then(|t| u16::try_from(t).ok());
        let cmd = rq.owned_mut().as_mut().and_then(IoOwned::take_cmd);
        let pushed = match (tag, cmd) {
            (Some(tag), Some(cmd)) => batch.push(tag, cmd),
            _ => Err(SubmitError::Cid),
        };
        match pushed {
            Ok(()) => {
                // In the ring, but invisible to the controller until the batch rings the
                // doorbell: start it first, as `queue_rq` does.
                rq.start();
                rq.submit();
                Ok(())
            }
            Err(e) => {
                // Not started, nothing held: blk-mq sends it to `queue_rq`.
                *rq.owned_mut() = None;
                warn_limited!("queue {}: batch submit failed: {:?}\n", batch.qid(), e);
                Err(rq)
            }
        }
    }

    /// `queue_rqs` for a list of one request, the common case (a plug flushed with one
    /// request: one I/O per `io_uring_enter()`, as fio submits at any depth): prepared, then
    /// written by `submit_batch` (one lock hold, one doorbell), without the general path's
    /// loop over runs of hardware queues. Returns the request if it is not started (for
    /// `queue_rq`).
    #[inline(always)]
    fn queue_one(data: &IoData, mut rq: OwnedRequest<Self>) -> Result<(), OwnedRequest<Self>> {
        // A dead controller or no queue: `queue_rq` fails the request.
        let q = match rq.hctx_idx().and_then(|i| data.queues.get(i as usize)) {
            Some(q) if !data.admin.is_dead() => q,
            _ => return Err(rq),
        };
        // Not prepared: nothing held, and `queue_rq` prepares it again and returns the status.
        if Self::prep(data, &mut rq).is_err() {
            return Err(rq);
        }
        let (mut none, mut requeue) = (RqList::new(), RqList::new());
        Self::submit_batch(data, q, rq, &mut none, &mut requeue);
        match requeue.pop() {
            Some(rq) => Err(rq),
            None => Ok(()),
        }
    }

    /// Completes the requests of `hctx_idx`'s queue whose completions are posted, finding
    /// them by tag with `lookup`, into `batch` where possible; returns how many.
    #[inline]
    pub(crate) fn process<'a>(
        data: &IoData,
        hctx_idx: u32,
        lookup: impl Fn(u32) -> Option<&'a Request<IoOps>>,
        mut batch: Option<&mut CompBatch<'_>>,
        irq: Option<&HardIrq<'_>>,
    ) -> u32 {
        let Some(q) = data.queues.get(hctx_idx as usize) else {
            return 0;
        };
        let (mut batched, mut single) = (0u32, 0u32);
        let (mut reports, mut mmio) = (0u32, 0u32);
        loop {
            // Each completion is handled as the ring gives it, under the CQ lock.
            let dr = q.drain(irq, |d: Done| {
                let Some(rq) = lookup(u32::from(d.tag)) else {
                    warn_limited!("queue {}: no request for tag {}\n", q.qid(), d.tag);
                    return;
                };
                rq.shared().pt.completed(d.status, d.result);
                let status = nvme::BlkStatus::from_nvme(d.status);
                if d.status.aborted_by_sq_deletion() {
                    // A reset deleted the queue before its disable (`delete_queues.rs`): the
                    // request is sent again as one the reset cancelled (`complete`).
                    rq.shared().cancelled.store(true, Ordering::Relaxed);
                }
                if rq.should_fake_timeout() {
                    // Fault injection: drop the completion; the timeout handler ends the
                    // request (the command is no longer in flight).
                    rq.shared().status.store(status.value(), Ordering::Relaxed);
                    return;
                }
                // The command id table let this tag through once per submission.
                // Statistics: wrapping, so the handler has no overflow check (and no panic).
                match RqShared::complete(rq, status.value(), batch.as_deref_mut()) {
                    Completed::Batched => batched = batched.wrapping_add(1),
                    Completed::Single => single = single.wrapping_add(1),
                    Completed::Not => {}
                }
            });
            reports = reports.wrapping_add(u32::from(dr.reported));
            mmio = mmio.wrapping_add(u32::from(dr.mmio));
            if !dr.more {
                // One call into the counters per drain; an interrupt's own count with them.
                data.batch_stats
                    .drained(batched, single, reports, mmio, irq.is_some());
                return batched.wrapping_add(single);
            }
        }
    }
}

impl Operations for IoOps {
    type Data = IoData;
    type QueueData = Namespace;
    type Shared = RqShared;
    type Owned = IoOwned;

    fn queue_rq(
        data: &IoData,
        hctx_idx: u32,
        mut rq: OwnedRequest<Self>,
        last: bool,
    ) -> Result<(), BlkStatus> {
        let stamp = Stamp::now();
        if data.admin.is_dead() {
            return Err(BlkStatus::IOERR);
        }
        let q = data.queues.get(hctx_idx as usize).ok_or(BlkStatus::IOERR)?;
        let tag = Self::prep(data, &mut rq)?;
        rq.start();
        let sq = Stamp::now();
        let pushed = match rq.owned_mut().as_mut().and_then(IoOwned::take_cmd) {
            Some(cmd) => q.submit(tag, cmd, last, &data.phases),
            None => Err(SubmitError::Cid),
        };
        data.phases.end(Phase::Sq, sq);
        data.phases.end(Phase::QueueRq, stamp);
        data.phases.count(Count::QueueRqCall);
        if let Err(e) = pushed {
            // Not submitted: release the mappings before blk-mq ends or requeues it.
            *rq.owned_mut() = None;
            warn_limited!("queue {}: submit failed: {:?}\n", q.qid(), e);
            return Err(BlkStatus::DEV_RESOURCE);
        }
        rq.submit();
        Ok(())
    }

    fn commit_rqs(data: &IoData, hctx_idx: u32) {
        if let Some(q) = data.queues.get(hctx_idx as usize) {
            q.commit();
        }
    }

    #[inline]
    fn queue_rqs(data: &IoData, list: &mut RqList<Self>) {
        if list.is_single() {
            if let Some(rq) = list.pop() {
                let started = match Self::queue_one(data, rq) {
                    Ok(()) => 1,
                    Err(rq) => {
                        list.push_tail(rq);
                        0
                    }
                };
                data.batch_stats.queue_rqs(started, 1 - started, started);
            }
            return;
        }
        // `nvme_queue_rqs()`: prepare each request outside the queue's lock, then write the
        // commands of each run of requests for one hardware queue under one lock hold with
        // one doorbell; what cannot be prepared or written goes back for `queue_rq`.
        let mut submit = RqList::new();
        let mut requeue = RqList::new();
        let mut cur: Option<u32> = None;
        let (mut started, mut batches) = (0u32, 0u32);
        while let Some(mut rq) = list.pop() {
            let idx = rq.hctx_idx();
            if let Some(c) = cur.filter(|&c| Some(c) != idx) {
                let n = Self::submit_list(data, c, &mut submit, &mut requeue);
                started = started.wrapping_add(n);
                batches = batches.wrapping_add(1);
            }
            cur = idx;
            // A dead controller or no queue: `queue_rq` fails the request.
            if data.admin.is_dead() || idx.and_then(|i| data.queues.get(i as usize)).is_none() {
                requeue.push_tail(rq);
                continue;
            }
            match Self::prep(data, &mut rq) {
                // The command waits in the PDU for `submit_list`.
                Ok(_) => submit.push_tail(rq),
                // Nothing held: `queue_rq` prepares it again and returns the status.
                Err(_) => requeue.push_tail(rq),
            }
        }
        if let Some(c) = cur {
            let n = Self::submit_list(data, c, &mut submit, &mut requeue);
            started = started.wrapping_add(n);
            batches = batches.wrapping_add(1);
        }
        let mut left = 0u32;
        while let Some(rq) = requeue.pop() {
            list.push_tail(rq);
            left = left.wrapping_add(1);
        }
        data.batch_stats.queue_rqs(started, left, batches);
    }

    fn complete(_data: &IoData, mut rq: OwnedRequest<Self>) {
        // Unmap and free first (`nvme_unmap_data()`), then end or send again.
        *rq.owned_mut() = None;
        let sh = rq.shared();
        if sh.cancelled.swap(false, Ordering::Relaxed) {
            // Passthrough requests are not retried (`REQ_FAILFAST_DRIVER` in the C driver):
            // the user gets the host-aborted status.
            let noretry = matches!(rq.op(), Op::Other(_));
            let retries = sh.retries.load(Ordering::Relaxed);
            if nvme::decide_disposition(nvme::Status::HOST_ABORTED, retries, noretry)
                == nvme::Disposition::Retry
            {
                sh.retries.store(retries + 1, Ordering::Relaxed);
                rq.requeue();
                return;
            }
        }
        sh.retries.store(0, Ordering::Relaxed);
        let status = status_of(sh.status.load(Ordering::Relaxed));
        rq.end(status);
    }

    fn timeout(data: &IoData, rq: &Request<Self>) -> TimeoutAction {
        let (Some(hctx), Some(tag)) = (rq.hctx_idx(), rq.tag()) else {
            return TimeoutAction::ResetTimer;
        };
        let Some(q) = data.queues.get(hctx as usize) else {
            return TimeoutAction::ResetTimer;
        };
        let Ok(tag) = u16::try_from(tag) else {
            return TimeoutAction::ResetTimer;
        };
        // A missed interrupt? Reap what the queue has (one by one, no batch).
        if let Some(hw) = rq.hw_queue() {
            Self::process(data, hctx, |t| hw.tag_to_rq(t), None, None);
        }
        if !q.is_in_flight(tag) {
            // The device completed the command (its completion was reaped, possibly dropped by
            // fault injection): end the request with the status it got.
            let status = rq.shared().status.load(Ordering::Relaxed);
            RqShared::complete(rq, status, None);
            return TimeoutAction::Done;
        }
        match data.admin.state() {
            // A reset is under way: it cancels this command (and sends the request again).
            nvme::CtrlState::Resetting => return TimeoutAction::ResetTimer,
            // A timed-out admin command disabled it and left a reset owed: run it below.
            nvme::CtrlState::Live | nvme::CtrlState::ResetPending => {}
            nvme::CtrlState::Dead => {
                // Disabled: the command will never complete.
                if q.cancel(tag) {
                    RqShared::complete(rq, BlkStatus::TIMEOUT.as_raw(), None);
                }
                return TimeoutAction::Done;
            }
        }
        {
            warn_limited!(
                "{}: queue {}: tag {} timed out\n",
                data.dev.name(),
                q.qid(),
                tag
            );
            // First timeout of this submission: ask the controller to abort the command
            // (`nvme_timeout()` does the same); its completion then ends the request. A
            // controller reporting a fatal status (or no longer answering) is reset at once.
            let csts = nvme::Csts::from_raw(nvme::Registers::read32(
                &crate::regs::BarRegs(data.admin.bar()),
                nvme::REG_CSTS,
            ));
            let state = data.admin.state();
            let aborted = rq.shared().aborted.load(Ordering::Acquire);
            if csts.cfs() {
                warn_limited!(
                    "{}: controller fatal status (CSTS {:#x}): resetting\n",
                    data.dev.name(),
                    csts.raw()
                );
            }
            if nvme::TimeoutStep::decide(state, csts, aborted) == nvme::TimeoutStep::Abort
                && !rq.shared().aborted.swap(true, Ordering::AcqRel)
            {
                if let Some(cid) = q.cid_of(tag) {
                    match data.admin.exec(SubmissionEntry::abort(q.qid(), cid)) {
                        // Dword 0 bit 0 clear: the command was aborted.
                        Ok(res) if res & 1 == 0 => return TimeoutAction::ResetTimer,
                        Ok(_) => warn_limited!("{}: abort refused\n", data.dev.name()),
                        Err(e) => warn_limited!("{}: abort failed: {:?}\n", data.dev.name(), e),
                    }
                }
            }
        }
        // Abort did not help: reset the controller (`reset.rs`), which cancels this command
        // and every other one in flight; their requests are sent again once it is back.
        let cid = q.cid_of(tag);
        if let Some(set) = rq.tag_set() {
            crate::reset::reset(data, &set);
        } else {
            data.admin.disable("I/O timeout");
        }
        // If the reset could not run, the controller is disabled and this command is still in
        // flight (same command id): fail the request. (After a reset the tag may already carry
        // the request's next submission, which must not be touched.)
        if data.admin.is_dead() && cid.is_some() && q.cid_of(tag) == cid && q.cancel(tag) {
            RqShared::complete(rq, BlkStatus::TIMEOUT.as_raw(), None);
        }
        TimeoutAction::Done
    }

    fn end_batched(_data: &IoData, rq: &mut OwnedRequest<Self>) {
        // Unmap and free first (`nvme_pci_unmap_rq()` in `nvme_pci_complete_batch()`); a
        // batched request completed without error and was not cancelled: nothing to retry.
        *rq.owned_mut() = None;
        rq.shared().retries.store(0, Ordering::Relaxed);
    }

    fn poll(
        data: &IoData,
        hctx_idx: u32,
        hctx: &HwQueue<'_, Self>,
        batch: Option<&mut CompBatch<'_>>,
    ) -> u32 {
        let tags = hctx.hw_tags();
        Self::process(data, hctx_idx, |tag| tags.tag_to_rq(tag), batch, None)
    }
}

/// The interrupt handler of one I/O queue.
pub(crate) struct QueueIrq {
    /// The tag set whose hardware queue `hctx_idx` this queue serves.
    pub(crate) set: Arc<TagSet<IoOps>>,
    /// The hardware queue index.
    pub(crate) hctx_idx: u32,
    /// Whether the line may be shared (INTx): then report `None` when nothing was posted.
    pub(crate) shared: bool,
}

impl Handler for QueueIrq {
    #[inline]
    fn handle(&self, irq: &HardIrq<'_>) -> IrqReturn {
        if self.shared {
            let pending = self
                .set
                .data()
                .queues
                .get(self.hctx_idx as usize)
                .is_some_and(|q| q.pending());
            if !pending {
                return IrqReturn::None;
            }
        }
        let stamp = Stamp::now();
        // `nvme_irq()`: the requests completed here are ended together when `batch` drops,
        // after the queue's lock was released.
        let mut batch = LocalCompBatch::new();
        let data = self.set.data();
        IoOps::process(
            data,
            self.hctx_idx,
            |tag| self.set.tag_to_rq(self.hctx_idx, tag),
            Some(&mut batch.batch()),
            Some(irq),
        );
        drop(batch);
        data.phases.end(Phase::Irq, stamp);
        data.phases.count(Count::IrqCall);
        IrqReturn::Handled
    }
}
