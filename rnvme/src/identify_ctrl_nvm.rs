//! The NVM Command Set's Identify Controller data structure (CNS 06h, CSI 00h;
//! `struct nvme_id_ctrl_nvm`) and the discard and write-zeroes limits the Linux NVMe driver
//! derives from it and from Identify Controller: `nvme_init_non_mdts_limits()` and
//! `nvme_config_discard()` in `drivers/nvme/host/core.c`.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The limits matter for correctness, not only speed: a controller may ignore a Dataset
//! Management range longer than its DMRSL (QEMU's emulated controller skips such a range and
//! completes the command successfully), so a driver that advertises unlimited discards leaves
//! data in place that the caller believes deallocated.

use crate::{
    identify_ctrl::le32, IdentifyController, IdentifyError, DSM_MAX_RANGES, IDENTIFY_SIZE,
};

/// The lowest controller version (VS register) whose CNS field is a full byte, so that CNS 06h
/// can be asked for: `nvme_id_cns_ok()` (NVMe 1.1 controllers took only two bits, and QEMU's
/// once claimed 1.1 with 1.0 behaviour).
pub const NVM_IDENTIFY_MIN_VERSION: u32 = 0x0001_0200;

/// The fields of the NVM Command Set Identify Controller data the driver uses.
///
/// # Examples
///
/// ```
/// use nvme::{IdentifyControllerNvm, IDENTIFY_SIZE};
/// let mut b = [0u8; IDENTIFY_SIZE];
/// b[1] = 3;                                             // WZSL
/// b[3] = 16;                                            // DMRL
/// b[4..8].copy_from_slice(&524_287u32.to_le_bytes());   // DMRSL
/// let n = IdentifyControllerNvm::parse(&b)?;
/// assert_eq!((n.wzsl(), n.dmrl(), n.dmrsl()), (3, 16, 524_287));
/// assert!(IdentifyControllerNvm::parse(&b[..8]).is_err());
/// # Ok::<(), nvme::IdentifyError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdentifyControllerNvm {
    wzsl: u8,
    dmrl: u8,
    dmrsl: u32,
}

impl IdentifyControllerNvm {
    /// Parses the 4096-byte data structure.
    ///
    /// # Errors
    ///
    /// [`IdentifyError::Length`] when `b` is not 4096 bytes.
    pub fn parse(b: &[u8]) -> Result<Self, IdentifyError> {
        if b.len() != IDENTIFY_SIZE {
            return Err(IdentifyError::Length { len: b.len() });
        }
        let byte = |i: usize| b.get(i).copied().unwrap_or(0);
        Ok(Self {
            wzsl: byte(1),
            dmrl: byte(3),
            dmrsl: le32(b, 4),
        })
    }

    /// Write Zeroes Size Limit: `2^WZSL` controller minimum pages per command, 0 for none.
    pub const fn wzsl(&self) -> u8 {
        self.wzsl
    }

    /// Dataset Management Ranges Limit: ranges per command, 0 for none reported.
    pub const fn dmrl(&self) -> u8 {
        self.dmrl
    }

    /// Dataset Management Range Size Limit: logical blocks per range, 0 for none reported.
    pub const fn dmrsl(&self) -> u32 {
        self.dmrsl
    }
}

/// A namespace's discard and write-zeroes limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroingLimits {
    /// `max_hw_discard_sectors`: 512-byte sectors per discard range (0: no discard).
    pub max_discard_sectors: u32,
    /// `max_discard_segments`: ranges per Dataset Management command.
    pub max_discard_ranges: u16,
    /// `max_write_zeroes_sectors` (0: no write zeroes).
    pub max_write_zeroes_sectors: u32,
}

/// The discard and write-zeroes limits of a namespace with `block_size`-byte blocks on a
/// controller described by `ctrl`, `nvm` (its NVM Identify Controller data, `None` when the
/// controller is older than [`NVM_IDENTIFY_MIN_VERSION`] or refused the command), `mpsmin`
/// (CAP.MPSMIN) and `max_hw_sectors` (its transfer limit), as `nvme_init_non_mdts_limits()` and
/// `nvme_config_discard()` compute them:
///
/// - discard: DMRSL blocks per range when DMRSL is set and fits 32 bits of sectors, otherwise
///   unlimited (`u32::MAX`); DMRL ranges per command when set, otherwise 256. Unlike the C
///   driver, a controller without Dataset Management (ONCS bit 2) gets no discard even when it
///   reports a DMRSL (the C driver would advertise discard and send commands it rejects);
/// - write zeroes (ONCS bit 3): `2^WZSL` controller pages when WZSL is set (`u32::MAX` if that
///   overflows), otherwise `max_hw_sectors`.
///
/// `block_size` must be a power of two of at least 512 (as a parsed namespace's is); a smaller
/// one is taken as 512.
///
/// # Examples
///
/// ```
/// use nvme::{zeroing_limits, IdentifyController, IdentifyControllerNvm, ZeroingLimits, IDENTIFY_SIZE};
/// let mut c = [0u8; IDENTIFY_SIZE];
/// c[520] = 0b1100;                                      // ONCS: DSM and Write Zeroes
/// let ctrl = IdentifyController::parse(&c)?;
/// let mut n = [0u8; IDENTIFY_SIZE];
/// n[4..8].copy_from_slice(&524_287u32.to_le_bytes());   // QEMU with a 4 KiB-block namespace
/// let nvm = IdentifyControllerNvm::parse(&n)?;
/// // A 512-byte-block namespace of that controller: ranges of at most 256 MiB - 512 B.
/// assert_eq!(zeroing_limits(&ctrl, Some(&nvm), 512, 0, 1024), ZeroingLimits {
///     max_discard_sectors: 524_287, max_discard_ranges: 256, max_write_zeroes_sectors: 1024 });
/// // The 4 KiB-block namespace: the same number of its blocks.
/// assert_eq!(zeroing_limits(&ctrl, Some(&nvm), 4096, 0, 1024).max_discard_sectors, 524_287 * 8);
/// // No NVM Identify data: unlimited discard.
/// assert_eq!(zeroing_limits(&ctrl, None, 512, 0, 1024).max_discard_sectors, u32::MAX);
/// # Ok::<(), nvme::IdentifyError>(())
/// ```
pub fn zeroing_limits(
    ctrl: &IdentifyController,
    nvm: Option<&IdentifyControllerNvm>,
    block_size: u32,
    mpsmin: u8,
    max_hw_sectors: u32,
) -> ZeroingLimits {
    let nvm = nvm.copied().unwrap_or_default();
    // Sectors per block, as a shift (`nvme_lba_to_sect()`).
    let shift = block_size.max(512).trailing_zeros() - 9;
    let max_discard_sectors = if !ctrl.supports_dsm() {
        0
    } else if nvm.dmrsl != 0 && nvm.dmrsl <= u32::MAX >> shift {
        nvm.dmrsl << shift
    } else {
        u32::MAX
    };
    let max_discard_ranges = if nvm.dmrl != 0 {
        u16::from(nvm.dmrl)
    } else {
        DSM_MAX_RANGES as u16
    };
    let max_write_zeroes_sectors = if !ctrl.supports_write_zeroes() {
        0
    } else if nvm.wzsl != 0 {
        // `nvme_mps_to_sectors()`: 2^(WZSL + 12 + MPSMIN - 9) sectors, saturated.
        let exp = u32::from(nvm.wzsl) + 3 + u32::from(mpsmin);
        1u32.checked_shl(exp).unwrap_or(u32::MAX)
    } else {
        max_hw_sectors
    };
    ZeroingLimits {
        max_discard_sectors,
        max_discard_ranges,
        max_write_zeroes_sectors,
    }
}
