//! Typed values of the CAP, CC, CSTS and AQA registers (`NVME_CAP_*`, `NVME_CC_*`,
//! `NVME_CSTS_*`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

/// Controller Capabilities (CAP), as read from the device.
///
/// Every accessor returns the raw field; nothing is trusted. [`Cap::max_queue_entries`] and
/// [`Cap::ready_timeout_ms`] derive the values the driver uses.
///
/// # Examples
///
/// ```
/// use nvme::Cap;
/// // MQES 1023, CQR, TO 30 (15 s), DSTRD 0, CSS NVM, MPSMIN 0, MPSMAX 4.
/// let cap = Cap::from_raw(0x0040_0020_1e01_03ff);
/// assert_eq!((cap.mqes(), cap.max_queue_entries(), cap.cqr(), cap.to()), (1023, 1024, true, 30));
/// assert_eq!((cap.dstrd(), cap.css(), cap.mpsmin(), cap.mpsmax()), (0, 1, 0, 4));
/// assert_eq!(cap.ready_timeout_ms(), 15_000);
/// assert_eq!(Cap::from_raw(0).ready_timeout_ms(), 500);   // TO 0: one 500 ms unit
/// assert!(Cap::from_raw(0).supports_ctrl_page());
/// assert!(!Cap::from_raw(1 << 48).supports_ctrl_page());  // MPSMIN 8 KiB
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap(u64);

impl Cap {
    /// CAP from its raw 64-bit value.
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw value.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Maximum Queue Entries Supported, 0-based (bits 15:0).
    pub const fn mqes(self) -> u16 {
        self.0 as u16
    }

    /// Largest queue the controller accepts, in entries (`MQES + 1`).
    pub const fn max_queue_entries(self) -> u32 {
        self.mqes() as u32 + 1
    }

    /// Contiguous Queues Required (bit 16).
    pub const fn cqr(self) -> bool {
        self.0 & (1 << 16) != 0
    }

    /// Timeout in 500 ms units for CSTS.RDY transitions (bits 31:24).
    pub const fn to(self) -> u8 {
        (self.0 >> 24) as u8
    }

    /// How long to wait for a CSTS.RDY transition: `CAP.TO * 500 ms`, at least 500 ms (the
    /// Linux driver waits `(CAP.TO + 1) / 2` seconds in `nvme_wait_ready`).
    pub const fn ready_timeout_ms(self) -> u32 {
        let to = self.to() as u32;
        if to == 0 {
            500
        } else {
            to * 500
        }
    }

    /// Doorbell Stride exponent: doorbells are `4 << DSTRD` bytes apart (bits 35:32).
    pub const fn dstrd(self) -> u8 {
        ((self.0 >> 32) & 0xf) as u8
    }

    /// NVM Subsystem Reset Supported (bit 36).
    pub const fn nssrs(self) -> bool {
        self.0 & (1 << 36) != 0
    }

    /// Command Sets Supported (bits 44:37; bit 0 NVM, bit 6 I/O command sets, bit 7 admin only).
    pub const fn css(self) -> u8 {
        (self.0 >> 37) as u8
    }

    /// Memory Page Size Minimum exponent: `2^(12 + MPSMIN)` bytes (bits 51:48).
    pub const fn mpsmin(self) -> u8 {
        ((self.0 >> 48) & 0xf) as u8
    }

    /// Memory Page Size Maximum exponent (bits 55:52).
    pub const fn mpsmax(self) -> u8 {
        ((self.0 >> 52) & 0xf) as u8
    }

    /// Whether the driver's 4 KiB controller page lies in `MPSMIN..=MPSMAX`
    /// (`nvme_enable_ctrl` refuses a controller whose minimum is larger).
    pub const fn supports_ctrl_page(self) -> bool {
        self.mpsmin() == 0
    }
}

/// CC.SHN: shutdown notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// 00b: no notification.
    None,
    /// 01b: normal shutdown.
    Normal,
    /// 10b: abrupt shutdown.
    Abrupt,
}

/// Controller Configuration (CC), built by the driver.
///
/// # Examples
///
/// ```
/// use nvme::{Cc, Shutdown};
/// let cc = Cc::nvm_default();
/// assert_eq!(cc.raw(), 0x0046_0000);                 // IOSQES 6, IOCQES 4, 4 KiB pages, NVM
/// assert_eq!(cc.with_enable(true).raw(), 0x0046_0001);
/// assert_eq!(cc.with_shutdown(Shutdown::Normal).raw(), 0x0046_4000);
/// assert!(cc.with_enable(true).enabled());
/// assert_eq!((cc.iosqes(), cc.iocqes(), cc.mps()), (6, 4, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cc(u32);

impl Cc {
    /// Bit 0, EN.
    const EN: u32 = 1;
    /// Bits 15:14, SHN.
    const SHN_MASK: u32 = 3 << 14;

    /// CC from a raw value.
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// What the driver programs (`nvme_enable_ctrl`): NVM command set (CSS 000b), 4 KiB memory
    /// pages (MPS 0), round-robin arbitration, no shutdown, 64-byte SQ entries (IOSQES 6),
    /// 16-byte CQ entries (IOCQES 4), not enabled.
    pub const fn nvm_default() -> Self {
        Self((6 << 16) | (4 << 20))
    }

    /// The same value with EN set or clear.
    pub const fn with_enable(self, en: bool) -> Self {
        if en {
            Self(self.0 | Self::EN)
        } else {
            Self(self.0 & !Self::EN)
        }
    }

    /// The same value with SHN set to `shn`.
    pub const fn with_shutdown(self, shn: Shutdown) -> Self {
        let bits = match shn {
            Shutdown::None => 0,
            Shutdown::Normal => 1 << 14,
            Shutdown::Abrupt => 2 << 14,
        };
        Self((self.0 & !Self::SHN_MASK) | bits)
    }

    /// EN.
    pub const fn enabled(self) -> bool {
        self.0 & Self::EN != 0
    }

    /// Memory Page Size exponent (bits 10:7).
    pub const fn mps(self) -> u8 {
        ((self.0 >> 7) & 0xf) as u8
    }

    /// I/O Submission Queue Entry Size exponent (bits 19:16).
    pub const fn iosqes(self) -> u8 {
        ((self.0 >> 16) & 0xf) as u8
    }

    /// I/O Completion Queue Entry Size exponent (bits 23:20).
    pub const fn iocqes(self) -> u8 {
        ((self.0 >> 20) & 0xf) as u8
    }

    /// SHN bits (0 none, 1 normal, 2 abrupt, 3 reserved).
    pub const fn shn(self) -> u8 {
        ((self.0 >> 14) & 3) as u8
    }
}

/// CSTS.SHST: shutdown status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownStatus {
    /// 00b: normal operation.
    Normal,
    /// 01b: shutdown processing occurring.
    Occurring,
    /// 10b: shutdown processing complete.
    Complete,
    /// 11b: reserved.
    Reserved,
}

/// Controller Status (CSTS), as read from the device.
///
/// # Examples
///
/// ```
/// use nvme::{Csts, ShutdownStatus};
/// let s = Csts::from_raw(0b1001);
/// assert!(s.rdy() && !s.cfs() && !s.is_all_ones());
/// assert_eq!(s.shst(), ShutdownStatus::Complete);
/// assert!(Csts::from_raw(2).cfs());
/// assert!(Csts::from_raw(u32::MAX).is_all_ones());   // device gone
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Csts(u32);

impl Csts {
    /// CSTS from its raw value.
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw value.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// Ready (bit 0).
    pub const fn rdy(self) -> bool {
        self.0 & 1 != 0
    }

    /// Controller Fatal Status (bit 1).
    pub const fn cfs(self) -> bool {
        self.0 & 2 != 0
    }

    /// Shutdown Status (bits 3:2).
    pub const fn shst(self) -> ShutdownStatus {
        match (self.0 >> 2) & 3 {
            0 => ShutdownStatus::Normal,
            1 => ShutdownStatus::Occurring,
            2 => ShutdownStatus::Complete,
            _ => ShutdownStatus::Reserved,
        }
    }

    /// Whether the value is all ones: the device no longer answers (surprise removal).
    pub const fn is_all_ones(self) -> bool {
        self.0 == u32::MAX
    }
}

/// Admin Queue Attributes (AQA): admin submission and completion queue sizes.
///
/// # Examples
///
/// ```
/// use nvme::Aqa;
/// assert_eq!(Aqa::new(32, 32).map(Aqa::raw), Some(0x001f_001f));
/// assert_eq!(Aqa::new(4096, 2).map(Aqa::raw), Some(0x0001_0fff));
/// assert_eq!(Aqa::new(1, 32), None);
/// assert_eq!(Aqa::new(32, 4097), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aqa(u32);

impl Aqa {
    /// Largest admin queue (the 12-bit 0-based size fields).
    pub const MAX_ENTRIES: u16 = 4096;

    /// AQA for an admin SQ of `sq_entries` and a CQ of `cq_entries` entries, `None` unless both
    /// are in `2..=4096`.
    pub const fn new(sq_entries: u16, cq_entries: u16) -> Option<Self> {
        if sq_entries < 2 || cq_entries < 2 {
            return None;
        }
        if sq_entries > Self::MAX_ENTRIES || cq_entries > Self::MAX_ENTRIES {
            return None;
        }
        Some(Self(
            ((cq_entries as u32 - 1) << 16) | (sq_entries as u32 - 1),
        ))
    }

    /// The raw value.
    pub const fn raw(self) -> u32 {
        self.0
    }
}
