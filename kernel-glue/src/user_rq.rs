// SPDX-License-Identifier: GPL-2.0

//! User passthrough requests (`REQ_OP_DRV_IN`/`REQ_OP_DRV_OUT`) on a disk's queue: allocated,
//! given user data (pinned or copied by `blk_rq_map_user_io()`, or an io_uring registered
//! buffer), then executed synchronously or completed through `io_uring_cmd_done()`, the
//! plumbing of `nvme_submit_user_cmd()`/`nvme_uring_cmd_io()` in
//! `drivers/nvme/host/ioctl.c`.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! The driver's `queue_rq` sees these requests as [`crate::block::mq::Op::Other`] with
//! [`REQ_OP_DRV_IN`]/[`REQ_OP_DRV_OUT`]; their data segments are walked like any other
//! request's.

use core::{fmt, marker::PhantomData, ptr::NonNull};

use kernel::{bindings, prelude::*};

use crate::{
    block::mq::{Operations, Request},
    chardev::{Issued, UringCmd},
    error::BlkStatus,
    helpers,
};

/// `REQ_OP_DRV_IN`: a driver private request reading from the device.
pub const REQ_OP_DRV_IN: u32 = bindings::req_op_REQ_OP_DRV_IN;
/// `REQ_OP_DRV_OUT`: a driver private request writing to the device.
pub const REQ_OP_DRV_OUT: u32 = bindings::req_op_REQ_OP_DRV_OUT;

/// A counted reference on a disk (`get_device(disk_to_dev(disk))`): the `struct gendisk` and
/// its request queue stay allocated while it exists (requests fail once the disk is deleted).
///
/// # Invariants
///
/// `disk` is a disk this value holds one device reference on.
pub struct DiskRef {
    disk: NonNull<bindings::gendisk>,
}

// SAFETY: a device reference may be dropped from any thread; the disk is only used through
// thread-safe block layer calls.
unsafe impl Send for DiskRef {}
// SAFETY: as above.
unsafe impl Sync for DiskRef {}

impl fmt::Debug for DiskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiskRef").field("disk", &self.disk).finish()
    }
}

impl DiskRef {
    /// Takes a reference on `disk`.
    ///
    /// # Safety
    ///
    /// `disk` must be a live, allocated disk.
    pub(crate) unsafe fn get(disk: NonNull<bindings::gendisk>) -> Self {
        // SAFETY: live disk (contract): `part0` is its whole-disk block device, allocated
        // with the disk; `get_device` on its embedded device keeps the disk allocated.
        unsafe { bindings::get_device(&mut (*(*disk.as_ptr()).part0).bd_device) };
        // INVARIANT: one reference taken above.
        Self { disk }
    }
}

impl DiskRef {
    /// The most bytes one request on the disk's queue may carry (`queue_max_hw_sectors()`).
    #[inline]
    pub fn max_hw_bytes(&self) -> u32 {
        // `queue_max_hw_sectors()` (`include/linux/blkdev.h`) is an inline field read in C; so
        // it is here (no call on the passthrough submit path).
        // SAFETY: the disk is allocated while the reference is held (type invariant); its queue
        // lives as long as the disk.
        let sectors = unsafe { (*(*self.disk.as_ptr()).queue).limits.max_hw_sectors };
        u32::try_from(u64::from(sectors) << 9).unwrap_or(u32::MAX)
    }
}

impl Drop for DiskRef {
    fn drop(&mut self) {
        // SAFETY: the reference taken in `get` (type invariant), dropped once.
        unsafe { bindings::put_device(&mut (*(*self.disk.as_ptr()).part0).bd_device) };
    }
}

/// A driver whose user passthrough requests end with a value for user space.
pub trait UserStatus: Operations {
    /// The value (NVMe status, or a negative errno) and result of ended request `rq`, whose
    /// block status is `blk`. Called once per executed request, in process context (the caller
    /// of [`UserRequest::execute`], or the submitter's task for [`UserRequest::execute_uring`])
    /// before the request is freed: the driver may drop here what the request held. Not
    /// called when [`UserStatus::user_status_at_end`] answered.
    fn user_status(rq: &Request<Self>, blk: BlkStatus) -> (i32, u64);

    /// As [`UserStatus::user_status`], but where request `rq` of
    /// [`UserRequest::execute_uring`] (not of an IOPOLL ring) ended: any context, hard-IRQ
    /// included. `Some` (nothing it holds needs process context to be released) lets the
    /// request be freed at once, in the completion batch, as `nvme_uring_cmd_end_io()` does;
    /// `None` leaves it allocated for [`UserStatus::user_status`] in the submitter's task. The
    /// default is `None`.
    fn user_status_at_end(_rq: &Request<Self>, _blk: BlkStatus) -> Option<(i32, u64)> {
        None
    }
}

/// An allocated user passthrough request, owned until it is executed; unmapped and freed on
/// drop when it never was.
///
/// # Invariants
///
/// `rq` is a request allocated on a queue of a tag set of `T` by `rnvme_glue_user_rq_alloc`,
/// not yet executed or freed; `bio` is NULL or the first bio its data was mapped to.
pub struct UserRequest<T: Operations> {
    rq: NonNull<bindings::request>,
    bio: *mut bindings::bio,
    _p: PhantomData<T>,
}

// SAFETY: the request is exclusively ours until executed and may be freed from any thread.
unsafe impl<T: Operations> Send for UserRequest<T> {}

impl<T: Operations> fmt::Debug for UserRequest<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserRequest").field("rq", &self.rq).finish()
    }
}

impl<T: UserStatus> UserRequest<T> {
    /// Allocates a request on `disk` (which must be a disk of a tag set of `T`), reading from
    /// the device unless `write`; with `nowait` it fails with `EAGAIN` instead of sleeping for a
    /// tag; with `polled` it is a poll queue's request (`REQ_POLLED`, for io_uring IOPOLL) when
    /// the tag set has poll queues; with `uring` (an io_uring command's request) the bio its
    /// data is mapped to comes from the per-CPU bio cache (`REQ_ALLOC_CACHE`, as
    /// `nvme_uring_cmd_io()` in `drivers/nvme/host/ioctl.c`), not from `kmalloc()`.
    ///
    /// # Safety
    ///
    /// `disk`'s queue must belong to a tag set of `T`.
    pub unsafe fn alloc(
        disk: &DiskRef,
        write: bool,
        nowait: bool,
        polled: bool,
        uring: bool,
    ) -> Result<Self> {
        let mut err = 0i32;
        // SAFETY: the disk is alive (reference held); a deleted disk's queue refuses.
        let rq = unsafe {
            helpers::rnvme_glue_user_rq_alloc(
                disk.disk.as_ptr(),
                write,
                nowait,
                polled,
                uring,
                &mut err,
            )
        };
        let rq = NonNull::new(rq).ok_or_else(|| Error::from_errno(err))?;
        // INVARIANT: freshly allocated on the disk's queue (a tag set of `T`, contract).
        Ok(Self {
            rq,
            bio: core::ptr::null_mut(),
            _p: PhantomData,
        })
    }

    /// The request (its PDU's shared state, for the driver to fill in before execution).
    pub fn request(&self) -> &Request<T> {
        // SAFETY: a live request of a tag set of `T` (type invariant), alive while `self` is.
        unsafe { Request::from_raw(self.rq.as_ptr()) }
    }

    /// Maps `len` bytes of user memory at `addr` as the request's data
    /// (`blk_rq_map_user_io()`: pages pinned, or copied through a bounce buffer).
    ///
    /// # Errors
    ///
    /// `EFAULT` for a bad address, `EINVAL` for a length over the queue limits, `ENOMEM`.
    pub fn map_user(&mut self, addr: u64, len: u32) -> Result {
        if !self.bio.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: our unexecuted request (type invariant); the user range is checked by the
        // block layer's user page extraction.
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_user_rq_map(self.rq.as_ptr(), addr, len)
        })?;
        // SAFETY: as above.
        self.bio = unsafe { helpers::rnvme_glue_user_rq_bio(self.rq.as_ptr()) };
        Ok(())
    }

    /// Maps `len` bytes at user address `addr` inside `cmd`'s io_uring registered buffer
    /// (`io_uring_cmd_import_fixed()`, `blk_rq_map_user_iov()`; nothing is pinned).
    ///
    /// # Errors
    ///
    /// `EFAULT` when the range is outside the registered buffer, `EINVAL`, `ENOMEM`.
    pub fn map_fixed(&mut self, cmd: &UringCmd<'_>, addr: u64, len: u32) -> Result {
        if !self.bio.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: our unexecuted request; `cmd` is the live command whose ring holds the
        // registered buffer.
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_user_rq_map_fixed(self.rq.as_ptr(), cmd.raw(), addr, len)
        })?;
        // SAFETY: as above.
        self.bio = unsafe { helpers::rnvme_glue_user_rq_bio(self.rq.as_ptr()) };
        Ok(())
    }

    /// Sets the request's timeout (0: the queue's default).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        // SAFETY: our unexecuted request.
        unsafe { helpers::rnvme_glue_user_rq_set_timeout_ms(self.rq.as_ptr(), ms) };
    }

    /// Executes the request and waits for its end (`blk_execute_rq()`); returns what
    /// [`UserStatus::user_status`] says, then unmaps the data and frees the request.
    pub fn execute(self) -> (i32, u64) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: our unexecuted request; blk_execute_rq returns after it ended, and the
        // request stays allocated until we free it below.
        let blk = unsafe { helpers::rnvme_glue_user_rq_execute(this.rq.as_ptr()) };
        let out = T::user_status(
            this.request(),
            BlkStatus::from_raw(blk).unwrap_or(BlkStatus::IOERR),
        );
        // SAFETY: ended, freed once (`this` is not dropped).
        unsafe { helpers::rnvme_glue_user_rq_finish(this.rq.as_ptr(), this.bio) };
        out
    }

    /// Issues the request for io_uring command `cmd` without waiting: when it ends,
    /// [`UserStatus::user_status_at_end`] (then the request is freed at once) or else
    /// [`UserStatus::user_status`] in the submitter's task gives the CQE's value and result;
    /// the data is unmapped in the submitter's task, and the request freed there if it was not
    /// at its end. An IOPOLL ring's request is always freed in the task: its `uring_cmd_iopoll`
    /// polls the request until then.
    pub fn execute_uring(self, cmd: &UringCmd<'_>) -> Issued {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: our unexecuted request, mapped (or without data); `cmd` is live and is
        // completed exactly once, by the C side's task work after the request ends; the
        // callback matches the C prototype.
        unsafe {
            helpers::rnvme_glue_uring_execute(cmd.raw(), this.rq.as_ptr(), Some(Self::status_cb))
        };
        Issued(())
    }

    /// The end of a request issued by `execute_uring`: its value and result for the CQE, from
    /// [`UserStatus::user_status_at_end`] (`at_end`; `false` when it had none) or
    /// [`UserStatus::user_status`].
    ///
    /// # Safety
    ///
    /// `rq` must be such a request, ended and not freed; `value`/`result` valid out pointers;
    /// without `at_end`, the caller is in process context.
    unsafe extern "C" fn status_cb(
        rq: *mut bindings::request,
        blk: u8,
        value: *mut i32,
        result: *mut u64,
        at_end: bool,
    ) -> bool {
        // SAFETY: `rq` is our request, ended but not yet freed (the C side frees it after this
        // call: at once if it returns true with `at_end`, else in the submitter's task).
        let rq = unsafe { Request::<T>::from_raw(rq) };
        let blk = BlkStatus::from_raw(blk).unwrap_or(BlkStatus::IOERR);
        let out = if at_end {
            T::user_status_at_end(rq, blk)
        } else {
            Some(T::user_status(rq, blk))
        };
        let Some((v, r)) = out else {
            return false;
        };
        // SAFETY: the C side's out pointers into the command's PDU or its stack.
        unsafe {
            *value = v;
            *result = r;
        }
        true
    }
}

impl<T: Operations> Drop for UserRequest<T> {
    fn drop(&mut self) {
        // SAFETY: never executed (type invariant: `execute*` do not drop); freed once.
        unsafe { helpers::rnvme_glue_user_rq_finish(self.rq.as_ptr(), self.bio) };
    }
}

/// The errno of a block status (`blk_status_to_errno()`), negative (0 for OK, answered
/// inline: `blk_errors[BLK_STS_OK]` in `block/blk-core.c` is 0, and it is every successful
/// passthrough command's status).
#[inline]
pub fn blk_status_errno(s: BlkStatus) -> i32 {
    if s.is_ok() {
        return 0;
    }
    // SAFETY: pure table lookup.
    unsafe { bindings::blk_status_to_errno(s.as_raw()) }
}
