//! The submission ring: tail, full detection, entry writes and doorbell batching
//! (`nvme_sq_copy_cmd`, `nvme_write_sq_db`, `nvme_commit_rqs` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The ring lives in DMA-coherent memory owned by the kernel glue and is written through
//! [`SubmissionMemory`]. [`SubmissionQueue::push`] copies an entry to the tail slot;
//! [`SubmissionQueue::commit`] says whether and what to write to the tail doorbell, so one
//! doorbell write covers a batch (blk-mq's `bd->last` / `commit_rqs`).

use core::fmt;

use crate::{SubmissionEntry, MAX_QUEUE_ENTRIES};

/// Write access to the slots of a submission queue.
///
/// # Implementer notes
///
/// `index` is always below the depth the queue was created with; an implementation still
/// bounds-checks it (the memory is `depth * 64` bytes) and ignores an out-of-range write. Over
/// DMA-coherent memory the write is a plain 64-byte copy of the entry (its memory layout is the
/// wire layout, see [`SubmissionEntry`]); the doorbell write that publishes it is `writel`, which
/// orders the copy before it. No method may panic.
pub trait SubmissionMemory {
    /// Writes `entry` to slot `index`.
    fn write_entry(&mut self, index: u16, entry: &SubmissionEntry);
}

/// Why a submission queue operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqError {
    /// A queue depth outside `2..=65536`, or larger than CAP.MQES allows.
    Depth {
        /// Depth asked for.
        depth: u32,
    },
    /// The ring holds `depth - 1` entries the device has not consumed.
    Full,
    /// The device reported a head that is not between the old head and the tail.
    BadHead {
        /// Reported head.
        head: u16,
        /// Head before the report.
        old_head: u16,
        /// Current tail.
        tail: u16,
    },
}

impl fmt::Display for SqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Depth { depth } => write!(f, "submission queue depth {depth} unsupported"),
            Self::Full => f.write_str("submission queue full"),
            Self::BadHead {
                head,
                old_head,
                tail,
            } => write!(f, "SQ head {head} outside {old_head}..={tail}"),
        }
    }
}

impl core::error::Error for SqError {}

/// The host's view of one submission queue.
///
/// # Invariants
///
/// `2 <= depth <= 65536`; `tail`, `head` and `doorbell` are below `depth`; the ring holds
/// `(tail - head) mod depth <= depth - 1` entries not yet consumed by the device.
///
/// # Examples
///
/// ```
/// use nvme::{SqError, SubmissionEntry, SubmissionMemory, SubmissionQueue};
/// struct Slots(Vec<SubmissionEntry>);
/// impl SubmissionMemory for Slots {
///     fn write_entry(&mut self, i: u16, e: &SubmissionEntry) {
///         if let Some(s) = self.0.get_mut(usize::from(i)) { *s = *e; }
///     }
/// }
/// let mut mem = Slots(vec![SubmissionEntry::default(); 4]);
/// let mut sq = SubmissionQueue::new(1, 4)?;
/// assert_eq!(sq.commit(), None);                        // nothing to ring
/// for _ in 0..3 { sq.push(&mut mem, &SubmissionEntry::flush(1))?; }
/// assert_eq!(sq.push(&mut mem, &SubmissionEntry::flush(1)), Err(SqError::Full)); // depth - 1
/// assert_eq!(sq.commit(), Some(3));                     // one doorbell write for the batch
/// assert_eq!(sq.commit(), None);
/// sq.update_head(2)?;                                   // the device consumed two
/// assert_eq!(sq.free_slots(), 2);
/// sq.push(&mut mem, &SubmissionEntry::flush(1))?;       // wraps to slot 3, then 0
/// sq.push(&mut mem, &SubmissionEntry::flush(1))?;
/// assert_eq!((sq.tail(), sq.commit()), (1, Some(1)));
/// sq.update_head(3)?;
/// assert!(sq.update_head(2).is_err());                 // backwards
/// assert!(sq.update_head(2000).is_err());              // out of range
/// # Ok::<(), SqError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubmissionQueue {
    qid: u16,
    depth: u32,
    tail: u16,
    head: u16,
    doorbell: u16,
}

impl SubmissionQueue {
    /// A queue `qid` of `depth` entries, empty, tail and head at 0.
    ///
    /// # Errors
    ///
    /// [`SqError::Depth`] unless `2 <= depth <= 65536`.
    pub fn new(qid: u16, depth: u32) -> Result<Self, SqError> {
        if !(2..=MAX_QUEUE_ENTRIES).contains(&depth) {
            return Err(SqError::Depth { depth });
        }
        // INVARIANT: depth checked; indices start at 0.
        Ok(Self {
            qid,
            depth,
            tail: 0,
            head: 0,
            doorbell: 0,
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

    /// Next slot to write.
    #[inline]
    pub const fn tail(&self) -> u16 {
        self.tail
    }

    /// Oldest slot the device has not consumed (as last reported).
    pub const fn head(&self) -> u16 {
        self.head
    }

    /// Entries written and not yet consumed by the device.
    #[inline]
    pub fn used(&self) -> u32 {
        distance(self.depth, self.tail, self.head)
    }

    /// Entries that can still be pushed (`depth - 1 - used`).
    #[inline]
    pub fn free_slots(&self) -> u32 {
        self.depth - 1 - self.used()
    }

    /// Whether [`SubmissionQueue::push`] would fail with [`SqError::Full`].
    #[inline]
    pub fn is_full(&self) -> bool {
        self.free_slots() == 0
    }

    /// Writes `entry` to the tail slot and advances the tail; returns the slot written.
    ///
    /// # Errors
    ///
    /// [`SqError::Full`] when `depth - 1` entries are outstanding (nothing is written).
    #[inline]
    pub fn push<M: SubmissionMemory + ?Sized>(
        &mut self,
        mem: &mut M,
        entry: &SubmissionEntry,
    ) -> Result<u16, SqError> {
        if self.is_full() {
            return Err(SqError::Full);
        }
        let slot = self.tail;
        mem.write_entry(slot, entry);
        // INVARIANT: the result is below depth, and one slot stays free.
        let next = u32::from(slot) + 1;
        self.tail = if next >= self.depth { 0 } else { next as u16 };
        Ok(slot)
    }

    /// The value to write to the tail doorbell if entries were pushed since the last commit
    /// (`None`: no write needed). The caller writes it with `writel` to
    /// [`crate::Doorbells::sq_tail`] of this queue.
    #[inline]
    pub fn commit(&mut self) -> Option<u32> {
        if self.tail == self.doorbell {
            return None;
        }
        self.doorbell = self.tail;
        Some(u32::from(self.tail))
    }

    /// Records the SQ head pointer of a completion (`sq_head`), freeing the slots before it.
    ///
    /// # Errors
    ///
    /// [`SqError::BadHead`] if `head` is not between the current head and the tail (it would
    /// free slots the host never filled, or move backwards); the head is then unchanged.
    #[inline]
    pub fn update_head(&mut self, head: u16) -> Result<(), SqError> {
        self.check_head(head)?;
        // INVARIANT: head < depth and lies in the outstanding window (checked above).
        self.head = head;
        Ok(())
    }

    /// What [`SubmissionQueue::update_head`] would return for `head`, without changing the
    /// queue.
    ///
    /// # Errors
    ///
    /// As [`SubmissionQueue::update_head`].
    #[inline]
    pub fn check_head(&self, head: u16) -> Result<(), SqError> {
        if !head_in_window(self.depth, self.head, self.tail, head) {
            return Err(SqError::BadHead {
                head,
                old_head: self.head,
                tail: self.tail,
            });
        }
        Ok(())
    }

    /// Forgets all entries (after the device's queue was deleted or the controller reset):
    /// tail, head and doorbell back to 0.
    pub fn reset(&mut self) {
        self.tail = 0;
        self.head = 0;
        self.doorbell = 0;
    }
}

/// `(a - b) mod depth`, for `a, b < depth`.
#[inline]
fn distance(depth: u32, a: u16, b: u16) -> u32 {
    // `a, b < depth`, so the sum is below `2 * depth`: one conditional subtraction instead of
    // `%`, whose divide-by-zero panic path objtool rejects in the kernel module. With
    // `depth <= 65536` neither step can overflow; wrapping operations say so to the compiler,
    // which otherwise adds an overflow check and its panic path to every ring operation of the
    // kernel build (`CONFIG_RUST_OVERFLOW_CHECKS`).
    let d = (u32::from(a).wrapping_add(depth)).wrapping_sub(u32::from(b));
    if d >= depth {
        d - depth
    } else {
        d
    }
}

/// Whether `new` is a valid SQ head for a ring of `depth` slots whose head was `old` and whose
/// tail (as published to the device) is `tail`: below the depth and in `old..=tail`, modulo the
/// depth. `old` and `tail` must be below the depth.
#[inline]
fn head_in_window(depth: u32, old: u16, tail: u16, new: u16) -> bool {
    u32::from(new) < depth && distance(depth, new, old) <= distance(depth, tail, old)
}

/// The SQ head as a completion path tracks it when the tail belongs to submitters under a lock
/// of their own: each completion's `sq_head` is checked against the tail they last published
/// (before the doorbell write that let the device see it), as
/// [`SubmissionQueue::update_head`] checks it against its own tail.
///
/// # Invariants
///
/// `2 <= depth <= 65536`; `head < depth`.
///
/// # Examples
///
/// ```
/// use nvme::{SqError, SqHead};
/// let mut h = SqHead::new(8)?;
/// h.update(3, 5)?;                                     // published tail 5: head 3 is fine
/// assert_eq!(h.head(), 3);
/// assert!(h.update(6, 5).is_err());                   // past the tail
/// assert!(h.update(2, 5).is_err());                   // backwards
/// h.update(1, 1)?;                                     // the tail wrapped: 3..=1 holds 1
/// assert_eq!(h.head(), 1);
/// # Ok::<(), SqError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqHead {
    depth: u32,
    head: u16,
}

impl SqHead {
    /// The head of an empty queue of `depth` slots (0).
    ///
    /// # Errors
    ///
    /// [`SqError::Depth`] unless `2 <= depth <= 65536`.
    pub fn new(depth: u32) -> Result<Self, SqError> {
        if !(2..=MAX_QUEUE_ENTRIES).contains(&depth) {
            return Err(SqError::Depth { depth });
        }
        // INVARIANT: depth checked; 0 < depth.
        Ok(Self { depth, head: 0 })
    }

    /// The last head accepted.
    pub const fn head(&self) -> u16 {
        self.head
    }

    /// What [`SqHead::update`] would return, without changing the head.
    ///
    /// # Errors
    ///
    /// As [`SqHead::update`].
    #[inline]
    pub fn check(&self, head: u16, tail: u16) -> Result<(), SqError> {
        if u32::from(tail) < self.depth && head_in_window(self.depth, self.head, tail, head) {
            Ok(())
        } else {
            Err(SqError::BadHead {
                head,
                old_head: self.head,
                tail,
            })
        }
    }

    /// Records a completion's `sq_head`, given the tail the submitters published.
    ///
    /// # Errors
    ///
    /// [`SqError::BadHead`] if `head` is not between the current head and `tail` (or either is
    /// beyond the depth); the head is then unchanged.
    #[inline]
    pub fn update(&mut self, head: u16, tail: u16) -> Result<(), SqError> {
        self.check(head, tail)?;
        // INVARIANT: head < depth (checked).
        self.head = head;
        Ok(())
    }

    /// [`SqHead::check`], returning the accepted head for [`SqHead::apply`]: a caller that
    /// must do something else between the check and the update (take the command id) does not
    /// check twice.
    #[inline]
    pub(crate) fn accept(&self, head: u16, tail: u16) -> Result<AcceptedHead, SqError> {
        self.check(head, tail)?;
        Ok(AcceptedHead(head))
    }

    /// Records a head [`SqHead::accept`] accepted from this `SqHead`, unchanged since.
    #[inline]
    pub(crate) fn apply(&mut self, head: AcceptedHead) {
        // INVARIANT: `accept` checked head < depth.
        self.head = head.0;
    }

    /// Back to 0 (the queue was reset).
    pub fn reset(&mut self) {
        self.head = 0;
    }
}

/// An SQ head [`SqHead::accept`] checked, not yet recorded.
#[must_use]
pub(crate) struct AcceptedHead(u16);
