// SPDX-License-Identifier: GPL-2.0

//! The driver side of blk-mq (`struct blk_mq_ops`) and its C callbacks.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::marker::PhantomData;

use kernel::bindings;

use super::{request::Pdu, CompBatch, HwQueue, OwnedRequest, Request, RqList, TagSet};
use crate::error::BlkStatus;

/// What a timed-out request needs (`enum blk_eh_timer_return`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeoutAction {
    /// The driver completed or will complete the request (`BLK_EH_DONE`).
    Done,
    /// Give the request another timeout period (`BLK_EH_RESET_TIMER`).
    ResetTimer,
}

/// A blk-mq driver.
pub trait Operations: Sized + 'static {
    /// Data of the tag set, shared by all hardware queues and the completion path.
    type Data: Send + Sync;
    /// Data of one disk's request queue (e.g. the namespace), see [`Request::queue_data`].
    type QueueData: Send + Sync;
    /// Per-request state any context may touch (atomics), built with `Default` when blk-mq
    /// allocates the request.
    type Shared: Send + Sync + Default;
    /// Per-request state touched only by the request's owner ([`OwnedRequest`]).
    ///
    /// A value left in its request is dropped by the driver or, at the latest, by the
    /// request's `exit_request`, which `blk_mq_free_tag_set()` calls before the tag set
    /// releases its [`Operations::Data`]: it never outlives the tag set's data (so it may
    /// borrow what that data holds without a reference count of its own).
    type Owned: Send;

    /// Starts `rq` on hardware queue `hctx_idx`; `last` is false when more requests follow
    /// (the doorbell may wait for [`Operations::commit_rqs`] or the last one).
    ///
    /// On `Ok` the request belongs to the device until the driver completes it
    /// ([`Request::complete`]); on `Err` blk-mq requeues (`RESOURCE`, `DEV_RESOURCE`) or ends
    /// it with the status, so the driver must have released what it set up.
    fn queue_rq(
        data: &Self::Data,
        hctx_idx: u32,
        rq: OwnedRequest<Self>,
        last: bool,
    ) -> Result<(), BlkStatus>;

    /// Rings the doorbell of `hctx_idx` for requests queued with `last == false`.
    fn commit_rqs(data: &Self::Data, hctx_idx: u32);

    /// Starts a plugged list of requests of one request queue (possibly of several hardware
    /// queues) at once (`queue_rqs`). The driver takes requests off `list`; those it starts
    /// belong to the device as in [`Operations::queue_rq`]; those it cannot start it must put
    /// back on `list` unstarted, with what it set up released: blk-mq then sends each of them
    /// to [`Operations::queue_rq`] (`blk_mq_flush_plug_list()` in `block/blk-mq.c`).
    fn queue_rqs(data: &Self::Data, list: &mut RqList<Self>);

    /// Ends a request the driver completed with [`Request::complete`].
    fn complete(data: &Self::Data, rq: OwnedRequest<Self>);

    /// Releases what a request completed into a batch ([`Request::complete_batched`]) holds,
    /// just before blk-mq ends it with `BLK_STS_OK` in `blk_mq_end_request_batch()` (instead of
    /// [`Operations::complete`]).
    fn end_batched(data: &Self::Data, rq: &mut OwnedRequest<Self>);

    /// Handles a request that timed out.
    fn timeout(data: &Self::Data, rq: &Request<Self>) -> TimeoutAction;

    /// Polls hardware queue `hctx_idx` for completions (`io_uring` IOPOLL); `hctx` finds the
    /// queue's requests by tag; completed requests may go into `batch`, which the caller ends
    /// ([`Request::complete_batched`]). Returns how many were found.
    fn poll(
        data: &Self::Data,
        hctx_idx: u32,
        hctx: &HwQueue<'_, Self>,
        batch: Option<&mut CompBatch<'_>>,
    ) -> u32;
}

/// The `blk_mq_ops` table of `T` and its callbacks.
pub(crate) struct OperationsVTable<T: Operations>(PhantomData<T>);

impl<T: Operations> OperationsVTable<T> {
    /// The tag set data of a request queue's tag set.
    ///
    /// # Safety
    ///
    /// `q` must be a live request queue of a tag set made by [`TagSet::new`] for `T`.
    unsafe fn data_of_queue<'a>(q: *mut bindings::request_queue) -> &'a T::Data {
        // SAFETY: `q` is live; its `tag_set` is a `TagSet<T>`'s (function contract).
        unsafe { TagSet::<T>::data_from_raw((*q).tag_set) }
    }

    /// The C callback `queue_rq_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn queue_rq_callback(
        hctx: *mut bindings::blk_mq_hw_ctx,
        bd: *const bindings::blk_mq_queue_data,
    ) -> bindings::blk_status_t {
        // SAFETY: blk-mq passes a live hctx and queue data whose `rq` it hands to the driver
        // exclusively; the queue belongs to one of our tag sets.
        let (data, idx, rq, last) = unsafe {
            (
                Self::data_of_queue((*hctx).queue),
                (*hctx).queue_num,
                OwnedRequest::<T>::from_raw((*bd).rq),
                (*bd).last,
            )
        };
        let Some(rq) = rq else {
            return BlkStatus::IOERR.as_raw();
        };
        match T::queue_rq(data, idx, rq, last) {
            Ok(()) => BlkStatus::OK.as_raw(),
            Err(s) => s.as_raw(),
        }
    }

    /// The C callback `commit_rqs_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn commit_rqs_callback(hctx: *mut bindings::blk_mq_hw_ctx) {
        // SAFETY: as in `queue_rq_callback`.
        let (data, idx) = unsafe { (Self::data_of_queue((*hctx).queue), (*hctx).queue_num) };
        T::commit_rqs(data, idx);
    }

    /// The C callback `queue_rqs_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn queue_rqs_callback(rqlist: *mut bindings::rq_list) {
        // SAFETY: blk-mq passes a valid list of unstarted requests of one request queue of
        // ours, handed to the driver (`__blk_mq_flush_plug_list()`).
        let head = unsafe { (*rqlist).head };
        if head.is_null() {
            return;
        }
        // SAFETY: as above: the first request is live and its queue ours.
        let data = unsafe { Self::data_of_queue((*head).q) };
        // SAFETY: as above; the list is given back below.
        let mut list = unsafe { RqList::<T>::take_raw(rqlist) };
        T::queue_rqs(data, &mut list);
        // What is left goes back to blk-mq, for `queue_rq` one by one.
        // SAFETY: `rqlist` is blk-mq's list, valid during the call and emptied by `take_raw`.
        unsafe { *rqlist = list.take_raw_list() };
    }

    /// The completion batch callback `complete_batch_callback` (`nvme_pci_complete_batch()`).
    ///
    /// # Safety
    ///
    /// Only blk-mq calls it (through `iob->complete`), with a valid batch whose requests were
    /// all added by [`Request::complete_batched`] of `T`.
    pub(crate) unsafe extern "C" fn complete_batch_callback(iob: *mut bindings::io_comp_batch) {
        // SAFETY: a valid batch (function contract).
        let mut rq = unsafe { (*iob).req_list.head };
        while !rq.is_null() {
            // SAFETY: a request of the batch: live, of one of our queues, completed and handed
            // to the driver until `blk_mq_end_request_batch()` below; its `rq_next` links the
            // batch and is read before the driver sees the request.
            let (next, data, owned) = unsafe {
                (
                    (*rq).__bindgen_anon_1.rq_next,
                    Self::data_of_queue((*rq).q),
                    OwnedRequest::<T>::from_raw(rq),
                )
            };
            if let Some(mut owned) = owned {
                T::end_batched(data, &mut owned);
            }
            rq = next;
        }
        // SAFETY: every request of the batch was completed once and released by the driver.
        unsafe { bindings::blk_mq_end_request_batch(iob) };
    }

    /// The C callback `complete_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    pub(crate) unsafe extern "C" fn complete_callback(rq: *mut bindings::request) {
        // SAFETY: blk-mq calls `complete` once per `blk_mq_complete_request`, handing the
        // request back to the driver exclusively; its queue is ours.
        let (data, rq) = unsafe {
            (
                Self::data_of_queue((*rq).q),
                OwnedRequest::<T>::from_raw(rq),
            )
        };
        if let Some(rq) = rq {
            T::complete(data, rq);
        }
    }

    /// The C callback `timeout_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn timeout_callback(
        rq: *mut bindings::request,
    ) -> bindings::blk_eh_timer_return {
        // SAFETY: blk-mq passes a live request of one of our queues.
        let (data, rq) = unsafe { (Self::data_of_queue((*rq).q), Request::<T>::from_raw(rq)) };
        match T::timeout(data, rq) {
            TimeoutAction::Done => bindings::blk_eh_timer_return_BLK_EH_DONE,
            TimeoutAction::ResetTimer => bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
        }
    }

    /// The C callback `poll_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn poll_callback(
        hctx: *mut bindings::blk_mq_hw_ctx,
        iob: *mut bindings::io_comp_batch,
    ) -> core::ffi::c_int {
        // SAFETY: as in `queue_rq_callback`; the hctx is live during the call; `iob` is null
        // or the caller's batch, which only this poll adds to during the call.
        let (data, idx, hw, mut batch) = unsafe {
            (
                Self::data_of_queue((*hctx).queue),
                (*hctx).queue_num,
                HwQueue::<T>::from_raw(hctx),
                CompBatch::from_raw(iob),
            )
        };
        match hw {
            Some(hw) => T::poll(data, idx, &hw, batch.as_mut())
                .try_into()
                .unwrap_or(i32::MAX),
            None => 0,
        }
    }

    /// The C callback `init_request_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn init_request_callback(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: core::ffi::c_uint,
        _numa_node: core::ffi::c_uint,
    ) -> core::ffi::c_int {
        // SAFETY: blk-mq allocated `rq` with `cmd_size` = `size_of::<Pdu<T>>()` bytes of PDU
        // (set in `TagSet::new`), uninitialised until now; it is written once here.
        match unsafe { Pdu::<T>::init(rq) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// The C callback `exit_request_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn exit_request_callback(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: core::ffi::c_uint,
    ) {
        // SAFETY: the PDU was initialised by `init_request_callback`; blk-mq frees the request
        // after this, so it is dropped exactly once.
        unsafe { Pdu::<T>::drop_in_place(rq) };
    }

    /// The C callback `map_queues_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn map_queues_callback(set: *mut bindings::blk_mq_tag_set) {
        // SAFETY: blk-mq passes one of our tag sets.
        unsafe { TagSet::<T>::map_queues_raw(set) };
    }

    /// The operations table.
    pub(crate) const VTABLE: bindings::blk_mq_ops = bindings::blk_mq_ops {
        queue_rq: Some(Self::queue_rq_callback),
        commit_rqs: Some(Self::commit_rqs_callback),
        queue_rqs: Some(Self::queue_rqs_callback),
        get_budget: None,
        put_budget: None,
        set_rq_budget_token: None,
        get_rq_budget_token: None,
        timeout: Some(Self::timeout_callback),
        poll: Some(Self::poll_callback),
        complete: Some(Self::complete_callback),
        init_hctx: None,
        exit_hctx: None,
        init_request: Some(Self::init_request_callback),
        exit_request: Some(Self::exit_request_callback),
        cleanup_rq: None,
        busy: None,
        map_queues: Some(Self::map_queues_callback),
        #[cfg(CONFIG_BLK_DEBUG_FS)]
        show_rq: None,
    };

    /// The table as a `'static` reference (promoted constant).
    pub(crate) fn build() -> &'static bindings::blk_mq_ops {
        &Self::VTABLE
    }
}
