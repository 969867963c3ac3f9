//! The command id table of one queue shared without a lock between its submitters and its
//! completion path: [`CidTable`]'s rules (tag plus 4-bit generation, in-flight flag, stale and
//! duplicate completions refused) on one atomic byte per tag.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! `drivers/nvme/host/pci.c` takes one plain lock to submit (`nvmeq->sq_lock`) and none to
//! complete: the generation lives in the request (`nvme_req(rq)->genctr`) and
//! `nvme_find_rq()` compares it without a lock. This table does the same with the in-flight
//! flag added: every change of a tag's byte is one compare-and-swap, so a completion and a
//! cancellation (timeout, reset) racing for one command cannot both win, and a submitter never
//! waits for the interrupt handler.

use core::sync::atomic::{AtomicU8, Ordering};

use crate::cid::{check_depth, judge, make_cid, split_cid, IN_FLIGHT};
use crate::CidError;

/// Which tags of one queue have a command in flight, and in which generation, updated with
/// atomic operations through `&self`.
///
/// `N` is the storage size; the depth is chosen at run time. One byte per tag: bit 7 is the
/// in-flight flag, bits 0-3 the generation of the last command started on the tag.
///
/// # Invariants
///
/// `1 <= depth <= min(N, MAX_TAGS)`; entries at or beyond `depth` are never in flight.
///
/// # Examples
///
/// ```
/// use nvme::{CidError, SharedCidTable};
/// let t = SharedCidTable::<64>::new(32)?;
/// let cid = t.start(5)?;                                  // generation 1
/// assert_eq!(cid, 0x1005);
/// assert_eq!(t.start(5), Err(CidError::Busy { tag: 5 }));
/// assert_eq!(t.complete(0x0005), Err(CidError::StaleGeneration { tag: 5, got: 0, expected: 1 }));
/// assert_eq!(t.complete(cid), Ok(5));
/// assert_eq!(t.complete(cid), Err(CidError::NotInFlight { tag: 5 }));   // duplicate
/// assert_eq!(t.start(5)?, 0x2005);                        // next use: generation 2
/// assert!(t.cancel(5));                                   // a reset took it back
/// assert_eq!(t.complete(0x2005), Err(CidError::NotInFlight { tag: 5 }));
/// assert!(SharedCidTable::<64>::new(65).is_err());
/// # Ok::<(), CidError>(())
/// ```
#[derive(Debug)]
pub struct SharedCidTable<const N: usize> {
    entries: [AtomicU8; N],
    depth: usize,
}

impl<const N: usize> SharedCidTable<N> {
    /// A table for tags `0..depth`, none in flight.
    ///
    /// # Errors
    ///
    /// [`CidError::Depth`] unless `1 <= depth <= min(N, 4096)`.
    pub fn new(depth: usize) -> Result<Self, CidError> {
        let depth = check_depth::<N>(depth)?;
        // INVARIANT: depth checked; nothing in flight.
        Ok(Self {
            entries: [const { AtomicU8::new(0) }; N],
            depth,
        })
    }

    /// The depth.
    pub const fn depth(&self) -> usize {
        self.depth
    }

    /// The byte of `tag`, if below the depth.
    #[inline]
    fn slot(&self, tag: u16) -> Result<&AtomicU8, CidError> {
        let depth = self.depth;
        self.entries
            .get(usize::from(tag))
            .filter(|_| usize::from(tag) < depth)
            .ok_or(CidError::TagOutOfRange { tag, depth })
    }

    /// Marks `tag` in flight in a new generation and returns the command id to put in the
    /// submission entry (`nvme_setup_cmd`). The store is a release: a completion path that
    /// sees the command's completion sees the tag in flight.
    ///
    /// # Errors
    ///
    /// [`CidError::TagOutOfRange`] or [`CidError::Busy`]; the table is then unchanged.
    #[inline]
    pub fn start(&self, tag: u16) -> Result<u16, CidError> {
        let e = self.slot(tag)?;
        let mut cur = e.load(Ordering::Relaxed);
        loop {
            if cur & IN_FLIGHT != 0 {
                return Err(CidError::Busy { tag });
            }
            let gen = (cur + 1) & 0xf;
            match e.compare_exchange_weak(
                cur,
                IN_FLIGHT | gen,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(make_cid(tag, gen)),
                Err(now) => cur = now,
            }
        }
    }

    /// What [`SharedCidTable::complete`] would return for `cid` now, without changing the
    /// table.
    ///
    /// # Errors
    ///
    /// As [`SharedCidTable::complete`].
    #[inline]
    pub fn check(&self, cid: u16) -> Result<u16, CidError> {
        let (tag, _) = split_cid(cid);
        judge(cid, self.slot(tag)?.load(Ordering::Acquire))
    }

    /// Resolves a completion's command id to the tag it completes and marks the tag idle, in
    /// one compare-and-swap: of a completion and a [`SharedCidTable::cancel`] of the same
    /// command, exactly one succeeds.
    ///
    /// # Errors
    ///
    /// [`CidError::TagOutOfRange`], [`CidError::NotInFlight`] or
    /// [`CidError::StaleGeneration`]: the completion must be ignored (logged); the table is
    /// unchanged and the command in flight, if any, stays in flight.
    #[inline]
    pub fn complete(&self, cid: u16) -> Result<u16, CidError> {
        let (tag, _) = split_cid(cid);
        let e = self.slot(tag)?;
        let mut cur = e.load(Ordering::Acquire);
        loop {
            judge(cid, cur)?;
            match e.compare_exchange_weak(cur, cur & 0xf, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(tag),
                Err(now) => cur = now,
            }
        }
    }

    /// Marks `tag` idle without a completion (`nvme_cancel_request`); returns whether it was
    /// in flight. A late completion for it is then refused as [`CidError::NotInFlight`] or,
    /// after the tag is reused, [`CidError::StaleGeneration`].
    pub fn cancel(&self, tag: u16) -> bool {
        self.slot(tag)
            .is_ok_and(|e| e.fetch_and(!IN_FLIGHT, Ordering::AcqRel) & IN_FLIGHT != 0)
    }

    /// Marks every tag idle; returns how many were in flight. Generations are kept, so
    /// completions for the cancelled commands stay refused after the tags are reused.
    pub fn cancel_all(&self) -> usize {
        self.entries
            .iter()
            .take(self.depth)
            .filter(|e| e.fetch_and(!IN_FLIGHT, Ordering::AcqRel) & IN_FLIGHT != 0)
            .count()
    }

    /// Takes the lowest tag with a command in flight off the table (as
    /// [`SharedCidTable::cancel`]) and returns it; `None` when none is in flight.
    pub fn take_in_flight(&self) -> Option<u16> {
        (0..self.depth)
            .map(|i| i as u16)
            .find(|&tag| self.cancel(tag))
    }

    /// Commands in flight now (a snapshot: submitters and completions may change it at once).
    pub fn in_flight(&self) -> usize {
        self.in_flight_tags().count()
    }

    /// The tags with a command in flight, in ascending order (a snapshot, as
    /// [`SharedCidTable::in_flight`]).
    pub fn in_flight_tags(&self) -> impl Iterator<Item = u16> + '_ {
        self.entries
            .iter()
            .take(self.depth)
            .enumerate()
            .filter(|(_, e)| e.load(Ordering::Acquire) & IN_FLIGHT != 0)
            // depth <= 4096, so the index fits in u16.
            .map(|(i, _)| i as u16)
    }

    /// Whether `tag` has a command in flight.
    pub fn is_in_flight(&self, tag: u16) -> bool {
        self.slot(tag)
            .is_ok_and(|e| e.load(Ordering::Acquire) & IN_FLIGHT != 0)
    }

    /// The command id of the command in flight on `tag` (for Abort), `None` if idle.
    pub fn cid_of(&self, tag: u16) -> Option<u16> {
        let e = self.slot(tag).ok()?.load(Ordering::Acquire);
        (e & IN_FLIGHT != 0).then(|| make_cid(tag, e & 0xf))
    }
}
