// SPDX-License-Identifier: GPL-2.0

//! Errors: kernel errno values and the block layer's `blk_status_t`.
//!
//! C header: [`include/linux/blk_types.h`](srctree/include/linux/blk_types.h)
//!
//! Errno values are the kernel crate's [`Error`]; a request ends with a [`BlkStatus`]. The
//! `BLK_STS_*` values are macros bindgen cannot translate: the numbers below are checked against
//! the C macros by `static_assert`s in `kernel-glue/helpers.c`.

pub use kernel::error::{code, to_result, Error, Result};

use kernel::bindings;

/// A block layer completion status (`blk_status_t`).
///
/// # Invariants
///
/// The value is one of the `BLK_STS_*` constants below (all defined by `blk_types.h`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BlkStatus(bindings::blk_status_t);

impl BlkStatus {
    /// `BLK_STS_OK`: success.
    pub const OK: Self = Self(0);
    /// `BLK_STS_NOTSUPP`: operation not supported.
    pub const NOTSUPP: Self = Self(1);
    /// `BLK_STS_TIMEOUT`: the command timed out.
    pub const TIMEOUT: Self = Self(2);
    /// `BLK_STS_NOSPC`: out of space.
    pub const NOSPC: Self = Self(3);
    /// `BLK_STS_TRANSPORT`: transport error.
    pub const TRANSPORT: Self = Self(4);
    /// `BLK_STS_TARGET`: target error (e.g. LBA out of range).
    pub const TARGET: Self = Self(5);
    /// `BLK_STS_MEDIUM`: medium error.
    pub const MEDIUM: Self = Self(7);
    /// `BLK_STS_PROTECTION`: protection information error.
    pub const PROTECTION: Self = Self(8);
    /// `BLK_STS_RESOURCE`: out of resources, the request is retried later.
    pub const RESOURCE: Self = Self(9);
    /// `BLK_STS_IOERR`: generic I/O error.
    pub const IOERR: Self = Self(10);
    /// `BLK_STS_AGAIN`: try again (non-blocking submission).
    pub const AGAIN: Self = Self(12);
    /// `BLK_STS_DEV_RESOURCE`: device out of resources, retried when the device frees some.
    pub const DEV_RESOURCE: Self = Self(13);
    /// `BLK_STS_INVAL`: invalid request.
    pub const INVAL: Self = Self(19);

    /// The status with raw value `v`, if it is one of the constants above.
    pub fn from_raw(v: u8) -> Option<Self> {
        // INVARIANT: only the values of the constants are accepted.
        match v {
            0..=5 | 7..=10 | 12 | 13 | 19 => Some(Self(v)),
            _ => None,
        }
    }

    /// The raw `blk_status_t`.
    pub fn as_raw(self) -> bindings::blk_status_t {
        self.0
    }

    /// Whether this is `BLK_STS_OK`.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The status for a kernel error, as `errno_to_blk_status()` in `block/blk-core.c` maps it
    /// (anything without its own status is `BLK_STS_IOERR`).
    pub fn from_errno(e: Error) -> Self {
        // Errno values are small positive constants; `to_errno` is their negation.
        match e.to_errno().unsigned_abs() {
            bindings::ENOMEM => Self::RESOURCE,
            bindings::EOPNOTSUPP => Self::NOTSUPP,
            bindings::ETIMEDOUT => Self::TIMEOUT,
            bindings::ENOSPC => Self::NOSPC,
            bindings::EAGAIN => Self::AGAIN,
            bindings::EINVAL => Self::INVAL,
            _ => Self::IOERR,
        }
    }
}

/// `ETIMEDOUT` (not among the kernel crate's 6.12 error codes).
pub fn etimedout() -> Error {
    // `ETIMEDOUT` is a valid errno; `from_errno` takes it negated.
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}
