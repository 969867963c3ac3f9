//! The Identify Controller data structure (`struct nvme_id_ctrl`): the fields the driver uses,
//! parsed from the 4096-byte buffer and checked (`nvme_init_identify` in
//! `drivers/nvme/host/core.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

use crate::{nvme_max_hw_sectors, Cap};

/// Size of every Identify data structure.
pub const IDENTIFY_SIZE: usize = 4096;

/// ONCS bit 2: Dataset Management supported (`NVME_CTRL_ONCS_DSM`).
const ONCS_DSM: u16 = 1 << 2;
/// ONCS bit 3: Write Zeroes supported (`NVME_CTRL_ONCS_WRITE_ZEROES`).
const ONCS_WRITE_ZEROES: u16 = 1 << 3;

/// Why an Identify data structure was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentifyError {
    /// The buffer is not 4096 bytes.
    Length {
        /// Its length.
        len: usize,
    },
    /// SQES or CQES do not allow the 64/16-byte entries the driver uses.
    EntrySizes {
        /// Raw SQES.
        sqes: u8,
        /// Raw CQES.
        cqes: u8,
    },
    /// The namespace has size 0 (inactive) or its capacity overflows.
    Capacity {
        /// NSZE.
        nsze: u64,
    },
    /// The formatted LBA format index is beyond NLBAF.
    LbaFormatIndex {
        /// Index from FLBAS.
        index: u8,
        /// NLBAF (0-based count).
        nlbaf: u8,
    },
    /// The LBA data size is not 512..=4096 bytes (`LBADS` 9..=12).
    BlockSize {
        /// LBADS.
        lbads: u8,
    },
    /// The LBA format carries metadata, which the driver does not support.
    Metadata {
        /// Metadata bytes per block.
        ms: u16,
    },
    /// The active namespace list is not strictly increasing.
    NamespaceOrder {
        /// Position in the list.
        index: usize,
        /// The offending NSID.
        nsid: u32,
    },
}

impl fmt::Display for IdentifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Length { len } => write!(f, "identify data of {len} bytes, not 4096"),
            Self::EntrySizes { sqes, cqes } => {
                write!(
                    f,
                    "queue entry sizes unsupported (SQES {sqes:#x}, CQES {cqes:#x})"
                )
            }
            Self::Capacity { nsze } => write!(f, "namespace size {nsze} unusable"),
            Self::LbaFormatIndex { index, nlbaf } => {
                write!(f, "LBA format {index} beyond NLBAF {nlbaf}")
            }
            Self::BlockSize { lbads } => write!(f, "LBA data size 2^{lbads} unsupported"),
            Self::Metadata { ms } => write!(f, "LBA format with {ms} bytes metadata unsupported"),
            Self::NamespaceOrder { index, nsid } => {
                write!(
                    f,
                    "active namespace list entry {index} ({nsid}) out of order"
                )
            }
        }
    }
}

impl core::error::Error for IdentifyError {}

/// Little-endian readers over a buffer known to be 4096 bytes (out-of-range reads give 0).
pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    let mut w = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        w.copy_from_slice(s);
    }
    u16::from_le_bytes(w)
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

pub(crate) fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

fn copy<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [b' '; N];
    if let Some(s) = b.get(at..at + N) {
        out.copy_from_slice(s);
    }
    out
}

/// An ASCII field without its space (or NUL) padding.
pub(crate) fn trimmed(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .rposition(|&c| c != b' ' && c != 0)
        .map_or(0, |i| i + 1);
    s.get(..end).unwrap_or(&[])
}

/// The Identify Controller fields the driver uses.
///
/// # Examples
///
/// ```
/// use nvme::{Cap, IdentifyController};
/// let mut b = [0u8; 4096];
/// b[4..8].copy_from_slice(b"SN42");
/// b[8..24].fill(b' ');
/// b[77] = 5;                                   // MDTS: 2^5 pages = 128 KiB
/// b[78..80].copy_from_slice(&3u16.to_le_bytes());
/// b[512] = 0x66; b[513] = 0x44;                // SQES, CQES
/// b[516..520].copy_from_slice(&2u32.to_le_bytes());
/// b[520..522].copy_from_slice(&0x0cu16.to_le_bytes()); // DSM + Write Zeroes
/// b[525] = 1;                                  // volatile write cache
/// b[536] = 1;                                  // SGLs
/// b[257] = 1;                                  // OACS bit 8: Doorbell Buffer Config
/// let id = IdentifyController::parse(&b)?;
/// assert!(id.supports_dbbuf());
/// assert_eq!((id.serial(), id.cntlid(), id.nn(), id.mdts()), (&b"SN42"[..], 3, 2, 5));
/// assert!(id.supports_dsm() && id.supports_write_zeroes() && id.volatile_write_cache() && id.supports_sgls());
/// assert!(!id.supports_metadata_sgls());
/// assert_eq!(id.max_hw_sectors(Cap::from_raw(0)), 256);
/// b[512] = 0x77;                               // requires 128-byte SQ entries
/// assert!(IdentifyController::parse(&b).is_err());
/// assert!(IdentifyController::parse(&b[..100]).is_err());
/// # Ok::<(), nvme::IdentifyError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentifyController {
    vid: u16,
    sn: [u8; 20],
    mn: [u8; 40],
    fr: [u8; 8],
    mdts: u8,
    cntlid: u16,
    ver: u32,
    rtd3e: u32,
    nn: u32,
    oacs: u16,
    oncs: u16,
    vwc: u8,
    awupf: u16,
    sgls: u32,
    maxcmd: u16,
}

impl IdentifyController {
    /// Parses and checks the 4096-byte Identify Controller data.
    ///
    /// # Errors
    ///
    /// [`IdentifyError::Length`], or [`IdentifyError::EntrySizes`] when the controller's
    /// required (minimum) SQ or CQ entry size exceeds 64 or 16 bytes, or its maximum is below
    /// them (a zero field, as some old controllers report, is accepted).
    pub fn parse(b: &[u8]) -> Result<Self, IdentifyError> {
        if b.len() != IDENTIFY_SIZE {
            return Err(IdentifyError::Length { len: b.len() });
        }
        let sqes = b.get(512).copied().unwrap_or(0);
        let cqes = b.get(513).copied().unwrap_or(0);
        let fits = |v: u8, want: u8| v == 0 || (v & 0xf <= want && v >> 4 >= want);
        if !fits(sqes, 6) || !fits(cqes, 4) {
            return Err(IdentifyError::EntrySizes { sqes, cqes });
        }
        Ok(Self {
            vid: le16(b, 0),
            sn: copy(b, 4),
            mn: copy(b, 24),
            fr: copy(b, 64),
            mdts: b.get(77).copied().unwrap_or(0),
            cntlid: le16(b, 78),
            ver: le32(b, 80),
            rtd3e: le32(b, 88),
            maxcmd: le16(b, 514),
            nn: le32(b, 516),
            oacs: le16(b, 256),
            oncs: le16(b, 520),
            vwc: b.get(525).copied().unwrap_or(0),
            awupf: le16(b, 528),
            sgls: le32(b, 536),
        })
    }

    /// PCI vendor id.
    pub const fn vid(&self) -> u16 {
        self.vid
    }

    /// Serial number, padding removed (raw bytes; not necessarily ASCII).
    pub fn serial(&self) -> &[u8] {
        trimmed(&self.sn)
    }

    /// Model number, padding removed.
    pub fn model(&self) -> &[u8] {
        trimmed(&self.mn)
    }

    /// Firmware revision, padding removed.
    pub fn firmware(&self) -> &[u8] {
        trimmed(&self.fr)
    }

    /// Maximum Data Transfer Size: `2^MDTS` controller minimum pages, 0 for no limit.
    pub const fn mdts(&self) -> u8 {
        self.mdts
    }

    /// Controller id.
    pub const fn cntlid(&self) -> u16 {
        self.cntlid
    }

    /// Version (VER) as reported.
    pub const fn version(&self) -> u32 {
        self.ver
    }

    /// RTD3 Entry Latency in microseconds (0: not reported); see
    /// [`crate::shutdown_timeout_ms`].
    pub const fn rtd3e(&self) -> u32 {
        self.rtd3e
    }

    /// Number of Namespaces: the largest valid NSID.
    pub const fn nn(&self) -> u32 {
        self.nn
    }

    /// Maximum outstanding commands (0: not reported).
    pub const fn maxcmd(&self) -> u16 {
        self.maxcmd
    }

    /// Optional Admin Command Support bit 8: Doorbell Buffer Config, shadow doorbells
    /// (`NVME_CTRL_OACS_DBBUF_SUPP`).
    pub const fn supports_dbbuf(&self) -> bool {
        self.oacs & (1 << 8) != 0
    }

    /// Dataset Management (discard) is supported.
    pub const fn supports_dsm(&self) -> bool {
        self.oncs & ONCS_DSM != 0
    }

    /// Write Zeroes is supported.
    pub const fn supports_write_zeroes(&self) -> bool {
        self.oncs & ONCS_WRITE_ZEROES != 0
    }

    /// A volatile write cache is present (flushes are needed).
    pub const fn volatile_write_cache(&self) -> bool {
        self.vwc & 1 != 0
    }

    /// Atomic Write Unit Power Fail: 0-based, in logical blocks of any namespace
    /// ([`crate::ns_geometry`]).
    pub const fn awupf(&self) -> u16 {
        self.awupf
    }

    /// SGLs are supported for NVM commands (SGLS bits 1:0 non-zero).
    pub const fn supports_sgls(&self) -> bool {
        self.sgls & 3 != 0
    }

    /// Metadata may be described by an SGL (SGLS bit 19, `NVME_CTRL_SGLS_MSDS`): then the C
    /// driver describes the data of every user passthrough command by SGLs too
    /// (`nvme_pci_metadata_use_sgls()` in `drivers/nvme/host/pci.c`).
    pub const fn supports_metadata_sgls(&self) -> bool {
        self.sgls & (1 << 19) != 0
    }

    /// The transfer limit in 512-byte sectors from MDTS and CAP.MPSMIN, capped at the driver's
    /// 8 MiB ([`nvme_max_hw_sectors`]).
    pub const fn max_hw_sectors(&self, cap: Cap) -> u32 {
        nvme_max_hw_sectors(self.mdts, cap.mpsmin())
    }
}
