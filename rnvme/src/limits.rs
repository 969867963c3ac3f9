//! The queue limits of the Linux NVMe PCI driver (`nvme_set_ctrl_limits`, `nvme_pci_alloc_dev`).
//!
//! C header: [`drivers/nvme/host/nvme.h`](srctree/drivers/nvme/host/nvme.h)

use bio::{LimitsConfig, LimitsError, QueueLimits, SECTOR_SHIFT};
use bvec::PAGE_SIZE;

/// The NVMe driver's transfer cap, 8 MiB in sectors (`NVME_MAX_KB_SZ << 1`).
pub const NVME_MAX_HW_SECTORS: u32 = 8192 << 1;
/// The NVMe driver's segment cap (`NVME_MAX_SEGS`).
pub const NVME_MAX_SEGS: u16 = 128;

/// The limits the Linux NVMe PCI driver sets (`nvme_set_ctrl_limits`): 4 KiB virtual boundary,
/// unlimited segment size, 4-byte DMA alignment, up to 128 segments, and a transfer limit from
/// MDTS (see [`nvme_max_hw_sectors`]).
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
/// use nvme::queue_limits;
/// let l = queue_limits(512, 0, 0)?;                 // no MDTS: 8 MiB
/// assert_eq!((l.max_hw_sectors(), l.max_sectors(), l.max_segments()), (16384, 2560, 128));
/// assert_eq!((l.virt_boundary_mask(), l.max_segment_size(), l.dma_alignment()), (4095, u32::MAX, 3));
/// let l = queue_limits(4096, 5, 0)?;                // MDTS 5: 128 KiB
/// assert_eq!((l.max_hw_sectors(), l.max_sectors(), l.max_segments()), (256, 256, 33));
/// let l = queue_limits(512, 1, 0)?;                 // 8 KiB: max_hw_sectors/8 + 1 = 3
/// assert_eq!(l.max_segments(), 3);
/// assert!(queue_limits(100, 0, 0).is_err());
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn queue_limits(
    logical_block_size: u32,
    mdts: u8,
    mpsmin: u8,
) -> Result<QueueLimits, LimitsError> {
    let max_hw = nvme_max_hw_sectors(mdts, mpsmin);
    let segs = max_hw / 8 + 1;
    QueueLimits::new(&LimitsConfig {
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

/// The NVMe transfer limit in sectors (`nvme_init_ctrl_finish` + `nvme_pci_alloc_dev`):
/// `min_not_zero(8 MiB, 2^(mdts + mpsmin + 12) bytes)`, saturating for large exponents.
///
/// # Examples
///
/// ```
/// use nvme::nvme_max_hw_sectors;
/// assert_eq!(nvme_max_hw_sectors(0, 0), 16384);
/// assert_eq!(nvme_max_hw_sectors(5, 0), 256);
/// assert_eq!(nvme_max_hw_sectors(1, 1), 32);
/// assert_eq!(nvme_max_hw_sectors(0xff, 0xf), 16384);
/// ```
pub const fn nvme_max_hw_sectors(mdts: u8, mpsmin: u8) -> u32 {
    if mdts == 0 {
        return NVME_MAX_HW_SECTORS;
    }
    let shift = mdts as u32 + mpsmin as u32 + 12 - SECTOR_SHIFT;
    if shift >= 31 {
        return NVME_MAX_HW_SECTORS;
    }
    let v = 1u32 << shift;
    if v < NVME_MAX_HW_SECTORS {
        v
    } else {
        NVME_MAX_HW_SECTORS
    }
}
