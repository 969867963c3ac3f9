//! Accepting one completion: every field of the entry is validated before any is acted on
//! (the command id against the [`CidTable`], the SQ head against the [`SubmissionQueue`]), the
//! counterpart of the command id check in `nvme_handle_cqe()` (`drivers/nvme/host/pci.c`),
//! which rnvme extends to the SQ head.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! An entry with any bad field is dropped whole: its SQ head is not applied and its command,
//! if the id names one, stays in flight (the request then times out: a device that writes a bad
//! SQ head cannot be trusted with the status either).

use core::fmt;

use crate::{CidError, CidTable, Completion, SharedCidTable, SqError, SqHead, SubmissionQueue};

/// Why a completion entry was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReapError {
    /// The command id is out of range, not in flight, or of another generation.
    Cid(CidError),
    /// The SQ head is not between the host's head and tail.
    SqHead(SqError),
}

impl fmt::Display for ReapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cid(e) => write!(f, "completion dropped: {e}"),
            Self::SqHead(e) => write!(f, "completion dropped: {e}"),
        }
    }
}

impl core::error::Error for ReapError {}

/// Validates all of `c` (from [`crate::CompletionQueue::next`], which checked phase, SQ id and
/// the SQ head's range), then applies it: the SQ head moves, the command id's tag goes idle.
/// Returns the tag.
///
/// # Errors
///
/// A [`ReapError`]; `sq` and `cids` are then unchanged.
///
/// # Examples
///
/// ```
/// use nvme::{accept_completion, CidTable, Completion, ReapError, Status, SubmissionQueue};
/// let mut sq = SubmissionQueue::new(1, 8)?;
/// let mut cids = CidTable::<8>::new(7).unwrap();
/// let cid = cids.start(3).unwrap();
/// // (the entry was pushed: the tail is 1)
/// # struct M; impl nvme::SubmissionMemory for M { fn write_entry(&mut self, _: u16, _: &nvme::SubmissionEntry) {} }
/// # sq.push(&mut M, &nvme::SubmissionEntry::default()).unwrap();
/// let c = |cid, sq_head| Completion { cid, status: Status::from_raw(0), result: 0, sq_head };
/// // A valid id with an SQ head past the tail: dropped whole, the command stays in flight.
/// assert!(matches!(accept_completion(&mut sq, &mut cids, &c(cid, 5)), Err(ReapError::SqHead(_))));
/// assert!(cids.is_in_flight(3));
/// assert_eq!(accept_completion(&mut sq, &mut cids, &c(cid, 1)), Ok(3));
/// assert_eq!(sq.head(), 1);
/// # Ok::<(), nvme::SqError>(())
/// ```
pub fn accept_completion<const N: usize>(
    sq: &mut SubmissionQueue,
    cids: &mut CidTable<N>,
    c: &Completion,
) -> Result<u16, ReapError> {
    cids.check(c.cid).map_err(ReapError::Cid)?;
    sq.check_head(c.sq_head).map_err(ReapError::SqHead)?;
    // Both checked above, so neither can fail now; map anyway rather than assume.
    sq.update_head(c.sq_head).map_err(ReapError::SqHead)?;
    cids.complete(c.cid).map_err(ReapError::Cid)
}

/// [`accept_completion`] for a queue whose submitters and completion path share no lock: the
/// command id is checked against a [`SharedCidTable`] and the SQ head against `head` and the
/// `tail` the submitters last published (read after the entry). Returns the tag.
///
/// The SQ head is checked first; the command id is then resolved and marked idle in one
/// compare-and-swap, which checks it as it swaps; the head is recorded last. So an entry is
/// applied whole or not at all, also when a cancellation (timeout or reset) takes its command
/// at the same moment: the swap then fails, and the completion is refused as
/// [`ReapError::Cid`] with the head where it was (the next completion brings the device's
/// head). The table entry is read once, by the swap, as the C driver reads the command's
/// generation once (`nvme_find_rq()`).
///
/// # Errors
///
/// A [`ReapError`], [`ReapError::Cid`] when both fields are bad (as [`accept_completion`]);
/// `head` and `cids` are then unchanged.
///
/// # Examples
///
/// ```
/// use nvme::{accept_shared, Completion, ReapError, SharedCidTable, SqHead, Status};
/// let mut head = SqHead::new(8)?;
/// let cids = SharedCidTable::<8>::new(7).unwrap();
/// let cid = cids.start(3).unwrap();
/// let c = |cid, sq_head| Completion { cid, status: Status::from_raw(0), result: 0, sq_head };
/// // Tail 1 published: an SQ head of 5 is dropped whole, the command stays in flight.
/// assert!(matches!(accept_shared(&mut head, 1, &cids, &c(cid, 5)), Err(ReapError::SqHead(_))));
/// assert!(cids.is_in_flight(3));
/// // A cancelled command's completion is dropped whole too: the head stays at 0.
/// assert!(cids.cancel(3));
/// assert!(matches!(accept_shared(&mut head, 1, &cids, &c(cid, 1)), Err(ReapError::Cid(_))));
/// assert_eq!(head.head(), 0);
/// let cid = cids.start(3).unwrap();
/// assert_eq!(accept_shared(&mut head, 1, &cids, &c(cid, 1)), Ok(3));
/// assert_eq!(head.head(), 1);
/// assert!(matches!(accept_shared(&mut head, 1, &cids, &c(cid, 1)), Err(ReapError::Cid(_))));
/// # Ok::<(), nvme::SqError>(())
/// ```
// Always inline: it runs once per completion, inside the interrupt handler's loop (out of line,
// the call cost more than the table read it saves).
#[inline(always)]
pub fn accept_shared<const N: usize>(
    head: &mut SqHead,
    tail: u16,
    cids: &SharedCidTable<N>,
    c: &Completion,
) -> Result<u16, ReapError> {
    let accepted = match head.accept(c.sq_head, tail) {
        Ok(a) => a,
        Err(e) => return Err(bad_head(e, cids, c.cid)),
    };
    let tag = cids.complete(c.cid).map_err(ReapError::Cid)?;
    head.apply(accepted);
    Ok(tag)
}

/// The error of an entry whose SQ head is bad (`e`): its command id's error if that is bad
/// too, as [`accept_completion`] reports it.
#[cold]
#[inline(never)]
fn bad_head<const N: usize>(e: SqError, cids: &SharedCidTable<N>, cid: u16) -> ReapError {
    match cids.check(cid) {
        Err(c) => ReapError::Cid(c),
        Ok(_) => ReapError::SqHead(e),
    }
}
