//! Premapped buffers ("DMA tags"): data pointers by arithmetic, without per-I/O mapping.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! A buffer registered once (io_uring fixed buffers) is DMA-mapped once; the mapping is recorded
//! as the bus address of each 4 KiB controller page. An I/O then names `(tag, offset, len)` and
//! its PRPs or SGL are computed from that table, with no `dma_map` and no scatterlist. The
//! kernel-side handle that owns the mapping (and unmaps it on drop) implements [`DmaPageTable`].

use crate::dptr::CTRL_PAGE_MASK;
use crate::prp::build_prps_from_pages;
use crate::{build_sgl, DmaSegment, DptrError, PrpLists, Prps, Sgl, SglDescriptor};
use crate::{NVME_CTRL_PAGE_SHIFT, NVME_CTRL_PAGE_SIZE};

/// The page table of a premapped buffer.
///
/// # Implementer notes
///
/// `dma_pages()[i]` is the bus address of controller page `i` of the buffer and should be
/// 4096-aligned; the buffer's first byte is `first_page_offset()` bytes into page 0 (less than
/// 4096), and it is `len()` bytes long, so `dma_pages()` should cover
/// `first_page_offset() + len()` bytes. The builders check every value they use and return
/// [`DptrError::TagTable`] instead of building a data pointer from a wrong one, so a faulty
/// implementation causes errors, not bad DMA.
pub trait DmaPageTable {
    /// Bus address of each 4 KiB page of the buffer, in order.
    fn dma_pages(&self) -> &[u64];
    /// Offset of the buffer's first byte inside page 0.
    fn first_page_offset(&self) -> u32;
    /// Length of the buffer in bytes.
    fn len(&self) -> u64;
    /// Whether the buffer is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: DmaPageTable + ?Sized> DmaPageTable for &T {
    fn dma_pages(&self) -> &[u64] {
        (**self).dma_pages()
    }
    fn first_page_offset(&self) -> u32 {
        (**self).first_page_offset()
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
}

/// A validated view of a premapped buffer's page table.
///
/// # Invariants
///
/// Every page address is 4096-aligned, `first_page_offset < 4096`, and `pages` covers
/// `first_page_offset + len` bytes.
///
/// # Examples
///
/// ```
/// use nvme::{DmaPageTable, PremappedPages};
/// let pages = [0x10_0000, 0x7_3000, 0x7_4000];
/// let buf = PremappedPages::new(&pages, 0x200, 3 * 4096 - 0x200)?;
/// assert_eq!((buf.len(), buf.first_page_offset()), (3 * 4096 - 0x200, 0x200));
/// assert!(PremappedPages::new(&pages, 0x200, 3 * 4096).is_err());   // one byte past the table
/// assert!(PremappedPages::new(&[0x10_0100], 0, 10).is_err());       // page not aligned
/// # Ok::<(), nvme::DptrError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PremappedPages<'a> {
    pages: &'a [u64],
    first_page_offset: u32,
    len: u64,
}

impl<'a> PremappedPages<'a> {
    /// Validates a page table once, at registration time.
    ///
    /// # Errors
    ///
    /// [`DptrError::TagTable`] naming the misaligned page, or the page count needed when the
    /// table is too short or the offset is a page or more.
    pub fn new(pages: &'a [u64], first_page_offset: u32, len: u64) -> Result<Self, DptrError> {
        if first_page_offset >= NVME_CTRL_PAGE_SIZE {
            return Err(DptrError::TagTable { index: 0 });
        }
        let needed = (u64::from(first_page_offset) + len).div_ceil(u64::from(NVME_CTRL_PAGE_SIZE));
        if needed > pages.len() as u64 {
            return Err(DptrError::TagTable {
                index: usize::try_from(needed).unwrap_or(usize::MAX),
            });
        }
        if let Some(index) = pages.iter().position(|a| a & CTRL_PAGE_MASK != 0) {
            return Err(DptrError::TagTable { index });
        }
        // INVARIANT: all three conditions were checked above.
        Ok(Self {
            pages,
            first_page_offset,
            len,
        })
    }
}

impl DmaPageTable for PremappedPages<'_> {
    fn dma_pages(&self) -> &[u64] {
        self.pages
    }
    fn first_page_offset(&self) -> u32 {
        self.first_page_offset
    }
    fn len(&self) -> u64 {
        self.len
    }
}

/// An I/O on a premapped buffer: `len` bytes starting `offset` bytes into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagRange {
    /// Offset of the first byte from the start of the buffer.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// A range resolved against a table: first page index, offset inside it, and page count.
pub(crate) struct Resolved {
    /// Index of the first controller page the range touches.
    pub(crate) first: usize,
    /// Offset of the range's first byte inside that page.
    pub(crate) in_page: u64,
    /// Controller pages the range touches (at least 1).
    pub(crate) nr_pages: usize,
}

/// Resolves `r` against `table`, checking that it lies inside the buffer and its table.
pub(crate) fn resolve<T: DmaPageTable + ?Sized>(
    table: &T,
    r: TagRange,
) -> Result<Resolved, DptrError> {
    let buffer_len = table.len();
    let out_of_range = DptrError::TagOutOfRange {
        offset: r.offset,
        len: r.len,
        buffer_len,
    };
    if r.len == 0 {
        return Err(DptrError::NoSegments);
    }
    let end = r.offset.checked_add(u64::from(r.len)).ok_or(out_of_range)?;
    if end > buffer_len {
        return Err(out_of_range);
    }
    let fpo = u64::from(table.first_page_offset());
    if fpo >= u64::from(NVME_CTRL_PAGE_SIZE) {
        return Err(DptrError::TagTable { index: 0 });
    }
    let abs = r.offset.checked_add(fpo).ok_or(out_of_range)?;
    let first = usize::try_from(abs >> NVME_CTRL_PAGE_SHIFT).map_err(|_| out_of_range)?;
    let in_page = abs & CTRL_PAGE_MASK;
    // in_page < 4096 and len <= u32::MAX: no overflow; the quotient is at most 2^20.
    let nr_pages = (in_page + u64::from(r.len)).div_ceil(u64::from(NVME_CTRL_PAGE_SIZE)) as usize;
    let last = first.checked_add(nr_pages).ok_or(out_of_range)?;
    if last > table.dma_pages().len() {
        return Err(DptrError::TagTable { index: last });
    }
    Ok(Resolved {
        first,
        in_page,
        nr_pages,
    })
}

/// Builds PRPs for `range` of a premapped buffer by arithmetic on its page table
/// (no mapping, no scatterlist). The result equals [`crate::build_prps`] on the same bytes
/// mapped per I/O.
///
/// # Errors
///
/// [`DptrError::TagOutOfRange`] (or [`DptrError::NoSegments`] for `len == 0`) when the range is
/// not inside the buffer, [`DptrError::FirstNotDwordAligned`] when the first byte is not 4-byte
/// aligned, [`DptrError::TagTable`] for an inconsistent table, [`DptrError::ListTooSmall`] when
/// `lists` is too short.
///
/// # Examples
///
/// ```
/// use nvme::{build_prps_from_tag, PremappedPages, PrpLists, TagRange};
/// let table = [0x10_0000, 0x7_3000, 0x9_9000, 0x2_0000];
/// let buf = PremappedPages::new(&table, 0, 4 * 4096)?;
/// let mut none = PrpLists::new(&mut [], &[])?;
/// let p = build_prps_from_tag(&buf, TagRange { offset: 4096 + 512, len: 4096 }, &mut none)?;
/// assert_eq!((p.prp1, p.prp2), (0x7_3200, 0x9_9000));
/// assert!(build_prps_from_tag(&buf, TagRange { offset: 3 * 4096, len: 4097 }, &mut none).is_err());
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn build_prps_from_tag<T: DmaPageTable + ?Sized>(
    table: &T,
    range: TagRange,
    lists: &mut PrpLists<'_>,
) -> Result<Prps, DptrError> {
    let r = resolve(table, range)?;
    let (prp1, rest) = first_prp(table.dma_pages(), &r)?;
    build_prps_from_pages(prp1, rest, r.first + 1, lists)
}

/// PRP1 of resolved range `r` of `pages` (the first page's address plus the offset inside it,
/// checked page- and dword-aligned) and the addresses of the range's other pages.
#[inline]
pub(crate) fn first_prp<'a>(pages: &'a [u64], r: &Resolved) -> Result<(u64, &'a [u64]), DptrError> {
    let first_page = *pages
        .get(r.first)
        .ok_or(DptrError::TagTable { index: r.first })?;
    if first_page & CTRL_PAGE_MASK != 0 {
        return Err(DptrError::TagTable { index: r.first });
    }
    let prp1 = first_page + r.in_page;
    if prp1 & 3 != 0 {
        return Err(DptrError::FirstNotDwordAligned { addr: prp1 });
    }
    // resolve checked `first + nr_pages <= pages.len()`, and nr_pages >= 1.
    let rest_index = r.first + 1;
    let rest = pages
        .get(rest_index..r.first + r.nr_pages)
        .ok_or(DptrError::TagTable { index: rest_index })?;
    Ok((prp1, rest))
}

/// The DMA segments of `range` of a premapped buffer, one per run of bus-contiguous pages.
///
/// Yields nothing for an invalid range; check it with [`build_prps_from_tag`] or validate the
/// table with [`PremappedPages::new`] first. Page addresses are not checked here.
///
/// # Examples
///
/// ```
/// use nvme::{tag_segments, DmaSegment, PremappedPages, TagRange};
/// let table = [0x10_0000, 0x10_1000, 0x50_0000];     // pages 0 and 1 are contiguous
/// let buf = PremappedPages::new(&table, 0, 3 * 4096)?;
/// let segs: Vec<_> = tag_segments(&buf, TagRange { offset: 100, len: 3 * 4096 - 100 }).collect();
/// assert_eq!(segs, [DmaSegment::new(0x10_0064, 8092), DmaSegment::new(0x50_0000, 4096)]);
/// assert_eq!(tag_segments(&buf, TagRange { offset: 0, len: 3 * 4096 + 1 }).count(), 0);
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn tag_segments<T: DmaPageTable + ?Sized>(
    table: &T,
    range: TagRange,
) -> impl Iterator<Item = DmaSegment> + Clone + '_ {
    let (pages, in_page, left) = match resolve(table, range) {
        Ok(r) => (
            table
                .dma_pages()
                .get(r.first..r.first + r.nr_pages)
                .unwrap_or(&[]),
            r.in_page,
            range.len,
        ),
        Err(_) => (&[][..], 0, 0),
    };
    TagSegments {
        pages,
        in_page,
        left,
    }
}

/// Iterator behind [`tag_segments`].
#[derive(Clone, Debug)]
struct TagSegments<'a> {
    pages: &'a [u64],
    in_page: u64,
    left: u32,
}

impl Iterator for TagSegments<'_> {
    type Item = DmaSegment;

    fn next(&mut self) -> Option<DmaSegment> {
        let (&first, rest) = self.pages.split_first()?;
        if self.left == 0 {
            return None;
        }
        let addr = first.wrapping_add(self.in_page);
        // Bytes available in the first page: at most 4096.
        let mut len = (u64::from(NVME_CTRL_PAGE_SIZE) - self.in_page).min(u64::from(self.left));
        let mut used = 1;
        for &next in rest {
            if len >= u64::from(self.left) || Some(next) != addr.checked_add(len) {
                break;
            }
            len = (len + u64::from(NVME_CTRL_PAGE_SIZE)).min(u64::from(self.left));
            used += 1;
        }
        self.pages = self.pages.get(used..).unwrap_or(&[]);
        self.in_page = 0;
        // len <= left, a u32.
        self.left -= len as u32;
        Some(DmaSegment::new(addr, len as u32))
    }
}

/// Builds an SGL for `range` of a premapped buffer: one Data Block descriptor per run of
/// bus-contiguous pages.
///
/// # Errors
///
/// As [`build_prps_from_tag`] for the range, and as [`build_sgl`] for the list.
///
/// # Examples
///
/// ```
/// use nvme::{build_sgl_from_tag, PremappedPages, SglDescriptor, SglKind, TagRange};
/// let table = [0x10_0000, 0x10_1000, 0x50_0000];
/// let buf = PremappedPages::new(&table, 0, 3 * 4096)?;
/// let mut list = [SglDescriptor::default(); 4];
/// let s = build_sgl_from_tag(&buf, TagRange { offset: 0, len: 8192 }, &mut list, 0x9000)?;
/// assert_eq!(s.dptr, SglDescriptor::data_block(0x10_0000, 8192)); // contiguous: inline
/// let s = build_sgl_from_tag(&buf, TagRange { offset: 0, len: 3 * 4096 }, &mut list, 0x9000)?;
/// assert_eq!((s.dptr.kind(), s.list_entries), (SglKind::LastSegment, 2));
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn build_sgl_from_tag<T: DmaPageTable + ?Sized>(
    table: &T,
    range: TagRange,
    list: &mut [SglDescriptor],
    list_dma: u64,
) -> Result<Sgl, DptrError> {
    let r = resolve(table, range)?;
    let used = table
        .dma_pages()
        .get(r.first..r.first + r.nr_pages)
        .unwrap_or(&[]);
    if let Some(index) = used.iter().position(|a| a & CTRL_PAGE_MASK != 0) {
        return Err(DptrError::TagTable {
            index: r.first + index,
        });
    }
    build_sgl(tag_segments(table, range), list, list_dma)
}
