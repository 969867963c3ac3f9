//! The Identify Namespace data structure (`struct nvme_id_ns`) and the active namespace list:
//! size, formatted LBA format, derived block size and capacity (`nvme_update_ns_info_block`,
//! `nvme_lba_to_sect`, `nvme_scan_ns_list` in `drivers/nvme/host/core.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use crate::identify_ctrl::{le32, le64};
use crate::{IdentifyError, IDENTIFY_SIZE};

/// Smallest supported LBA data size exponent (512 bytes, `SECTOR_SHIFT`).
pub const MIN_LBADS: u8 = 9;
/// Largest supported LBA data size exponent (4096 bytes: the kernel page size; Linux 6.12
/// refuses a logical block larger than `PAGE_SIZE`).
pub const MAX_LBADS: u8 = 12;
/// Most namespace ids one active namespace list holds.
pub const NS_LIST_ENTRIES: usize = 1024;

/// The usable geometry of a namespace.
///
/// # Invariants
///
/// `MIN_LBADS <= lbads <= MAX_LBADS`, `nsze > 0`, and `nsze << (lbads - 9)` fits in `u64`.
///
/// # Examples
///
/// ```
/// use nvme::IdentifyNamespace;
/// let mut b = [0u8; 4096];
/// b[0..8].copy_from_slice(&1000u64.to_le_bytes());  // NSZE
/// b[8..16].copy_from_slice(&1000u64.to_le_bytes()); // NCAP
/// b[25] = 1;                                        // NLBAF: two formats
/// b[26] = 1;                                        // FLBAS: format 1
/// b[128 + 2] = 9;                                   // format 0: 512 B
/// b[132 + 2] = 12;                                  // format 1: 4 KiB
/// let ns = IdentifyNamespace::parse(&b)?;
/// assert_eq!((ns.block_size(), ns.nsze(), ns.capacity_sectors()), (4096, 1000, 8000));
/// b[132 + 2] = 13;                                  // 8 KiB blocks: refused
/// assert!(IdentifyNamespace::parse(&b).is_err());
/// b[132 + 2] = 12; b[132] = 8;                      // 8 bytes metadata: refused
/// assert!(IdentifyNamespace::parse(&b).is_err());
/// b[132] = 0; b[26] = 2;                            // format 2 > NLBAF
/// assert!(IdentifyNamespace::parse(&b).is_err());
/// # Ok::<(), nvme::IdentifyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdentifyNamespace {
    nsze: u64,
    ncap: u64,
    lbads: u8,
    format: u8,
}

impl IdentifyNamespace {
    /// Parses and checks the 4096-byte Identify Namespace data.
    ///
    /// # Errors
    ///
    /// [`IdentifyError::Length`]; [`IdentifyError::Capacity`] for NSZE 0 or a capacity that
    /// overflows; [`IdentifyError::LbaFormatIndex`] when FLBAS names a format beyond NLBAF;
    /// [`IdentifyError::BlockSize`] for LBADS outside 9..=12; [`IdentifyError::Metadata`] for a
    /// format with metadata.
    pub fn parse(b: &[u8]) -> Result<Self, IdentifyError> {
        if b.len() != IDENTIFY_SIZE {
            return Err(IdentifyError::Length { len: b.len() });
        }
        let nsze = le64(b, 0);
        let ncap = le64(b, 8);
        let nlbaf = b.get(25).copied().unwrap_or(0);
        let flbas = b.get(26).copied().unwrap_or(0);
        // Bits 3:0 the low index; bits 6:5 the high bits when more than 16 formats exist.
        let format = (flbas & 0xf) | (if nlbaf > 15 { (flbas >> 1) & 0x30 } else { 0 });
        if format > nlbaf || format >= 64 {
            return Err(IdentifyError::LbaFormatIndex {
                index: format,
                nlbaf,
            });
        }
        let lbaf = le32(b, 128 + 4 * usize::from(format));
        let ms = lbaf as u16;
        let lbads = (lbaf >> 16) as u8;
        if !(MIN_LBADS..=MAX_LBADS).contains(&lbads) {
            return Err(IdentifyError::BlockSize { lbads });
        }
        if ms != 0 {
            return Err(IdentifyError::Metadata { ms });
        }
        let shift = u32::from(lbads - MIN_LBADS);
        if nsze == 0 || nsze.leading_zeros() < shift {
            return Err(IdentifyError::Capacity { nsze });
        }
        // INVARIANT: all three conditions were checked above.
        Ok(Self {
            nsze,
            ncap,
            lbads,
            format,
        })
    }

    /// Namespace size in logical blocks.
    pub const fn nsze(&self) -> u64 {
        self.nsze
    }

    /// Namespace capacity in logical blocks (as reported).
    pub const fn ncap(&self) -> u64 {
        self.ncap
    }

    /// LBA data size exponent.
    pub const fn lbads(&self) -> u8 {
        self.lbads
    }

    /// Index of the formatted LBA format.
    pub const fn format(&self) -> u8 {
        self.format
    }

    /// Logical block size in bytes.
    pub const fn block_size(&self) -> u32 {
        1 << self.lbads
    }

    /// Capacity in 512-byte sectors (`set_capacity` argument).
    pub const fn capacity_sectors(&self) -> u64 {
        self.nsze << (self.lbads - MIN_LBADS)
    }

    /// The first 512-byte sector of logical block `lba`, `None` past the namespace.
    pub const fn lba_to_sector(&self, lba: u64) -> Option<u64> {
        if lba >= self.nsze {
            return None;
        }
        Some(lba << (self.lbads - MIN_LBADS))
    }

    /// The logical block that 512-byte sector `sector` lies in (`nvme_sect_to_lba`).
    pub const fn sector_to_lba(&self, sector: u64) -> u64 {
        sector >> (self.lbads - MIN_LBADS)
    }
}

/// The active namespace ids of an Identify CNS 2 list: strictly increasing, non-zero, ended by
/// the first zero entry or the end of the list. Ids above `nn` are skipped; at most `out.len()`
/// ids are stored, and the count stored is returned.
///
/// # Examples
///
/// ```
/// use nvme::active_namespaces;
/// let mut b = [0u8; 4096];
/// b[0..4].copy_from_slice(&1u32.to_le_bytes());
/// b[4..8].copy_from_slice(&3u32.to_le_bytes());
/// let mut out = [0u32; 8];
/// assert_eq!(active_namespaces(&b, 16, &mut out), Ok(2));
/// assert_eq!(out[..2], [1, 3]);
/// assert_eq!(active_namespaces(&b, 2, &mut out), Ok(1));     // NSID 3 > NN: dropped
/// b[8..12].copy_from_slice(&2u32.to_le_bytes());             // 1, 3, 2: not increasing
/// assert!(active_namespaces(&b, 16, &mut out).is_err());
/// ```
///
/// # Errors
///
/// [`IdentifyError::Length`], or [`IdentifyError::NamespaceOrder`] for a list that is not
/// strictly increasing.
pub fn active_namespaces(b: &[u8], nn: u32, out: &mut [u32]) -> Result<usize, IdentifyError> {
    if b.len() != IDENTIFY_SIZE {
        return Err(IdentifyError::Length { len: b.len() });
    }
    let mut count = 0;
    let mut prev = 0u32;
    for index in 0..NS_LIST_ENTRIES {
        let nsid = le32(b, 4 * index);
        if nsid == 0 {
            break;
        }
        if nsid <= prev {
            return Err(IdentifyError::NamespaceOrder { index, nsid });
        }
        prev = nsid;
        // NSIDs beyond NN are invalid; the Linux driver stops scanning there too.
        if nsid > nn {
            continue;
        }
        if let Some(slot) = out.get_mut(count) {
            *slot = nsid;
            count += 1;
        }
    }
    Ok(count)
}
