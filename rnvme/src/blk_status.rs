//! Block-layer completion status (`blk_status_t`) and the NVMe status mapping of
//! `nvme_error_status` in `drivers/nvme/host/core.c`.
//!
//! C header: [`include/linux/blk_types.h`](srctree/include/linux/blk_types.h)

use crate::Status;

/// A block-layer status with the numeric value of `blk_status_t` in Linux 6.12.
///
/// The kernel glue converts it with [`BlkStatus::value`]; the enum itself is kernel-free.
///
/// # Examples
///
/// ```
/// use nvme::BlkStatus;
/// assert_eq!((BlkStatus::Ok.value(), BlkStatus::IoErr.value(), BlkStatus::Inval.value()), (0, 10, 19));
/// assert_eq!(BlkStatus::from_value(7), Some(BlkStatus::Medium));
/// assert_eq!(BlkStatus::from_value(18), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlkStatus {
    /// `BLK_STS_OK`.
    Ok = 0,
    /// `BLK_STS_NOTSUPP`.
    NotSupp = 1,
    /// `BLK_STS_TIMEOUT`.
    Timeout = 2,
    /// `BLK_STS_NOSPC`.
    NoSpc = 3,
    /// `BLK_STS_TRANSPORT`.
    Transport = 4,
    /// `BLK_STS_TARGET`.
    Target = 5,
    /// `BLK_STS_RESV_CONFLICT`.
    ResvConflict = 6,
    /// `BLK_STS_MEDIUM`.
    Medium = 7,
    /// `BLK_STS_PROTECTION`.
    Protection = 8,
    /// `BLK_STS_RESOURCE`: out of a resource, retry soon.
    Resource = 9,
    /// `BLK_STS_IOERR`.
    IoErr = 10,
    /// `BLK_STS_DM_REQUEUE`.
    DmRequeue = 11,
    /// `BLK_STS_AGAIN`: would block (`REQ_NOWAIT`).
    Again = 12,
    /// `BLK_STS_DEV_RESOURCE`.
    DevResource = 13,
    /// `BLK_STS_ZONE_OPEN_RESOURCE`.
    ZoneOpenResource = 14,
    /// `BLK_STS_ZONE_ACTIVE_RESOURCE`.
    ZoneActiveResource = 15,
    /// `BLK_STS_OFFLINE`.
    Offline = 16,
    /// `BLK_STS_DURATION_LIMIT`.
    DurationLimit = 17,
    /// `BLK_STS_INVAL`.
    Inval = 19,
}

/// Every variant, in value order.
const ALL: [BlkStatus; 19] = [
    BlkStatus::Ok,
    BlkStatus::NotSupp,
    BlkStatus::Timeout,
    BlkStatus::NoSpc,
    BlkStatus::Transport,
    BlkStatus::Target,
    BlkStatus::ResvConflict,
    BlkStatus::Medium,
    BlkStatus::Protection,
    BlkStatus::Resource,
    BlkStatus::IoErr,
    BlkStatus::DmRequeue,
    BlkStatus::Again,
    BlkStatus::DevResource,
    BlkStatus::ZoneOpenResource,
    BlkStatus::ZoneActiveResource,
    BlkStatus::Offline,
    BlkStatus::DurationLimit,
    BlkStatus::Inval,
];

impl BlkStatus {
    /// The `blk_status_t` value.
    pub const fn value(self) -> u8 {
        self as u8
    }

    /// The status with `blk_status_t` value `v`, `None` for a value 6.12 does not define.
    pub fn from_value(v: u8) -> Option<Self> {
        ALL.iter().copied().find(|s| s.value() == v)
    }

    /// The block status of an NVMe completion status (`nvme_error_status`): only SCT and SC
    /// count; every code the table does not name is [`BlkStatus::IoErr`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{BlkStatus, Status};
    /// let s = |code| BlkStatus::from_nvme(Status::from_code(code));
    /// assert_eq!(s(0x0000), BlkStatus::Ok);
    /// assert_eq!(s(0x4000), BlkStatus::Ok);          // DNR alone: still success
    /// assert_eq!(s(0x0002), BlkStatus::NotSupp);     // invalid field
    /// assert_eq!(s(0x4281), BlkStatus::Medium);      // unrecovered read error, DNR
    /// assert_eq!(s(0x0080), BlkStatus::Target);      // LBA out of range
    /// assert_eq!(s(0x0370), BlkStatus::Transport);   // host path error
    /// assert_eq!(s(0x0006), BlkStatus::IoErr);       // internal error
    /// assert_eq!(s(0x0781), BlkStatus::IoErr);       // vendor specific
    /// ```
    #[inline]
    pub const fn from_nvme(status: Status) -> Self {
        // Success, nearly every completion, by one compare: the compiler lowers the whole
        // match to a jump through a table, an indirect jump (a jump-cache lookup under QEMU's
        // TCG) on each completion.
        if status.sct_sc() == 0 {
            return Self::Ok;
        }
        Self::from_nvme_error(status)
    }

    /// [`BlkStatus::from_nvme`] of a status that is not plain success.
    #[cold]
    #[inline(never)]
    const fn from_nvme_error(status: Status) -> Self {
        match status.sct_sc() {
            0x000 => Self::Ok,
            // Capacity exceeded.
            0x081 => Self::NoSpc,
            // LBA out of range, command interrupted, namespace not ready.
            0x080 | 0x021 | 0x082 => Self::Target,
            // Conflicting attributes, invalid opcode, invalid field, invalid namespace.
            0x180 | 0x001 | 0x002 | 0x00b => Self::NotSupp,
            // Write fault, unrecovered read error, deallocated or unwritten block, access
            // denied, write to a read-only range, compare failure.
            0x280 | 0x281 | 0x287 | 0x286 | 0x182 | 0x285 => Self::Medium,
            // End-to-end guard, application tag, reference tag checks; invalid PI.
            0x282 | 0x283 | 0x284 | 0x181 => Self::Protection,
            // Reservation conflict.
            0x083 => Self::ResvConflict,
            // Host pathing error.
            0x370 => Self::Transport,
            // Zoned namespaces: too many active / open zones.
            0x1bd => Self::ZoneActiveResource,
            0x1be => Self::ZoneOpenResource,
            _ => Self::IoErr,
        }
    }

    /// Whether this is [`BlkStatus::Ok`].
    pub const fn is_ok(self) -> bool {
        matches!(self, Self::Ok)
    }
}

impl From<Status> for BlkStatus {
    fn from(s: Status) -> Self {
        Self::from_nvme(s)
    }
}
