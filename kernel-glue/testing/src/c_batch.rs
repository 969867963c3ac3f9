// SPDX-License-Identifier: GPL-2.0

//! The kernel's own `blk_mq_add_to_batch()` (an inline function of `include/linux/blk-mq.h`,
//! called through a test helper) beside `kernel_glue`'s copy of it
//! ([`kernel_glue::block::mq::CompBatch::add`], which `rnvme.ko` runs for every completion), on
//! requests and batches set up alike, for a differential test.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::ptr;

use kernel::{bindings, prelude::*};
use kernel_glue::block::mq::CompBatch;

use crate::helpers;

/// The batch callback a case passes (never called: the batches are never ended).
///
/// # Safety
///
/// None needed: it does nothing (`unsafe` only for the C callback's type).
unsafe extern "C" fn passed_complete(_iob: *mut bindings::io_comp_batch) {}

/// Another batch callback, which a case's batch may already hold (never called).
///
/// # Safety
///
/// None needed: it does nothing (`unsafe` only for the C callback's type).
unsafe extern "C" fn other_complete(_iob: *mut bindings::io_comp_batch) {}

/// An `end_io` callback a case's request may hold (never called).
///
/// # Safety
///
/// None needed: it does nothing (`unsafe` only for the C callback's type).
unsafe extern "C" fn end_io_stub(
    _rq: *mut bindings::request,
    _status: bindings::blk_status_t,
) -> bindings::rq_end_io_ret {
    0
}

/// What the request and the batch hold before the call.
#[derive(Clone, Copy, Debug)]
pub struct BatchCase {
    /// `rq->rq_flags`.
    pub rq_flags: u32,
    /// `rq->cmd_flags`: a `REQ_OP_*` value and flags.
    pub cmd_flags: u32,
    /// The request has an `end_io` callback.
    pub end_io: bool,
    /// The `is_error` argument.
    pub is_error: bool,
    /// The batch's callback before the call: 0 none, 1 the one passed, 2 another.
    pub complete: u8,
    /// The batch already holds a request.
    pub nonempty: bool,
}

/// What a call did, comparable between the two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOutcome {
    /// The return value: the request was added.
    pub added: bool,
    /// The batch's callback after the call: 0 none, 1 the one passed, 2 another.
    pub complete: u8,
    /// `iob->need_ts` after the call (false before).
    pub need_ts: bool,
    /// The list's head is the request.
    pub head_is_rq: bool,
    /// The list's tail is the request.
    pub tail_is_rq: bool,
    /// The list's tail is the request it held before (nonempty cases).
    pub tail_is_prev: bool,
    /// The request's `rq_next` is the list's old head (null for an empty list).
    pub next_is_old_head: bool,
}

/// One side's request, batch and the request already in the batch, set up for `case`.
struct Side {
    rq: KBox<bindings::request>,
    prev: KBox<bindings::request>,
    iob: bindings::io_comp_batch,
}

impl Side {
    fn new(case: &BatchCase) -> Result<Self> {
        let mut rq = KBox::new(bindings::request::default(), GFP_KERNEL)?;
        let mut prev = KBox::new(bindings::request::default(), GFP_KERNEL)?;
        rq.rq_flags = case.rq_flags;
        rq.cmd_flags = case.cmd_flags;
        rq.end_io = if case.end_io { Some(end_io_stub) } else { None };
        // Something other than the list's head, so a missing store shows.
        rq.__bindgen_anon_1.rq_next = ptr::addr_of_mut!(*rq);
        let p: *mut bindings::request = ptr::addr_of_mut!(*prev);
        let (head, tail) = if case.nonempty {
            (p, p)
        } else {
            (ptr::null_mut(), ptr::null_mut())
        };
        let complete: Option<unsafe extern "C" fn(*mut bindings::io_comp_batch)> =
            match case.complete {
                0 => None,
                1 => Some(passed_complete),
                _ => Some(other_complete),
            };
        let iob = bindings::io_comp_batch {
            req_list: bindings::rq_list { head, tail },
            need_ts: false,
            complete,
        };
        Ok(Self { rq, prev, iob })
    }

    fn outcome(&mut self, added: bool, nonempty: bool) -> BatchOutcome {
        let rq: *mut bindings::request = ptr::addr_of_mut!(*self.rq);
        let prev: *mut bindings::request = ptr::addr_of_mut!(*self.prev);
        let old_head = if nonempty { prev } else { ptr::null_mut() };
        let complete = match self.iob.complete {
            None => 0,
            Some(c) if c as usize == passed_complete as usize => 1,
            Some(_) => 2,
        };
        // SAFETY: `rq_next` is the view of the union both sides write; reading a pointer.
        let next = unsafe { self.rq.__bindgen_anon_1.rq_next };
        BatchOutcome {
            added,
            complete,
            need_ts: self.iob.need_ts,
            head_is_rq: self.iob.req_list.head == rq,
            tail_is_rq: self.iob.req_list.tail == rq,
            tail_is_prev: self.iob.req_list.tail == prev,
            next_is_old_head: next == old_head,
        }
    }
}

/// Runs `case` through the kernel's `blk_mq_add_to_batch()` and through
/// [`CompBatch::add`], each on its own request and batch set up alike; returns (kernel, ours).
pub fn run(case: &BatchCase) -> Result<(BatchOutcome, BatchOutcome)> {
    let mut c = Side::new(case)?;
    // SAFETY: a zeroed request and batch of this function, set up by `Side::new`, which only the
    // helper touches during the call; the callback is never called.
    let added = unsafe {
        helpers::rnvme_glue_test_blk_mq_add_to_batch(
            ptr::addr_of_mut!(*c.rq),
            &mut c.iob,
            case.is_error,
            Some(passed_complete),
        )
    };
    let kernel = c.outcome(added, case.nonempty);

    let mut r = Side::new(case)?;
    let added = {
        // SAFETY: `r.iob` is a valid batch used only through this value in this block.
        let mut batch = unsafe { CompBatch::from_raw(&mut r.iob) }.ok_or(EINVAL)?;
        let rq = ptr::NonNull::from(&mut *r.rq);
        // SAFETY: a live request of this function in no list but the case's own; the callback
        // is never called (the batch is never ended).
        unsafe { batch.add(rq, case.is_error, passed_complete) }
    };
    let ours = r.outcome(added, case.nonempty);
    Ok((kernel, ours))
}
