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
    pub(crate) unsafe fn from_raw(iob: *mut bindings::io_comp_batch) -> Option<Self> {
        // INVARIANT: function contract.
        Some(Self {
            raw: NonNull::new(iob)?,
            _p: PhantomData,
        })
    }

    /// The C batch.
    pub(crate) fn as_raw(&mut self) -> *mut bindings::io_comp_batch {
        self.raw.as_ptr()
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
