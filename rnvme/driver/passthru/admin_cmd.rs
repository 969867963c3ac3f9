// SPDX-License-Identifier: GPL-2.0

//! User admin commands (`NVME_IOCTL_ADMIN_CMD`, `NVME_IOCTL_ADMIN64_CMD`,
//! `NVME_URING_CMD_ADMIN`) on the admin queue, the counterpart of `nvme_submit_user_cmd()` on
//! `ctrl->admin_q` in `drivers/nvme/host/ioctl.c`.
//!
//! C header: [`include/uapi/linux/nvme_ioctl.h`](srctree/include/uapi/linux/nvme_ioctl.h)
//!
//! rnvme's admin queue has no blk-mq tag set (its commands are polled, one at a time), so a user
//! command's data goes through a bounce buffer in coherent DMA memory: copied from user space
//! before a write, to user space after a read; for an io_uring command on a registered buffer
//! (`IORING_URING_CMD_FIXED`), from and to the registered buffer's pages, its range checked
//! before the command runs (`EFAULT` outside it, as `nvme_map_user_request()`). Every admin command, the user's and the driver's
//! (probe, remove, Abort, reset), holds the admin lock while it runs (`admin.rs`; a user waiting
//! for it can be interrupted by a signal: `EINTR`), whose holder is bounded by its command's
//! timeout.
//!
//! A command that times out disables the controller before `EINTR` is returned (the C driver's
//! errno for it, `nvme_execute_rq()` in `drivers/nvme/host/core.c`; `Admin::exec_done`), so the
//! bounce buffer and PRP list are freed on every path; then, the admin queue released, this
//! caller resets the controller (`reset.rs`, as `nvme_timeout()` in `drivers/nvme/host/pci.c`
//! schedules a reset for a timed-out admin command) before it returns.

use kernel::{prelude::*, uaccess::UserSlice};
use kernel_glue::{
    chardev::UringCmd,
    dma::{CoherentAllocation, MappedSegment},
};
use nvme::{SubmissionEntry, UserCmd};

use super::Inner;
use crate::dptr;

/// Largest admin data transfer of any controller (one PRP list page); a controller's own limit
/// (`Inner::admin_max_bytes`, its MDTS) is usually lower.
pub(super) const MAX_ADMIN_DATA: u32 = 2 * 1024 * 1024;
/// Default admin command timeout (`NVME_ADMIN_TIMEOUT` is 60 s).
const DEFAULT_TIMEOUT_MS: u32 = 60_000;
/// Bytes copied per step between user space and the bounce buffer.
const CHUNK: usize = 4096;

/// Copies `len` bytes between user memory at `addr` and `buf` (`to_device`: user -> buf): the
/// registered buffer's pages at `addr` when `fixed` names the io_uring command whose ring holds
/// them, else whatever is mapped there.
fn copy(
    buf: &CoherentAllocation,
    addr: u64,
    len: usize,
    to_device: bool,
    fixed: Option<&UringCmd<'_>>,
) -> Result {
    let mut tmp = KVec::from_elem(0u8, CHUNK.min(len), GFP_KERNEL)?;
    let user = UserSlice::new(usize::try_from(addr).map_err(|_| EFAULT)?, len);
    let (mut r, mut w) = user.reader_writer();
    let mut off = 0usize;
    while off < len {
        let n = CHUNK.min(len - off);
        let t = tmp.get_mut(..n).ok_or(EINVAL)?;
        // `off < len <= MAX_ADMIN_DATA`: the sum cannot overflow unless `addr` is near the top,
        // which no registered buffer is.
        let at = addr.checked_add(off as u64).ok_or(EFAULT)?;
        if to_device {
            match fixed {
                Some(u) => u.read_fixed(at, t)?,
                None => r.read_slice(t)?,
            }
            buf.write(off, t)?;
        } else {
            buf.read(off, t)?;
            match fixed {
                Some(u) => u.write_fixed(at, t)?,
                None => w.write_slice(t)?,
            }
        }
        off += n;
    }
    Ok(())
}

/// Runs user admin command `cmd` (already checked: flags, permission) built as `entry`;
/// returns the NVMe status (`nvme_req(rq)->status` form, 0 on success) and the result. `fixed`:
/// the io_uring command whose registered buffer holds the data (`IORING_URING_CMD_FIXED`).
///
/// # Errors
///
/// `EINVAL` (metadata, more than the controller's transfer limit), `EFAULT` (bad user buffer,
/// also when it is too long: `blk_rq_map_user_io()` pins before the limit is checked), `ENOMEM`,
/// `EINTR` (a signal
/// while waiting for another admin command; or the command timed out: the controller was then
/// disabled and reset), `ENODEV` (the controller is disabled or waits for a reset).
pub(super) fn exec(
    inner: &Inner,
    cmd: &UserCmd,
    mut entry: SubmissionEntry,
    fixed: Option<&UringCmd<'_>>,
) -> Result<(i32, u64)> {
    let len = if cmd.has_data() { cmd.data_len() } else { 0 };
    // No metadata on the admin queue (`nvme_map_user_request()`: no integrity profile).
    if len != 0 && cmd.metadata() != 0 && cmd.metadata_len() != 0 {
        return Err(EINVAL);
    }
    // A registered buffer's range is checked before anything runs, for a read too, and before
    // the length limit (`nvme_map_user_request()` imports it before mapping).
    if let Some(u) = fixed.filter(|_| len != 0) {
        u.check_fixed(cmd.addr(), len)?;
    }
    if len > inner.admin_max_bytes {
        // The C driver pins the buffer's first pages before the queue's limit refuses the
        // transfer, so an unmapped buffer is `EFAULT` there; its first byte stands for them.
        if fixed.is_none() {
            let at = usize::try_from(cmd.addr()).map_err(|_| EFAULT)?;
            UserSlice::new(at, 1).reader().read_slice(&mut [0u8; 1])?;
        }
        return Err(EINVAL);
    }
    let io = &inner.io;
    let len = len as usize;
    let buf = if len != 0 {
        let b = CoherentAllocation::new(&io.dev, len.next_multiple_of(CHUNK))?;
        b.zero();
        if cmd.is_write() {
            copy(&b, cmd.addr(), len, true, fixed)?;
        }
        Some(b)
    } else {
        None
    };
    // The PRP list pages, if any: live until the command is over (freed by their drop).
    let mut _list = None;
    if let Some(b) = &buf {
        let seg = [MappedSegment {
            addr: b.dma_handle(),
            len: len as u32,
        }];
        entry.set_data_pointer(dptr::build(&seg, &io.pool, &io.prp_stats, &mut _list)?);
    }

    // One admin command at a time (the admin lock); on every error path (a timeout included,
    // after which the controller is disabled) `buf` and `_list` are freed by their drops.
    let (status, result) = run(inner, entry, cmd.timeout_ms())?;
    if let Some(b) = &buf {
        if !cmd.is_write() {
            copy(b, cmd.addr(), len, false, fixed)?;
        }
    }
    Ok((i32::from(status), result))
}

/// Runs `entry` on the admin queue (waiting for the admin lock, interruptibly) and waits for
/// its completion, bounded by the command's timeout (on a timeout the controller is disabled,
/// see `Admin::exec_done`, and then reset here if the timeout left a reset owed).
fn run(inner: &Inner, entry: SubmissionEntry, timeout_ms: u32) -> Result<(u16, u64)> {
    let limit = if timeout_ms == 0 {
        DEFAULT_TIMEOUT_MS
    } else {
        timeout_ms
    };
    let admin = &inner.io.admin;
    match admin.exec_done(entry, limit) {
        Ok(d) => Ok((d.status.code(), d.result)),
        Err(e) => {
            // The session is released: run the reset the timeout left owed (process context).
            if admin.state() == nvme::CtrlState::ResetPending {
                crate::reset::reset(&inner.io, &inner.set.set_ref());
            }
            Err(e)
        }
    }
}
