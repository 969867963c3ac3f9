//! Controller registers: offsets, the [`Registers`] access trait, and doorbell offsets checked
//! against the BAR (`enum nvme_regs`, `db_bar_size` and `nvme_dbbuf_*` users in
//! `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

use crate::Cap;

/// Controller Capabilities, 64 bits (`NVME_REG_CAP`).
pub const REG_CAP: u32 = 0x00;
/// Version, 32 bits (`NVME_REG_VS`).
pub const REG_VS: u32 = 0x08;
/// Interrupt Mask Set (`NVME_REG_INTMS`).
pub const REG_INTMS: u32 = 0x0c;
/// Interrupt Mask Clear (`NVME_REG_INTMC`).
pub const REG_INTMC: u32 = 0x10;
/// Controller Configuration (`NVME_REG_CC`).
pub const REG_CC: u32 = 0x14;
/// Controller Status (`NVME_REG_CSTS`).
pub const REG_CSTS: u32 = 0x1c;
/// NVM Subsystem Reset (`NVME_REG_NSSR`).
pub const REG_NSSR: u32 = 0x20;
/// Admin Queue Attributes (`NVME_REG_AQA`).
pub const REG_AQA: u32 = 0x24;
/// Admin Submission Queue base address, 64 bits (`NVME_REG_ASQ`).
pub const REG_ASQ: u32 = 0x28;
/// Admin Completion Queue base address, 64 bits (`NVME_REG_ACQ`).
pub const REG_ACQ: u32 = 0x30;
/// Offset of the first doorbell (`NVME_REG_DBS`).
pub const REG_DBS: u32 = 0x1000;

/// Access to the controller's register BAR.
///
/// The kernel glue implements it over the ioremapped BAR0 (`readl`/`writel`, and
/// `lo_hi_readq`/`lo_hi_writeq` for the 64-bit registers); tests implement it over a simulated
/// register file.
///
/// # Implementer notes
///
/// Offsets are byte offsets from the start of BAR0. The core only passes offsets it has checked
/// against the BAR length (the fixed registers below 0x40 and doorbells from [`Doorbells`]),
/// but an implementation must still bounds-check every access itself and treat an out-of-range
/// read as all ones (what a removed PCI device returns) and an out-of-range write as a no-op.
/// No method may panic. Unsafe code must not rely on the values read: they come from the device.
pub trait Registers {
    /// Reads the 32-bit register at `offset`.
    fn read32(&self, offset: u32) -> u32;
    /// Reads the 64-bit register at `offset` (low dword first).
    fn read64(&self, offset: u32) -> u64;
    /// Writes the 32-bit register at `offset`.
    fn write32(&self, offset: u32, value: u32);
    /// Writes the 64-bit register at `offset` (low dword first).
    fn write64(&self, offset: u32, value: u64);
}

impl<R: Registers + ?Sized> Registers for &R {
    fn read32(&self, offset: u32) -> u32 {
        (**self).read32(offset)
    }
    fn read64(&self, offset: u32) -> u64 {
        (**self).read64(offset)
    }
    fn write32(&self, offset: u32, value: u32) {
        (**self).write32(offset, value)
    }
    fn write64(&self, offset: u32, value: u64) {
        (**self).write64(offset, value)
    }
}

/// A doorbell offset that does not fit the BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoorbellError {
    /// Queue id asked for.
    pub qid: u16,
    /// Doorbell stride exponent from CAP.DSTRD.
    pub dstrd: u8,
    /// BAR length in bytes.
    pub bar_len: u64,
}

impl fmt::Display for DoorbellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "doorbells of queue {} (stride {}) beyond the {}-byte BAR",
            self.qid,
            4u64 << self.dstrd,
            self.bar_len
        )
    }
}

impl core::error::Error for DoorbellError {}

/// Doorbell offsets of one controller: `0x1000 + (2 * qid + is_cq) * (4 << CAP.DSTRD)`.
///
/// # Invariants
///
/// `dstrd <= 15` (the 4-bit CAP field).
///
/// # Examples
///
/// ```
/// use nvme::{Cap, Doorbells};
/// let db = Doorbells::new(Cap::from_raw(0), 0x2000);       // DSTRD 0: 4-byte stride
/// assert_eq!((db.sq_tail(0)?, db.cq_head(0)?, db.sq_tail(1)?, db.cq_head(1)?), (0x1000, 0x1004, 0x1008, 0x100c));
/// assert!(db.cq_head(511).is_ok());                         // 0x1ffc, the last dword
/// assert!(db.sq_tail(512).is_err());                        // 0x2000: past the BAR
/// let db = Doorbells::new(Cap::from_raw(2 << 32), 0x4000);  // DSTRD 2: 16-byte stride
/// assert_eq!(db.cq_head(3)?, 0x1000 + 7 * 16);
/// assert_eq!(db.bar_len_for(4), 0x1000 + 8 * 16);         // admin + 3 I/O queue pairs
/// # Ok::<(), nvme::DoorbellError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Doorbells {
    dstrd: u8,
    bar_len: u64,
}

impl Doorbells {
    /// The doorbells of a controller with capabilities `cap` behind a BAR of `bar_len` bytes.
    pub fn new(cap: Cap, bar_len: u64) -> Self {
        // INVARIANT: `Cap::dstrd` is a 4-bit field.
        Self {
            dstrd: cap.dstrd(),
            bar_len,
        }
    }

    /// Byte distance between two doorbells.
    pub const fn stride(&self) -> u32 {
        4 << self.dstrd
    }

    /// The BAR length needed for the doorbells of queues `0..nr_queues`
    /// (`db_bar_size`): remap at least this much before using them.
    pub const fn bar_len_for(&self, nr_queues: u16) -> u64 {
        REG_DBS as u64 + 2 * nr_queues as u64 * self.stride() as u64
    }

    fn offset(&self, qid: u16, cq: bool) -> Result<u32, DoorbellError> {
        let index = 2 * u64::from(qid) + u64::from(cq);
        // index < 2^17 and stride <= 2^17: no overflow in u64.
        let off = u64::from(REG_DBS) + index * u64::from(self.stride());
        if off + 4 > self.bar_len {
            return Err(DoorbellError {
                qid,
                dstrd: self.dstrd,
                bar_len: self.bar_len,
            });
        }
        u32::try_from(off).map_err(|_| DoorbellError {
            qid,
            dstrd: self.dstrd,
            bar_len: self.bar_len,
        })
    }

    /// Offset of submission queue `qid`'s tail doorbell.
    ///
    /// # Errors
    ///
    /// [`DoorbellError`] if the doorbell does not lie inside the BAR.
    pub fn sq_tail(&self, qid: u16) -> Result<u32, DoorbellError> {
        self.offset(qid, false)
    }

    /// Offset of completion queue `qid`'s head doorbell.
    ///
    /// # Errors
    ///
    /// [`DoorbellError`] if the doorbell does not lie inside the BAR.
    pub fn cq_head(&self, qid: u16) -> Result<u32, DoorbellError> {
        self.offset(qid, true)
    }
}
