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

use bvec::Bvec;
use kernel::prelude::*;
use kernel_glue::{
    block::mq::Request,
    chardev::{Issued, UringCmd},
    dma::{Direction, Mapping, PoolBlock},
    error::BlkStatus,
    user_rq::{blk_status_errno, UserRequest, UserStatus},
    KPage,
};
use nvme::{Status, SubmissionEntry, UserCmd, SQE_SIZE};

use super::NsInfo;
use crate::{
    dptr,
    io::{IoData, IoOps, MAX_SEGS},
};

/// The passthrough part of a request's shared PDU: the command to send, then its completion.
#[derive(Default)]
pub(crate) struct RqPassthru {
    /// The 64-byte command, as 16 little-endian dwords (written before the request is issued).
    sqe: [AtomicU32; SQE_SIZE / 4],
    /// NVMe status of the completion (`nvme_req(rq)->status` form).
    status: AtomicU16,
    /// Result dwords 0 and 1 of the completion.
    result: AtomicU64,
}

impl RqPassthru {
    /// Stores the command to send.
    fn set_cmd(&self, e: &SubmissionEntry) {
        let b = e.to_bytes();
        for (i, d) in self.sqe.iter().enumerate() {
            // Dword `i` (no chunk iterators: their length division has a panic path).
            let w = b
                .get(i * 4..i * 4 + 4)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
                .unwrap_or([0; 4]);
            d.store(u32::from_le_bytes(w), Ordering::Relaxed);
        }
        self.status.store(0, Ordering::Relaxed);
        self.result.store(0, Ordering::Relaxed);
    }

    /// The command stored with `set_cmd`.
    fn cmd(&self) -> SubmissionEntry {
        let mut b = [0u8; SQE_SIZE];
        for (i, d) in self.sqe.iter().enumerate() {
            if let Some(s) = b.get_mut(i * 4..i * 4 + 4) {
                s.copy_from_slice(&d.load(Ordering::Relaxed).to_le_bytes());
            }
        }
        SubmissionEntry::from_bytes(&b)
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

/// `a` and `b` as one segment if `b` starts where `a` ends in physical memory.
fn merge(a: &Bvec<KPage>, b: &Bvec<KPage>) -> Option<Bvec<KPage>> {
    if a.phys().checked_add(u64::from(a.len()))? != b.phys() {
        return None;
    }
    Bvec::new(a.page(), a.offset(), a.len().checked_add(b.len())?).ok()
}

/// What a passthrough command holds until it completes: its mappings and PRP list page.
/// What a passthrough command holds until it completes: its mappings and PRP list page.
pub(crate) type Held = (Option<KBox<Mapping<MAX_SEGS>>>, Option<PoolBlock>);

/// Builds the command of passthrough request `rq` for `queue_rq`: the stored command with the
/// data pointer of the request's mapped segments (PRPs), and what it holds. Not inlined, and
/// nothing large returned by value: this must not add to the stack frame of every `queue_rq`.
#[inline(never)]
pub(crate) fn prepare(
    data: &IoData,
    rq: &Request<IoOps>,
    op: u32,
) -> Result<(SubmissionEntry, Held), BlkStatus> {
    let mut cmd = rq.shared().pt.cmd();
    let dir = if op == kernel_glue::user_rq::REQ_OP_DRV_OUT {
        Direction::ToDevice
    } else {
        Direction::FromDevice
    };
    if rq.bytes() == 0 {
        return Ok((cmd, (None, None)));
    }
    let mut map = Mapping::<MAX_SEGS>::new_boxed(&data.dev, dir, GFP_ATOMIC)
        .map_err(|_| BlkStatus::RESOURCE)?;
    let mut pending: Option<Bvec<KPage>> = None;
    let res = rq.for_each_segment(|seg| {
        if let Some(p) = pending {
            if let Some(m) = merge(&p, seg) {
                pending = Some(m);
                return Ok(());
            }
            // SAFETY: the segment is data of `rq` (user pages pinned, or a registered buffer's
            // pages held by the ring) kept until the request ends; the mapping is dropped
            // before it ends (`complete`).
            unsafe { map.map(&p) }?;
        }
        pending = Some(*seg);
        Ok(())
    });
    res.map_err(|_| BlkStatus::IOERR)?;
    if let Some(p) = pending {
        // SAFETY: as above.
        unsafe { map.map(&p) }.map_err(|_| BlkStatus::RESOURCE)?;
    }
    // A user buffer the PRP rules cannot describe (e.g. a segment not ending on a controller
    // page) fails the command, as `nvme_pci_setup_prps()` does ("Invalid SGL for payload").
    let (dp, page) = dptr::build(map.segments(), &data.pool).map_err(|_| BlkStatus::IOERR)?;
    cmd.set_data_pointer(dp);
    Ok((cmd, (Some(map), page)))
}

impl UserStatus for IoOps {
    fn user_status(rq: &Request<Self>, blk: BlkStatus) -> (i32, u64) {
        let pt = &rq.shared().pt;
        let status = pt.status.load(Ordering::Relaxed);
        let result = pt.result.load(Ordering::Relaxed);
        // The NVMe status if the device gave one, else the block layer's errno
        // (`nvme_uring_cmd_end_io()`, `nvme_execute_rq()`).
        if status != 0 {
            (i32::from(status), result)
        } else {
            (blk_status_errno(blk), result)
        }
    }
}

/// Allocates, maps and fills the request of user I/O command `cmd` on namespace `ns`.
fn build(
    ns: &NsInfo,
    cmd: &UserCmd,
    entry: &SubmissionEntry,
    uring: Option<&UringCmd<'_>>,
) -> Result<UserRequest<IoOps>> {
    if cmd.has_data() && cmd.metadata != 0 && cmd.metadata_len != 0 {
        // rnvme namespaces have no metadata (`nvme_map_user_request()`: no integrity).
        return Err(EINVAL);
    }
    let nowait = uring.is_some_and(|u| u.nonblock());
    // SAFETY: the disk is one of this controller's, whose queues belong to the `IoOps` tag set.
    let mut rq = unsafe { UserRequest::<IoOps>::alloc(&ns.disk, cmd.is_write(), nowait) }?;
    rq.request().shared().pt.set_cmd(entry);
    if cmd.has_data() {
        match uring {
            Some(u) if u.fixed() => rq.map_fixed(u, cmd.addr, cmd.data_len)?,
            _ => rq.map_user(cmd.addr, cmd.data_len)?,
        }
    }
    rq.set_timeout_ms(cmd.timeout_ms);
    Ok(rq)
}

/// Runs user I/O command `cmd` (checked, built as `entry`) on `ns` and waits for it; returns
/// the NVMe status (or a negative errno from the block layer) and the result.
pub(super) fn exec(ns: &NsInfo, cmd: &UserCmd, entry: &SubmissionEntry) -> Result<(i32, u64)> {
    Ok(build(ns, cmd, entry, None)?.execute())
}

/// Issues user I/O command `cmd` for io_uring command `u`; it completes through
/// `io_uring_cmd_done()`.
pub(super) fn issue(
    ns: &NsInfo,
    cmd: &UserCmd,
    entry: &SubmissionEntry,
    u: &UringCmd<'_>,
) -> Result<Issued> {
    Ok(build(ns, cmd, entry, Some(u))?.execute_uring(u))
}
