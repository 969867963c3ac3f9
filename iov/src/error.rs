//! Errors of the iov crate.

use core::fmt;

/// `EFAULT`: bad address (what the kernel returns for unsupported kinds and failed page lookups).
pub const EFAULT: i32 = 14;
/// `ENOMEM`: no page array could be filled (`want_pages_array` returned 0).
pub const ENOMEM: i32 = 12;
/// `EINVAL`: an argument broke an invariant the kernel only documents.
pub const EINVAL: i32 = 22;

/// Why an iterator operation was refused.
///
/// Every fallible operation leaves the iterator unchanged when it returns one of these, except
/// where a variant says otherwise (the kernel's extract path skips empty segments before it fails).
///
/// # Examples
///
/// ```
/// use iov::{IovError, IovIter, Kvec, Source};
/// let kv = [Kvec::new(0x1000, 8)];
/// let err = IovIter::<bvec::Pfn, Source>::kvec(&kv, 9).unwrap_err();
/// assert_eq!(err, IovError::CountExceedsSegments { count: 9, available: 8 });
/// assert_eq!(err.to_errno(), -22);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IovError {
    /// A constructor or `reexpand` asked for more bytes than the segments hold (the kernel only documents this rule: `iov_iter_init()` and friends in lib/iov_iter.c trust the caller).
    CountExceedsSegments {
        /// Bytes requested.
        count: usize,
        /// Bytes the segments hold from the current position on.
        available: usize,
    },
    /// The start offset of a page-list iterator lies beyond its first folio.
    OffsetOutOfRange {
        /// Requested offset.
        offset: usize,
        /// Size of the first folio (0 for an empty table).
        limit: usize,
    },
    /// A folio order so large that its size would not fit in `usize`.
    FolioOrder {
        /// Requested order.
        order: u8,
    },
    /// A revert went back further than what was consumed since construction (the kernel BUGs or
    /// walks off the array, §9.2).
    RevertTooFar {
        /// Bytes requested.
        requested: usize,
        /// Bytes consumed since construction.
        available: usize,
    },
    /// A revert of more than `MAX_RW_COUNT` bytes (the kernel WARNs and ignores it).
    RevertTooLarge {
        /// Bytes requested.
        requested: usize,
    },
    /// The operation is not supported for this kind of iterator (the kernel's `-EFAULT` for
    /// `get_pages` on KVEC and DISCARD, `extract_pages` on DISCARD).
    Unsupported,
    /// The memory refused to hand out the first page (GUP failure, unmapped kernel address).
    Fault {
        /// Address of the first page that could not be obtained.
        addr: usize,
    },
    /// `extract_pages` was given room for zero pages (the kernel's `want_pages_array` WARN plus
    /// `-ENOMEM`).
    NoPageRoom,
    /// A saved state does not fit this iterator.
    BadState,
    /// A bvec table whose lengths sum to more than `usize::MAX` ([`crate::BvecTable::new`]).
    TableTooLarge,
    /// The kind cannot restore a saved state (the kernel WARNs and does nothing).
    RestoreUnsupported,
}

impl IovError {
    /// The negative errno the kernel would return for this condition.
    pub const fn to_errno(self) -> i32 {
        match self {
            Self::Unsupported | Self::Fault { .. } => -EFAULT,
            Self::NoPageRoom => -ENOMEM,
            _ => -EINVAL,
        }
    }
}

impl fmt::Display for IovError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::CountExceedsSegments { count, available } => write!(
                f,
                "iterator count {count} exceeds the {available} bytes its segments hold"
            ),
            Self::OffsetOutOfRange { offset, limit } => {
                write!(
                    f,
                    "start offset {offset} lies beyond the first folio ({limit} bytes)"
                )
            }
            Self::FolioOrder { order } => write!(f, "folio order {order} is too large"),
            Self::RevertTooFar {
                requested,
                available,
            } => write!(
                f,
                "cannot revert {requested} bytes: only {available} were consumed"
            ),
            Self::RevertTooLarge { requested } => {
                write!(f, "revert of {requested} bytes exceeds MAX_RW_COUNT")
            }
            Self::Unsupported => f.write_str("operation not supported by this iterator kind"),
            Self::Fault { addr } => write!(f, "no page behind address {addr:#x}"),
            Self::NoPageRoom => f.write_str("page array has room for zero pages"),
            Self::BadState => f.write_str("saved state does not fit this iterator"),
            Self::TableTooLarge => f.write_str("bvec table holds more than usize::MAX bytes"),
            Self::RestoreUnsupported => f.write_str("this iterator kind cannot restore a state"),
        }
    }
}
