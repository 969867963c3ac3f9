//! Read-only questions about the remaining bytes: segment length, page count, alignment.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)

use core::cmp::min;

use bvec::{Bvec, Page, PAGE_SHIFT, PAGE_SIZE};

use crate::iter::Kind;
use crate::segment::SegLen;
use crate::{Direction, IovIter};

const PAGE_MASK: usize = PAGE_SIZE - 1;

/// `DIV_ROUND_UP(offs + len, PAGE_SIZE)` for `offs < PAGE_SIZE`, without overflow for any `len`.
#[inline(always)]
fn pages_spanned(offs: usize, len: usize) -> usize {
    (len >> PAGE_SHIFT) + (((len & PAGE_MASK) + offs + PAGE_MASK) >> PAGE_SHIFT)
}

/// `(start, len)` of the entries of user and kernel vectors.
trait AddrEntry {
    fn start(&self) -> usize;
    fn length(&self) -> usize;
}

impl AddrEntry for crate::Iovec {
    fn start(&self) -> usize {
        self.base
    }
    fn length(&self) -> usize {
        self.len
    }
}

impl AddrEntry for crate::Kvec {
    fn start(&self) -> usize {
        self.base
    }
    fn length(&self) -> usize {
        self.len
    }
}

/// `iov_npages`: per non-empty (clipped) segment, the pages it touches; pages shared by two
/// segments count twice.
fn addr_npages<T: AddrEntry>(t: &[T], idx: usize, skip: usize, size: usize, max: usize) -> usize {
    let (mut skip, mut size, mut npages) = (skip, size, 0usize);
    for seg in t.iter().skip(idx) {
        if size == 0 {
            break;
        }
        let len = min(seg.length().saturating_sub(skip), size);
        if len != 0 {
            size -= len;
            npages = npages.saturating_add(pages_spanned(
                seg.start().wrapping_add(skip) & PAGE_MASK,
                len,
            ));
            if npages > max {
                return max;
            }
        }
        skip = 0;
    }
    npages
}

/// `bvec_npages`, the walk used for tables that are not page-uniform.
fn bvec_npages<P: Page>(t: &[Bvec<P>], idx: usize, skip: usize, size: usize, max: usize) -> usize {
    let (mut skip, mut size, mut npages) = (skip, size, 0usize);
    for bv in t.iter().skip(idx) {
        if size == 0 {
            break;
        }
        let offs = (bv.offset() as usize + skip) & PAGE_MASK;
        let len = min((bv.len() as usize).saturating_sub(skip), size);
        size -= len;
        npages = npages.saturating_add(pages_spanned(offs, len));
        if npages > max {
            return max;
        }
        skip = 0;
    }
    npages
}

impl<P: Page, D: Direction> IovIter<'_, P, D> {
    /// Bytes left in the current segment, capped by the count (`iov_iter_single_seg_count`).
    ///
    /// Vector kinds with more than one segment left answer for the current one (0 when it is
    /// an empty iovec/kvec); page lists answer `min(folio size, count)`, ignoring the offset
    /// into the folio as the kernel does; everything else answers the count.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Iovec, Source};
    /// let t = [Iovec::new(0, 10), Iovec::new(64, 10)];
    /// let mut it = IovIter::<bvec::Pfn, Source>::iovec(&t, 20)?;
    /// it.advance(4);
    /// assert_eq!(it.single_seg_count(), 6);
    /// it.advance(6);
    /// assert_eq!(it.single_seg_count(), 10); // one segment left: the count
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn single_seg_count(&self) -> usize {
        let cur =
            |len: Option<usize>| min(self.count, len.unwrap_or(0).saturating_sub(self.iov_offset));
        match self.kind {
            Kind::Iovec(t) if self.nr_segs() > 1 => cur(t.get(self.idx).map(SegLen::seg_len)),
            Kind::Kvec(t) if self.nr_segs() > 1 => cur(t.get(self.idx).map(SegLen::seg_len)),
            Kind::Bvec { table, .. } if self.nr_segs() > 1 => {
                cur(table.get(self.idx).map(SegLen::seg_len))
            }
            Kind::PageList(t) if self.count != 0 => {
                min(t.get(self.idx).map_or(0, SegLen::seg_len), self.count)
            }
            Kind::PageList(_) => 0,
            _ => self.count,
        }
    }

    /// Pages the remaining bytes touch, at most `maxpages` (`iov_iter_npages`).
    ///
    /// UBUF and page lists: O(1) from the offset and count. IOVEC/KVEC: a walk that skips empty
    /// segments and stops once `maxpages` is exceeded. BVEC: O(1) when every entry of the table
    /// starts and ends on a page boundary (checked once at construction; the common case of
    /// registered buffers and bio tables), since the remaining bytes then form whole pages except
    /// at both ends; otherwise the kernel's walk. (Seed 003's `min(nr_segs, maxpages)` assumed one
    /// page per bvec, which multipage bvecs broke; 6.12 walks.) DISCARD: 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{IovIter, Source};
    /// let t = [Bvec::new(Pfn(0), 0, 8192)?, Bvec::new(Pfn(5), 0, 4096)?];
    /// let mut it = IovIter::<Pfn, Source>::bvec(&t, 12288).unwrap();
    /// it.advance(100);
    /// assert_eq!(it.npages(usize::MAX), 3);
    /// assert_eq!(it.npages(2), 2);
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn npages(&self, maxpages: usize) -> usize {
        if self.count == 0 {
            return 0;
        }
        let n = match self.kind {
            Kind::Ubuf { base } => {
                pages_spanned(base.wrapping_add(self.iov_offset) & PAGE_MASK, self.count)
            }
            Kind::Iovec(t) => addr_npages(t, self.idx, self.iov_offset, self.count, maxpages),
            Kind::Kvec(t) => addr_npages(t, self.idx, self.iov_offset, self.count, maxpages),
            Kind::Bvec { shape, .. } if shape.page_aligned() => {
                pages_spanned(self.iov_offset & PAGE_MASK, self.count)
            }
            Kind::PageList(_) => pages_spanned(self.iov_offset & PAGE_MASK, self.count),
            Kind::Bvec { table, .. } => {
                bvec_npages(table, self.idx, self.iov_offset, self.count, maxpages)
            }
            Kind::Discard => 0,
        };
        min(n, maxpages)
    }

    /// OR of every remaining segment's start address and (clipped) length
    /// (`iov_iter_alignment`).
    ///
    /// IOVEC/KVEC skip empty segments, but with a zero count still report the current segment's
    /// start (the kernel's do-while). BVEC reports in-page offsets (`bv_offset + skip`), not
    /// addresses. Page list: `iov_offset | count`. DISCARD: 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Iovec, Dest};
    /// let t = [Iovec::new(0x1000, 0x200), Iovec::new(0x2001, 0), Iovec::new(0x3000, 0x400)];
    /// let it = IovIter::<bvec::Pfn, Dest>::iovec(&t, 0x600)?;
    /// assert_eq!(it.alignment(), 0x1000 | 0x200 | 0x3000 | 0x400); // the empty one is skipped
    /// assert_eq!(it.alignment() & 511, 0);
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn alignment(&self) -> usize {
        match self.kind {
            Kind::Ubuf { base } => {
                if self.count == 0 {
                    0
                } else {
                    base.wrapping_add(self.iov_offset) | self.count
                }
            }
            Kind::Iovec(t) => self.addr_alignment(t),
            Kind::Kvec(t) => self.addr_alignment(t),
            Kind::Bvec { table, .. } => {
                let (mut res, mut size, mut skip) = (0usize, self.count, self.iov_offset);
                for bv in table.iter().skip(self.idx) {
                    res |= bv.offset() as usize + skip;
                    let len = min((bv.len() as usize).saturating_sub(skip), size);
                    res |= len;
                    size -= len;
                    skip = 0;
                    if size == 0 {
                        break;
                    }
                }
                res
            }
            Kind::PageList(_) => self.iov_offset | self.count,
            Kind::Discard => 0,
        }
    }

    fn addr_alignment<T: AddrEntry>(&self, t: &[T]) -> usize {
        let (mut res, mut size, mut skip) = (0usize, self.count, self.iov_offset);
        for seg in t.iter().skip(self.idx) {
            let len = seg.length().saturating_sub(skip);
            if len != 0 {
                res |= seg.start().wrapping_add(skip);
                let len = min(len, size);
                res |= len;
                size -= len;
            }
            skip = 0;
            if size == 0 {
                break;
            }
        }
        res
    }

    /// OR of the gaps between consecutive non-empty IOVEC segments: each start after the first,
    /// and the end of the one before it (`iov_iter_gap_alignment`). Walks whole segments from the
    /// current one (the kernel ignores `iov_offset`). UBUF: 0. Other kinds: `u32::MAX` (the
    /// kernel WARNs and returns `~0U`).
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Iovec, Source};
    /// let t = [Iovec::new(0x1000, 0x1000), Iovec::new(0x5000, 0x200)];
    /// let it = IovIter::<bvec::Pfn, Source>::iovec(&t, 0x1200)?;
    /// assert_eq!(it.gap_alignment(), 0x5000 | 0x2000);
    /// assert_eq!(IovIter::<bvec::Pfn, Source>::ubuf(3, 1).gap_alignment(), 0);
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn gap_alignment(&self) -> usize {
        let t = match self.kind {
            Kind::Ubuf { .. } => return 0,
            Kind::Iovec(t) => t,
            _ => return u32::MAX as usize,
        };
        let (mut res, mut prev_end, mut size) = (0usize, 0usize, self.count);
        for seg in t.iter().skip(self.idx) {
            if seg.len == 0 {
                continue;
            }
            if prev_end != 0 {
                res |= seg.base | prev_end;
            }
            prev_end = seg.base.wrapping_add(seg.len);
            if size <= seg.len {
                break;
            }
            size -= seg.len;
        }
        res
    }

    /// Whether every remaining segment starts on `addr_mask` and has a length on `len_mask`
    /// (`iov_iter_is_aligned`).
    ///
    /// IOVEC/KVEC/BVEC check each segment's clipped length and start (BVEC: in-page offset
    /// `bv_offset + skip`); empty iovec/kvec segments still have their address checked, and a
    /// zero count still checks the current segment (the kernel's do-while). Page list: count and
    /// `iov_offset`. DISCARD: true.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Iovec, Dest};
    /// let t = [Iovec::new(0x1000, 512), Iovec::new(0x2001, 0), Iovec::new(0x3000, 512)];
    /// let it = IovIter::<bvec::Pfn, Dest>::iovec(&t, 1024)?;
    /// assert!(!it.is_aligned(511, 511)); // the empty segment's address is odd
    /// assert!(it.is_aligned(0, 511));
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn is_aligned(&self, addr_mask: u32, len_mask: u32) -> bool {
        let (am, lm) = (addr_mask as usize, len_mask as usize);
        match self.kind {
            Kind::Ubuf { base } => {
                self.count & lm == 0 && base.wrapping_add(self.iov_offset) & am == 0
            }
            Kind::Iovec(t) => self.addr_aligned(t, am, lm),
            Kind::Kvec(t) => self.addr_aligned(t, am, lm),
            Kind::Bvec { table, .. } => {
                let (mut size, mut skip) = (self.count, self.iov_offset);
                for bv in table.iter().skip(self.idx) {
                    let len = min((bv.len() as usize).saturating_sub(skip), size);
                    if len & lm != 0 || (bv.offset() as usize + skip) & am != 0 {
                        return false;
                    }
                    size -= len;
                    skip = 0;
                    if size == 0 {
                        break;
                    }
                }
                true
            }
            Kind::PageList(_) => self.count & lm == 0 && self.iov_offset & am == 0,
            Kind::Discard => true,
        }
    }

    fn addr_aligned<T: AddrEntry>(&self, t: &[T], am: usize, lm: usize) -> bool {
        let (mut size, mut skip) = (self.count, self.iov_offset);
        for seg in t.iter().skip(self.idx) {
            let len = min(seg.length().saturating_sub(skip), size);
            if len & lm != 0 || seg.start().wrapping_add(skip) & am != 0 {
                return false;
            }
            size -= len;
            skip = 0;
            if size == 0 {
                break;
            }
        }
        true
    }
}
