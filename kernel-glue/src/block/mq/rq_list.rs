// SPDX-License-Identifier: GPL-2.0

//! Singly linked request lists (`struct rq_list`), as blk-mq hands a plugged batch to
//! `queue_rqs` (`blk_mq_flush_plug_list()` in `block/blk-mq.c`).
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::{marker::PhantomData, ptr::NonNull};

use kernel::bindings;

use super::{Operations, OwnedRequest};
use crate::error::BlkStatus;

/// A list of requests owned by the driver, linked through `rq_next` (`struct rq_list`).
///
/// # Invariants
///
/// `raw.head` is null (and then `raw.tail` too) or the first of a chain of requests linked by
/// `rq_next`, whose last one is `raw.tail` and has a null `rq_next`. Every request of the chain
/// is a live request of a tag set of `T` that blk-mq handed to the driver exclusively and that
/// is not started (as in [`OwnedRequest`]); the list owns them: nothing else links them.
pub struct RqList<T: Operations> {
    raw: bindings::rq_list,
    _p: PhantomData<T>,
}

impl<T: Operations> core::fmt::Debug for RqList<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RqList")
            .field("empty", &self.is_empty())
            .finish()
    }
}

impl<T: Operations> Default for RqList<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// An empty C list. Built here, not by bindgen's `Default` (a function of the kernel image the
/// module would call for every list taken or given back).
#[inline]
pub(crate) const fn empty_raw() -> bindings::rq_list {
    bindings::rq_list {
        head: core::ptr::null_mut(),
        tail: core::ptr::null_mut(),
    }
}

impl<T: Operations> RqList<T> {
    /// An empty list.
    pub fn new() -> Self {
        // INVARIANT: empty.
        Self {
            raw: empty_raw(),
            _p: PhantomData,
        }
    }

    /// Takes the requests of the C list `rl`, leaving it empty.
    ///
    /// # Safety
    ///
    /// `rl` must be a valid `struct rq_list` whose requests satisfy the type invariant (blk-mq's
    /// `queue_rqs` list: unstarted requests of one queue of a tag set of `T`, handed to the
    /// driver).
    pub(crate) unsafe fn take_raw(rl: *mut bindings::rq_list) -> Self {
        // SAFETY: valid list (function contract); replaced by an empty one, so the requests
        // are owned by the returned list only.
        let raw = unsafe { core::mem::replace(&mut *rl, empty_raw()) };
        // INVARIANT: function contract.
        Self {
            raw,
            _p: PhantomData,
        }
    }

    /// Gives the requests back as a C list (blk-mq then sends each to `queue_rq`); `self` is
    /// left empty.
    pub(crate) fn take_raw_list(&mut self) -> bindings::rq_list {
        core::mem::replace(&mut self.raw, empty_raw())
    }

    /// Whether the list is empty (`rq_list_empty()`).
    pub fn is_empty(&self) -> bool {
        self.raw.head.is_null()
    }

    /// Whether the list holds exactly one request.
    #[inline]
    pub fn is_single(&self) -> bool {
        !self.raw.head.is_null() && self.raw.head == self.raw.tail
    }

    /// The index of the hardware queue of the first request (`rq->mq_hctx`), if any.
    pub fn peek_hctx_idx(&self) -> Option<u32> {
        let head = NonNull::new(self.raw.head)?;
        // SAFETY: a live request of a tag set of `T` (type invariant), alive while listed.
        unsafe { super::Request::<T>::from_raw(head.as_ptr()) }.hctx_idx()
    }

    /// Takes the first request off the list (`rq_list_pop()`).
    pub fn pop(&mut self) -> Option<OwnedRequest<T>> {
        let rq = NonNull::new(self.raw.head)?.as_ptr();
        // SAFETY: `rq` heads the chain (type invariant), so it is live and its `rq_next` is the
        // link of the list (the union's `rq_next` member is the one in use while listed).
        unsafe {
            self.raw.head = (*rq).__bindgen_anon_1.rq_next;
            if self.raw.head.is_null() {
                self.raw.tail = core::ptr::null_mut();
            }
            (*rq).__bindgen_anon_1.rq_next = core::ptr::null_mut();
        }
        // SAFETY: unlinked above, so owned by nobody else now; live request of a tag set of `T`
        // handed to the driver (type invariant).
        unsafe { OwnedRequest::from_raw(rq) }
    }

    /// Appends `rq` (`rq_list_add_tail()`). It must not have been started: blk-mq may send
    /// the requests left on a `queue_rqs` list to `queue_rq`, which starts them.
    pub fn push_tail(&mut self, rq: OwnedRequest<T>) {
        let rq = rq.into_raw().as_ptr();
        // SAFETY: `rq` is owned (it was an `OwnedRequest`), so nothing else links it; the tail,
        // when non-null, is the live last request of the chain (type invariant).
        unsafe {
            (*rq).__bindgen_anon_1.rq_next = core::ptr::null_mut();
            if let Some(tail) = NonNull::new(self.raw.tail) {
                (*tail.as_ptr()).__bindgen_anon_1.rq_next = rq;
            } else {
                self.raw.head = rq;
            }
        }
        // INVARIANT: `rq` is linked after the old tail (or alone) and is the new tail.
        self.raw.tail = rq;
    }
}

impl<T: Operations> Drop for RqList<T> {
    /// A list dropped with requests on it ends them with an I/O error: no request is lost.
    fn drop(&mut self) {
        while let Some(rq) = self.pop() {
            rq.end(BlkStatus::IOERR);
        }
    }
}
