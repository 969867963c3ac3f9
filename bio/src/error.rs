//! Errors of bio construction, iteration and splitting.
//!
//! C header: [`include/linux/blk_types.h`](srctree/include/linux/blk_types.h)
//!
//! The NVMe data-pointer builders have their own error type, [`crate::PrpError`].

use core::fmt;

use bvec::BvecError;
use iov::IovError;

use crate::Op;

/// Why a [`crate::QueueLimits`] could not be built (`blk_validate_limits` returning `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitsError {
    /// The logical block size is not a power of two in `512..=PAGE_SIZE`.
    LogicalBlockSize(u32),
    /// The physical block size is not a power of two (the kernel accepts it; one smaller than the
    /// logical block size is raised to it, as the kernel does).
    PhysicalBlockSize(u32),
    /// `max_hw_sectors` or `max_user_sectors` is below one page.
    MaxSectors(u32),
    /// The segment boundary mask is below `PAGE_SIZE - 1` or not of the form `2^n - 1`.
    SegBoundaryMask(u64),
    /// The virtual boundary mask is not of the form `2^n - 1` below `PAGE_SIZE` (the kernel does
    /// not check it).
    VirtBoundaryMask(u32),
    /// The maximum segment size is below `PAGE_SIZE` (the kernel does not check it when there is
    /// a virtual boundary).
    MaxSegmentSize(u32),
    /// The DMA alignment is above `PAGE_SIZE`.
    DmaAlignment(u32),
}

impl fmt::Display for LimitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::LogicalBlockSize(v) => write!(f, "invalid logical block size {v}"),
            Self::PhysicalBlockSize(v) => write!(f, "invalid physical block size {v}"),
            Self::MaxSectors(v) => write!(f, "invalid sector limit {v}"),
            Self::SegBoundaryMask(v) => write!(f, "invalid segment boundary mask {v:#x}"),
            Self::VirtBoundaryMask(v) => write!(f, "invalid virtual boundary mask {v:#x}"),
            Self::MaxSegmentSize(v) => write!(f, "invalid maximum segment size {v}"),
            Self::DmaAlignment(v) => write!(f, "invalid DMA alignment mask {v:#x}"),
        }
    }
}

/// Why a bio operation was refused.
///
/// Every fallible operation leaves the bio (and the iterator it was built from) unchanged when it
/// returns one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BioError {
    /// An operation went past the bytes the bio still covers.
    PastEnd {
        /// Bytes requested.
        requested: u64,
        /// Bytes remaining in the bio.
        remaining: u64,
    },
    /// The start sector or the size is not a multiple of the logical block size (`bio_unaligned`).
    Unaligned {
        /// Start sector of the bio.
        sector: u64,
        /// Size of the bio in bytes.
        size: u32,
        /// Logical block size it was checked against.
        logical_block_size: u32,
    },
    /// The front part that fits the queue limits is smaller than one logical block once aligned
    /// down, so the bio cannot be split into valid pieces. The kernel's `bio_split_rw_at` returns
    /// 0 ("do not split") here and sends an over-limit request; this crate refuses.
    CannotSplit {
        /// Bytes that fitted the limits before the alignment.
        fitted: u32,
        /// Logical block size.
        logical_block_size: u32,
    },
    /// A split point of zero bytes or of the whole bio was requested (`bio_split`'s `BUG_ON`s).
    BadSplit {
        /// Requested front size in bytes.
        bytes: u32,
        /// Size of the bio in bytes.
        size: u32,
    },
    /// The operation does not fit the call (data for a flush, discard or write-zeroes; a range
    /// for a read or write).
    WrongOp {
        /// The operation given.
        op: Op,
    },
    /// The queue does not support the operation (a zero discard or write-zeroes limit).
    Unsupported {
        /// The operation given.
        op: Op,
    },
    /// The iterator cannot feed a bio of this kind (for example a discard iterator).
    UnsupportedIter,
    /// No page could be taken from the iterator, or every page taken was trimmed away by the
    /// logical-block alignment (the kernel returns `-EFAULT`).
    NoProgress,
    /// The bio's byte count would exceed `u32::MAX` (`bi_size` is 32 bits).
    SizeOverflow,
    /// An iterator or vec-table operation failed.
    Bvec(BvecError),
    /// An iov iterator operation (page extraction or revert) failed.
    Iov(IovError),
}

impl From<BvecError> for BioError {
    fn from(e: BvecError) -> Self {
        Self::Bvec(e)
    }
}

impl fmt::Display for BioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::PastEnd {
                requested,
                remaining,
            } => write!(
                f,
                "bio operation on {requested} bytes but only {remaining} remain"
            ),
            Self::Unaligned {
                sector,
                size,
                logical_block_size,
            } => write!(
                f,
                "bio at sector {sector} of {size} bytes is not aligned to {logical_block_size}"
            ),
            Self::CannotSplit {
                fitted,
                logical_block_size,
            } => write!(
                f,
                "only {fitted} bytes fit the queue limits, less than one {logical_block_size}-byte block"
            ),
            Self::BadSplit { bytes, size } => {
                write!(f, "cannot split {bytes} bytes off a {size}-byte bio")
            }
            Self::WrongOp { op } => write!(f, "operation {op:?} does not fit this call"),
            Self::Unsupported { op } => write!(f, "the queue does not support {op:?}"),
            Self::UnsupportedIter => f.write_str("iterator kind cannot feed a bio"),
            Self::NoProgress => f.write_str("no logical block could be added to the bio"),
            Self::SizeOverflow => f.write_str("bio size would exceed u32::MAX"),
            Self::Bvec(e) => write!(f, "bvec: {e}"),
            Self::Iov(e) => write!(f, "iov: {e}"),
        }
    }
}

impl core::error::Error for BioError {}
impl core::error::Error for LimitsError {}
