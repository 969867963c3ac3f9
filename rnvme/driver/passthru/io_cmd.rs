// SPDX-License-Identifier: GPL-2.0

//! User I/O commands (`NVME_IOCTL_IO_CMD`, `NVME_IOCTL_IO64_CMD`, `NVME_URING_CMD_IO`) as
//! passthrough requests on the namespace's disk queue, the counterparts of
//! `nvme_submit_user_cmd()`/`nvme_uring_cmd_io()` in `drivers/nvme/host/ioctl.c` and of the
//! passthrough branch of `nvme_setup_cmd()` in `drivers/nvme/host/core.c`.
//!
//! C header: [`include/uapi/linux/nvme_ioctl.h`](srctree/include/uapi/linux/nvme_ioctl.h)
//!
//! The command travels in the request's PDU ([`RqPassthru`]); `queue_rq` takes it from there,
//! maps the data segments the block layer built from the user buffer (pinned user pages, or the
//! io_uring registered buffer's pages) like any request's, and sets PRPs; the completion path
//! stores the NVMe status and result back into the PDU for the caller.

use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{
    block::mq::{Op, Request},
    chardev::{Issued, UringCmd},
    dma::Direction,
    error::BlkStatus,
    sync::ArcSlot,
    time::tsc,
    user_rq::{blk_status_errno, UserRequest, UserStatus},
};
use nvme::{
    premap_prps, DataPointer, PremapPrps, SglPolicy, Status, SubmissionEntry, TagRange, UserCmd,
    SQE_SIZE,
};

use super::{
    premap::{Counter, Registry, Tag},
    Inner, NsInfo, PtFile,
};
use crate::{
    dptr::{self, ListPages},
    io::{prep_status, IoData, IoOps, RqOwned},
    phases::{Count, Phase, Stamp},
};

/// The passthrough part of a request's shared PDU: the command to send, then its completion.
#[derive(Default)]
pub(crate) struct RqPassthru {
    /// The 64-byte command, as its 8 quadwords (`SubmissionEntry::to_qwords`; written before
    /// the request is issued).
    sqe: [AtomicU64; SQE_SIZE / 8],
    /// NVMe status of the completion (`nvme_req(rq)->status` form).
    status: AtomicU16,
    /// Result dwords 0 and 1 of the completion.
    result: AtomicU64,
    /// The premapped tag holding the data (set just before the request is issued, taken when
    /// it ends: `user_status_at_end`, or `user_status` in the submitter's task when this is
    /// the tag's last reference): the request's reference, so the tag outlives the I/O.
    tag: ArcSlot<Tag>,
    /// Offset of the data from the start of the tag's buffer.
    tag_offset: AtomicU64,
    /// Length of the data in the tag.
    tag_len: AtomicU32,
    /// For an io_uring I/O command with data: 1 + the TSC cycles its issue spent before the
    /// request went to the block layer; `prepare` adds its own time and records the sum
    /// (`Stats::submit_time`) once. 0: not timed (ioctls, commands without data, recorded).
    submit_cycles: AtomicU64,
}

impl RqPassthru {
    /// Stores the command to send.
    fn set_cmd(&self, e: &SubmissionEntry) {
        let q = e.to_qwords();
        for (d, v) in self.sqe.iter().zip(&q) {
            d.store(*v, Ordering::Relaxed);
        }
        self.status.store(0, Ordering::Relaxed);
        self.result.store(0, Ordering::Relaxed);
        self.submit_cycles.store(0, Ordering::Relaxed);
    }

    /// Writes the command stored with `set_cmd` into `cmd`.
    #[inline]
    fn load_cmd(&self, cmd: &mut SubmissionEntry) {
        let mut q = [0u64; SQE_SIZE / 8];
        for (v, d) in q.iter_mut().zip(&self.sqe) {
            *v = d.load(Ordering::Relaxed);
        }
        *cmd = SubmissionEntry::from_qwords(q);
    }

    /// Records a completion (called for every request; only passthrough callers read it).
    pub(crate) fn completed(&self, status: Status, result: u64) {
        self.status.store(status.code(), Ordering::Relaxed);
        self.result.store(result, Ordering::Relaxed);
    }
}

/// Whether `op` (a raw `req_op`) is a user passthrough request.
pub(crate) fn is_user_op(op: u32) -> bool {
    op == kernel_glue::user_rq::REQ_OP_DRV_IN || op == kernel_glue::user_rq::REQ_OP_DRV_OUT
}

/// Builds the command of passthrough request `rq` for `queue_rq` in place: the stored command
/// with the data pointer of the request's mapped segments (PRPs) into `cmd`, what it holds into
/// `res` (on `Err`, the caller drops `res`: whatever was mapped is unmapped). Not inlined, and
/// nothing large moved: this must not add to the stack frame of every `queue_rq` (the command
/// and its resources returned by value cost two 127-byte `memcpy` calls per I/O).
#[inline(never)]
pub(crate) fn prepare(
    data: &IoData,
    rq: &Request<IoOps>,
    op: u32,
    res: &mut RqOwned,
    cmd: &mut SubmissionEntry,
) -> Result<(), BlkStatus> {
    let pt = &rq.shared().pt;
    // The issue's part of the submit time (0: not timed); taken, so a request prepared again
    // after a requeue is recorded once.
    let issued = pt.submit_cycles.swap(0, Ordering::Relaxed);
    let start = if issued != 0 { tsc() } else { 0 };
    let r = prepare_cmd(data, rq, op, res, cmd);
    if issued != 0 {
        let cycles = (issued - 1).saturating_add(tsc().saturating_sub(start));
        data.premap_stats.submit_time(pt.tag.is_some(), cycles);
    }
    r
}

/// `prepare`'s work: the command with its data pointer, and what it holds.
#[inline(always)]
fn prepare_cmd(
    data: &IoData,
    rq: &Request<IoOps>,
    op: u32,
    res: &mut RqOwned,
    cmd: &mut SubmissionEntry,
) -> Result<(), BlkStatus> {
    let pt = &rq.shared().pt;
    pt.load_cmd(cmd);
    let write = op == kernel_glue::user_rq::REQ_OP_DRV_OUT;
    if let Some(r) = pt
        .tag
        .with(|t| t.map(|tag| premapped(data, pt, cmd, tag, write, res.lists_slot())))
    {
        return r;
    }
    if rq.bytes() == 0 {
        return Ok(());
    }
    let dir = if write {
        Direction::ToDevice
    } else {
        Direction::FromDevice
    };
    // Mapped as a block request's data is (one segment as it is, a few in the PDU, more on the
    // heap). More segments than a mapping holds: the request cannot be sent. No memory or a
    // DMA API refusal: try again later (`BLK_STS_RESOURCE`, as `nvme_map_data()`).
    let (segs, lists) = res.map(data, rq, dir).map_err(|e| {
        if e == ENOSPC {
            BlkStatus::IOERR
        } else {
            BlkStatus::RESOURCE
        }
    })?;
    // The C driver's choice for a user command (`nvme_map_data()`, `NVME_REQ_USERCMD`): with
    // SGL support, SGLs whatever the segment size, except a single segment within two
    // controller pages (PRP1/PRP2). Without it, a buffer the PRP rules cannot describe (e.g. a
    // segment not ending on a controller page) fails the command, as `nvme_pci_setup_prps()`
    // does ("Invalid SGL for payload").
    let policy = SglPolicy {
        ctrl_supports_sgls: data.sgls,
        admin_queue: false,
        metadata_sgls: data.meta_sgls,
        passthrough: true,
        sgl_threshold: data.sgl_threshold,
    };
    let layout = dptr::layout_of(&policy, rq.nr_phys_segments(), rq.bytes(), segs);
    let dp = dptr::build_layout(layout, segs, &data.pool, &data.prp_stats, lists)
        .map_err(|_| BlkStatus::IOERR)?;
    cmd.set_data_pointer(dp);
    Ok(())
}

/// Sets the data pointer of a command whose data is in premapped `tag`: PRP1/PRP2 into the
/// premapped data and list, nothing mapped or allocated; only at the list's chain boundary a
/// list of its own (chained if it needs more than one page), filled from the tag's page table
/// and held in `lists` until completion.
fn premapped(
    data: &IoData,
    pt: &RqPassthru,
    cmd: &mut SubmissionEntry,
    tag: &Tag,
    write: bool,
    lists: &mut Option<ListPages>,
) -> Result<(), BlkStatus> {
    let offset = pt.tag_offset.load(Ordering::Relaxed);
    let len = pt.tag_len.load(Ordering::Relaxed);
    match premap_prps(tag, tag.list_dma(), TagRange { offset, len })
        .map_err(|_| BlkStatus::IOERR)?
    {
        PremapPrps::Direct { prp1, prp2 } => {
            cmd.set_data_pointer(DataPointer::prp(prp1, prp2));
        }
        PremapPrps::PerIoList { prp1, entries } => {
            let (prp2, pages) = ListPages::prp_list(
                &data.pool,
                &data.prp_stats,
                entries.len(),
                entries.iter().copied(),
            )
            .map_err(prep_status)?;
            *lists = Some(pages);
            cmd.set_data_pointer(DataPointer::prp(prp1, prp2));
            tag.count(Counter::IoPremappedListPerIo);
        }
    }
    tag.buf().sync_for_device(offset, len, write);
    Ok(())
}

impl UserStatus for IoOps {
    #[inline]
    fn user_status(rq: &Request<Self>, blk: BlkStatus) -> (i32, u64) {
        let pt = &rq.shared().pt;
        // The request is over: the device wrote what it read into the buffer; the request's
        // tag reference goes (possibly the last one: released here, in process context).
        if let Some(tag) = pt.tag.take() {
            sync_for_cpu(rq, pt, &tag);
        }
        end_value(pt, blk)
    }

    #[inline]
    fn user_status_at_end(rq: &Request<Self>, blk: BlkStatus) -> Option<(i32, u64)> {
        let pt = &rq.shared().pt;
        if let Some(tag) = pt.tag.take() {
            // Synced here; if the tag goes back for `user_status`, synced again there, which
            // only repeats the hand-over where a platform needs one.
            sync_for_cpu(rq, pt, &tag);
            // The device is done with the buffer, so the reference may go now, unless it is the
            // last one: releasing a tag unmaps and frees, which waits for process context.
            if let Some(last) = tag.into_unique_or_drop() {
                pt.tag.put(Arc::from(last));
                return None;
            }
        }
        Some(end_value(pt, blk))
    }
}

/// Hands the bytes a read (any command but a write) put into premapped `tag` back to the CPU.
#[inline]
fn sync_for_cpu(rq: &Request<IoOps>, pt: &RqPassthru, tag: &Tag) {
    if rq.op() != Op::Other(kernel_glue::user_rq::REQ_OP_DRV_OUT) {
        tag.buf().sync_for_cpu(
            pt.tag_offset.load(Ordering::Relaxed),
            pt.tag_len.load(Ordering::Relaxed),
        );
    }
}

/// The CQE value and result of an ended passthrough command: the NVMe status if the device
/// gave one, else the block layer's errno (`nvme_uring_cmd_end_io()`, `nvme_execute_rq()`).
#[inline]
fn end_value(pt: &RqPassthru, blk: BlkStatus) -> (i32, u64) {
    let status = pt.status.load(Ordering::Relaxed);
    let result = pt.result.load(Ordering::Relaxed);
    if status != 0 {
        (i32::from(status), result)
    } else {
        (blk_status_errno(blk), result)
    }
}

/// Allocates, maps and fills the request of user I/O command `cmd` on namespace `ns`; for an
/// io_uring command on a registered buffer, the premapped tag its data is in (then nothing is
/// mapped). For an io_uring command, the allocation and the data phases from `stamp` are
/// timed (`crate::phases`); returned: the end of the data phase.
#[inline(always)]
fn build(
    inner: &Inner,
    files: &Registry,
    ns: &NsInfo,
    cmd: &UserCmd,
    entry: &SubmissionEntry,
    uring: Option<(&UringCmd<'_>, &PtFile)>,
    stamp: Stamp,
) -> Result<(UserRequest<IoOps>, Option<Arc<Tag>>, Stamp)> {
    if cmd.has_data() && cmd.metadata() != 0 && cmd.metadata_len() != 0 {
        // rnvme namespaces have no metadata (`nvme_map_user_request()`: no integrity).
        return Err(EINVAL);
    }
    let nowait = uring.is_some_and(|(u, _)| u.nonblock());
    // An IOPOLL ring's command goes to a poll queue (`nvme_uring_cmd_io()`: `REQ_POLLED`).
    let polled = uring.is_some_and(|(u, _)| u.iopoll());
    // SAFETY: the disk is one of this controller's, whose queues belong to the `IoOps` tag set.
    let mut rq = unsafe {
        UserRequest::<IoOps>::alloc(&ns.disk, cmd.is_write(), nowait, polled, uring.is_some())
    }?;
    rq.request().shared().pt.set_cmd(entry);
    let phases = &inner.io.phases;
    let stamp = match uring {
        Some(_) => phases.end(Phase::Alloc, stamp),
        None => stamp,
    };
    // Only a request asked for polled can be on a poll queue.
    if polled && rq.request().is_poll() {
        inner.stats.add(Counter::IoPolled, 1);
    }
    // Each branch yields its tag (no assignment over an earlier `None`: that is an
    // out-of-line drop call per I/O).
    let tag = if !cmd.has_data() {
        None
    } else {
        match uring {
            Some((u, file)) if u.fixed() => {
                // The premapped path takes what the per-I/O path would map without a bounce
                // buffer: dword-aligned data within the queue's transfer limit.
                let tag = if cmd.addr() & 3 == 0 && cmd.data_len() <= ns.disk.max_hw_bytes() {
                    file.tags.tag_for(
                        files,
                        u,
                        cmd.addr(),
                        cmd.data_len(),
                        cmd.is_write(),
                        &inner.io,
                        &inner.stats,
                    )
                } else {
                    None
                };
                if tag.is_none() {
                    rq.map_fixed(u, cmd.addr(), cmd.data_len())?;
                    inner.stats.add(Counter::IoFixedMapped, 1);
                    inner.stats.add(Counter::IoMapped, 1);
                }
                tag
            }
            _ => {
                rq.map_user(cmd.addr(), cmd.data_len())?;
                // Pages a cached tag maps already are sent on it, never mapped twice
                // (`Registry::tag_holding`); dword-aligned data only, as on the fixed path.
                let tag = if cmd.addr() & 3 == 0 {
                    let r = rq.request();
                    let own = uring.map(|(_, file)| &*file.tags);
                    files.tag_holding(own, &inner.stats, cmd.addr(), cmd.data_len(), |f| {
                        r.for_each_segment(|seg| f(seg))
                    })
                } else {
                    None
                };
                let c = match tag {
                    Some(_) => Counter::IoPlainOnTag,
                    None => Counter::IoMapped,
                };
                inner.stats.add(c, 1);
                tag
            }
        }
    };
    // A new request's timeout is 0, the queue's default (`blk_mq_rq_ctx_init()`); only a
    // command's own timeout is set (`nvme_user_cmd()` in `drivers/nvme/host/ioctl.c`).
    if cmd.timeout_ms() != 0 {
        rq.set_timeout_ms(cmd.timeout_ms());
    }
    let stamp = match uring {
        Some(_) => phases.end(Phase::Data, stamp),
        None => stamp,
    };
    Ok((rq, tag, stamp))
}

/// Runs user I/O command `cmd` (checked, built as `entry`) on `ns` and waits for it; returns
/// the NVMe status (or a negative errno from the block layer) and the result.
pub(super) fn exec(
    inner: &Inner,
    files: &Registry,
    ns: &NsInfo,
    cmd: &UserCmd,
    entry: &SubmissionEntry,
) -> Result<(i32, u64)> {
    let (rq, tag, _) = build(inner, files, ns, cmd, entry, None, Stamp::now())?;
    if let Some(t) = tag {
        attach(&rq, t, cmd);
    }
    Ok(rq.execute())
}

/// Makes request `rq` of `cmd` send its data on premapped `t` (the request's reference is held
/// until the request ended: `user_status_at_end` or `user_status` take it).
#[inline(always)]
fn attach(rq: &UserRequest<IoOps>, t: Arc<Tag>, cmd: &UserCmd) {
    let pt = &rq.request().shared().pt;
    let offset = cmd.addr().wrapping_sub(t.buf().buf().ubuf);
    pt.tag_offset.store(offset, Ordering::Relaxed);
    pt.tag_len.store(cmd.data_len(), Ordering::Relaxed);
    t.count(Counter::IoPremapped);
    // Nothing can fail from here on: the request reaches its end, where the reference goes.
    pt.tag.put(t);
}

/// Issues user I/O command `cmd` for io_uring command `u` on `file`; it completes through
/// `io_uring_cmd_done()`. `stamp`: the end of the command's entry phase (`crate::phases`).
#[inline(always)]
pub(super) fn issue(
    inner: &Inner,
    file: &PtFile,
    ns: &NsInfo,
    cmd: &UserCmd,
    entry: &SubmissionEntry,
    u: &UringCmd<'_>,
    stamp: Stamp,
) -> Result<Issued> {
    let start = tsc();
    let (rq, tag, stamp) =
        build(inner, &file.shared.files, ns, cmd, entry, Some((u, file)), stamp)?;
    if let Some(t) = tag {
        attach(&rq, t, cmd);
    }
    if cmd.has_data() {
        // Stored last, just before the request goes to the block layer (`queue_rq` adds its
        // part); at least 1 so that 0 keeps meaning "not timed".
        let cycles = tsc().saturating_sub(start);
        rq.request()
            .shared()
            .pt
            .submit_cycles
            .store(cycles.saturating_add(1), Ordering::Relaxed);
    }
    let issued = rq.execute_uring(u);
    inner.io.phases.end(Phase::Exec, stamp);
    inner.io.phases.count(Count::Io);
    Ok(issued)
}
