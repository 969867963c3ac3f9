// SPDX-License-Identifier: GPL-2.0

//! Requests (`struct request`), their PDU, and their data segments as `bvec` types.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::{cell::UnsafeCell, marker::PhantomData, ptr::NonNull};

use bvec::{Bvec, BvecIter, IterState};
use kernel::{bindings, prelude::*, types::Opaque};

use super::{operations::OperationsVTable, CompBatch, HwQueue, Operations, TagSetRef};
use crate::{error::BlkStatus, helpers, KPage};

/// The address of `rq`'s PDU: the memory right behind the request, as `blk_mq_rq_to_pdu()`
/// (`include/linux/blk-mq.h`: `return rq + 1;`) computes it. Done here rather than through a C
/// call, which every access to a request's PDU would pay (a call under emulation costs far
/// more than the addition); `init_request` checks once per request that both agree.
#[inline(always)]
pub(crate) fn pdu_of(rq: *mut bindings::request) -> *mut core::ffi::c_void {
    rq.wrapping_add(1).cast()
}

/// The PDU blk-mq allocates behind every request of a [`super::TagSet`] of `T`.
pub(crate) struct Pdu<T: Operations> {
    shared: T::Shared,
    owned: UnsafeCell<Option<T::Owned>>,
}

impl<T: Operations> Pdu<T> {
    /// Initialises the PDU of `rq`; `EINVAL` (nothing written) if [`pdu_of`] does not give
    /// the address the C helper `blk_mq_rq_to_pdu()` gives.
    ///
    /// # Safety
    ///
    /// `rq` must be a request of a tag set with `cmd_size >= size_of::<Pdu<T>>()` whose PDU is
    /// uninitialised (or was dropped).
    pub(crate) unsafe fn init(rq: *mut bindings::request) -> Result {
        // SAFETY: `rq` is a live request (function contract).
        let pdu = unsafe { helpers::rnvme_glue_blk_mq_rq_to_pdu(rq) };
        if pdu != pdu_of(rq) {
            return Err(EINVAL);
        }
        // SAFETY: the PDU follows the request and is large enough (function contract); blk-mq
        // aligns it like the request (8 bytes), which `TagSet::new` checks is enough.
        unsafe {
            pdu.cast::<Self>().write(Self {
                shared: T::Shared::default(),
                owned: UnsafeCell::new(None),
            })
        };
        Ok(())
    }

    /// Drops the PDU of `rq`.
    ///
    /// # Safety
    ///
    /// The PDU must have been initialised by [`Pdu::init`] and not used afterwards.
    pub(crate) unsafe fn drop_in_place(rq: *mut bindings::request) {
        // SAFETY: initialised (function contract), dropped once.
        unsafe { core::ptr::drop_in_place(pdu_of(rq).cast::<Self>()) };
    }
}

/// The operation of a request (`req_op()`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    /// `REQ_OP_READ`.
    Read,
    /// `REQ_OP_WRITE`.
    Write,
    /// `REQ_OP_FLUSH`.
    Flush,
    /// `REQ_OP_DISCARD`.
    Discard,
    /// `REQ_OP_WRITE_ZEROES`.
    WriteZeroes,
    /// Anything else (the raw `req_op`).
    Other(u32),
}

/// A request of a tag set of `T`, shared: any context may hold one while the request exists.
///
/// # Invariants
///
/// The wrapped `struct request` belongs to a tag set of `T` (so its PDU is a [`Pdu<T>`],
/// initialised while the request exists) and to the request queue of a `GenDisk<T>`.
#[repr(transparent)]
pub struct Request<T: Operations>(Opaque<bindings::request>, PhantomData<T>);

impl<T: Operations> core::fmt::Debug for Request<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Request").field("tag", &self.tag()).finish()
    }
}

impl<T: Operations> Request<T> {
    /// Views a raw request.
    ///
    /// # Safety
    ///
    /// `rq` must be a live request of a tag set of `T`, alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(rq: *mut bindings::request) -> &'a Self {
        // SAFETY: `Request` is `repr(transparent)` over the C struct; live (contract).
        unsafe { &*rq.cast::<Self>() }
    }

    fn raw(&self) -> *mut bindings::request {
        self.0.get()
    }

    /// Whether the request is on a poll hardware queue (`blk_rq_is_poll()`): one without an
    /// interrupt, completed by polling.
    pub fn is_poll(&self) -> bool {
        // SAFETY: a live request (type invariant); the function only reads its `mq_hctx`.
        unsafe { bindings::blk_rq_is_poll(self.raw()) }
    }

    /// The driver tag (`rq->tag`), `None` when the request has none.
    pub fn tag(&self) -> Option<u32> {
        // SAFETY: the request is live (type invariant); `tag` is set before the driver sees it.
        u32::try_from(unsafe { (*self.raw()).tag }).ok()
    }

    /// Index of the hardware queue the request was issued on, `None` before it has one.
    pub fn hctx_idx(&self) -> Option<u32> {
        // SAFETY: live request; `mq_hctx` is set when the request is allocated and constant
        // until it is freed.
        let hctx = unsafe { (*self.raw()).mq_hctx };
        // SAFETY: a non-null `mq_hctx` is a live hardware context of the request's queue.
        (!hctx.is_null()).then(|| unsafe { (*hctx).queue_num })
    }

    /// The operation.
    pub fn op(&self) -> Op {
        // SAFETY: live request; `cmd_flags` is constant while the driver owns it.
        let op = unsafe { (*self.raw()).cmd_flags } & ((1u32 << bindings::REQ_OP_BITS) - 1);
        match op {
            bindings::req_op_REQ_OP_READ => Op::Read,
            bindings::req_op_REQ_OP_WRITE => Op::Write,
            bindings::req_op_REQ_OP_FLUSH => Op::Flush,
            bindings::req_op_REQ_OP_DISCARD => Op::Discard,
            bindings::req_op_REQ_OP_WRITE_ZEROES => Op::WriteZeroes,
            other => Op::Other(other),
        }
    }

    /// Whether the write must be on stable media when it completes (`REQ_FUA`).
    pub fn is_fua(&self) -> bool {
        // SAFETY: as in `op`.
        unsafe { (*self.raw()).cmd_flags & (1u32 << bindings::req_flag_bits___REQ_FUA) != 0 }
    }

    /// Whether the write must be atomic (`REQ_ATOMIC`, an `RWF_ATOMIC` write).
    pub fn is_atomic(&self) -> bool {
        // SAFETY: as in `op`.
        unsafe { (*self.raw()).cmd_flags & (1u32 << bindings::req_flag_bits___REQ_ATOMIC) != 0 }
    }

    /// Whether an atomic write fits its queue's atomic write limits: no longer than the unit
    /// maximum, and not across an atomic boundary (the checks of `nvme_valid_atomic_write()`
    /// in `drivers/nvme/host/core.c`; the block layer checks the same before, this is the last
    /// line before the device).
    pub fn atomic_write_fits(&self) -> bool {
        // SAFETY: the request is valid (type invariant); the call reads it and its queue.
        unsafe { helpers::rnvme_glue_rq_atomic_write_fits(self.raw()) }
    }

    /// First sector (512-byte units) of the request (`blk_rq_pos()`).
    pub fn sector(&self) -> u64 {
        // SAFETY: as in `op`.
        unsafe { (*self.raw()).__sector }
    }

    /// Length in bytes (`blk_rq_bytes()`).
    pub fn bytes(&self) -> u32 {
        // SAFETY: as in `op`.
        unsafe { (*self.raw()).__data_len }
    }

    /// Number of physical segments blk-mq counted (`blk_rq_nr_phys_segments()`).
    pub fn nr_phys_segments(&self) -> u16 {
        // SAFETY: as in `op`.
        unsafe { (*self.raw()).nr_phys_segments }
    }

    /// The data of the request queue (disk) the request was issued on.
    pub fn queue_data(&self) -> &T::QueueData {
        // SAFETY: live request; every request queue of a tag set of `T` belongs to a
        // `GenDisk<T>`, whose `queuedata` is a live `T::QueueData` while requests exist.
        unsafe { &*(*(*self.raw()).q).queuedata.cast::<T::QueueData>() }
    }

    /// The state any context may touch.
    pub fn shared(&self) -> &T::Shared {
        // SAFETY: the PDU is an initialised `Pdu<T>` (type invariant); `shared` is only ever
        // accessed through shared references.
        unsafe { &(*pdu_of(self.raw()).cast::<Pdu<T>>()).shared }
    }

    /// Whether fault injection (`fail_io_timeout`, `/sys/block/<disk>/io-timeout-fail`) wants
    /// this completion dropped, so the request times out (`blk_should_fake_timeout()`).
    #[inline]
    pub fn should_fake_timeout(&self) -> bool {
        #[cfg(CONFIG_FAIL_IO_TIMEOUT)]
        {
            // The flag test of `blk_should_fake_timeout()` (`include/linux/blk-mq.h`), inline in
            // C: the call is made only when fault injection is armed on the queue.
            // SAFETY: live request of a live queue; `queue_flags` is a word of bits changed
            // with atomic bit operations (`blk_queue_flag_set()`), read here once, as
            // `test_bit()` does (`READ_ONCE()`-like: a volatile load).
            let flags =
                unsafe { core::ptr::addr_of!((*(*self.raw()).q).queue_flags).read_volatile() };
            if flags & (1 << bindings::QUEUE_FLAG_FAIL_IO) == 0 {
                return false;
            }
            // SAFETY: live request of a live queue.
            unsafe { helpers::rnvme_glue_blk_should_fake_timeout(self.raw()) }
        }
        #[cfg(not(CONFIG_FAIL_IO_TIMEOUT))]
        false
    }

    /// The hardware queue the request was issued on (to find other requests by tag).
    pub fn hw_queue(&self) -> Option<HwQueue<'_, T>> {
        // SAFETY: live request; `mq_hctx`, when set, is a live hardware context of its queue
        // on a tag set of `T`, alive while the request is.
        unsafe { HwQueue::from_raw((*self.raw()).mq_hctx) }
    }

    /// The tag set of the request (to quiesce it and find other requests, in a controller
    /// reset).
    pub fn tag_set(&self) -> Option<TagSetRef<'_, T>> {
        // SAFETY: live request of a disk's queue (type invariant): `q` is that queue and its
        // `tag_set` the live raw tag set of a `TagSet<T>`, alive while the request is.
        unsafe { TagSetRef::from_raw((*(*self.raw()).q).tag_set) }
    }

    /// Completes the request: blk-mq then calls [`Operations::complete`] (here or on the
    /// submitting CPU). The caller must make sure this happens once per submission.
    pub fn complete(&self) {
        // SAFETY: live request owned by the device; the caller completes it once.
        unsafe { bindings::blk_mq_complete_request(self.raw()) };
    }

    /// Completes the request like [`Request::complete`], but when blk-mq lets it end here
    /// (not on another CPU) and it can be batched (`blk_mq_add_to_batch()`: a `batch`, no I/O
    /// scheduler tags, and for a non-passthrough request no `end_io` and not `is_error`), adds
    /// it to `batch` instead of calling [`Operations::complete`]: the batch's end then calls
    /// [`Operations::end_batched`] and ends it with `BLK_STS_OK`. Returns whether it was
    /// batched. The caller must make sure this happens once per submission, and must not
    /// batch a request whose `end_io` needs another status than 0.
    #[inline]
    pub fn complete_batched(&self, batch: Option<&mut CompBatch<'_>>, is_error: bool) -> bool {
        let rq = self.raw();
        // SAFETY: live request owned by the device, completed once (caller).
        if unsafe { bindings::blk_mq_complete_request_remote(rq) } {
            // Completed on the submitting CPU (its `complete` runs there).
            return false;
        }
        if let (Some(b), Some(r)) = (batch, NonNull::new(rq)) {
            // SAFETY: completed once and now this caller's (`complete_request_remote` kept it
            // here), in no list; the callback ends requests of a tag set of `T`, which is what
            // a batch holding it contains (it is stored only from here).
            if unsafe { b.add(r, is_error, OperationsVTable::<T>::complete_batch_callback) } {
                return true;
            }
        }
        // `rq->q->mq_ops->complete(rq)`, which for a request of a tag set of `T` is this.
        // SAFETY: completed once, here; its queue is one of `T`'s.
        unsafe { OperationsVTable::<T>::complete_callback(rq) };
        false
    }

    /// Calls `f` with each bio's range (first sector, bytes), in order.
    pub fn for_each_bio_range(&self, mut f: impl FnMut(u64, u32) -> Result) -> Result {
        // SAFETY: live request; its bio chain is constant while the driver owns it.
        let mut bio = unsafe { (*self.raw()).bio };
        while let Some(b) = NonNull::new(bio) {
            // SAFETY: `b` is a bio of the chain (live while the request is).
            let it = unsafe { (*b.as_ptr()).bi_iter };
            f(it.bi_sector, it.bi_size)?;
            // SAFETY: as above.
            bio = unsafe { (*b.as_ptr()).bi_next };
        }
        Ok(())
    }

    /// The request's data as one segment when it is one bio whose bytes lie in one entry of
    /// its `bio_vec` table (a small I/O; `req_bvec()` in `include/linux/blk-mq.h`, which the
    /// C driver uses for a one-segment request); `None` otherwise, or when the entry does not
    /// hold what the iterator says. What [`Request::for_each_segment`] would give for such a
    /// request, without walking the table.
    #[inline]
    pub fn single_segment(&self) -> Option<Bvec<KPage>> {
        // SAFETY: live request; its bio chain is constant while the driver owns it.
        let bio = NonNull::new(unsafe { (*self.raw()).bio })?;
        // SAFETY: `bio` is a live bio of the chain.
        let (table, it, next) = unsafe {
            let b = bio.as_ptr();
            ((*b).bi_io_vec, (*b).bi_iter, (*b).bi_next)
        };
        if !next.is_null() || it.bi_size == 0 {
            return None;
        }
        let start = NonNull::new(table)?.as_ptr();
        // SAFETY: the bio's table holds the entry its iterator is at (the block layer's
        // contract for a bio in a request with data).
        let bv = unsafe { start.add(it.bi_idx as usize).read() };
        // The remaining bytes must lie in this entry: `done + size <= len`.
        if it.bi_bvec_done.checked_add(it.bi_size)? > bv.bv_len {
            return None;
        }
        let offset = bv.bv_offset.checked_add(it.bi_bvec_done)?;
        Bvec::new(KPage::from_ptr(bv.bv_page), offset, it.bi_size).ok()
    }

    /// Calls `f` with each data segment of the request, in order: the multipage segments of
    /// every bio's own `bio_vec` table (never copied), through the bio's iterator state.
    ///
    /// # Errors
    ///
    /// `EIO` when a bio's table does not hold what its iterator says (a zero-length or
    /// overflowing entry, or too few bytes); any error of `f`.
    pub fn for_each_segment(&self, mut f: impl FnMut(&Bvec<KPage>) -> Result) -> Result {
        // SAFETY: live request; bio chain constant while the driver owns it.
        let mut bio = unsafe { (*self.raw()).bio };
        while let Some(b) = NonNull::new(bio) {
            // SAFETY: `b` is a live bio of the chain.
            let (table, it) = unsafe { ((*b.as_ptr()).bi_io_vec, (*b.as_ptr()).bi_iter) };
            if it.bi_size != 0 {
                let start = NonNull::new(table).ok_or(EIO)?.as_ptr();
                // SAFETY: the bio's table holds the entries its iterator covers, from `bi_idx`
                // on (the block layer's contract for a bio in a request).
                let first = unsafe { start.add(it.bi_idx as usize) };
                let (n, whole) = covered_entries(first, it.bi_bvec_done, it.bi_size)?;
                // SAFETY: the `n` entries from `first` were read and checked by
                // `covered_entries`: each has a non-zero length and no `offset + len`
                // overflow, which is exactly `Bvec<KPage>`'s invariant, and `Bvec<KPage>` has
                // the layout of `struct bio_vec` (checked in kpage.rs). The table is not
                // written while the request is in flight.
                let segs = unsafe { core::slice::from_raw_parts(first.cast::<Bvec<KPage>>(), n) };
                if it.bi_bvec_done == 0 && whole {
                    // The bio covers its entries whole (most bios: not split inside an
                    // entry): they are its segments as they are, with nothing to clip.
                    for seg in segs {
                        f(seg)?;
                    }
                } else {
                    let iter = BvecIter::from_state(
                        segs,
                        IterState::new(it.bi_sector, it.bi_size, 0, it.bi_bvec_done),
                    )
                    .map_err(|_| EIO)?;
                    for seg in iter.segments() {
                        f(&seg)?;
                    }
                }
            }
            // SAFETY: as above.
            bio = unsafe { (*b.as_ptr()).bi_next };
        }
        Ok(())
    }
}

/// Counts the entries from `first` that hold `done + size` bytes, checking each as a `Bvec`;
/// also says whether they hold exactly that many (the last entry is not cut by the size).
fn covered_entries(first: *const bindings::bio_vec, done: u32, size: u32) -> Result<(usize, bool)> {
    let mut need = u64::from(done) + u64::from(size);
    let mut n = 0usize;
    let mut whole = false;
    while need > 0 {
        // SAFETY: the caller's bio covers these entries (see `for_each_segment`).
        let bv = unsafe { first.add(n).read() };
        if bv.bv_len == 0 || bv.bv_offset.checked_add(bv.bv_len).is_none() {
            return Err(EIO);
        }
        whole = u64::from(bv.bv_len) == need;
        need = need.saturating_sub(u64::from(bv.bv_len));
        n = n.checked_add(1).ok_or(EIO)?;
        // A bio holds at most `BIO_MAX_VECS` (256) entries.
        if n > 256 {
            return Err(EIO);
        }
    }
    Ok((n, whole))
}

/// A request owned by the driver: given to [`Operations::queue_rq`] and
/// [`Operations::complete`]; only the owner may touch [`Operations::Owned`].
///
/// # Invariants
///
/// `rq` is a live request of a tag set of `T`, which blk-mq handed to the driver exclusively
/// (between `queue_rq` and submission to the device, or between `complete` and the end).
pub struct OwnedRequest<T: Operations> {
    rq: NonNull<bindings::request>,
    _p: PhantomData<T>,
}

impl<T: Operations> core::fmt::Debug for OwnedRequest<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OwnedRequest")
            .field("tag", &self.tag())
            .finish()
    }
}

impl<T: Operations> core::ops::Deref for OwnedRequest<T> {
    type Target = Request<T>;
    fn deref(&self) -> &Request<T> {
        // SAFETY: live request of a tag set of `T` (type invariant).
        unsafe { Request::from_raw(self.rq.as_ptr()) }
    }
}

impl<T: Operations> OwnedRequest<T> {
    /// Takes ownership of `rq`.
    ///
    /// # Safety
    ///
    /// `rq` must be a live request of a tag set of `T` that blk-mq just handed to the driver
    /// exclusively (`queue_rq` or `complete`).
    pub(crate) unsafe fn from_raw(rq: *mut bindings::request) -> Option<Self> {
        // INVARIANT: function contract.
        Some(Self {
            rq: NonNull::new(rq)?,
            _p: PhantomData,
        })
    }

    /// Gives up ownership (to a request list), returning the raw request.
    pub(crate) fn into_raw(self) -> NonNull<bindings::request> {
        self.rq
    }

    /// The owner-only state.
    pub fn owned_mut(&mut self) -> &mut Option<T::Owned> {
        // SAFETY: the PDU is an initialised `Pdu<T>`; only the owner of the request reaches
        // `owned`, and ownership is exclusive (type invariant), so this is the only reference.
        unsafe { &mut *(*pdu_of(self.rq.as_ptr()).cast::<Pdu<T>>()).owned.get() }
    }

    /// The request and its owner-only state at once, e.g. to build that state in place from
    /// the request's fields.
    pub fn split_owned(&mut self) -> (&Request<T>, &mut Option<T::Owned>) {
        // SAFETY: live request of a tag set of `T` (type invariant).
        let r = unsafe { Request::from_raw(self.rq.as_ptr()) };
        // SAFETY: as in `owned_mut`; `Request` never reaches `owned` (it is only reached
        // through the owner, here), so the two references do not overlap.
        let o = unsafe { &mut *(*pdu_of(self.rq.as_ptr()).cast::<Pdu<T>>()).owned.get() };
        (r, o)
    }

    /// Marks the request started (`blk_mq_start_request()`: starts its timeout).
    pub fn start(&mut self) {
        // SAFETY: owned live request.
        unsafe { bindings::blk_mq_start_request(self.rq.as_ptr()) };
    }

    /// Gives the request to the device: from now on only [`Request::complete`] (through a
    /// shared [`Request`] found by tag) brings it back to the driver.
    pub fn submit(self) {}

    /// Sends the request again later (`blk_mq_requeue_request(rq, true)`, as `nvme_retry_req()`
    /// does): it goes back to blk-mq, which dispatches it to `queue_rq` once its queue runs
    /// (not while quiesced). The owner-only state is released first.
    pub fn requeue(mut self) {
        *self.owned_mut() = None;
        // SAFETY: owned live request, in `complete` (started), given back once (consumes the
        // owner).
        unsafe { bindings::blk_mq_requeue_request(self.rq.as_ptr(), true) };
    }

    /// Ends the request with `status` (`blk_mq_end_request()`); the owner-only state should
    /// have been released first.
    pub fn end(mut self, status: BlkStatus) {
        *self.owned_mut() = None;
        // SAFETY: owned live request, ended once (consumes the owner).
        unsafe { bindings::blk_mq_end_request(self.rq.as_ptr(), status.as_raw()) };
    }
}
