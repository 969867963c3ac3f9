//! The queue limits of the Linux NVMe PCI driver (`nvme_set_ctrl_limits`, `nvme_pci_alloc_dev`)
//! for the namespaces of one controller.
//!
//! C header: [`drivers/nvme/host/nvme.h`](srctree/drivers/nvme/host/nvme.h)
//!
//! The computation itself is `bio::QueueLimits::nvme`, which stays in the `bio` crate because
//! the bio examples and tests use NVMe limits as their reference configuration; this module is
//! the driver's entry point to it, with the Identify values the driver has.

use bio::{LimitsError, QueueLimits};

pub use bio::{nvme_max_hw_sectors, nvme_pci_max_hw_sectors, NVME_MAX_HW_SECTORS, NVME_MAX_SEGS};

use crate::{Cap, IdentifyController, IdentifyNamespace};

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
/// assert!(queue_limits(100, 0, 0).is_err());
/// assert_eq!(nvme::nvme_max_hw_sectors(1, 1), 32);
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn queue_limits(
    logical_block_size: u32,
    mdts: u8,
    mpsmin: u8,
) -> Result<QueueLimits, LimitsError> {
    QueueLimits::nvme(logical_block_size, mdts, mpsmin)
}

/// [`queue_limits`] for a device whose DMA layer maps at most `dma_opt_mapping_size` bytes
/// cheaply (`dma_opt_mapping_size()`): what rnvme.ko sets, as `nvme_pci_alloc_dev()` and
/// `nvme_set_ctrl_limits()` do. Up to 8 MiB, described by chained PRP lists of at most
/// [`crate::PRP_MAX_LIST_PAGES`] pages.
///
/// # Errors
///
/// As [`queue_limits`].
///
/// # Examples
///
/// ```
/// use nvme::pci_queue_limits;
/// let l = pci_queue_limits(512, 0, 0, u64::MAX)?;          // QEMU with mdts=0, no IOMMU
/// assert_eq!((l.max_hw_sectors(), l.max_segments()), (16384, 128));
/// let l = pci_queue_limits(512, 7, 0, u64::MAX)?;          // QEMU's default MDTS: 512 KiB
/// assert_eq!((l.max_hw_sectors(), l.max_segments()), (1024, 128));
/// # Ok::<(), bio::LimitsError>(())
/// ```
pub fn pci_queue_limits(
    logical_block_size: u32,
    mdts: u8,
    mpsmin: u8,
    dma_opt_mapping_size: u64,
) -> Result<QueueLimits, LimitsError> {
    QueueLimits::nvme_pci(logical_block_size, mdts, mpsmin, dma_opt_mapping_size)
}

/// [`queue_limits`] for a namespace, from the parsed Identify data and CAP.
///
/// # Errors
///
/// As [`queue_limits`] (a parsed namespace always has a block size of 512..=4096 bytes, so
/// only a kernel with pages smaller than the block size fails).
pub fn namespace_limits(
    ctrl: &IdentifyController,
    ns: &IdentifyNamespace,
    cap: Cap,
) -> Result<QueueLimits, LimitsError> {
    queue_limits(ns.block_size(), ctrl.mdts(), cap.mpsmin())
}
