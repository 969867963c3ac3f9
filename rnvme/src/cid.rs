//! Command identifiers: blk-mq tag plus a 4-bit generation, and the table of commands in
//! flight that validates every completion's identifier (`nvme_cid`, `nvme_find_rq`,
//! `nvme_tag_from_cid`, `nvme_genctr_from_cid` in `drivers/nvme/host/nvme.h`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! A command id is `generation << 12 | tag`. The generation of a tag is bumped each time a
//! command is started on it, so a late completion for an earlier use of the same tag carries
//! a stale generation and is refused. Unlike `nvme_find_rq`, the table also knows whether the
//! tag has a command in flight at all, so a duplicate completion is refused too. With 4 bits
//! the generation repeats after 16 uses of a tag; a completion that old cannot be told apart.

use core::fmt;

/// Bits of the command id that hold the tag.
pub const CID_TAG_BITS: u32 = 12;
/// Largest queue depth the tag field can address (`4096`).
pub const MAX_TAGS: usize = 1 << CID_TAG_BITS;
/// Mask of the tag in a command id.
const TAG_MASK: u16 = (1 << CID_TAG_BITS) - 1;
/// In-flight flag in a table entry; the low 4 bits are the generation.
pub(crate) const IN_FLIGHT: u8 = 0x80;

/// `Ok(depth)` if a table of `N` entries can serve tags `0..depth` (`1 <= depth <= min(N,
/// MAX_TAGS)`), for [`CidTable::new`] and [`crate::SharedCidTable::new`].
pub(crate) const fn check_depth<const N: usize>(depth: usize) -> Result<usize, CidError> {
    if depth == 0 || depth > N || depth > MAX_TAGS {
        return Err(CidError::Depth { depth });
    }
    Ok(depth)
}

/// Whether `cid` completes the command whose table entry is `e` (in-flight flag and
/// generation); returns its tag.
#[inline]
pub(crate) fn judge(cid: u16, e: u8) -> Result<u16, CidError> {
    let (tag, got) = split_cid(cid);
    if e & IN_FLIGHT == 0 {
        return Err(CidError::NotInFlight { tag });
    }
    let expected = e & 0xf;
    if got != expected {
        return Err(CidError::StaleGeneration { tag, got, expected });
    }
    Ok(tag)
}

/// Why a tag could not be started or a completion's command id was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CidError {
    /// The table depth is 0 or larger than its storage or [`MAX_TAGS`].
    Depth {
        /// Depth asked for.
        depth: usize,
    },
    /// The tag is not below the depth.
    TagOutOfRange {
        /// The tag (from the caller or from the command id).
        tag: u16,
        /// The table depth.
        depth: usize,
    },
    /// The tag already has a command in flight (caller bug: blk-mq never does this).
    Busy {
        /// The tag.
        tag: u16,
    },
    /// A completion for a tag with no command in flight (duplicate or invented completion).
    NotInFlight {
        /// The tag.
        tag: u16,
    },
    /// A completion whose generation is not that of the command in flight on the tag.
    StaleGeneration {
        /// The tag.
        tag: u16,
        /// Generation in the completion.
        got: u8,
        /// Generation of the command in flight.
        expected: u8,
    },
}

impl fmt::Display for CidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Depth { depth } => write!(f, "command id table depth {depth} unsupported"),
            Self::TagOutOfRange { tag, depth } => {
                write!(f, "tag {tag:#x} beyond queue depth {depth}")
            }
            Self::Busy { tag } => write!(f, "tag {tag:#x} already in flight"),
            Self::NotInFlight { tag } => write!(f, "completion for idle tag {tag:#x}"),
            Self::StaleGeneration { tag, got, expected } => write!(
                f,
                "tag {tag:#x} generation mismatch (got {got:#x} expected {expected:#x})"
            ),
        }
    }
}

impl core::error::Error for CidError {}

/// The command id of `tag` in generation `gen` (`nvme_cid`); only the low 4 bits of `gen` and
/// 12 bits of `tag` are used.
///
/// # Examples
///
/// ```
/// assert_eq!(nvme::make_cid(0x123, 0x15), 0x5123);
/// assert_eq!(nvme::split_cid(0x5123), (0x123, 5));
/// ```
#[inline]
pub const fn make_cid(tag: u16, gen: u8) -> u16 {
    ((gen as u16 & 0xf) << CID_TAG_BITS) | (tag & TAG_MASK)
}

/// The tag and generation of a command id (`nvme_tag_from_cid`, `nvme_genctr_from_cid`).
pub const fn split_cid(cid: u16) -> (u16, u8) {
    (cid & TAG_MASK, (cid >> CID_TAG_BITS) as u8)
}

/// Which tags of one queue have a command in flight, and in which generation.
///
/// `N` is the storage size (the largest depth the driver uses); the depth itself is chosen at
/// run time. One byte per tag.
///
/// # Invariants
///
/// `1 <= depth <= min(N, MAX_TAGS)`; entries at or beyond `depth` are never in flight.
///
/// # Examples
///
/// ```
/// use nvme::{CidError, CidTable};
/// let mut t = CidTable::<64>::new(32)?;
/// let cid = t.start(5)?;                                  // generation 1
/// assert_eq!(cid, 0x1005);
/// assert_eq!(t.start(5), Err(CidError::Busy { tag: 5 }));
/// assert_eq!(t.complete(0x0005), Err(CidError::StaleGeneration { tag: 5, got: 0, expected: 1 }));
/// assert_eq!(t.complete(cid), Ok(5));
/// assert_eq!(t.complete(cid), Err(CidError::NotInFlight { tag: 5 }));   // duplicate
/// assert_eq!(t.complete(0x1020), Err(CidError::TagOutOfRange { tag: 0x20, depth: 32 }));
/// assert_eq!(t.start(5)?, 0x2005);                        // next use: generation 2
/// assert!(CidTable::<64>::new(65).is_err());
/// # Ok::<(), CidError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CidTable<const N: usize> {
    entries: [u8; N],
    depth: usize,
    in_flight: usize,
}

impl<const N: usize> CidTable<N> {
    /// A table for tags `0..depth`, none in flight.
    ///
    /// # Errors
    ///
    /// [`CidError::Depth`] unless `1 <= depth <= min(N, 4096)`.
    pub fn new(depth: usize) -> Result<Self, CidError> {
        let depth = check_depth::<N>(depth)?;
        // INVARIANT: depth checked; nothing in flight.
        Ok(Self {
            entries: [0; N],
            depth,
            in_flight: 0,
        })
    }

    /// The depth.
    pub const fn depth(&self) -> usize {
        self.depth
    }

    /// Commands in flight.
    pub const fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn slot(&mut self, tag: u16) -> Result<&mut u8, CidError> {
        let depth = self.depth;
        self.entries
            .get_mut(usize::from(tag))
            .filter(|_| usize::from(tag) < depth)
            .ok_or(CidError::TagOutOfRange { tag, depth })
    }

    /// Marks `tag` in flight in a new generation and returns the command id to put in the
    /// submission entry (`nvme_setup_cmd`).
    ///
    /// # Errors
    ///
    /// [`CidError::TagOutOfRange`] or [`CidError::Busy`]; the table is then unchanged.
    pub fn start(&mut self, tag: u16) -> Result<u16, CidError> {
        let e = self.slot(tag)?;
        if *e & IN_FLIGHT != 0 {
            return Err(CidError::Busy { tag });
        }
        let gen = (*e + 1) & 0xf;
        *e = IN_FLIGHT | gen;
        self.in_flight += 1;
        Ok(make_cid(tag, gen))
    }

    /// Resolves a completion's command id to the tag it completes and marks the tag idle.
    ///
    /// # Errors
    ///
    /// [`CidError::TagOutOfRange`], [`CidError::NotInFlight`] or
    /// [`CidError::StaleGeneration`]: the completion must be ignored (logged); the table is
    /// unchanged and the command in flight, if any, stays in flight.
    pub fn complete(&mut self, cid: u16) -> Result<u16, CidError> {
        let tag = self.check(cid)?;
        let e = self.slot(tag)?;
        *e &= 0xf;
        self.in_flight = self.in_flight.saturating_sub(1);
        Ok(tag)
    }

    /// What [`CidTable::complete`] would return for `cid`, without changing the table (to
    /// validate a whole completion entry before acting on any of its fields).
    ///
    /// # Errors
    ///
    /// As [`CidTable::complete`].
    pub fn check(&self, cid: u16) -> Result<u16, CidError> {
        let (tag, _) = split_cid(cid);
        let depth = self.depth;
        let e = *self
            .entries
            .get(usize::from(tag))
            .filter(|_| usize::from(tag) < depth)
            .ok_or(CidError::TagOutOfRange { tag, depth })?;
        judge(cid, e)
    }

    /// Marks `tag` idle without a completion (the request was failed by a timeout or a reset,
    /// `nvme_cancel_request`); returns whether it was in flight. A late completion for it is
    /// then refused as [`CidError::NotInFlight`] or, after the tag is reused,
    /// [`CidError::StaleGeneration`].
    pub fn cancel(&mut self, tag: u16) -> bool {
        let Ok(e) = self.slot(tag) else {
            return false;
        };
        let was = *e & IN_FLIGHT != 0;
        *e &= !IN_FLIGHT;
        if was {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        was
    }

    /// Marks every tag idle (after a controller reset, when the kernel side fails or requeues
    /// every outstanding request); returns how many were in flight. Generations are kept, so
    /// completions for the cancelled commands stay refused after the tags are reused.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut t = nvme::CidTable::<8>::new(8)?;
    /// let old = t.start(3)?;
    /// t.start(6)?;
    /// assert_eq!(t.in_flight_tags().collect::<Vec<_>>(), [3, 6]);
    /// assert_eq!(t.cancel_all(), 2);
    /// assert_eq!((t.in_flight(), t.in_flight_tags().count()), (0, 0));
    /// t.start(3)?;
    /// assert!(t.complete(old).is_err());                    // stale after the reset
    /// # Ok::<(), nvme::CidError>(())
    /// ```
    pub fn cancel_all(&mut self) -> usize {
        let mut n = 0;
        for e in self.entries.iter_mut().take(self.depth) {
            if *e & IN_FLIGHT != 0 {
                *e &= !IN_FLIGHT;
                n += 1;
            }
        }
        self.in_flight = 0;
        n
    }

    /// The tags with a command in flight, in ascending order (for timeouts and reset).
    pub fn in_flight_tags(&self) -> impl Iterator<Item = u16> + '_ {
        self.entries
            .iter()
            .take(self.depth)
            .enumerate()
            .filter(|(_, e)| **e & IN_FLIGHT != 0)
            // depth <= 4096, so the index fits in u16.
            .map(|(i, _)| i as u16)
    }

    /// Whether `tag` has a command in flight.
    pub fn is_in_flight(&self, tag: u16) -> bool {
        usize::from(tag) < self.depth
            && self
                .entries
                .get(usize::from(tag))
                .is_some_and(|e| e & IN_FLIGHT != 0)
    }

    /// The command id of the command in flight on `tag` (for Abort), `None` if idle.
    pub fn cid_of(&self, tag: u16) -> Option<u16> {
        if !self.is_in_flight(tag) {
            return None;
        }
        self.entries
            .get(usize::from(tag))
            .map(|e| make_cid(tag, e & 0xf))
    }
}
