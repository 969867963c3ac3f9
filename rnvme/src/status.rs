//! The status field of a completion queue entry: phase tag, status code (SC), status code type
//! (SCT), command retry delay (CRD), More and Do Not Retry (`enum nvme_status_field`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The raw 16-bit field has the phase tag in bit 0; the Linux driver stores it shifted right by
//! one (`le16_to_cpu(cqe->status) >> 1` in `nvme_handle_cqe`), which is what
//! [`Status::code`] returns: SC in bits 7:0, SCT in 10:8, CRD in 12:11, More 13, DNR 14.

use core::fmt;

/// Status Code Type values (`NVME_SCT_*`, bits 10:8 of the shifted status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusCodeType {
    /// 0: generic command status.
    Generic,
    /// 1: command specific status.
    CommandSpecific,
    /// 2: media and data integrity errors.
    MediaError,
    /// 3: path related status.
    Path,
    /// 7: vendor specific.
    VendorSpecific,
    /// 4..=6: reserved (raw value).
    Reserved(u8),
}

impl StatusCodeType {
    /// The type from its 3-bit value.
    pub const fn from_bits(sct: u8) -> Self {
        match sct & 7 {
            0 => Self::Generic,
            1 => Self::CommandSpecific,
            2 => Self::MediaError,
            3 => Self::Path,
            7 => Self::VendorSpecific,
            r => Self::Reserved(r),
        }
    }
}

/// A decoded completion status.
///
/// # Examples
///
/// ```
/// use nvme::{Status, StatusCodeType};
/// // Raw 0x8005: DNR, generic SC 0x02 (invalid field), phase 1.
/// let s = Status::from_raw(0x8005);
/// assert!(s.phase() && s.dnr() && !s.more() && !s.is_success());
/// assert_eq!((s.sct(), s.sc(), s.code(), s.crd()), (StatusCodeType::Generic, 2, 0x4002, 0));
/// assert!(Status::from_raw(0x0001).is_success());     // success, phase 1
/// assert_eq!(Status::from_code(0x1000 | 0x0702).crd(), 2);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Status(u16);

impl Status {
    /// Success with the phase tag clear.
    pub const SUCCESS: Self = Self(0);

    /// The status from the raw CQE field (phase tag in bit 0).
    pub const fn from_raw(raw: u16) -> Self {
        Self(raw)
    }

    /// The status from the kernel's shifted form (no phase tag), as [`Status::code`] returns.
    pub const fn from_code(code: u16) -> Self {
        Self((code & 0x7fff) << 1)
    }

    /// The raw field, phase tag included.
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// The status without the phase tag, as the Linux driver stores it (`nvme_req(rq)->status`).
    pub const fn code(self) -> u16 {
        self.0 >> 1
    }

    /// The phase tag.
    pub const fn phase(self) -> bool {
        self.0 & 1 != 0
    }

    /// Status Code (SC).
    pub const fn sc(self) -> u8 {
        (self.code() & 0xff) as u8
    }

    /// Status Code Type (SCT).
    pub const fn sct(self) -> StatusCodeType {
        StatusCodeType::from_bits(((self.code() >> 8) & 7) as u8)
    }

    /// SCT and SC together (`status & NVME_SCT_SC_MASK`), the key of `nvme_error_status`.
    pub const fn sct_sc(self) -> u16 {
        self.code() & 0x7ff
    }

    /// Command Retry Delay index (0: none, 1..=3: CRDT1..CRDT3 of Identify Controller).
    pub const fn crd(self) -> u8 {
        ((self.code() >> 11) & 3) as u8
    }

    /// More: a log page has more information.
    pub const fn more(self) -> bool {
        self.code() & 0x2000 != 0
    }

    /// Do Not Retry: the same command would fail again.
    pub const fn dnr(self) -> bool {
        self.code() & 0x4000 != 0
    }

    /// Whether SCT and SC are both 0 (CRD, More and DNR are ignored, as the Linux driver's
    /// mapping ignores them).
    pub const fn is_success(self) -> bool {
        self.sct_sc() == 0
    }

    /// Whether a failed command may be retried (`nvme_decide_disposition`: not DNR); a success
    /// is never retried. The caller adds its own retry budget and `REQ_FAILFAST_*` checks.
    pub const fn retryable(self) -> bool {
        !self.is_success() && !self.dnr()
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Status")
            .field("sct", &self.sct())
            .field("sc", &self.sc())
            .field("crd", &self.crd())
            .field("more", &self.more())
            .field("dnr", &self.dnr())
            .field("phase", &self.phase())
            .finish()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "status {:#05x}", self.sct_sc())?;
        if self.dnr() {
            f.write_str(" DNR")?;
        }
        if self.more() {
            f.write_str(" MORE")?;
        }
        Ok(())
    }
}
