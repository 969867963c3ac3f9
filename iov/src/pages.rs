//! Page getters: `iov_iter_get_pages2` and `iov_iter_extract_pages`.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! Both fill a caller-provided array (its length is `maxpages`) with the pages behind the next
//! bytes of the iterator, advance by the bytes those pages cover (at most `maxsize`) and return
//! `(bytes, offset0)`: `offset0` is where the first byte sits in the first page, the bytes run on
//! contiguously through the following array entries. Page lookups go through the memory:
//! [`UserMemory::user_pages`](crate::UserMemory::user_pages) (GUP: references for `get_pages`,
//! pins for `extract_pages`), [`KernelMemory::kernel_page`](crate::KernelMemory::kernel_page)
//! (`virt_to_page`) and [`KernelMemory::get_page`](crate::KernelMemory::get_page) (references
//! taken by `get_pages` on BVEC and page lists). The caller owns whatever references or pins
//! were taken.

use core::cmp::min;

use bvec::{Page, PAGE_SHIFT, PAGE_SIZE};

use crate::iter::{Kind, MAX_RW_COUNT};
use crate::{Direction, Folio, GupFlags, IovError, IovIter, Iovec, Memory};

const PAGE_MASK: usize = PAGE_SIZE - 1;

/// `want_pages_array`: pages needed for `size` bytes starting `start` into the first page,
/// capped at `maxpages`. `size <= MAX_RW_COUNT`, so nothing overflows.
#[inline]
fn want_pages(size: usize, start: usize, maxpages: usize) -> usize {
    min((size + start + PAGE_MASK) >> PAGE_SHIFT, maxpages)
}

/// `first_iovec_segment`: the address of the first non-empty byte and `size` clipped to its
/// segment. Returns `None` when no segment has a byte left (the kernel BUGs; unreachable while
/// the count invariant holds).
fn first_user_segment(
    base: Option<usize>,
    table: &[Iovec],
    idx: usize,
    off: usize,
    size: usize,
) -> Option<(usize, usize)> {
    if let Some(base) = base {
        return Some((base.wrapping_add(off), size));
    }
    let mut skip = off;
    for seg in table.get(idx..)? {
        let len = seg.len.saturating_sub(skip);
        if len != 0 {
            return Some((seg.base.wrapping_add(skip), min(size, len)));
        }
        skip = 0;
    }
    None
}

impl<P: Page, D: Direction> IovIter<'_, P, D> {
    /// Gets references on the pages behind the next bytes (`iov_iter_get_pages2`).
    ///
    /// UBUF/IOVEC: GUP on the first non-empty segment (`FOLL_WRITE` unless the iterator is a
    /// SOURCE). BVEC: `page + k` of the current segment only, a reference each. Page list:
    /// spans folios, a reference each. KVEC and DISCARD: [`IovError::Unsupported`] (`-EFAULT`).
    /// An empty `pages` or a zero `maxsize`/count returns `Ok((0, 0))`.
    ///
    /// # Errors
    ///
    /// [`IovError::Unsupported`] as above; [`IovError::Fault`] when GUP returns no page.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{FlatMemory, IovError, IovIter, Kvec, Source};
    /// let mut bytes = vec![0u8; 4 * 4096];
    /// let mut mem = FlatMemory::new(&mut bytes);
    /// let t = [Bvec::new(Pfn(1), 4000, 5000).unwrap()];
    /// let mut it = IovIter::<Pfn, Source>::bvec(&t, 5000)?;
    /// let mut pages = [Pfn(0); 4];
    /// assert_eq!(it.get_pages(&mut mem, &mut pages, usize::MAX), Ok((5000, 4000)));
    /// assert_eq!(&pages[..3], &[Pfn(1), Pfn(2), Pfn(3)]);
    /// assert_eq!(mem.refs(), 3);
    /// let k = [Kvec::new(0, 10)];
    /// let mut kit = IovIter::<Pfn, Source>::kvec(&k, 10)?;
    /// assert_eq!(kit.get_pages(&mut mem, &mut pages, 10), Err(IovError::Unsupported));
    /// # Ok::<(), IovError>(())
    /// ```
    pub fn get_pages<M: Memory<P>>(
        &mut self,
        mem: &mut M,
        pages: &mut [P],
        maxsize: usize,
    ) -> Result<(usize, usize), IovError> {
        if pages.is_empty() {
            return Ok((0, 0));
        }
        let maxsize = min(maxsize, self.count);
        if maxsize == 0 {
            return Ok((0, 0));
        }
        let maxsize = min(maxsize, MAX_RW_COUNT);
        match self.kind {
            Kind::Ubuf { .. } | Kind::Iovec(_) => self.user_pages(mem, pages, maxsize, false),
            Kind::Bvec { table, .. } => {
                let Some(bv) = table.get(self.idx) else {
                    return Err(IovError::BadState);
                };
                let bv_len = bv.len() as usize;
                let size = min(maxsize, bv_len.saturating_sub(self.iov_offset));
                let skip = self.iov_offset + bv.offset() as usize;
                let page = bv.page().nth(skip >> PAGE_SHIFT);
                let start = skip & PAGE_MASK;
                let n = want_pages(size, start, pages.len());
                for (k, slot) in pages.iter_mut().take(n).enumerate() {
                    *slot = page.nth(k);
                    mem.get_page(*slot);
                }
                let size = min(size, (n << PAGE_SHIFT) - start);
                // INVARIANT: size <= count and lies inside the current bvec; moving past it
                // when it is used up keeps the position normalised.
                self.count -= size;
                self.consumed += size;
                self.iov_offset += size;
                if self.iov_offset == bv_len {
                    self.iov_offset = 0;
                    self.idx += 1;
                }
                Ok((size, start))
            }
            Kind::PageList(t) => self.folio_pages(t, Some(mem), pages, maxsize),
            Kind::Kvec(_) | Kind::Discard => Err(IovError::Unsupported),
        }
    }

    /// Extracts the pages behind the next bytes (`iov_iter_extract_pages`): pins for user
    /// memory (see [`IovIter::user_backed`]), nothing taken for the other kinds.
    ///
    /// UBUF/IOVEC: first non-empty segment only. KVEC/BVEC: empty segments are skipped by moving
    /// the iterator (even if nothing is then extracted), one segment per call; KVEC pages come
    /// from [`KernelMemory::kernel_page`](crate::KernelMemory::kernel_page). Page list: spans
    /// folios. A zero `maxsize`/count returns `Ok((0, 0))`.
    ///
    /// # Errors
    ///
    /// [`IovError::NoPageRoom`] when `pages` is empty and bytes are left (`-ENOMEM`),
    /// [`IovError::Unsupported`] for DISCARD, [`IovError::Fault`] when the first page cannot be
    /// obtained. A later KVEC page that cannot be looked up shortens the result instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::Pfn;
    /// use iov::{FlatMemory, IovError, IovIter, Kvec, Dest};
    /// let mut bytes = vec![0u8; 4 * 4096];
    /// let mut mem = FlatMemory::new(&mut bytes);
    /// let t = [Kvec::new(0, 0), Kvec::new(100, 8000)];
    /// let mut it = IovIter::<Pfn, Dest>::kvec(&t, 8000)?;
    /// let mut pages = [Pfn(9); 1];
    /// // One page of room: the bytes up to the end of the first page.
    /// assert_eq!(it.extract_pages(&mut mem, &mut pages, usize::MAX), Ok((3996, 100)));
    /// assert_eq!((pages[0], it.count(), mem.refs()), (Pfn(0), 4004, 0));
    /// assert_eq!(it.extract_pages(&mut mem, &mut [], 1), Err(IovError::NoPageRoom));
    /// # Ok::<(), IovError>(())
    /// ```
    pub fn extract_pages<M: Memory<P>>(
        &mut self,
        mem: &mut M,
        pages: &mut [P],
        maxsize: usize,
    ) -> Result<(usize, usize), IovError> {
        let maxsize = min(min(maxsize, self.count), MAX_RW_COUNT);
        if maxsize == 0 {
            return Ok((0, 0));
        }
        match self.kind {
            Kind::Ubuf { .. } | Kind::Iovec(_) => {
                if pages.is_empty() {
                    return Err(IovError::NoPageRoom);
                }
                self.user_pages(mem, pages, maxsize, true)
            }
            Kind::Kvec(t) => {
                let Some((addr, size)) = self.skip_empty(t, maxsize, |s| (s.base, s.len)) else {
                    return Ok((0, 0));
                };
                let offset = addr & PAGE_MASK;
                let n = want_pages(size, offset, pages.len());
                if n == 0 {
                    return Err(IovError::NoPageRoom);
                }
                let first = addr & !PAGE_MASK;
                let mut got = 0;
                for (k, slot) in pages.iter_mut().take(n).enumerate() {
                    let Some(p) = mem.kernel_page(first.wrapping_add(k << PAGE_SHIFT)) else {
                        break;
                    };
                    *slot = p;
                    got += 1;
                }
                if got == 0 {
                    return Err(IovError::Fault { addr: first });
                }
                let size = min(size, (got << PAGE_SHIFT) - offset);
                self.advance(size);
                Ok((size, offset))
            }
            Kind::Bvec { table, .. } => {
                let pos =
                    self.skip_empty(table, maxsize, |b| (b.offset() as usize, b.len() as usize));
                let Some((skip, size)) = pos else {
                    return Ok((0, 0));
                };
                let Some(bv) = table.get(self.idx) else {
                    return Err(IovError::BadState);
                };
                let page = bv.page().nth(skip >> PAGE_SHIFT);
                let offset = skip & PAGE_MASK;
                let n = want_pages(size, offset, pages.len());
                if n == 0 {
                    return Err(IovError::NoPageRoom);
                }
                for (k, slot) in pages.iter_mut().take(n).enumerate() {
                    *slot = page.nth(k);
                }
                let size = min(size, (n << PAGE_SHIFT) - offset);
                self.advance(size);
                Ok((size, offset))
            }
            Kind::PageList(t) => {
                if pages.is_empty() {
                    return Err(IovError::NoPageRoom);
                }
                self.folio_pages::<M>(t, None, pages, maxsize)
            }
            Kind::Discard => Err(IovError::Unsupported),
        }
    }

    /// The KVEC/BVEC extract prologue: steps over segments with nothing left (moving the
    /// iterator, as the kernel does) and returns (`base + skip`, `min(maxsize, left)`), where
    /// `fields` gives (base, len) of an entry. `None` when the table ran out.
    fn skip_empty<T>(
        &mut self,
        table: &[T],
        maxsize: usize,
        fields: impl Fn(&T) -> (usize, usize),
    ) -> Option<(usize, usize)> {
        loop {
            let (base, len) = fields(table.get(self.idx)?);
            let size = min(maxsize, len.saturating_sub(self.iov_offset));
            if size != 0 {
                return Some((base.wrapping_add(self.iov_offset), size));
            }
            // INVARIANT: the segment has no byte left, so the position does not move.
            self.iov_offset = 0;
            self.idx += 1;
        }
    }

    /// UBUF/IOVEC page lookup through GUP, then advance.
    fn user_pages<M: Memory<P>>(
        &mut self,
        mem: &mut M,
        pages: &mut [P],
        maxsize: usize,
        pin: bool,
    ) -> Result<(usize, usize), IovError> {
        let (base, table) = match self.kind {
            Kind::Ubuf { base } => (Some(base), &[][..]),
            Kind::Iovec(t) => (None, t),
            _ => return Err(IovError::Unsupported),
        };
        let Some((addr, size)) =
            first_user_segment(base, table, self.idx, self.iov_offset, maxsize)
        else {
            return Err(IovError::BadState);
        };
        let start = addr & PAGE_MASK;
        let n = want_pages(size, start, pages.len());
        let flags = GupFlags {
            write: !self.is_source(),
            pin,
            nofault: self.nofault,
        };
        let first = addr & !PAGE_MASK;
        let got = match pages.get_mut(..n) {
            Some(p) => min(mem.user_pages(first, flags, p), n),
            None => 0,
        };
        if got == 0 {
            return Err(IovError::Fault { addr: first });
        }
        let size = min(size, (got << PAGE_SHIFT) - start);
        self.advance(size);
        Ok((size, start))
    }

    /// `iter_folioq_get_pages` / `iov_iter_extract_folioq_pages`: one array entry per page
    /// touched, spanning folios; takes references when `refs` is given.
    fn folio_pages<M: Memory<P>>(
        &mut self,
        table: &[Folio<P>],
        mut refs: Option<&mut M>,
        pages: &mut [P],
        maxsize: usize,
    ) -> Result<(usize, usize), IovError> {
        let offset0 = self.iov_offset & PAGE_MASK;
        let maxpages = want_pages(maxsize, offset0, pages.len());
        let mut nr = 0;
        let mut extracted = 0;
        while let Some(folio) = table.get(self.idx) {
            let off = self.iov_offset;
            let fsize = folio.size();
            if off < fsize {
                let part = min(
                    PAGE_SIZE - (off & PAGE_MASK),
                    min(maxsize - extracted, fsize - off),
                );
                let Some(slot) = pages.get_mut(nr) else {
                    break;
                };
                *slot = folio.head().nth(off >> PAGE_SHIFT);
                if let Some(m) = refs.as_deref_mut() {
                    m.get_page(*slot);
                }
                // INVARIANT: part <= maxsize - extracted <= count; the position moves by it.
                self.count -= part;
                self.consumed += part;
                self.iov_offset += part;
                extracted += part;
                nr += 1;
            }
            if nr >= maxpages || extracted >= maxsize {
                break;
            }
            if self.iov_offset >= fsize {
                self.iov_offset = 0;
                self.idx += 1;
            }
        }
        Ok((extracted, offset0))
    }
}
