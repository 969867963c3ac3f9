//! The completion ring: head, phase tag, wrap, validation of each entry's queue fields, and the
//! head doorbell (`nvme_cqe_pending`, `nvme_update_cq_head`, `nvme_ring_cq_doorbell`,
//! `nvme_handle_cqe` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! An entry is new when its phase tag equals the ring's current phase, which starts at 1 and
//! flips every time the head wraps. The command id is not checked here but by
//! [`crate::CidTable`], which knows which commands are in flight.

use core::fmt;

use crate::{CompletionEntry, Status, MAX_QUEUE_ENTRIES};

/// Read access to the slots of a completion queue.
///
/// # Implementer notes
///
/// The ring calls [`CompletionMemory::read_status`] first and [`CompletionMemory::read_entry`]
/// for the same slot only if the phase tag showed a new entry. Over DMA-coherent memory,
/// `read_status` is a volatile 16-bit read of bytes 14..16 of the slot, and `read_entry` must
/// begin with `dma_rmb()` before reading the 16 bytes: the phase tag is written by the device
/// last, and without the barrier the CPU may read the rest of the entry before the status word
/// and see stale data (the control dependency on the phase is a load-load dependency, which the
/// CPU does not order). `index` is always below the depth; an implementation still bounds-checks
/// it and returns all zeroes for an out-of-range slot. No method may panic.
pub trait CompletionMemory {
    /// Reads the little-endian status field (phase tag in bit 0) of slot `index`.
    fn read_status(&self, index: u16) -> u16;
    /// Reads the whole entry in slot `index`.
    fn read_entry(&self, index: u16) -> CompletionEntry;
}

/// A completion entry that failed validation. The slot was consumed (the head moved past it);
/// the kernel glue logs the error, rate-limited, and otherwise ignores the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CqError {
    /// A queue depth outside `2..=65536`.
    Depth {
        /// Depth asked for.
        depth: u32,
    },
    /// The entry names another submission queue than the one this ring serves.
    WrongSqId {
        /// Reported SQ id.
        sq_id: u16,
        /// Expected SQ id.
        expected: u16,
    },
    /// The entry's SQ head is not a slot of the submission queue.
    SqHeadOutOfRange {
        /// Reported head.
        sq_head: u16,
        /// Submission queue depth.
        sq_depth: u32,
    },
    /// The phase tag of the full entry differs from the status word read first: the device
    /// changed the slot while it was read.
    PhaseChanged {
        /// Slot index.
        index: u16,
    },
    /// A doorbell deferral the ring has no room for (see
    /// [`CompletionQueue::defer_doorbell`]).
    Defer {
        /// Entries asked to stay unreported.
        defer: u32,
        /// The most this ring allows: its depth minus the submission queue's.
        max: u32,
    },
}

impl fmt::Display for CqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Depth { depth } => write!(f, "completion queue depth {depth} unsupported"),
            Self::WrongSqId { sq_id, expected } => {
                write!(f, "completion for SQ {sq_id} on the CQ of SQ {expected}")
            }
            Self::SqHeadOutOfRange { sq_head, sq_depth } => {
                write!(f, "SQ head {sq_head} beyond depth {sq_depth}")
            }
            Self::PhaseChanged { index } => write!(f, "CQ slot {index} changed while read"),
            Self::Defer { defer, max } => {
                write!(f, "CQ doorbell deferral of {defer} entries beyond {max}")
            }
        }
    }
}

impl core::error::Error for CqError {}

/// A completion whose queue fields were validated; the command id still has to be resolved
/// with [`crate::CidTable::complete`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Command identifier as the device returned it (not yet validated).
    pub cid: u16,
    /// Status (phase tag included in the raw value).
    pub status: Status,
    /// Command-specific result dwords 0 and 1.
    pub result: u64,
    /// Submission queue head, below the SQ depth; pass it to
    /// [`crate::SubmissionQueue::update_head`].
    pub sq_head: u16,
}

/// The host's view of one completion queue.
///
/// # Invariants
///
/// `2 <= depth <= 65536`, `head < depth`, `sq_depth <= 65536`,
/// `defer <= depth.saturating_sub(sq_depth)`.
///
/// # Examples
///
/// ```
/// use nvme::{CompletionEntry, CompletionMemory, CompletionQueue};
/// struct Slots(Vec<CompletionEntry>);
/// impl CompletionMemory for Slots {
///     fn read_status(&self, i: u16) -> u16 {
///         self.0.get(usize::from(i)).map_or(0, |e| e.raw_status())
///     }
///     fn read_entry(&self, i: u16) -> CompletionEntry {
///         self.0.get(usize::from(i)).copied().unwrap_or_default()
///     }
/// }
/// // CQ 1 for SQ 1 of 8 entries; two entries posted with phase 1, the rest still 0.
/// let mut mem = Slots(vec![CompletionEntry::default(); 2]);
/// mem.0[0] = CompletionEntry::new(0, 1, 1, 10, 1);
/// mem.0[1] = CompletionEntry::new(0, 9, 1, 11, 1);     // SQ head 9: not a slot of SQ 1
/// let mut cq = CompletionQueue::new(1, 2, 1, 8)?;
/// assert_eq!(cq.next(&mem).map(|r| r.map(|c| c.cid)), Some(Ok(10)));
/// assert!(matches!(cq.next(&mem), Some(Err(_))));       // consumed, reported
/// assert_eq!(cq.next(&mem), None);                      // wrapped: now waits for phase 0
/// assert_eq!((cq.head(), cq.phase(), cq.doorbell()), (0, false, Some(0)));
/// assert_eq!(cq.doorbell(), None);
/// # Ok::<(), nvme::CqError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionQueue {
    qid: u16,
    depth: u32,
    head: u16,
    phase: bool,
    sq_id: u16,
    sq_depth: u32,
    /// Entries consumed since the head was last reported.
    unreported: u32,
    /// Consumed entries that may stay unreported after [`CompletionQueue::doorbell`].
    defer: u32,
}

impl CompletionQueue {
    /// A queue `qid` of `depth` entries serving submission queue `sq_id` of `sq_depth`
    /// entries; head 0, phase 1.
    ///
    /// # Errors
    ///
    /// [`CqError::Depth`] unless both depths are in `2..=65536`.
    pub fn new(qid: u16, depth: u32, sq_id: u16, sq_depth: u32) -> Result<Self, CqError> {
        for d in [depth, sq_depth] {
            if !(2..=MAX_QUEUE_ENTRIES).contains(&d) {
                return Err(CqError::Depth { depth: d });
            }
        }
        // INVARIANT: depths checked, head 0.
        Ok(Self {
            qid,
            depth,
            head: 0,
            phase: true,
            sq_id,
            sq_depth,
            unreported: 0,
            defer: 0,
        })
    }

    /// Queue id.
    pub const fn qid(&self) -> u16 {
        self.qid
    }

    /// Number of slots.
    pub const fn depth(&self) -> u32 {
        self.depth
    }

    /// Next slot to look at.
    pub const fn head(&self) -> u16 {
        self.head
    }

    /// Phase tag that marks a new entry.
    pub const fn phase(&self) -> bool {
        self.phase
    }

    /// Whether the slot at the head holds a new entry (`nvme_cqe_pending`).
    #[inline]
    pub fn pending<M: CompletionMemory + ?Sized>(&self, mem: &M) -> bool {
        (mem.read_status(self.head) & 1 != 0) == self.phase
    }

    #[inline]
    fn advance(&mut self) {
        let next = u32::from(self.head) + 1;
        if next == self.depth {
            self.head = 0;
            self.phase = !self.phase;
        } else {
            // INVARIANT: next < depth.
            self.head = next as u16;
        }
        self.unreported = self.unreported.saturating_add(1);
    }

    /// The next new entry, validated, or `None` when the slot at the head is not new.
    ///
    /// A new entry is consumed even when it fails validation, so a hostile or broken device
    /// cannot make the ring stall on one slot.
    ///
    /// # Errors
    ///
    /// `Some(Err(_))`: [`CqError::WrongSqId`], [`CqError::SqHeadOutOfRange`] or
    /// [`CqError::PhaseChanged`].
    #[inline]
    pub fn next<M: CompletionMemory + ?Sized>(
        &mut self,
        mem: &M,
    ) -> Option<Result<Completion, CqError>> {
        if !self.pending(mem) {
            return None;
        }
        let index = self.head;
        let e = mem.read_entry(index);
        self.advance();
        if e.phase() != self.phase_of_slot(index) {
            return Some(Err(CqError::PhaseChanged { index }));
        }
        if e.sq_id() != self.sq_id {
            return Some(Err(CqError::WrongSqId {
                sq_id: e.sq_id(),
                expected: self.sq_id,
            }));
        }
        if u32::from(e.sq_head()) >= self.sq_depth {
            return Some(Err(CqError::SqHeadOutOfRange {
                sq_head: e.sq_head(),
                sq_depth: self.sq_depth,
            }));
        }
        Some(Ok(Completion {
            cid: e.cid(),
            status: e.status(),
            result: e.result64(),
            sq_head: e.sq_head(),
        }))
    }

    /// The phase a new entry in the slot just consumed had (the phase before a wrap).
    #[inline]
    fn phase_of_slot(&self, index: u16) -> bool {
        if self.head == 0 && u32::from(index) + 1 == self.depth {
            !self.phase
        } else {
            self.phase
        }
    }

    /// The value to write to the head doorbell, or `None` when no write is needed: no entry
    /// was consumed since the last report, or no more than the deferral allows (0 unless
    /// [`CompletionQueue::defer_doorbell`] set one, which is `nvme_ring_cq_doorbell()`'s
    /// rule: every drain that consumed an entry reports). The caller writes it with `writel`
    /// to [`crate::Doorbells::cq_head`] of this queue (or its shadow doorbell), after
    /// handling the entries.
    pub fn doorbell(&mut self) -> Option<u32> {
        if self.unreported <= self.defer {
            return None;
        }
        self.unreported = 0;
        Some(u32::from(self.head))
    }

    /// Lets up to `defer` consumed entries stay unreported after each
    /// [`CompletionQueue::doorbell`] call, so a head doorbell is written once per `defer + 1`
    /// entries instead of once per drain (a departure from `nvme_ring_cq_doorbell()`, which
    /// the driver lists in `docs/DEVIATIONS.md`).
    ///
    /// The controller must never find the ring full while the host holds entries back: it
    /// would wait for a head doorbell that the host, seeing nothing new, never writes. It
    /// cannot while at most `depth - sq_depth` consumed entries are unreported, because at
    /// most `sq_depth - 1` commands of the submission queue are in flight, each owning at most
    /// one posted entry. Entries consumed between two `doorbell` calls count too, so a caller
    /// consuming up to `batch` entries per call must pass `defer <= depth - sq_depth - batch`.
    /// Only for interrupts that are messages (MSI-X) or polled queues: a controller keeps a
    /// pin-based interrupt asserted while the head it knows is behind its tail.
    ///
    /// # Errors
    ///
    /// [`CqError::Defer`] if `defer > depth - sq_depth`; the deferral is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::CompletionQueue;
    /// // A 512-entry completion queue for a 256-entry submission queue.
    /// let mut cq = CompletionQueue::new(1, 512, 1, 256)?;
    /// assert!(cq.defer_doorbell(257).is_err());
    /// cq.defer_doorbell(240)?;
    /// assert_eq!(cq.doorbell_deferral(), 240);
    /// # Ok::<(), nvme::CqError>(())
    /// ```
    pub fn defer_doorbell(&mut self, defer: u32) -> Result<(), CqError> {
        let max = self.depth.saturating_sub(self.sq_depth);
        if defer > max {
            return Err(CqError::Defer { defer, max });
        }
        // INVARIANT: checked against the room the ring has.
        self.defer = defer;
        Ok(())
    }

    /// Consumed entries that may stay unreported after a doorbell call.
    pub const fn doorbell_deferral(&self) -> u32 {
        self.defer
    }

    /// Entries consumed since the head was last reported.
    pub const fn unreported(&self) -> u32 {
        self.unreported
    }

    /// Back to the initial state (head 0, phase 1) after the device's queue was deleted or the
    /// controller reset; the caller must zero the ring memory before reusing it.
    pub fn reset(&mut self) {
        self.head = 0;
        self.phase = true;
        self.unreported = 0;
    }
}
