//! NVMe SGL data pointers (`nvme_pci_setup_sgls`, `nvme_setup_sgl_simple`, `nvme_pci_use_sgls`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! One segment becomes a Data Block descriptor placed directly in the command. More segments
//! become a list of Data Block descriptors in one caller-provided segment, and the command holds
//! a Last Segment descriptor pointing at it.

use crate::{DmaSegment, DptrError};

/// Descriptors in one 4 KiB list page (`SGES_PER_PAGE`).
pub const SGES_PER_PAGE: usize = 256;
/// Descriptors in a list from the driver's small pool (256 bytes).
pub const SGL_SMALL_POOL_ENTRIES: usize = 16;
/// The driver's default `sgl_threshold`: average segment size from which SGLs are preferred.
pub const SGL_THRESHOLD_DEFAULT: u32 = 32 * 1024;

/// Descriptor type byte of a Data Block descriptor (type 0, subtype 0).
const TYPE_DATA_BLOCK: u8 = 0x0 << 4;
/// Descriptor type byte of a Segment descriptor.
const TYPE_SEGMENT: u8 = 0x2 << 4;
/// Descriptor type byte of a Last Segment descriptor.
const TYPE_LAST_SEGMENT: u8 = 0x3 << 4;

/// What an [`SglDescriptor`] describes (its type nibble).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SglKind {
    /// Data Block: `length` bytes of data at `addr`.
    DataBlock,
    /// Segment: a list of `length / 16` descriptors at `addr`, ending in another segment.
    Segment,
    /// Last Segment: the final list of `length / 16` descriptors at `addr`.
    LastSegment,
    /// A type this crate does not produce (raw type byte).
    Other(u8),
}

/// One 16-byte SGL descriptor in NVMe wire layout (`struct nvme_sgl_desc`): bytes 0..8 the
/// little-endian address, 8..12 the little-endian length, 12..15 reserved, 15 the type byte.
///
/// # Examples
///
/// ```
/// use nvme::{SglDescriptor, SglKind};
/// let d = SglDescriptor::data_block(0x1122_3344_5566_7788, 0x200);
/// assert_eq!(d.to_bytes(), [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 2, 0, 0, 0, 0, 0, 0x00]);
/// let l = SglDescriptor::last_segment(0x4000, 48);
/// assert_eq!((l.addr(), l.length(), l.kind(), l.to_bytes()[15]), (0x4000, 48, SglKind::LastSegment, 0x30));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
// Aligned as the PRP entries it shares the data pointer with: `DataPointer`'s two variants
// then put their 16 bytes at the same aligned offset, and moving one is two quadword copies
// rather than unaligned pieces per variant.
#[repr(C, align(8))]
pub struct SglDescriptor([u8; 16]);

const _: () = assert!(core::mem::size_of::<SglDescriptor>() == 16);

impl SglDescriptor {
    const fn with_type(addr: u64, len: u32, ty: u8) -> Self {
        let a = addr.to_le_bytes();
        let l = len.to_le_bytes();
        Self([
            a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], l[0], l[1], l[2], l[3], 0, 0, 0, ty,
        ])
    }

    /// A Data Block descriptor for `len` bytes at `addr`.
    #[inline]
    pub const fn data_block(addr: u64, len: u32) -> Self {
        Self::with_type(addr, len, TYPE_DATA_BLOCK)
    }

    /// A Segment descriptor for a list of `len` bytes at `addr` that is followed by more lists.
    pub const fn segment(addr: u64, len: u32) -> Self {
        Self::with_type(addr, len, TYPE_SEGMENT)
    }

    /// A Last Segment descriptor for the final list of `len` bytes at `addr`.
    #[inline]
    pub const fn last_segment(addr: u64, len: u32) -> Self {
        Self::with_type(addr, len, TYPE_LAST_SEGMENT)
    }

    /// The descriptor from its 16 wire bytes.
    pub const fn from_bytes(b: [u8; 16]) -> Self {
        Self(b)
    }

    /// The 16 wire bytes (the command's DPTR field when this is the inline descriptor).
    #[inline]
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The 16 wire bytes as two little-endian quadwords (bytes 0-7, 8-15), for 8-byte
    /// stores into a descriptor list page.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = nvme::SglDescriptor::data_block(0x1122_3344_5566_7788, 0x200);
    /// assert_eq!(d.to_qwords(), [0x1122_3344_5566_7788, 0x200]);
    /// ```
    #[inline]
    pub const fn to_qwords(self) -> [u64; 2] {
        let b = self.0;
        [
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        ]
    }

    /// The address field.
    pub const fn addr(&self) -> u64 {
        let b = &self.0;
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// The length field.
    pub const fn length(&self) -> u32 {
        let b = &self.0;
        u32::from_le_bytes([b[8], b[9], b[10], b[11]])
    }

    /// The descriptor kind, from the type byte.
    pub const fn kind(&self) -> SglKind {
        match self.0[15] {
            TYPE_DATA_BLOCK => SglKind::DataBlock,
            TYPE_SEGMENT => SglKind::Segment,
            TYPE_LAST_SEGMENT => SglKind::LastSegment,
            t => SglKind::Other(t),
        }
    }
}

/// Which DMA pool the Linux driver would take an SGL list from (information for the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SglPool {
    /// No list: one inline Data Block descriptor.
    None,
    /// At most 16 descriptors: the 256-byte small pool.
    Small,
    /// A 4 KiB page.
    Page,
}

/// A built SGL data pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sgl {
    /// The descriptor for the command's DPTR field (set the command's PSDT to "SGL").
    pub dptr: SglDescriptor,
    /// Descriptors written to the list (0 for the inline case).
    pub list_entries: usize,
    /// Pool the driver would use.
    pub pool: SglPool,
}

/// Builds an SGL for DMA-mapped `segs`: one inline Data Block descriptor for a single segment,
/// otherwise a Last Segment descriptor pointing at `list` (bus address `list_dma`, which must be
/// 16-byte aligned) filled with one Data Block descriptor per segment.
///
/// SGLs have no page-alignment rules, so any non-empty segments are accepted. At most
/// [`SGES_PER_PAGE`] segments fit (the driver uses a single list segment).
///
/// # Errors
///
/// [`DptrError::NoSegments`], [`DptrError::ZeroLength`], [`DptrError::AddressOverflow`],
/// [`DptrError::ListTooSmall`] (more segments than `list` holds, or more than 256), or
/// [`DptrError::ListMisaligned`].
///
/// # Examples
///
/// ```
/// use nvme::{build_sgl, DmaSegment, SglDescriptor, SglKind, SglPool};
/// let mut list = [SglDescriptor::default(); 4];
/// let s = build_sgl([DmaSegment::new(0x1003, 17)], &mut list, 0x9000)?;
/// assert_eq!((s.dptr, s.list_entries, s.pool), (SglDescriptor::data_block(0x1003, 17), 0, SglPool::None));
/// let s = build_sgl([DmaSegment::new(0x1003, 17), DmaSegment::new(0x8000, 512)], &mut list, 0x9000)?;
/// assert_eq!((s.dptr.kind(), s.dptr.addr(), s.dptr.length()), (SglKind::LastSegment, 0x9000, 32));
/// assert_eq!(list[1], SglDescriptor::data_block(0x8000, 512));
/// assert!(build_sgl([DmaSegment::new(0, 1); 5], &mut list, 0x9000).is_err());
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn build_sgl(
    segs: impl IntoIterator<Item = DmaSegment>,
    list: &mut [SglDescriptor],
    list_dma: u64,
) -> Result<Sgl, DptrError> {
    let capacity = if list.len() < SGES_PER_PAGE {
        list.len()
    } else {
        SGES_PER_PAGE
    };
    let mut first: Option<DmaSegment> = None;
    let mut count: usize = 0;
    for (index, seg) in segs.into_iter().enumerate() {
        if seg.len == 0 {
            return Err(DptrError::ZeroLength { index });
        }
        if seg.end().is_none() {
            return Err(DptrError::AddressOverflow { index });
        }
        count = index + 1;
        let Some(head) = first else {
            // The first segment is only written to the list once a second one arrives.
            first = Some(seg);
            continue;
        };
        if index == 1 {
            put(list, capacity, 0, head)?;
        }
        put(list, capacity, index, seg)?;
    }
    let first = first.ok_or(DptrError::NoSegments)?;
    if count == 1 {
        return Ok(Sgl {
            dptr: SglDescriptor::data_block(first.addr, first.len),
            list_entries: 0,
            pool: SglPool::None,
        });
    }
    if list_dma & 15 != 0 {
        return Err(DptrError::ListMisaligned {
            index: 0,
            addr: list_dma,
        });
    }
    // count <= 256, so count * 16 fits in u32.
    Ok(Sgl {
        dptr: SglDescriptor::last_segment(list_dma, (count * 16) as u32),
        list_entries: count,
        pool: if count <= SGL_SMALL_POOL_ENTRIES {
            SglPool::Small
        } else {
            SglPool::Page
        },
    })
}

/// Writes a Data Block descriptor for `seg` into slot `index` of `list` (at most `capacity`).
fn put(
    list: &mut [SglDescriptor],
    capacity: usize,
    index: usize,
    seg: DmaSegment,
) -> Result<(), DptrError> {
    match list.get_mut(index).filter(|_| index < capacity) {
        Some(slot) => {
            *slot = SglDescriptor::data_block(seg.addr, seg.len);
            Ok(())
        }
        None => Err(DptrError::ListTooSmall {
            needed: index + 1,
            available: capacity,
        }),
    }
}

/// What decides between SGLs and PRPs for one request (`nvme_pci_use_sgls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SglPolicy {
    /// The controller supports SGLs (Identify Controller SGLS bits 1:0 non-zero).
    pub ctrl_supports_sgls: bool,
    /// The request goes to the admin queue (always PRPs).
    pub admin_queue: bool,
    /// Metadata is transferred with SGLs (then data must be too).
    pub metadata_sgls: bool,
    /// The request is a user passthrough command.
    pub passthrough: bool,
    /// Average segment size from which SGLs are used; 0 disables them for normal I/O.
    pub sgl_threshold: u32,
}

impl SglPolicy {
    /// Whether a request of `payload` bytes in `nseg` mapped segments should use an SGL.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{SglPolicy, SGL_THRESHOLD_DEFAULT};
    /// let p = SglPolicy { ctrl_supports_sgls: true, admin_queue: false, metadata_sgls: false,
    ///                     passthrough: false, sgl_threshold: SGL_THRESHOLD_DEFAULT };
    /// assert!(!p.use_sgls(64 * 1024, 16));        // 4 KiB average: PRPs
    /// assert!(p.use_sgls(64 * 1024, 2));          // 32 KiB average: SGL
    /// assert!(!SglPolicy { admin_queue: true, ..p }.use_sgls(64 * 1024, 1));
    /// assert!(!SglPolicy { ctrl_supports_sgls: false, ..p }.use_sgls(1 << 20, 1));
    /// assert!(SglPolicy { sgl_threshold: 0, passthrough: true, ..p }.use_sgls(4096, 8));
    /// ```
    #[inline]
    pub fn use_sgls(&self, payload: u64, nseg: u32) -> bool {
        if !self.ctrl_supports_sgls || self.admin_queue {
            return false;
        }
        if self.metadata_sgls {
            return true;
        }
        // `nvme_pci_use_sgls()`: the average segment, `DIV_ROUND_UP(payload, nseg)`, at least
        // the threshold `t`. For `t >= 1` that is `payload > (t - 1) * nseg`, which needs no
        // division (a helper call per I/O under TCG) and cannot overflow: both factors are
        // below 2^32.
        let Some(below) = self.sgl_threshold.checked_sub(1) else {
            return self.passthrough;
        };
        if payload <= u64::from(below) * u64::from(nseg.max(1)) {
            return self.passthrough;
        }
        true
    }
}
