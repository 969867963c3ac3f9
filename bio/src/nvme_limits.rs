//! The queue limits of the Linux NVMe PCI driver (`nvme_set_ctrl_limits`, `nvme_pci_alloc_dev`).
//!
//! C header: [`drivers/nvme/host/nvme.h`](srctree/drivers/nvme/host/nvme.h)

use bvec::PAGE_SIZE;

use crate::{LimitsConfig, LimitsError, QueueLimits, SECTOR_SHIFT};

/// The NVMe driver's transfer cap, 8 MiB in sectors (`NVME_MAX_KB_SZ << 1`).
pub const NVME_MAX_HW_SECTORS: u32 = 8192 << 1;
/// The NVMe driver's segment cap (`NVME_MAX_SEGS`).
pub const NVME_MAX_SEGS: u16 = 128;

impl QueueLimits {
    /// The limits the Linux NVMe PCI driver sets (`nvme_set_ctrl_limits`): 4 KiB virtual boundary,
    /// unlimited segment size, 4-byte DMA alignment, up to 128 segments, and a transfer limit
    /// from MDTS (see [`nvme_max_hw_sectors`]).
    ///
    /// `mdts` and `mpsmin` are the raw Identify Controller and CAP fields (0 means no MDTS limit).
    /// `max_segments` is `min(max_hw_sectors / 8 + 1, 128)`, enough for any transfer of that size.
    /// Discard (Dataset Management) is unlimited and write-zeroes is capped at `max_hw_sectors`;
    /// adjust the returned value's config if the controller says otherwise.
    ///
    /// # Errors
    ///
    /// [`LimitsError::LogicalBlockSize`] for a block size outside `512..=PAGE_SIZE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::QueueLimits;
    /// let l = QueueLimits::nvme(512, 0, 0)?;                 // no MDTS: 8 MiB
    /// assert_eq!((l.max_hw_sectors(), l.max_sectors(), l.max_segments()), (16384, 2560, 128));
    /// assert_eq!((l.virt_boundary_mask(), l.max_segment_size(), l.dma_alignment()), (4095, u32::MAX, 3));
    /// let l = QueueLimits::nvme(4096, 5, 0)?;                // MDTS 5: 128 KiB
    /// assert_eq!((l.max_hw_sectors(), l.max_sectors(), l.max_segments()), (256, 256, 33));
    /// let l = QueueLimits::nvme(512, 1, 0)?;                 // 8 KiB: max_hw_sectors/8 + 1 = 3
    /// assert_eq!(l.max_segments(), 3);
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn nvme(logical_block_size: u32, mdts: u8, mpsmin: u8) -> Result<Self, LimitsError> {
        Self::nvme_pci(logical_block_size, mdts, mpsmin, u64::MAX)
    }

    /// [`QueueLimits::nvme`] for a device whose DMA layer's optimal mapping size is
    /// `dma_opt_mapping_size` bytes (`dma_opt_mapping_size()`; `u64::MAX` when nothing limits
    /// it): the transfer limit is [`nvme_pci_max_hw_sectors`].
    ///
    /// # Errors
    ///
    /// As [`QueueLimits::nvme`].
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::QueueLimits;
    /// let l = QueueLimits::nvme_pci(512, 0, 0, 256 * 1024)?;  // bounce buffers: 256 KiB
    /// assert_eq!((l.max_hw_sectors(), l.max_segments()), (512, 65));
    /// # Ok::<(), bio::LimitsError>(())
    /// ```
    pub fn nvme_pci(
        logical_block_size: u32,
        mdts: u8,
        mpsmin: u8,
        dma_opt_mapping_size: u64,
    ) -> Result<Self, LimitsError> {
        let max_hw = nvme_pci_max_hw_sectors(mdts, mpsmin, dma_opt_mapping_size);
        let segs = max_hw / 8 + 1;
        Self::new(&LimitsConfig {
            logical_block_size,
            max_hw_sectors: max_hw,
            max_segments: if segs < u32::from(NVME_MAX_SEGS) {
                segs as u16
            } else {
                NVME_MAX_SEGS
            },
            max_segment_size: u32::MAX,
            virt_boundary_mask: PAGE_SIZE as u32 - 1,
            dma_alignment: 3,
            max_discard_sectors: u32::MAX,
            max_write_zeroes_sectors: max_hw,
            ..LimitsConfig::default()
        })
    }
}

/// The NVMe transfer limit in sectors (`nvme_init_ctrl_finish` + `nvme_pci_alloc_dev`):
/// `min_not_zero(8 MiB, 2^(mdts + mpsmin + 12) bytes)`, saturating for large exponents.
///
/// # Examples
///
/// ```
/// use bio::nvme_max_hw_sectors;
/// assert_eq!(nvme_max_hw_sectors(0, 0), 16384);
/// assert_eq!(nvme_max_hw_sectors(5, 0), 256);
/// assert_eq!(nvme_max_hw_sectors(0xff, 0xf), 16384);
/// ```
pub const fn nvme_max_hw_sectors(mdts: u8, mpsmin: u8) -> u32 {
    nvme_pci_max_hw_sectors(mdts, mpsmin, u64::MAX)
}

/// The NVMe PCI transfer limit in sectors: `nvme_pci_alloc_dev()` sets
/// `min(8 MiB, dma_opt_mapping_size)`, then `nvme_init_ctrl_finish()` takes the smaller non-zero
/// one of that and `2^(mdts + mpsmin + 12)` bytes (no MDTS limit for `mdts == 0`).
///
/// The kernel converts `dma_opt_mapping_size >> 9` to 32 bits with `min_t(u32, ..)`, which
/// would truncate sizes of 2 TiB and more (no DMA layer returns such a value but `SIZE_MAX`,
/// which truncates to `U32_MAX`); here they saturate.
///
/// # Examples
///
/// ```
/// use bio::nvme_pci_max_hw_sectors;
/// assert_eq!(nvme_pci_max_hw_sectors(0, 0, u64::MAX), 16384);      // 8 MiB
/// assert_eq!(nvme_pci_max_hw_sectors(7, 0, u64::MAX), 1024);       // MDTS 7: 512 KiB
/// assert_eq!(nvme_pci_max_hw_sectors(0, 0, 256 * 1024), 512);      // swiotlb: 256 KiB
/// assert_eq!(nvme_pci_max_hw_sectors(5, 0, 100), 256);             // 0 from the DMA layer
/// ```
pub const fn nvme_pci_max_hw_sectors(mdts: u8, mpsmin: u8, dma_opt_mapping_size: u64) -> u32 {
    let dma = dma_opt_mapping_size >> SECTOR_SHIFT;
    let ctrl = if dma < NVME_MAX_HW_SECTORS as u64 {
        dma as u32
    } else {
        NVME_MAX_HW_SECTORS
    };
    let from_mdts = if mdts == 0 {
        u32::MAX
    } else {
        let shift = mdts as u32 + mpsmin as u32 + 12 - SECTOR_SHIFT;
        if shift >= 32 {
            u32::MAX
        } else {
            1u32 << shift
        }
    };
    // min_not_zero(ctrl, from_mdts); `from_mdts` is never 0.
    if ctrl != 0 && ctrl < from_mdts {
        ctrl
    } else {
        from_mdts
    }
}
