//! A namespace's write granularities, optimal sizes, I/O boundary and atomic write limits, as the
//! Linux NVMe driver derives them from Identify Namespace and Identify Controller:
//! `nvme_update_disk_info()`, `nvme_configure_atomic_write()` and `nvme_set_chunk_sectors()` in
//! `drivers/nvme/host/core.c`.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use crate::{identify_ctrl::le16, IDENTIFY_SIZE};

/// NSFEAT bit 1: NAWUN, NAWUPF and NACWU are defined (`NVME_NS_FEAT_ATOMICS`).
const NSFEAT_ATOMICS: u8 = 1 << 1;
/// NSFEAT bit 4: NPWG, NPWA, NPDG, NPDA and NOWS are defined (`NVME_NS_FEAT_IO_OPT`).
const NSFEAT_IO_OPT: u8 = 1 << 4;

/// The Identify Namespace fields behind a namespace's geometry (all 0-based counts of logical
/// blocks, as the specification defines them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NsIoHints {
    /// NSFEAT.
    pub nsfeat: u8,
    /// Namespace Atomic Write Unit Power Fail.
    pub nawupf: u16,
    /// Namespace Atomic Boundary Offset.
    pub nabo: u16,
    /// Namespace Atomic Boundary Size Power Fail.
    pub nabspf: u16,
    /// Namespace Optimal I/O Boundary (not 0-based: blocks, 0 for none).
    pub noiob: u16,
    /// Namespace Preferred Write Granularity.
    pub npwg: u16,
    /// Namespace Optimal Write Size.
    pub nows: u16,
}

impl NsIoHints {
    /// Reads the fields from 4096 bytes of Identify Namespace data; `None` for another length.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::NsIoHints;
    /// let mut b = [0u8; 4096];
    /// b[24] = 0x12;                                   // NSFEAT: atomics and I/O hints
    /// b[36..38].copy_from_slice(&7u16.to_le_bytes()); // NAWUPF
    /// b[46..48].copy_from_slice(&256u16.to_le_bytes()); // NOIOB
    /// b[64..66].copy_from_slice(&7u16.to_le_bytes()); // NPWG
    /// let h = NsIoHints::parse(&b).unwrap();
    /// assert_eq!((h.nsfeat, h.nawupf, h.noiob, h.npwg, h.nows), (0x12, 7, 256, 7, 0));
    /// assert!(NsIoHints::parse(&b[..100]).is_none());
    /// ```
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() != IDENTIFY_SIZE {
            return None;
        }
        let w = |i: usize| le16(b, i);
        Some(Self {
            nsfeat: b.get(24).copied().unwrap_or(0),
            nawupf: w(36),
            nabo: w(42),
            nabspf: w(44),
            noiob: w(46),
            npwg: w(64),
            nows: w(72),
        })
    }
}

/// A namespace's geometry in bytes (sectors for `chunk_sectors`), for its queue limits; 0 in
/// an atomic write field means no atomic writes (the block layer's convention).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NsGeometry {
    /// `physical_block_size`: the preferred write granularity, at most the atomic write unit.
    pub physical_block_size: u32,
    /// `io_min`: the preferred write granularity.
    pub io_min: u32,
    /// `io_opt`: the optimal write size (0: none).
    pub io_opt: u32,
    /// `chunk_sectors`: the optimal I/O boundary in 512-byte sectors (0: none).
    pub chunk_sectors: u32,
    /// `atomic_write_hw_max`.
    pub atomic_write_hw_max: u32,
    /// `atomic_write_hw_boundary` (0: none).
    pub atomic_write_hw_boundary: u32,
    /// `atomic_write_hw_unit_min`.
    pub atomic_write_hw_unit_min: u32,
    /// `atomic_write_hw_unit_max`.
    pub atomic_write_hw_unit_max: u32,
}

/// The geometry of a namespace with `block_size`-byte blocks (a power of two, 512..=4096, as a
/// parsed namespace's is) and hints `h`, on a controller whose AWUPF (Identify Controller) is
/// `ctrl_awupf`:
///
/// - atomic writes (`nvme_configure_atomic_write()`): none when NABO is set; else a unit of
///   `NAWUPF + 1` blocks (with a boundary of `NABSPF + 1` blocks when NABSPF is set) when NSFEAT
///   says the namespace defines its own, else `AWUPF + 1` blocks of this namespace; the unit
///   minimum is one block, the unit maximum the largest power of two in the unit;
/// - `io_min` is `NPWG + 1` blocks and `io_opt` `NOWS + 1` blocks (when NOWS is set) if NSFEAT
///   says they are defined, else one block and 0; `physical_block_size` is `io_min` capped at
///   the atomic unit (filesystems take a physical block write as atomic);
/// - `chunk_sectors` is NOIOB blocks in sectors when that is a power of two, else 0 (the C
///   driver warns "ignoring unaligned IO boundary").
///
/// # Examples
///
/// ```
/// use nvme::{ns_geometry, NsGeometry, NsIoHints};
/// // QEMU's namespaces: no hints, AWUPF 0: one-block atomic writes.
/// let g = ns_geometry(&NsIoHints::default(), 512, 0);
/// assert_eq!(g, NsGeometry { physical_block_size: 512, io_min: 512, io_opt: 0, chunk_sectors: 0,
///     atomic_write_hw_max: 512, atomic_write_hw_boundary: 0,
///     atomic_write_hw_unit_min: 512, atomic_write_hw_unit_max: 512 });
/// // 4 KiB preferred writes, 64 KiB optimal, 128 KiB boundary, 16 KiB atomic.
/// let h = NsIoHints { nsfeat: 0x12, nawupf: 31, npwg: 7, nows: 127, noiob: 256, ..Default::default() };
/// let g = ns_geometry(&h, 512, 0);
/// assert_eq!((g.physical_block_size, g.io_min, g.io_opt, g.chunk_sectors), (4096, 4096, 65536, 256));
/// assert_eq!((g.atomic_write_hw_max, g.atomic_write_hw_unit_max), (16384, 16384));
/// ```
pub fn ns_geometry(h: &NsIoHints, block_size: u32, ctrl_awupf: u16) -> NsGeometry {
    let bs = block_size.clamp(512, 4096).next_power_of_two();
    let blocks = |n: u16| (u32::from(n) + 1) * bs;
    let mut g = NsGeometry::default();
    let atomic_bs = if h.nabo != 0 {
        // No atomic writes at an offset: the fields stay 0.
        bs
    } else {
        let (unit, boundary) = if h.nsfeat & NSFEAT_ATOMICS != 0 && h.nawupf != 0 {
            let b = if h.nabspf != 0 { blocks(h.nabspf) } else { 0 };
            (blocks(h.nawupf), b)
        } else {
            (blocks(ctrl_awupf), 0)
        };
        g.atomic_write_hw_max = unit;
        g.atomic_write_hw_boundary = boundary;
        g.atomic_write_hw_unit_min = bs;
        // `rounddown_pow_of_two()`.
        g.atomic_write_hw_unit_max = 1 << (31 - unit.leading_zeros());
        unit
    };
    let mut phys_bs = bs;
    if h.nsfeat & NSFEAT_IO_OPT != 0 {
        phys_bs = blocks(h.npwg);
        if h.nows != 0 {
            g.io_opt = blocks(h.nows);
        }
    }
    g.physical_block_size = phys_bs.min(atomic_bs);
    g.io_min = phys_bs;
    let iob = u32::from(h.noiob) * (bs / 512);
    if iob.is_power_of_two() {
        g.chunk_sectors = iob;
    }
    g
}
