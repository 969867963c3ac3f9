//! Copies between a buffer (or a page) and an iterator, and zeroing.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)

use core::cmp::min;

use bvec::{Page, PAGE_SIZE};

use crate::iter::Kind;
use crate::{CanReceive, CanSupply, Direction, IovIter, Memory, Step};

/// `check_copy_size`: the kernel refuses (WARN, 0) copies above `INT_MAX` bytes.
const COPY_MAX: usize = i32::MAX as usize;

/// `copy_to_user_iter` / `memcpy_to_iter`: the next chunk of `src` goes to the iterator.
///
/// The engine hands out consecutive chunks (`progress` is the sum of the lengths before) and
/// stops at the first short one, so the steps keep a cursor (`src`/`dst` hold the part not yet
/// reached) instead of slicing at `progress`: one length check per chunk, and the engine's
/// `progress` is dead in the copy loops.
struct CopyOut<'m, 's, M> {
    mem: &'m mut M,
    src: &'s [u8],
}

impl<'s, M> CopyOut<'_, 's, M> {
    /// The next `len` bytes of the source, or `None` (nothing copied) if fewer are left.
    #[inline(always)]
    fn next(&mut self, len: usize) -> Option<&'s [u8]> {
        let chunk = self.src.get(..len)?;
        self.src = self.src.get(len..).unwrap_or_default();
        Some(chunk)
    }
}

impl<P: Page, M: Memory<P>> Step<P> for CopyOut<'_, '_, M> {
    #[inline(always)]
    fn user(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(s) => self.mem.copy_to_user(addr, s),
            None => len,
        }
    }
    #[inline(always)]
    fn kernel(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(s) => self.mem.copy_to_kernel(addr, s),
            None => len,
        }
    }
    #[inline(always)]
    fn page(&mut self, page: P, offset: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(s) => self.mem.write(page, offset, s),
            None => len,
        }
    }
}

/// `copy_from_user_iter` / `memcpy_from_iter`: the iterator's next chunk lands in `dst`, which
/// holds the part of the caller's buffer not yet reached (see [`CopyOut`]).
struct CopyIn<'m, 's, M> {
    mem: &'m mut M,
    dst: &'s mut [u8],
}

impl<'s, M> CopyIn<'_, 's, M> {
    /// The next `len` bytes of the destination, or `None` (nothing copied) if fewer are left.
    #[inline(always)]
    fn next(&mut self, len: usize) -> Option<&'s mut [u8]> {
        if len > self.dst.len() {
            return None;
        }
        // Cannot panic: `len <= dst.len()` was checked just above (`split_at_mut_checked` is
        // newer than the kernel's minimum rustc).
        let (chunk, rest) = core::mem::take(&mut self.dst).split_at_mut(len);
        self.dst = rest;
        Some(chunk)
    }
}

impl<P: Page, M: Memory<P>> Step<P> for CopyIn<'_, '_, M> {
    #[inline(always)]
    fn user(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(d) => self.mem.copy_from_user(addr, d),
            None => len,
        }
    }
    #[inline(always)]
    fn kernel(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(d) => self.mem.copy_from_kernel(addr, d),
            None => len,
        }
    }
    #[inline(always)]
    fn page(&mut self, page: P, offset: usize, _progress: usize, len: usize) -> usize {
        match self.next(len) {
            Some(d) => self.mem.read(page, offset, d),
            None => len,
        }
    }
}

/// `zero_to_user_iter` / `zero_to_iter`.
struct Zero<'m, M> {
    mem: &'m mut M,
}

impl<P: Page, M: Memory<P>> Step<P> for Zero<'_, M> {
    #[inline(always)]
    fn user(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        self.mem.clear_user(addr, len)
    }
    #[inline(always)]
    fn kernel(&mut self, addr: usize, _progress: usize, len: usize) -> usize {
        self.mem.clear_kernel(addr, len)
    }
    #[inline(always)]
    fn page(&mut self, page: P, offset: usize, _progress: usize, len: usize) -> usize {
        self.mem.zero(page, offset, len)
    }
}

/// One source page's share of `copy_page_to_iter`: bytes from (`page`, `offset + progress`).
struct PageOut<'m, M, P> {
    mem: &'m mut M,
    page: P,
    offset: usize,
}

impl<P: Page, M: Memory<P>> Step<P> for PageOut<'_, M, P> {
    #[inline]
    fn user(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_page_to_user(self.page, self.offset + progress, addr, len)
    }
    #[inline]
    fn kernel(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_page_to_kernel(self.page, self.offset + progress, addr, len)
    }
    #[inline]
    fn page(&mut self, page: P, offset: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_page_to_page(self.page, self.offset + progress, page, offset, len)
    }
}

/// One destination page's share of `copy_page_from_iter`: bytes to (`page`, `offset + progress`).
struct PageIn<'m, M, P> {
    mem: &'m mut M,
    page: P,
    offset: usize,
}

impl<P: Page, M: Memory<P>> Step<P> for PageIn<'_, M, P> {
    #[inline]
    fn user(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_user_to_page(addr, self.page, self.offset + progress, len)
    }
    #[inline]
    fn kernel(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_kernel_to_page(addr, self.page, self.offset + progress, len)
    }
    #[inline]
    fn page(&mut self, page: P, offset: usize, progress: usize, len: usize) -> usize {
        self.mem
            .copy_page_to_page(page, offset, self.page, self.offset + progress, len)
    }
}

impl<P: Page, D: Direction> IovIter<'_, P, D> {
    /// Zeroes up to `bytes` bytes of the iterator and advances (`iov_iter_zero`). No direction
    /// check, as in the kernel; DISCARD only consumes the count. Returns the bytes zeroed.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{FlatMemory, IovIter, Iovec, Source};
    /// let mut bytes = [0xffu8; 32];
    /// let t = [Iovec::new(4, 4), Iovec::new(30, 8)]; // the second runs off the memory
    /// let mut it = IovIter::<bvec::Pfn, Source>::iovec(&t, 12)?;
    /// assert_eq!(it.zero(&mut FlatMemory::new(&mut bytes), 100), 6); // 4 + 2, then a fault
    /// assert_eq!((it.count(), it.iov_offset()), (6, 2));
    /// assert_eq!(bytes[4..8], [0; 4]);
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn zero<M: Memory<P>>(&mut self, mem: &mut M, bytes: usize) -> usize {
        self.iterate_and_advance(bytes, &mut Zero { mem })
    }

    fn receive_ok(&self) -> bool {
        !self.is_source()
    }
}

impl<P: Page, D: CanReceive> IovIter<'_, P, D> {
    /// Copies `src` into the iterator and advances (`copy_to_iter`). Returns the bytes copied:
    /// `min(src.len(), count)` unless the memory faults (user memory), in which case the copy
    /// stops at the fault. Returns 0 for a SOURCE iterator (run-time direction) and for
    /// `src.len() > INT_MAX`, like the kernel's WARN paths.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{Dest, FlatMemory, IovIter};
    /// let mut bytes = vec![0u8; 3 * 4096];
    /// let t = [Bvec::new(Pfn(0), 4094, 4)?, Bvec::new(Pfn(2), 0, 2)?]; // straddles pages 0-1
    /// let mut it = IovIter::<Pfn, Dest>::bvec(&t, 6).unwrap();
    /// let mut mem = FlatMemory::new(&mut bytes);
    /// assert_eq!(it.copy_to_iter(&mut mem, b"abcdefgh"), 6); // clamped to the count
    /// assert_eq!(it.copy_to_iter(&mut mem, b"x"), 0);
    /// assert_eq!(&bytes[4094..4098], b"abcd");
    /// assert_eq!(&bytes[8192..8194], b"ef");
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn copy_to_iter<M: Memory<P>>(&mut self, mem: &mut M, src: &[u8]) -> usize {
        if !self.receive_ok() || src.len() > COPY_MAX {
            return 0;
        }
        match self.kind {
            // UBUF inline at the call site (one user copy), every other kind out of line.
            Kind::Ubuf { base } => self.iterate_ubuf(base, src.len(), &mut CopyOut { mem, src }),
            _ => self.copy_to_segments(mem, src),
        }
    }

    /// [`IovIter::copy_to_iter`] of the table kinds, kept out of line: one copy of the walks per
    /// memory type instead of one per caller.
    #[inline(never)]
    fn copy_to_segments<M: Memory<P>>(&mut self, mem: &mut M, src: &[u8]) -> usize {
        self.iterate_and_advance(src.len(), &mut CopyOut { mem, src })
    }

    /// [`IovIter::copy_to_iter`] that either copies all of `src` or reverts and returns false
    /// (`copy_to_iter_full`).
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{Dest, FlatMemory, IovIter};
    /// let mut bytes = [0u8; 8];
    /// let mut mem = FlatMemory::new(&mut bytes);
    /// let mut it = IovIter::<bvec::Pfn, Dest>::ubuf(6, 4); // 2 bytes fit, 2 fault
    /// assert!(!it.copy_to_iter_full(&mut mem, &[1, 2, 3, 4]));
    /// assert_eq!(it.count(), 4); // the partial copy was reverted
    /// assert!(it.copy_to_iter_full(&mut mem, &[1, 2]));
    /// ```
    pub fn copy_to_iter_full<M: Memory<P>>(&mut self, mem: &mut M, src: &[u8]) -> bool {
        let n = self.copy_to_iter(mem, src);
        if n == src.len() {
            return true;
        }
        // Cannot fail: the n bytes were consumed just now.
        let _ = self.revert(n);
        false
    }

    /// Copies `bytes` bytes starting `offset` bytes into `page` (which may reach into the
    /// following pages `page.nth(1)`, ... of a compound page) into the iterator
    /// (`copy_page_to_iter`). Goes one source page at a time and stops at the first short copy.
    /// Returns 0 if `offset + bytes` overflows or the iterator is a SOURCE.
    ///
    /// The kernel also checks the range against the compound page's size (`page_copy_sane`);
    /// page handles here do not know it, so the caller must pass a range inside its page.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{Dest, FlatMemory, IovIter, Kvec};
    /// let mut bytes = vec![7u8; 3 * 4096];
    /// bytes[4096 + 10] = 42;
    /// let t = [Kvec::new(0, 3)];
    /// let mut it = IovIter::<bvec::Pfn, Dest>::kvec(&t, 3)?;
    /// // Offset 4106 from frame 0 is byte 10 of frame 1.
    /// let n = it.copy_page_to_iter(&mut FlatMemory::new(&mut bytes), bvec::Pfn(0), 4106, 3);
    /// assert_eq!((n, bytes[0]), (3, 42));
    /// # Ok::<(), iov::IovError>(())
    /// ```
    pub fn copy_page_to_iter<M: Memory<P>>(
        &mut self,
        mem: &mut M,
        page: P,
        offset: usize,
        bytes: usize,
    ) -> usize {
        if offset.checked_add(bytes).is_none() || !self.receive_ok() {
            return 0;
        }
        page_loop(page, offset, bytes, |pg, off, n| {
            if n > COPY_MAX {
                return 0;
            }
            self.iterate_and_advance(
                n,
                &mut PageOut {
                    mem: &mut *mem,
                    page: pg,
                    offset: off,
                },
            )
        })
    }
}

impl<P: Page, D: CanSupply> IovIter<'_, P, D> {
    /// Copies from the iterator into `dst` and advances (`copy_from_iter`). Returns the bytes
    /// copied (`min(dst.len(), count)` unless user memory faults). Returns 0 for a DEST iterator
    /// (run-time direction, including DISCARD) and for `dst.len() > INT_MAX`.
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{FlatMemory, IovIter, Kvec, Source};
    /// let mut bytes = *b"0123456789";
    /// let t = [Kvec::new(8, 2), Kvec::new(3, 0), Kvec::new(0, 3)];
    /// let mut it = IovIter::<bvec::Pfn, Source>::kvec(&t, 5)?;
    /// let mut dst = [0u8; 8];
    /// assert_eq!(it.copy_from_iter(&mut FlatMemory::new(&mut bytes), &mut dst), 5);
    /// assert_eq!(&dst[..5], b"89012");
    /// # Ok::<(), iov::IovError>(())
    /// ```
    #[inline]
    pub fn copy_from_iter<M: Memory<P>>(&mut self, mem: &mut M, dst: &mut [u8]) -> usize {
        if self.receive_ok() || dst.len() > COPY_MAX {
            return 0;
        }
        match self.kind {
            // UBUF inline at the call site (one user copy), every other kind out of line.
            Kind::Ubuf { base } => self.iterate_ubuf(base, dst.len(), &mut CopyIn { mem, dst }),
            _ => self.copy_from_segments(mem, dst),
        }
    }

    /// [`IovIter::copy_from_iter`] of the table kinds, kept out of line (see
    /// [`IovIter::copy_to_segments`]).
    #[inline(never)]
    fn copy_from_segments<M: Memory<P>>(&mut self, mem: &mut M, dst: &mut [u8]) -> usize {
        let len = dst.len();
        self.iterate_and_advance(len, &mut CopyIn { mem, dst })
    }

    /// [`IovIter::copy_from_iter`] that either fills all of `dst` or reverts and returns false
    /// (`copy_from_iter_full`).
    pub fn copy_from_iter_full<M: Memory<P>>(&mut self, mem: &mut M, dst: &mut [u8]) -> bool {
        let want = dst.len();
        let n = self.copy_from_iter(mem, dst);
        if n == want {
            return true;
        }
        // Cannot fail: the n bytes were consumed just now.
        let _ = self.revert(n);
        false
    }

    /// Copies up to `bytes` bytes from the iterator into `page` at `offset` (possibly reaching
    /// into `page.nth(1)`, ...) (`copy_page_from_iter`). Same rules as
    /// [`IovIter::copy_page_to_iter`].
    pub fn copy_page_from_iter<M: Memory<P>>(
        &mut self,
        mem: &mut M,
        page: P,
        offset: usize,
        bytes: usize,
    ) -> usize {
        if offset.checked_add(bytes).is_none() || self.receive_ok() {
            return 0;
        }
        page_loop(page, offset, bytes, |pg, off, n| {
            if n > COPY_MAX {
                return 0;
            }
            self.iterate_and_advance(
                n,
                &mut PageIn {
                    mem: &mut *mem,
                    page: pg,
                    offset: off,
                },
            )
        })
    }
}

/// The loop of `copy_page_to_iter`: one page of the compound range at a time; a partial copy
/// goes round again at the new offset, a zero copy stops.
fn page_loop<P: Page>(
    page: P,
    offset: usize,
    mut bytes: usize,
    mut copy: impl FnMut(P, usize, usize) -> usize,
) -> usize {
    let mut page = page.nth(offset >> bvec::PAGE_SHIFT);
    let mut offset = offset & (PAGE_SIZE - 1);
    let mut res = 0;
    loop {
        let want = min(bytes, PAGE_SIZE - offset);
        let n = min(copy(page, offset, want), want);
        res += n;
        bytes -= n;
        if bytes == 0 || n == 0 {
            break;
        }
        offset += n;
        if offset == PAGE_SIZE {
            page = page.nth(1);
            offset = 0;
        }
    }
    res
}
