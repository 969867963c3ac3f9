//! Errors of the bvec crate.

use core::fmt;

/// Why a bvec operation was refused.
///
/// Every fallible operation in this crate leaves its inputs unchanged when it returns one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BvecError {
    /// A segment of length zero was requested; the kernel forbids them
    /// (`Documentation/filesystems/porting.rst`).
    ZeroLength,
    /// `offset + len` of a segment does not fit in `u32`.
    Overflow {
        /// Requested offset from the start of the first page.
        offset: u32,
        /// Requested length in bytes.
        len: u32,
    },
    /// An iterator was asked to cover more bytes than its table holds.
    SizeExceedsTable {
        /// Bytes requested.
        requested: u64,
        /// Bytes available from the starting position to the end of the table.
        available: u64,
    },
    /// An iterator position does not lie inside its table (index past the end, or
    /// bytes-done not smaller than the current segment's length).
    BadPosition {
        /// Segment index.
        idx: u32,
        /// Bytes already done in that segment.
        done: u32,
    },
    /// An advance or split went past the remaining bytes.
    PastEnd {
        /// Bytes requested.
        requested: u64,
        /// Bytes remaining.
        remaining: u64,
    },
    /// A revert went before the start of the table.
    BeforeStart {
        /// Bytes requested.
        requested: u64,
        /// Bytes that can be reverted.
        available: u64,
    },
    /// A single-segment step went past the end of the current segment.
    BeyondSegment {
        /// Bytes requested.
        requested: u32,
        /// Bytes left in the current segment.
        available: u32,
    },
}

impl fmt::Display for BvecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ZeroLength => f.write_str("zero-length bvec segment"),
            Self::Overflow { offset, len } => {
                write!(f, "bvec offset {offset} + length {len} overflows u32")
            }
            Self::SizeExceedsTable {
                requested,
                available,
            } => write!(
                f,
                "iterator size {requested} exceeds the {available} bytes in its table"
            ),
            Self::BadPosition { idx, done } => {
                write!(f, "position (idx {idx}, done {done}) is outside the table")
            }
            Self::PastEnd {
                requested,
                remaining,
            } => write!(
                f,
                "cannot move {requested} bytes forward: only {remaining} remain"
            ),
            Self::BeforeStart {
                requested,
                available,
            } => write!(
                f,
                "cannot move {requested} bytes back: only {available} were consumed"
            ),
            Self::BeyondSegment {
                requested,
                available,
            } => write!(
                f,
                "cannot step {requested} bytes inside a segment: only {available} are left in it"
            ),
        }
    }
}
