// SPDX-License-Identifier: GPL-2.0

//! Completion batches (`struct io_comp_batch`): requests completed together, ended with one
//! `blk_mq_end_request_batch()` (`nvme_irq()` and `nvme_poll()` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! A batch is either the one blk-mq's poll gives the driver ([`CompBatch::from_raw`], ended by
//! its caller, e.g. io_uring's `io_do_iopoll()`), or a [`LocalCompBatch`] the driver fills in
//! its interrupt handler and ends when it drops. Requests get into a batch only through
//! [`super::Request::complete_batched`], which stores the batch callback of their
//! [`super::Operations`]; that callback calls [`super::Operations::end_batched`] on each
//! request and then `blk_mq_end_request_batch()`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::bindings;

/// A completion batch the driver may add requests to.
///
/// # Invariants
///
/// `raw` is a valid `struct io_comp_batch`, alive and not used by anyone else for `'a`.
pub struct CompBatch<'a> {
    raw: NonNull<bindings::io_comp_batch>,
    _p: PhantomData<&'a mut bindings::io_comp_batch>,
}

impl core::fmt::Debug for CompBatch<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CompBatch").finish()
    }
}

impl<'a> CompBatch<'a> {
    /// Views the batch `iob` (the poll callback's argument); `None` when it is null.
    ///
    /// # Safety
    ///
    /// A non-null `iob` must be a valid `struct io_comp_batch` that only the caller uses for
    /// `'a`.
    pub unsafe fn from_raw(iob: *mut bindings::io_comp_batch) -> Option<Self> {
        // INVARIANT: function contract.
        Some(Self {
            raw: NonNull::new(iob)?,
            _p: PhantomData,
        })
    }

    /// `blk_mq_add_to_batch(rq, iob, is_error, complete)` (`include/linux/blk-mq.h`), an inline
    /// function in C, written here from the bindgen layouts so that a completion makes no call
    /// for it: adds `rq` to the batch unless it has I/O scheduler tags, or is not a passthrough
    /// request and has an `end_io` or `is_error`, or the batch already ends its requests with
    /// another callback than `complete`. Returns whether it was added.
    ///
    /// # Safety
    ///
    /// `rq` is a live request completed once and handed to this batch's owner, not in any
    /// list; `complete` ends every request of a batch holding `rq`.
    #[inline]
    pub unsafe fn add(
        &mut self,
        rq: NonNull<bindings::request>,
        is_error: bool,
        complete: unsafe extern "C" fn(*mut bindings::io_comp_batch),
    ) -> bool {
        // SAFETY: a live request that only the caller touches now (function contract).
        let r = unsafe { &mut *rq.as_ptr() };
        if r.rq_flags & (1 << bindings::__RQF_SCHED_TAGS) != 0 {
            return false;
        }
        // `blk_rq_is_passthrough()`.
        let op = r.cmd_flags & ((1u32 << bindings::REQ_OP_BITS) - 1);
        let passthrough =
            op == bindings::req_op_REQ_OP_DRV_IN || op == bindings::req_op_REQ_OP_DRV_OUT;
        if !passthrough && (r.end_io.is_some() || is_error) {
            return false;
        }
        // SAFETY: a valid batch only this value's owner uses (type invariant).
        let b = unsafe { &mut *self.raw.as_ptr() };
        match b.complete {
            None => b.complete = Some(complete),
            Some(c) if c as usize == complete as usize => {}
            Some(_) => return false,
        }
        // `blk_mq_need_time_stamp()`.
        let ts = (1 << bindings::__RQF_IO_STAT)
            | (1 << bindings::__RQF_STATS)
            | (1 << bindings::__RQF_USE_SCHED);
        if !passthrough && r.rq_flags & ts != 0 {
            b.need_ts = true;
        }
        // `rq_list_add_head()`.
        r.__bindgen_anon_1.rq_next = b.req_list.head;
        b.req_list.head = rq.as_ptr();
        if b.req_list.tail.is_null() {
            b.req_list.tail = rq.as_ptr();
        }
        true
    }
}

/// A batch on the driver's stack (`DEFINE_IO_COMP_BATCH()`), ended when it drops.
///
/// # Invariants
///
/// Every request in `raw.req_list` was added by `blk_mq_add_to_batch()`, which also set
/// `raw.complete` to the callback that ends them.
pub struct LocalCompBatch {
    raw: bindings::io_comp_batch,
}

impl core::fmt::Debug for LocalCompBatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalCompBatch").finish()
    }
}

impl Default for LocalCompBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalCompBatch {
    /// An empty batch.
    #[inline]
    pub fn new() -> Self {
        // INVARIANT: no request, no callback. (A literal, not bindgen's `Default`: that is a
        // function of the kernel image, called once per interrupt otherwise.)
        Self {
            raw: bindings::io_comp_batch {
                req_list: super::rq_list::empty_raw(),
                need_ts: false,
                complete: None,
            },
        }
    }

    /// The batch to add requests to.
    pub fn batch(&mut self) -> CompBatch<'_> {
        // INVARIANT: `self.raw` is valid and borrowed mutably for the result's lifetime.
        CompBatch {
            raw: NonNull::from(&mut self.raw),
            _p: PhantomData,
        }
    }
}

impl Drop for LocalCompBatch {
    /// Ends the batched requests (`nvme_pci_complete_batch()` at the end of `nvme_irq()`).
    #[inline]
    fn drop(&mut self) {
        if self.raw.req_list.head.is_null() {
            return;
        }
        if let Some(complete) = self.raw.complete {
            // SAFETY: the requests were added with this callback, which ends them all (type
            // invariant); the batch is valid and not used after this.
            unsafe { complete(&mut self.raw) };
        }
    }
}
