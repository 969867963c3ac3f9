// SPDX-License-Identifier: GPL-2.0

//! One NVMe queue pair: submission and completion rings in coherent DMA memory, their doorbells,
//! and the command id table. Submitters take one plain lock (the SQ side, as `nvmeq->sq_lock`
//! in `drivers/nvme/host/pci.c`); the completion path takes its own IRQ-safe lock (the CQ
//! side); the command id table between them is lock-free (`nvme::SharedCidTable`), and the SQ
//! tail and head cross between the two sides as atomics.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The ring logic (tail, head, phase, wrap, validation of every completion field, command id
//! generations) is the protocol core's (`nvme::SubmissionQueue`, `nvme::CompletionQueue`,
//! `nvme::SharedCidTable`, `nvme::SqHead`, `nvme::accept_shared`); this file gives it memory,
//! locks and doorbells. As in `nvme_handle_cqe()` of
//! `drivers/nvme/host/pci.c`, an invalid completion is reported (rate-limited) and dropped.

use core::sync::atomic::{compiler_fence, fence, AtomicU16, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::{
    phases::{Count, IrqsOff, Phase, Phases, Stamp},
    ratelimit::warn_limited,
};
use kernel_glue::{
    dma::CoherentAllocation,
    io::Bar,
    irq::HardIrq,
    pci,
    sync::{IrqSpinLock, SpinLock, SpinLockGuard},
};
use nvme::{
    CompletionEntry, CompletionMemory, CompletionQueue, DbbufLayout, Doorbells, ShadowDoorbell,
    ShadowMemory, SharedCidTable, SqHead, Status, SubmissionEntry, SubmissionMemory,
    SubmissionQueue, CQE_SIZE, DBBUF_BYTES, SQE_SIZE,
};

/// What one [`Queue::drain`] did.
#[derive(Clone, Copy)]
pub(crate) struct Drained {
    /// The batch was used up: the ring may hold more.
    pub(crate) more: bool,
    /// The head was reported to the controller (shadow or MMIO doorbell).
    pub(crate) reported: bool,
    /// The MMIO head doorbell was written.
    pub(crate) mmio: bool,
}

/// A valid completion, resolved to the blk-mq tag it was submitted for.
#[derive(Clone, Copy)]
pub(crate) struct Done {
    /// The tag.
    pub(crate) tag: u16,
    /// The NVMe status.
    pub(crate) status: Status,
    /// Command specific result (dwords 0 and 1).
    pub(crate) result: u64,
}

/// Most entries of one submission queue (and tags of one hardware queue + 1).
pub(crate) const MAX_DEPTH: usize = 1024;

/// Most entries of one completion queue (twice [`MAX_DEPTH`]: room for deferred head doorbells).
pub(crate) const MAX_CQ_DEPTH: u32 = 2 * MAX_DEPTH as u32;

/// Most completions [`Queue::drain`] takes off the ring before it decides on the head doorbell.
pub(crate) const DRAIN_BATCH: usize = 16;

/// Submission ring memory.
struct SqMem<'a>(&'a CoherentAllocation);

impl SubmissionMemory for SqMem<'_> {
    fn write_entry(&mut self, index: u16, entry: &SubmissionEntry) {
        // In range: the core only writes indexes below the depth the memory was sized for.
        let _ = self
            .0
            .write_u64s(usize::from(index) * SQE_SIZE, &entry.to_qwords());
    }
}

/// Completion ring memory.
struct CqMem<'a>(&'a CoherentAllocation);

impl CompletionMemory for CqMem<'_> {
    fn read_status(&self, index: u16) -> u16 {
        // Out of range cannot happen (see `SqMem`); 0 reads as "not posted" for phase 1.
        self.0
            .read_u16(usize::from(index) * CQE_SIZE + 14)
            .unwrap_or(0)
    }

    fn read_entry(&self, index: u16) -> CompletionEntry {
        // The core read the phase bit first: the rest of the entry must not be read before it
        // (`dma_rmb()` in `nvme_cqe_pending()` users; a compiler barrier on x86, whose loads are
        // not reordered with other loads).
        compiler_fence(Ordering::SeqCst);
        let mut q = [0u64; CQE_SIZE / 8];
        let _ = self.0.read_u64s(usize::from(index) * CQE_SIZE, &mut q);
        CompletionEntry::from_qwords(q)
    }
}

/// The controller's shadow doorbell and event index pages (`nvme::DbbufLayout`), shared by its
/// I/O queues (`dbbuf_dbs`/`dbbuf_eis` of `struct nvme_dev` in `drivers/nvme/host/pci.c`).
pub(crate) struct DbbufPages {
    dbs: CoherentAllocation,
    eis: CoherentAllocation,
}

impl DbbufPages {
    /// Allocates both pages, zeroed.
    pub(crate) fn new(dev: &pci::Device) -> Result<Arc<Self>> {
        let dbs = CoherentAllocation::new(dev, DBBUF_BYTES)?;
        let eis = CoherentAllocation::new(dev, DBBUF_BYTES)?;
        dbs.zero();
        eis.zero();
        Ok(Arc::new(Self { dbs, eis }, GFP_KERNEL)?)
    }

    /// Zeroes both pages (`nvme_dbbuf_dma_alloc()` on a reset), while the controller is
    /// disabled and does not use them.
    pub(crate) fn zero(&self) {
        self.dbs.zero();
        self.eis.zero();
    }

    /// Bus addresses of the shadow doorbell and event index pages (Doorbell Buffer Config).
    pub(crate) fn addrs(&self) -> (u64, u64) {
        (self.dbs.dma_handle(), self.eis.dma_handle())
    }
}

/// One shadow doorbell in the pages: the stores and barriers of
/// `nvme_dbbuf_update_and_check_event()`.
struct ShadowMem<'a> {
    pages: &'a DbbufPages,
    off: usize,
}

impl ShadowMemory for ShadowMem<'_> {
    fn write_shadow(&mut self, value: u16) {
        // `wmb()`: the ring entries (coherent memory) before the shadow doorbell.
        fence(Ordering::SeqCst);
        // In range: the offset was checked against the page when the shadow was attached.
        let _ = self.pages.dbs.write_u32(self.off, u32::from(value));
    }

    fn full_barrier(&mut self) {
        // `mb()`: the shadow store before the event index load (x86: `mfence`).
        fence(Ordering::SeqCst);
    }

    fn read_event_idx(&mut self) -> Option<u16> {
        self.pages.eis.read_u32(self.off).ok().map(|v| v as u16)
    }
}

/// One shadow doorbell of a queue (SQ tail or CQ head) in the controller's pages.
struct Shadow {
    pages: Arc<DbbufPages>,
    off: usize,
    db: ShadowDoorbell,
}

impl Shadow {
    /// A shadow at `off` in `pages` holding `value`, stored there now.
    fn new(pages: &Arc<DbbufPages>, off: usize, value: u16) -> Result<Self> {
        pages.dbs.write_u32(off, u32::from(value))?;
        Ok(Self {
            pages: pages.clone(),
            off,
            db: ShadowDoorbell::new(value),
        })
    }

    /// Stores `value`; whether the MMIO doorbell must be written too.
    #[inline]
    fn update(&mut self, value: u16) -> bool {
        self.db.update(
            &mut ShadowMem {
                pages: &self.pages,
                off: self.off,
            },
            value,
        )
    }

    /// Back to 0 (`nvme_dbbuf_init()` after a reset).
    fn reset(&mut self) {
        let _ = self.pages.dbs.write_u32(self.off, 0);
        self.db = ShadowDoorbell::new(0);
    }
}

/// What submitters change, under [`Queue::sq_lock`].
struct SqSide {
    sq: SubmissionQueue,
    /// Shadow SQ tail doorbell (I/O queues of a controller with Doorbell Buffer Config).
    shadow: Option<Shadow>,
}

/// What the completion path changes, under [`Queue::cq_lock`].
struct CqSide {
    cq: CompletionQueue,
    /// The SQ head of the last completion accepted.
    sq_head: SqHead,
    /// Shadow CQ head doorbell.
    shadow: Option<Shadow>,
}

/// A queue pair (admin queue or I/O queue).
pub(crate) struct Queue {
    qid: u16,
    depth: u32,
    /// Entries of the completion queue (`depth`, or more with a deferred head doorbell).
    cq_depth: u32,
    /// Interrupt vector of the completion queue (`None`: polled).
    vector: Option<u16>,
    sq_mem: CoherentAllocation,
    cq_mem: CoherentAllocation,
    sq_db: usize,
    cq_db: usize,
    bar: Arc<Bar>,
    /// Held by submitters (never in an interrupt handler) from before a command is written
    /// into the ring until after the SQ tail doorbell write that publishes it
    /// (`nvmeq->sq_lock` in `drivers/nvme/host/pci.c`): tail doorbell writes happen in tail
    /// order, with interrupts enabled. The only lock a submission takes. Taken before
    /// `cq_lock` where both are needed (reset, shadow doorbells), never inside it.
    sq_lock: SpinLock<SqSide>,
    /// Held by the completion path (interrupt handler, poll) while it takes entries off the
    /// completion ring and writes the CQ head doorbell.
    cq_lock: IrqSpinLock<CqSide>,
    /// Command ids in flight: started by submitters, ended by the completion path or by a
    /// cancellation, each with one atomic operation.
    cids: SharedCidTable<MAX_DEPTH>,
    /// The SQ tail as last published to the controller (stored before the doorbell write that
    /// lets it see the entries): the bound of every completion's SQ head.
    sq_tail: AtomicU16,
    /// The SQ head of the last completion accepted, for submitters that find the ring full.
    sq_head: AtomicU16,
}

/// Why a submission failed.
#[derive(Debug)]
pub(crate) enum SubmitError {
    /// The tag is out of range or already in flight (a driver bug).
    Cid,
    /// The ring is full.
    Full,
}

impl Queue {
    /// Allocates queue pair `qid` with `depth` submission entries (2..=`MAX_DEPTH`), whose
    /// completion queue interrupts on `vector` (`None`: polled).
    ///
    /// `cq_depth` (`depth..=MAX_CQ_DEPTH`, at most what the controller allows) sizes the
    /// completion queue. Beyond `depth + DRAIN_BATCH` the extra entries let the head doorbell
    /// be deferred ([`nvme::CompletionQueue::defer_doorbell`]): written once per that many
    /// completions rather than once per interrupt, which only a completion queue whose
    /// interrupt is a message (MSI-X) or that is polled may do. With `cq_depth == depth` the
    /// head is reported after every drain, as `nvme_ring_cq_doorbell()` does.
    pub(crate) fn new(
        dev: &pci::Device,
        bar: &Arc<Bar>,
        dbs: &Doorbells,
        qid: u16,
        depth: u32,
        cq_depth: u32,
        vector: Option<u16>,
    ) -> Result<Arc<Self>> {
        if !(2..=MAX_DEPTH as u32).contains(&depth) || !(depth..=MAX_CQ_DEPTH).contains(&cq_depth) {
            return Err(EINVAL);
        }
        let sq_mem = CoherentAllocation::new(dev, depth as usize * SQE_SIZE)?;
        let cq_mem = CoherentAllocation::new(dev, cq_depth as usize * CQE_SIZE)?;
        let sq_db = dbs.sq_tail(qid).map_err(|_| EINVAL)? as usize;
        let cq_db = dbs.cq_head(qid).map_err(|_| EINVAL)? as usize;
        if sq_db.saturating_add(4) > bar.len() || cq_db.saturating_add(4) > bar.len() {
            return Err(EINVAL);
        }
        let sq_side = SqSide {
            sq: SubmissionQueue::new(qid, depth).map_err(|_| EINVAL)?,
            shadow: None,
        };
        let mut cq = CompletionQueue::new(qid, cq_depth, qid, depth).map_err(|_| EINVAL)?;
        // `drain` consumes at most `DRAIN_BATCH` entries between two doorbell decisions: with
        // this deferral the controller never finds the ring full (see `defer_doorbell`).
        let defer = (cq_depth - depth).saturating_sub(DRAIN_BATCH as u32);
        cq.defer_doorbell(defer).map_err(|_| EINVAL)?;
        let cq_side = CqSide {
            cq,
            sq_head: SqHead::new(depth).map_err(|_| EINVAL)?,
            shadow: None,
        };
        // One slot stays empty (full/empty sentinel): `depth - 1` commands in flight.
        let cids = SharedCidTable::new(depth as usize - 1).map_err(|_| EINVAL)?;
        Ok(Arc::new(
            Self {
                qid,
                depth,
                cq_depth,
                vector,
                sq_mem,
                cq_mem,
                sq_db,
                cq_db,
                bar: bar.clone(),
                sq_lock: SpinLock::new(sq_side)?,
                cq_lock: IrqSpinLock::new(cq_side)?,
                cids,
                sq_tail: AtomicU16::new(0),
                sq_head: AtomicU16::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Uses shadow doorbells in `pages` from now on (`nvme_dbbuf_init()`): the current SQ tail
    /// and CQ head are stored there first. Call it before the controller is told about the
    /// pages (Doorbell Buffer Config) and before I/O starts.
    pub(crate) fn attach_shadow(&self, pages: &Arc<DbbufPages>, layout: &DbbufLayout) -> Result {
        let sq_off = layout.sq_tail(self.qid).map_err(|_| EINVAL)?;
        let cq_off = layout.cq_head(self.qid).map_err(|_| EINVAL)?;
        let mut s = self.sq_lock.lock();
        let mut c = self.cq_lock.lock();
        let sq = Shadow::new(pages, sq_off, s.sq.tail())?;
        let cq = Shadow::new(pages, cq_off, c.cq.head())?;
        s.shadow = Some(sq);
        c.shadow = Some(cq);
        Ok(())
    }

    /// The shadow doorbell pages this queue uses, if any.
    pub(crate) fn shadow_pages(&self) -> Option<Arc<DbbufPages>> {
        self.sq_lock.lock().shadow.as_ref().map(|s| s.pages.clone())
    }

    /// Stops using shadow doorbells (the controller refused the Doorbell Buffer Config).
    pub(crate) fn detach_shadow(&self) {
        let mut s = self.sq_lock.lock();
        s.shadow = None;
        self.cq_lock.lock().shadow = None;
    }

    /// The Create I/O Completion Queue and Create I/O Submission Queue commands of this
    /// queue pair, in the order they are sent (probe, and again after a controller reset).
    pub(crate) fn create_cmds(&self) -> Result<[SubmissionEntry; 2]> {
        Ok([
            SubmissionEntry::create_cq(self.qid, self.cq_depth, self.cq_addr(), self.vector)
                .map_err(|_| EINVAL)?,
            SubmissionEntry::create_sq(self.qid, self.depth, self.sq_addr(), self.qid)
                .map_err(|_| EINVAL)?,
        ])
    }

    /// Takes one command in flight off the command id table (the controller was disabled, so
    /// it will never complete: `nvme_cancel_request()`); returns its tag, `None` when no
    /// command is in flight.
    pub(crate) fn take_in_flight(&self) -> Option<u16> {
        self.cids.take_in_flight()
    }

    /// Empties the rings after the controller was disabled (`nvme_init_queue()`): SQ tail and
    /// head, CQ head and phase back to the start, the completion ring zeroed (its old entries
    /// would otherwise look posted in the new phase), any command still in flight forgotten.
    pub(crate) fn reset_rings(&self) {
        // No submitter is between its tail update and its doorbell write while the tail is
        // reset.
        let mut s = self.sq_lock.lock();
        let mut c = self.cq_lock.lock();
        self.cids.cancel_all();
        s.sq.reset();
        c.cq.reset();
        c.sq_head.reset();
        self.sq_tail.store(0, Ordering::Release);
        self.sq_head.store(0, Ordering::Release);
        self.cq_mem.zero();
        // Shadow doorbells start over at 0 too (`nvme_dbbuf_init()`); the caller zeroed the
        // pages and sends Doorbell Buffer Config again once the queues exist.
        for sh in [s.shadow.as_mut(), c.shadow.as_mut()].into_iter().flatten() {
            sh.reset();
        }
    }

    /// Queue id (0: admin).
    pub(crate) fn qid(&self) -> u16 {
        self.qid
    }

    /// Bus address of the submission ring.
    pub(crate) fn sq_addr(&self) -> u64 {
        self.sq_mem.dma_handle()
    }

    /// Bus address of the completion ring.
    pub(crate) fn cq_addr(&self) -> u64 {
        self.cq_mem.dma_handle()
    }

    /// Submits `cmd` for blk-mq tag `tag` (command id from the tag and its next generation);
    /// rings the doorbell when `last` (else [`Queue::commit`] must follow), an MMIO write
    /// timed in `phases`.
    pub(crate) fn submit(
        &self,
        tag: u16,
        cmd: &mut SubmissionEntry,
        last: bool,
        phases: &Phases,
    ) -> Result<(), SubmitError> {
        let mut s = self.sq_lock.lock();
        self.push(&mut s, tag, cmd)?;
        if last {
            self.ring_sq(&mut s, phases);
        }
        Ok(())
    }

    /// Writes `cmd` for `tag` into the ring without publishing the tail; on `Err` nothing
    /// was written.
    #[inline(always)]
    fn push(&self, s: &mut SqSide, tag: u16, cmd: &mut SubmissionEntry) -> Result<(), SubmitError> {
        let cid = self.cids.start(tag).map_err(|_| SubmitError::Cid)?;
        cmd.set_cid(cid);
        // The ring's own check is the only one on the way in; a full ring (rare: the head is
        // refreshed from completions lazily) is looked at again below.
        if s.sq.push(&mut SqMem(&self.sq_mem), cmd).is_ok() {
            return Ok(());
        }
        // The head as of the last completion accepted (it only moves forward, within the tail
        // this side published, so the update cannot fail unless a reset raced).
        let _ = s.sq.update_head(self.sq_head.load(Ordering::Acquire));
        if s.sq.push(&mut SqMem(&self.sq_mem), cmd).is_ok() {
            return Ok(());
        }
        self.cids.cancel(tag);
        Err(SubmitError::Full)
    }

    /// Starts a batch of submissions (`nvme_submit_cmds()`): the submission lock stays held
    /// until the batch drops, which rings the doorbell once for all its commands (an MMIO
    /// write timed in `phases`).
    pub(crate) fn batch<'a>(&'a self, phases: &'a Phases) -> SqBatch<'a> {
        #[cfg(not(rnvme_phases))]
        let _ = phases;
        SqBatch {
            q: self,
            s: self.sq_lock.lock(),
            pushed: 0,
            #[cfg(rnvme_phases)]
            phases,
        }
    }

    /// Rings the submission doorbell for entries pushed without `last`.
    pub(crate) fn commit(&self) {
        self.ring_sq(&mut self.sq_lock.lock(), &Phases::none());
    }

    /// Publishes the entries pushed since the last call: the tail for the completion path,
    /// then the shadow doorbell and, if the controller needs it, the MMIO doorbell (its write
    /// timed in `phases`).
    #[inline(always)]
    fn ring_sq(&self, s: &mut SqSide, phases: &Phases) {
        let Some(tail) = s.sq.commit() else {
            return;
        };
        // Before the controller can see the entries, so no completion names a head past it.
        self.sq_tail.store(tail as u16, Ordering::Release);
        // With shadow doorbells the MMIO write is needed only when the controller asked.
        if s.shadow.as_mut().map_or(true, |sh| sh.update(tail as u16)) {
            // `writel` orders the entries (coherent memory) before the doorbell.
            let _timed = IrqsOff::new();
            let t = Stamp::now();
            let _ = self.bar.write32(self.sq_db, tail);
            phases.end(Phase::Doorbell, t);
            phases.count(Count::DoorbellWrite);
        }
    }

    /// Takes up to [`DRAIN_BATCH`] new entries off the ring, hands each valid one to `each`,
    /// resolved to its tag, then writes the head doorbell unless it is deferred. Invalid
    /// entries (bad phase, queue id, SQ head, unknown or stale command id) are reported and
    /// dropped whole: no field of an entry is used before all are validated
    /// (`nvme::accept_completion`). Returns whether the ring may hold more (the batch was used
    /// up, so the caller drains again), and which doorbell was written.
    ///
    /// `each` runs under the queue's CQ lock, with interrupts off, as `nvme_poll_cq()`
    /// completes requests under `cq_poll_lock` in the C driver: it may complete and end
    /// requests but must not drain this queue or ask [`Queue::pending`]. (Collecting the
    /// completions into an array first cost a 256-byte `memset` per drain.) In the queue's
    /// interrupt handler (`irq`), where interrupts are already off, the lock is taken without
    /// saving and restoring them.
    pub(crate) fn drain(&self, irq: Option<&HardIrq<'_>>, mut each: impl FnMut(Done)) -> Drained {
        let mut more = true;
        let (mut reported, mut mmio) = (false, false);
        let mut side = match irq {
            Some(irq) => self.cq_lock.lock_in_irq(irq),
            None => self.cq_lock.lock(),
        };
        let r = &mut *side;
        // Entries taken, valid or not, are bounded by the batch: the head doorbell's deferral
        // counts on it (`Queue::new`).
        for _ in 0..DRAIN_BATCH {
            let Some(next) = r.cq.next(&CqMem(&self.cq_mem)) else {
                more = false;
                break;
            };
            let c = match next {
                Ok(c) => c,
                Err(e) => {
                    warn_limited!("queue {}: invalid completion: {}\n", self.qid, e);
                    continue;
                }
            };
            // Command id and SQ head are both checked before either is used; the tail is read
            // after the entry, so it covers every entry the controller had seen.
            let tail = self.sq_tail.load(Ordering::Acquire);
            match nvme::accept_shared(&mut r.sq_head, tail, &self.cids, &c) {
                Ok(tag) => {
                    each(Done {
                        tag,
                        status: c.status,
                        result: c.result,
                    });
                }
                Err(e) => {
                    warn_limited!("queue {}: {}\n", self.qid, e);
                }
            }
        }
        self.sq_head.store(r.sq_head.head(), Ordering::Release);
        if let Some(head) = r.cq.doorbell() {
            reported = true;
            if r.shadow.as_mut().map_or(true, |s| s.update(head as u16)) {
                mmio = true;
                let _ = self.bar.write32(self.cq_db, head);
            }
        }
        Drained {
            more,
            reported,
            mmio,
        }
    }

    /// Whether a completion is waiting (for a shared interrupt line).
    pub(crate) fn pending(&self) -> bool {
        self.cq_lock.lock().cq.pending(&CqMem(&self.cq_mem))
    }

    /// Whether a command for `tag` is in flight (submitted, no valid completion seen yet).
    pub(crate) fn is_in_flight(&self, tag: u16) -> bool {
        self.cids.is_in_flight(tag)
    }

    /// The command id of `tag`'s command in flight.
    pub(crate) fn cid_of(&self, tag: u16) -> Option<u16> {
        self.cids.cid_of(tag)
    }

    /// Forgets command `tag` if in flight (the controller is disabled, so it will never
    /// complete); returns whether it was.
    pub(crate) fn cancel(&self, tag: u16) -> bool {
        self.cids.cancel(tag)
    }
}

/// Submissions to one queue under one hold of its submission lock, with one doorbell write
/// (through the shadow doorbell when there is one) when it drops, if anything was pushed.
pub(crate) struct SqBatch<'a> {
    q: &'a Queue,
    /// Released after `drop` wrote the doorbell.
    s: SpinLockGuard<'a, SqSide>,
    pushed: u32,
    /// Times the doorbell's MMIO write (`crate::phases`; only in a build with the timers, so
    /// the batch of every other build is what it was without them).
    #[cfg(rnvme_phases)]
    phases: &'a Phases,
}

impl SqBatch<'_> {
    /// Writes `cmd` for blk-mq tag `tag` into the ring (command id from the tag and its next
    /// generation), as [`Queue::submit`] does without `last`. The controller sees it once the
    /// batch drops; on `Err` nothing was written.
    #[inline]
    pub(crate) fn push(&mut self, tag: u16, cmd: &mut SubmissionEntry) -> Result<(), SubmitError> {
        self.q.push(&mut self.s, tag, cmd)?;
        self.pushed += 1;
        Ok(())
    }

    /// Commands pushed so far.
    pub(crate) fn pushed(&self) -> u32 {
        self.pushed
    }

    /// The queue's id.
    pub(crate) fn qid(&self) -> u16 {
        self.q.qid
    }
}

impl Drop for SqBatch<'_> {
    // Inline into `IoOps::submit_batch`: no call out of and back into its page per submission.
    #[inline]
    fn drop(&mut self) {
        if self.pushed > 0 {
            #[cfg(rnvme_phases)]
            let phases = self.phases;
            #[cfg(not(rnvme_phases))]
            let phases = &Phases::none();
            self.q.ring_sq(&mut self.s, phases);
        }
    }
}
