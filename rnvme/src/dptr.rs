//! DMA-mapped segments, the input of the NVMe data-pointer builders, and their error type.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The driver maps each multipage segment of a request (`dma_map_bvec`, or one entry of a mapped
//! scatterlist) and hands the resulting `(dma_addr, len)` list to [`crate::build_prps`] or
//! [`crate::build_sgl`]; premapped buffers go through [`crate::build_prps_from_tag`] instead.

use core::fmt;

/// log2 of the NVMe controller page size the driver programs (`NVME_CTRL_PAGE_SHIFT`).
pub const NVME_CTRL_PAGE_SHIFT: u32 = 12;
/// The NVMe controller page size (`NVME_CTRL_PAGE_SIZE`), independent of the host page size.
pub const NVME_CTRL_PAGE_SIZE: u32 = 1 << NVME_CTRL_PAGE_SHIFT;
/// Mask of the offset inside a controller page.
pub(crate) const CTRL_PAGE_MASK: u64 = NVME_CTRL_PAGE_SIZE as u64 - 1;

/// One DMA-mapped, device-visible byte range (a mapped `scatterlist` entry).
///
/// # Examples
///
/// ```
/// use nvme::DmaSegment;
/// let s = DmaSegment::new(0x1_0000, 4096);
/// assert_eq!((s.addr, s.len, s.end()), (0x1_0000, 4096, Some(0x1_1000)));
/// assert_eq!(DmaSegment::new(u64::MAX, 2).end(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DmaSegment {
    /// Bus address of the first byte.
    pub addr: u64,
    /// Length in bytes (the builders refuse 0).
    pub len: u32,
}

impl DmaSegment {
    /// A segment of `len` bytes at bus address `addr`.
    #[inline]
    pub const fn new(addr: u64, len: u32) -> Self {
        Self { addr, len }
    }

    /// The address one past the last byte, `None` if it overflows.
    #[inline]
    pub const fn end(&self) -> Option<u64> {
        self.addr.checked_add(self.len as u64)
    }

    /// The controller pages the segment touches: its PRP entries (no PRP rule checked).
    #[inline]
    pub const fn ctrl_pages(&self) -> u64 {
        // offset < 4096 and len <= u32::MAX: the sum cannot overflow.
        ((self.addr & CTRL_PAGE_MASK) + self.len as u64).div_ceil(NVME_CTRL_PAGE_SIZE as u64)
    }
}

/// Why an NVMe data pointer (PRPs or SGL) could not be built.
///
/// No data pointer is ever returned for invalid input. Caller-provided list storage may have been
/// partly written when an error is returned; it must then not be handed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DptrError {
    /// There are no segments (a data transfer needs at least one byte).
    NoSegments,
    /// Segment `index` has length 0.
    ZeroLength {
        /// Segment index.
        index: usize,
    },
    /// Segment `index` ends beyond the 64-bit address space.
    AddressOverflow {
        /// Segment index.
        index: usize,
    },
    /// The first byte is not 4-byte aligned, which PRP1 requires.
    FirstNotDwordAligned {
        /// Address of the first byte.
        addr: u64,
    },
    /// Segment `index` (not the first) does not start on a controller page.
    StartNotPageAligned {
        /// Segment index.
        index: usize,
        /// Its start address.
        addr: u64,
    },
    /// Segment `index` (not the last) does not end on a controller page.
    EndNotPageAligned {
        /// Segment index.
        index: usize,
        /// Its end address (one past the last byte).
        end: u64,
    },
    /// More list storage is needed than was provided (PRP list pages or SGL descriptors).
    ListTooSmall {
        /// Pages (PRP) or descriptors (SGL) needed.
        needed: usize,
        /// Pages or descriptors available.
        available: usize,
    },
    /// A list page's bus address is not aligned (4096 for PRP lists, 16 for SGL lists).
    ListMisaligned {
        /// List index.
        index: usize,
        /// Its bus address.
        addr: u64,
    },
    /// Fewer bus addresses than list pages were given.
    ListDmaCount {
        /// List pages.
        pages: usize,
        /// Bus addresses.
        addrs: usize,
    },
    /// A tagged I/O range does not lie inside the premapped buffer.
    TagOutOfRange {
        /// Offset of the I/O in the buffer.
        offset: u64,
        /// Length of the I/O.
        len: u32,
        /// Length of the buffer.
        buffer_len: u64,
    },
    /// A premapped page table is inconsistent: too few pages for its length, a page address not
    /// on a controller page, or a first-page offset of a page or more.
    TagTable {
        /// Index of the offending page (or the page count that was needed).
        index: usize,
    },
}

impl fmt::Display for DptrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NoSegments => f.write_str("no data segments"),
            Self::ZeroLength { index } => write!(f, "segment {index} has length 0"),
            Self::AddressOverflow { index } => write!(f, "segment {index} overflows u64"),
            Self::FirstNotDwordAligned { addr } => {
                write!(f, "first address {addr:#x} is not dword aligned")
            }
            Self::StartNotPageAligned { index, addr } => {
                write!(f, "segment {index} starts at {addr:#x}, not on a page")
            }
            Self::EndNotPageAligned { index, end } => {
                write!(f, "segment {index} ends at {end:#x}, not on a page")
            }
            Self::ListTooSmall { needed, available } => {
                write!(f, "list needs {needed} entries or pages, {available} given")
            }
            Self::ListMisaligned { index, addr } => {
                write!(f, "list {index} at {addr:#x} is misaligned")
            }
            Self::ListDmaCount { pages, addrs } => {
                write!(f, "{pages} list pages but {addrs} bus addresses")
            }
            Self::TagOutOfRange {
                offset,
                len,
                buffer_len,
            } => write!(
                f,
                "I/O of {len} bytes at {offset} exceeds the {buffer_len}-byte buffer"
            ),
            Self::TagTable { index } => write!(f, "premapped page table invalid at {index}"),
        }
    }
}

impl core::error::Error for DptrError {}
