// SPDX-License-Identifier: GPL-2.0

//! Character devices (misc devices with a dynamic minor) whose file operations are a Rust
//! [`FileOps`] value: `ioctl` and `uring_cmd` (io_uring passthrough commands).
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h)
//!
//! The C side (`kernel-glue/passthru.c`) owns the `struct miscdevice` and the
//! `file_operations` (owner `THIS_MODULE`, so an open file keeps the module loaded); every open
//! file holds its own reference on the device's [`FileOps`] value and its own [`FileOps::File`]
//! state, so files outlive the registration safely and the value decides what an operation on a
//! removed device does.

use core::{ffi::c_void, fmt, marker::PhantomData, ptr::NonNull};

use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::helpers;

/// `EIOCBQUEUED` of `include/linux/errno.h` (kernel-internal, not in the bindings).
const EIOCBQUEUED: i32 = 529;

/// Writes a device name into a fixed buffer, keeping the last byte for the NUL.
pub(crate) struct NameBuf<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> NameBuf<'a> {
    /// Writes into `buf` (which must be zeroed: the last byte stays the NUL).
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }
}

impl fmt::Write for NameBuf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            let next = self.pos.checked_add(1).ok_or(fmt::Error)?;
            if next >= self.buf.len() || b == 0 {
                return Err(fmt::Error);
            }
            *self.buf.get_mut(self.pos).ok_or(fmt::Error)? = b;
            self.pos = next;
        }
        Ok(())
    }
}

/// An io_uring passthrough command (`struct io_uring_cmd`) while its `uring_cmd` call runs.
///
/// # Invariants
///
/// `payload` points at the SQE's command payload, 8-byte aligned and readable for 80 bytes
/// when the ring has 128-byte SQEs (`sqe128()`), 16 bytes otherwise, for `'a`.
pub struct UringCmd<'a> {
    raw: NonNull<c_void>,
    payload: NonNull<u64>,
    op: u32,
    issue_flags: u32,
    /// `RNVME_URING_*` bits from the C side (`kernel-glue/passthru.h`).
    facts: u32,
    _life: PhantomData<&'a ()>,
}

impl fmt::Debug for UringCmd<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UringCmd").field("op", &self.op).finish()
    }
}

impl UringCmd<'_> {
    /// The command's `cmd_op` (e.g. `NVME_URING_CMD_IO`).
    #[inline]
    pub fn op(&self) -> u32 {
        self.op
    }

    /// Whether the ring uses 128-byte SQEs (`IO_URING_F_SQE128`), which an 80-byte payload
    /// needs.
    #[inline]
    pub fn sqe128(&self) -> bool {
        self.facts & helpers::RNVME_URING_SQE128 != 0
    }

    /// Whether the ring uses 32-byte CQEs (`IO_URING_F_CQE32`), where the command's result
    /// dword goes.
    #[inline]
    pub fn cqe32(&self) -> bool {
        self.facts & helpers::RNVME_URING_CQE32 != 0
    }

    /// Whether the caller must not block (`IO_URING_F_NONBLOCK`).
    #[inline]
    pub fn nonblock(&self) -> bool {
        self.facts & helpers::RNVME_URING_NONBLOCK != 0
    }

    /// Whether the ring completes by polling (`IO_URING_F_IOPOLL`): the request should go to a
    /// poll queue.
    #[inline]
    pub fn iopoll(&self) -> bool {
        self.facts & helpers::RNVME_URING_IOPOLL != 0
    }

    /// Whether the data buffer is in the ring's registered buffer (`IORING_URING_CMD_FIXED`).
    #[inline]
    pub fn fixed(&self) -> bool {
        self.facts & helpers::RNVME_URING_FIXED != 0
    }

    /// The first `N` quadwords of the SQE's command payload (`io_uring_sqe_cmd()`), each read
    /// once (`READ_ONCE()`: user space can still write the SQE), as native values of its
    /// little-endian bytes: quadword `n` is payload bytes `8n..8n + 8`. No call and no
    /// buffer: the loads go straight into the returned value.
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than the payload holds: 80 bytes of a 128-byte SQE, 16 otherwise.
    #[inline]
    pub fn read_qwords<const N: usize>(&self) -> Result<[u64; N]> {
        let limit = if self.sqe128() { 80 } else { 16 };
        if N.checked_mul(8).map_or(true, |b| b > limit) {
            return Err(EINVAL);
        }
        let mut q = [0u64; N];
        for (i, d) in q.iter_mut().enumerate() {
            // SAFETY: `i < N` and `8 * N` bytes are within the payload, which is aligned and
            // readable while the command's call runs (type invariant); a volatile load is one
            // load of the whole quadword.
            let v = unsafe { core::ptr::read_volatile(self.payload.as_ptr().add(i)) };
            *d = u64::from_le(v);
        }
        Ok(q)
    }

    /// Checks that the `len` bytes at user address `addr` lie in the ring's registered buffer
    /// (`io_uring_cmd_import_fixed()`), copying nothing.
    ///
    /// # Errors
    ///
    /// `EFAULT` when they do not (`nvme_map_user_request()`'s answer for a fixed buffer).
    pub fn check_fixed(&self, addr: u64, len: u32) -> Result {
        // SAFETY: the command is live while its call runs; a null buffer is never touched.
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_uring_fixed_copy(
                self.raw.as_ptr(),
                addr,
                core::ptr::null_mut(),
                len,
                true,
            )
        })
    }

    /// Copies `dst.len()` bytes of the ring's registered buffer, from user address `addr` on,
    /// into `dst` (`io_uring_cmd_import_fixed()`, `copy_from_iter()`): the registered pages,
    /// whatever is mapped at `addr` now.
    ///
    /// # Errors
    ///
    /// `EFAULT` when the range is not inside the registered buffer (`nvme_map_user_request()`'s
    /// answer for a fixed buffer), `EINVAL` for more than 4 GiB.
    pub fn read_fixed(&self, addr: u64, dst: &mut [u8]) -> Result {
        let len = u32::try_from(dst.len()).map_err(|_| EINVAL)?;
        // SAFETY: the command is live while its call runs; `dst` is writable for `len` bytes and
        // the helper writes at most that many into it.
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_uring_fixed_copy(
                self.raw.as_ptr(),
                addr,
                dst.as_mut_ptr().cast(),
                len,
                true,
            )
        })
    }

    /// Copies `src` into the ring's registered buffer from user address `addr` on
    /// (`io_uring_cmd_import_fixed()`, `copy_to_iter()`).
    ///
    /// # Errors
    ///
    /// As [`UringCmd::read_fixed`].
    pub fn write_fixed(&self, addr: u64, src: &[u8]) -> Result {
        let len = u32::try_from(src.len()).map_err(|_| EINVAL)?;
        // SAFETY: the command is live while its call runs; the helper only reads `len` bytes of
        // `src` (`copy_to_iter()` copies out of the kernel buffer).
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_uring_fixed_copy(
                self.raw.as_ptr(),
                addr,
                src.as_ptr().cast_mut().cast(),
                len,
                false,
            )
        })
    }

    /// Completes the command now with `value` and `result` (`io_uring_cmd_done()`), for a
    /// command the driver executed while `uring_cmd` ran.
    #[inline]
    pub fn done(&self, value: i32, result: u64) -> Issued {
        // SAFETY: the command is live and completed once: consuming the returned token is the
        // only way to report it issued.
        unsafe {
            helpers::rnvme_glue_uring_cmd_done(self.raw.as_ptr(), value, result, self.issue_flags)
        };
        Issued(())
    }

    /// The raw `struct io_uring_cmd *`.
    #[inline]
    pub(crate) fn raw(&self) -> *mut c_void {
        self.raw.as_ptr()
    }
}

/// Proof that a command was issued and will be completed with `io_uring_cmd_done()`
/// (`-EIOCBQUEUED` to io_uring); only [`crate::user_rq`] makes one.
#[derive(Debug)]
pub struct Issued(pub(crate) ());

/// The operations of a character device; one value per device, shared by its open files, each
/// of which also has its own [`FileOps::File`] state.
pub trait FileOps: Send + Sync + 'static {
    /// The state of one open file: made by [`FileOps::open`], dropped on the file's last close
    /// (after every call on the file has returned).
    type File: Send + Sync;

    /// `open`: the new file's state.
    fn open(&self) -> Result<Self::File>;

    /// An `ioctl` on `file`: `arg` is the raw argument (often a user pointer), `write` whether
    /// the file was opened for writing. Returns the (non-negative) value of the call.
    fn ioctl(&self, file: &Self::File, cmd: u32, arg: usize, write: bool) -> Result<isize>;

    /// An io_uring passthrough command on `file`.
    fn uring_cmd(&self, file: &Self::File, cmd: &UringCmd<'_>, write: bool) -> Result<Issued>;
}

/// What an open file's `private_data` points at: the device's operations and the file's state.
struct OpenFile<T: FileOps> {
    ops: Arc<T>,
    file: T::File,
}

/// A registered character device `/dev/<name>`; deregistered on drop (open files keep their
/// reference on the [`FileOps`] value).
///
/// # Invariants
///
/// `raw` is a registration from `rnvme_glue_chardev_register` whose `data` is `data`, a pointer
/// from `Arc::into_raw` this value owns one reference of.
pub struct CharDev<T: FileOps> {
    raw: NonNull<c_void>,
    data: *const T,
}

// SAFETY: the registration may be dropped from any thread; `T` is `Send + Sync`.
unsafe impl<T: FileOps> Send for CharDev<T> {}
// SAFETY: `&CharDev` gives no access.
unsafe impl<T: FileOps> Sync for CharDev<T> {}

impl<T: FileOps> fmt::Debug for CharDev<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CharDev").field("raw", &self.raw).finish()
    }
}

impl<T: FileOps> CharDev<T> {
    /// Registers `/dev/<name>` (at most 31 bytes) with the operations `ops`.
    pub fn new(name: fmt::Arguments<'_>, ops: Arc<T>) -> Result<Self> {
        let mut buf = [0u8; 32];
        let mut w = NameBuf {
            buf: &mut buf,
            pos: 0,
        };
        fmt::Write::write_fmt(&mut w, name).map_err(|_| EINVAL)?;
        let data = ops.into_raw();
        let mut err = 0i32;
        // SAFETY: `buf` is NUL-terminated (NameBuf keeps the last byte zero); the callbacks
        // match the C prototypes; `data` stays valid until the drop, after deregistration.
        let raw = unsafe {
            helpers::rnvme_glue_chardev_register(
                buf.as_ptr().cast(),
                data.cast_mut().cast(),
                Some(Self::open_cb),
                Some(Self::release_cb),
                Some(Self::ioctl_cb),
                Some(Self::uring_cmd_cb),
                &mut err,
            )
        };
        match NonNull::new(raw) {
            // INVARIANT: registered with `data`, whose reference we keep.
            Some(raw) => Ok(Self { raw, data }),
            None => {
                // SAFETY: from `into_raw` above, not handed out.
                drop(unsafe { Arc::from_raw(data) });
                Err(Error::from_errno(err))
            }
        }
    }

    /// `open`: gives the file its own reference on the operations and its own state.
    ///
    /// # Safety
    ///
    /// `data` must be this registration's pointer and `file_data` a valid out pointer.
    unsafe extern "C" fn open_cb(data: *mut c_void, file_data: *mut *mut c_void) -> i32 {
        // SAFETY: `data` is the registration's `Arc` pointer; the misc core calls open under
        // its lock, so the registration (and its reference) is alive.
        let ops: Arc<T> = unsafe { ArcBorrow::<T>::from_raw(data.cast()) }.into();
        let file = match ops.open() {
            Ok(f) => f,
            Err(e) => return e.to_errno(),
        };
        let open = match KBox::new(OpenFile { ops, file }, GFP_KERNEL) {
            Ok(b) => b,
            Err(_) => return ENOMEM.to_errno(),
        };
        // SAFETY: `file_data` is the C side's out pointer.
        unsafe { *file_data = KBox::into_raw(open).cast() };
        0
    }

    /// Last close: drops the file's state and its reference on the operations.
    ///
    /// # Safety
    ///
    /// `file_data` must be a pointer from `open_cb`, released once.
    unsafe extern "C" fn release_cb(file_data: *mut c_void) {
        // SAFETY: the box `open_cb` gave this file, released once on its last close (no call
        // on the file runs any more).
        drop(unsafe { KBox::<OpenFile<T>>::from_raw(file_data.cast()) });
    }

    /// `unlocked_ioctl`.
    ///
    /// # Safety
    ///
    /// `file_data` must be a pointer from `open_cb` of a file not yet released.
    unsafe extern "C" fn ioctl_cb(
        file_data: *mut c_void,
        cmd: u32,
        arg: usize,
        write: bool,
    ) -> isize {
        // SAFETY: the open file's box lives until `release_cb`, which no call overlaps.
        let f = unsafe { &*file_data.cast::<OpenFile<T>>() };
        match f.ops.ioctl(&f.file, cmd, arg, write) {
            Ok(v) => v,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// `uring_cmd`.
    ///
    /// # Safety
    ///
    /// As for `ioctl_cb`; `ioucmd` must be the live command of this call and `payload` its
    /// SQE's command payload (`io_uring_sqe_cmd()`), as [`UringCmd`]'s invariant describes.
    unsafe extern "C" fn uring_cmd_cb(
        file_data: *mut c_void,
        ioucmd: *mut c_void,
        payload: *const c_void,
        cmd_op: u32,
        issue_flags: u32,
        facts: u32,
    ) -> i32 {
        // SAFETY: as in `ioctl_cb`.
        let f = unsafe { &*file_data.cast::<OpenFile<T>>() };
        let (Some(raw), Some(payload)) = (
            NonNull::new(ioucmd),
            NonNull::new(payload.cast_mut().cast::<u64>()),
        ) else {
            return EINVAL.to_errno();
        };
        // INVARIANT: the C side passes `io_uring_sqe_cmd()` of the command's SQE: 16-byte
        // aligned, 80 bytes with `IO_URING_F_SQE128` (the `facts` bit `sqe128()` reads), 16
        // otherwise, live while this call runs.
        let cmd = UringCmd {
            raw,
            payload,
            op: cmd_op,
            issue_flags,
            facts,
            _life: PhantomData,
        };
        let write = facts & helpers::RNVME_URING_WRITE != 0;
        match f.ops.uring_cmd(&f.file, &cmd, write) {
            // -EIOCBQUEUED: the command completes later through io_uring_cmd_done().
            Ok(Issued(())) => -EIOCBQUEUED,
            Err(e) => e.to_errno(),
        }
    }
}

impl<T: FileOps> Drop for CharDev<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant), deregistered once; no open() runs afterwards.
        unsafe { helpers::rnvme_glue_chardev_unregister(self.raw.as_ptr()) };
        // SAFETY: the registration's own reference (type invariant), no longer reachable.
        drop(unsafe { Arc::from_raw(self.data) });
    }
}

/// Whether the current task has `CAP_SYS_ADMIN` (`capable()`, which also records its use).
pub fn capable_sys_admin() -> bool {
    // SAFETY: no preconditions.
    unsafe { helpers::rnvme_glue_capable_sys_admin() }
}
