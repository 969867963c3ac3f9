//! Builders for the NVM command set I/O commands: Read, Write, Flush, Dataset Management and
//! Write Zeroes (`nvme_setup_rw`, `nvme_setup_flush`, `nvme_setup_discard`,
//! `nvme_setup_write_zeroes` in `drivers/nvme/host/core.c`), and the DSM range.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use crate::{CmdError, DataPointer, SubmissionEntry};

/// I/O opcodes (`enum nvme_opcode`).
pub mod io_opcode {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
    /// Write Zeroes.
    pub const WRITE_ZEROES: u8 = 0x08;
    /// Dataset Management.
    pub const DSM: u8 = 0x09;
}

/// Force Unit Access, command dword 12 bit 30 (`NVME_RW_FUA`).
pub const RW_FUA: u32 = 1 << 30;
/// Write Zeroes deallocate, command dword 12 bit 25 (`NVME_WZ_DEAC`).
pub const WZ_DEAC: u32 = 1 << 25;
/// Dataset Management attribute "deallocate", command dword 11 bit 2 (`NVME_DSMGMT_AD`).
pub const DSM_AD: u32 = 1 << 2;
/// Most ranges one Dataset Management command carries (`NVME_DSM_MAX_RANGES`).
pub const DSM_MAX_RANGES: usize = 256;
/// Most logical blocks one command moves (the 0-based 16-bit NLB field).
pub const MAX_BLOCKS_PER_COMMAND: u32 = 1 << 16;

/// One Dataset Management range (`struct nvme_dsm_range`): 16 bytes, little-endian.
///
/// # Examples
///
/// ```
/// use nvme::DsmRange;
/// let r = DsmRange::new(0x1122_3344_5566, 8);
/// let b = r.to_bytes();
/// assert_eq!(b[4..8], 8u32.to_le_bytes());
/// assert_eq!(b[8..], 0x1122_3344_5566u64.to_le_bytes());
/// assert_eq!((r.slba(), r.nlb()), (0x1122_3344_5566, 8));
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DsmRange {
    cattr: u32,
    nlb: u32,
    slba: u64,
}

const _: () = assert!(core::mem::size_of::<DsmRange>() == 16);

impl DsmRange {
    /// A range of `nlb` logical blocks starting at `slba` (context attributes 0).
    pub const fn new(slba: u64, nlb: u32) -> Self {
        Self {
            cattr: 0,
            nlb: nlb.to_le(),
            slba: slba.to_le(),
        }
    }

    /// Starting LBA.
    pub const fn slba(&self) -> u64 {
        u64::from_le(self.slba)
    }

    /// Number of logical blocks (1-based in a range, unlike the NLB of a command).
    pub const fn nlb(&self) -> u32 {
        u32::from_le(self.nlb)
    }

    /// The 16 wire bytes.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        let (a, rest) = out.split_at_mut(4);
        let (b, c) = rest.split_at_mut(4);
        a.copy_from_slice(&u32::from_le(self.cattr).to_le_bytes());
        b.copy_from_slice(&self.nlb().to_le_bytes());
        c.copy_from_slice(&self.slba().to_le_bytes());
        out
    }

    /// A range from its 16 wire bytes.
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        let [a0, a1, a2, a3, n0, n1, n2, n3, s0, s1, s2, s3, s4, s5, s6, s7] = *b;
        Self {
            cattr: u32::from_le_bytes([a0, a1, a2, a3]).to_le(),
            nlb: u32::from_le_bytes([n0, n1, n2, n3]).to_le(),
            slba: u64::from_le_bytes([s0, s1, s2, s3, s4, s5, s6, s7]).to_le(),
        }
    }
}

/// Checks a block count and returns the 0-based NLB field.
#[inline]
fn nlb_field(blocks: u32) -> Result<u32, CmdError> {
    if !(1..=MAX_BLOCKS_PER_COMMAND).contains(&blocks) {
        return Err(CmdError::BlockCount { blocks });
    }
    Ok(blocks - 1)
}

impl SubmissionEntry {
    #[inline]
    fn lba_command(op: u8, nsid: u32, slba: u64, blocks: u32) -> Result<Self, CmdError> {
        let nlb = nlb_field(blocks)?;
        let mut c = Self::new(op, nsid);
        c.set_cdw(10, slba as u32);
        c.set_cdw(11, (slba >> 32) as u32);
        c.set_cdw(12, nlb);
        Ok(c)
    }

    /// Read `blocks` logical blocks from `slba` of namespace `nsid` into `dptr`.
    ///
    /// # Errors
    ///
    /// [`CmdError::BlockCount`] unless `1 <= blocks <= 65536`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DataPointer, SubmissionEntry};
    /// let c = SubmissionEntry::read(1, 0x1_0000_0002, 8, DataPointer::prp(0x1000, 0))?;
    /// assert_eq!((c.opcode(), c.nsid()), (0x02, 1));
    /// assert_eq!((c.cdw(10), c.cdw(11), c.cdw(12)), (Some(2), Some(1), Some(7)));
    /// assert!(SubmissionEntry::read(1, 0, 0, DataPointer::NONE).is_err());
    /// assert!(SubmissionEntry::read(1, 0, 65537, DataPointer::NONE).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    #[inline]
    pub fn read(nsid: u32, slba: u64, blocks: u32, dptr: DataPointer) -> Result<Self, CmdError> {
        let mut c = Self::lba_command(io_opcode::READ, nsid, slba, blocks)?;
        c.set_data_pointer(dptr);
        Ok(c)
    }

    /// Write `blocks` logical blocks from `dptr` to `slba` of namespace `nsid`, with Force Unit
    /// Access when `fua` (`REQ_FUA`).
    ///
    /// # Errors
    ///
    /// [`CmdError::BlockCount`] unless `1 <= blocks <= 65536`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DataPointer, SubmissionEntry};
    /// let c = SubmissionEntry::write(1, 16, 65536, true, DataPointer::prp(0x1000, 0x2000))?;
    /// assert_eq!((c.opcode(), c.cdw(12)), (0x01, Some(1 << 30 | 0xffff)));
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    #[inline]
    pub fn write(
        nsid: u32,
        slba: u64,
        blocks: u32,
        fua: bool,
        dptr: DataPointer,
    ) -> Result<Self, CmdError> {
        let mut c = Self::lba_command(io_opcode::WRITE, nsid, slba, blocks)?;
        if fua {
            c.set_cdw(12, (blocks - 1) | RW_FUA);
        }
        c.set_data_pointer(dptr);
        Ok(c)
    }

    /// Flush the volatile write cache of namespace `nsid`.
    pub fn flush(nsid: u32) -> Self {
        Self::new(io_opcode::FLUSH, nsid)
    }

    /// Write Zeroes to `blocks` logical blocks from `slba`; `deallocate` also sets DEAC (the
    /// blocks may be deallocated, reads still return zeroes).
    ///
    /// # Errors
    ///
    /// [`CmdError::BlockCount`] unless `1 <= blocks <= 65536`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let c = SubmissionEntry::write_zeroes(2, 7, 1, false)?;
    /// assert_eq!((c.opcode(), c.nsid(), c.cdw(10), c.cdw(12)), (0x08, 2, Some(7), Some(0)));
    /// assert_eq!(SubmissionEntry::write_zeroes(2, 7, 1, true)?.cdw(12), Some(1 << 25));
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn write_zeroes(
        nsid: u32,
        slba: u64,
        blocks: u32,
        deallocate: bool,
    ) -> Result<Self, CmdError> {
        let mut c = Self::lba_command(io_opcode::WRITE_ZEROES, nsid, slba, blocks)?;
        if deallocate {
            c.set_cdw(12, (blocks - 1) | WZ_DEAC);
        }
        Ok(c)
    }

    /// Dataset Management with the deallocate attribute (discard) over `ranges` [`DsmRange`]s
    /// stored at `dptr` (`nvme_setup_discard`).
    ///
    /// # Errors
    ///
    /// [`CmdError::RangeCount`] unless `1 <= ranges <= 256`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DataPointer, SubmissionEntry};
    /// let c = SubmissionEntry::dsm_deallocate(1, 3, DataPointer::prp(0x8000, 0))?;
    /// assert_eq!((c.opcode(), c.cdw(10), c.cdw(11)), (0x09, Some(2), Some(4)));
    /// assert!(SubmissionEntry::dsm_deallocate(1, 0, DataPointer::NONE).is_err());
    /// assert!(SubmissionEntry::dsm_deallocate(1, 257, DataPointer::NONE).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn dsm_deallocate(nsid: u32, ranges: usize, dptr: DataPointer) -> Result<Self, CmdError> {
        if !(1..=DSM_MAX_RANGES).contains(&ranges) {
            return Err(CmdError::RangeCount { ranges });
        }
        let mut c = Self::new(io_opcode::DSM, nsid);
        // ranges <= 256 fits in u32.
        c.set_cdw(10, ranges as u32 - 1);
        c.set_cdw(11, DSM_AD);
        c.set_data_pointer(dptr);
        Ok(c)
    }
}
