//! The one iteration engine: `iterate_and_advance` over any step function.
//!
//! C header: [`include/linux/iov_iter.h`](srctree/include/linux/iov_iter.h)
//!
//! A [`Step`] is called once per chunk with the chunk's location, the bytes already processed in
//! this call (`progress`) and the chunk length; it returns the bytes it did **not** process. The
//! engine is generic over the step, so each (kind, step) pair is monomorphised and the per-chunk
//! path is a handful of adds, compares, one shift and one mask; `dyn Step` works through the same
//! code (`S: ?Sized`).

use core::cmp::min;

use bvec::{Bvec, Page, PAGE_SHIFT, PAGE_SIZE};

use crate::iter::Kind;
use crate::{Direction, Folio, IovIter, Iovec, Kvec};

const PAGE_MASK: usize = PAGE_SIZE - 1;

/// A step function: processes one chunk and returns the bytes it did not process.
///
/// Chunks never cross a page for page-backed kinds (BVEC, page list); for user and kernel
/// segments a chunk is the whole (remaining, clipped) segment. `progress` is the number of bytes
/// processed so far in this engine call, i.e. the offset of the chunk in the caller's buffer.
///
/// # Implementer notes
///
/// Return a value in `0..=len`; 0 means the whole chunk was processed. Any non-zero value stops
/// the walk right after the processed prefix, as in the kernel (a fault). Larger values are
/// clamped to `len`.
pub trait Step<P> {
    /// A chunk of user memory (`ustep`): `len` bytes at user address `addr`.
    fn user(&mut self, addr: usize, progress: usize, len: usize) -> usize;
    /// A chunk of kernel memory (KVEC): `len` bytes at kernel address `addr`.
    fn kernel(&mut self, addr: usize, progress: usize, len: usize) -> usize;
    /// A chunk of one page: `len` bytes at `offset` in `page`, `offset + len <= PAGE_SIZE`.
    fn page(&mut self, page: P, offset: usize, progress: usize, len: usize) -> usize;
}

/// Entries of a user or kernel vector: which step method their chunks go to.
trait AddrSeg: Copy {
    fn base(&self) -> usize;
    fn len(&self) -> usize;
    fn call<P, S: Step<P> + ?Sized>(
        step: &mut S,
        addr: usize,
        progress: usize,
        len: usize,
    ) -> usize;
}

impl AddrSeg for Iovec {
    #[inline(always)]
    fn base(&self) -> usize {
        self.base
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn call<P, S: Step<P> + ?Sized>(
        step: &mut S,
        addr: usize,
        progress: usize,
        len: usize,
    ) -> usize {
        step.user(addr, progress, len)
    }
}

impl AddrSeg for Kvec {
    #[inline(always)]
    fn base(&self) -> usize {
        self.base
    }
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn call<P, S: Step<P> + ?Sized>(
        step: &mut S,
        addr: usize,
        progress: usize,
        len: usize,
    ) -> usize {
        step.kernel(addr, progress, len)
    }
}

/// `iterate_iovec` / `iterate_kvec`: whole segments, empty ones skipped without a step call, any
/// short step stops inside the segment. Returns the progress; updates `idx`/`off`.
///
/// The walks go through the table with a shrinking slice (`split_first`), the kernel's `p++`, so
/// there is no index bounds check per segment, and the position arithmetic is wrapping where the
/// invariants bound it (see each comment): under `CONFIG_RUST_OVERFLOW_CHECKS` a plain `-`/`+`
/// the compiler cannot prove in range costs a compare, a branch and a panic path per page.
/// Segments wanted whole from their start, the common shape, run in a loop of their own.
#[inline(always)]
fn iterate_addr<V: AddrSeg, P, S: Step<P> + ?Sized>(
    table: &[V],
    idx: &mut usize,
    off: &mut usize,
    mut len: usize,
    step: &mut S,
) -> usize {
    let total = len;
    let mut rest = table.get(*idx..).unwrap_or_default();
    let mut skip = *off;
    'walk: loop {
        if skip == 0 {
            // One induction variable (the iterator's pointer against its end).
            let mut it = rest.iter();
            while let Some(seg) = it.as_slice().first() {
                let seg_len = seg.len();
                if seg_len > len {
                    break;
                }
                if seg_len != 0 {
                    // `progress = total - len` never wraps (`len` only shrinks); wrapping so
                    // that it costs nothing when the step ignores it (the copies do).
                    let remain = V::call(step, seg.base(), total.wrapping_sub(len), seg_len);
                    // `seg_len <= len`: no wrap.
                    len = len.wrapping_sub(seg_len);
                    if remain != 0 {
                        // A short step: give back what it did not do (at most the segment).
                        let remain = min(remain, seg_len);
                        // Back to at most the `len` before the step: no wrap.
                        len = len.wrapping_add(remain);
                        skip = seg_len - remain;
                        rest = it.as_slice();
                        break 'walk;
                    }
                }
                it.next();
                if len == 0 {
                    rest = it.as_slice();
                    break 'walk;
                }
            }
            rest = it.as_slice();
        }
        let Some((seg, tail)) = rest.split_first() else {
            break;
        };
        let seg_len = seg.len();
        // Saturating although `skip <= seg_len` (the position invariant): see `iterate_bvec`.
        let part = min(len, seg_len.saturating_sub(skip));
        if part != 0 {
            let remain = min(
                V::call(
                    step,
                    seg.base().wrapping_add(skip),
                    total.wrapping_sub(len),
                    part,
                ),
                part,
            );
            let done = part - remain;
            // `done <= part <= seg_len - skip` and `done <= len`: neither wraps.
            skip = skip.wrapping_add(done);
            len = len.wrapping_sub(done);
            if skip < seg_len {
                break;
            }
        }
        rest = tail;
        skip = 0;
        if len == 0 {
            break;
        }
    }
    // `rest` is a suffix of `table`.
    *idx = table.len().wrapping_sub(rest.len());
    *off = skip;
    total.wrapping_sub(len)
}

/// `iterate_bvec`: page by page; the walk moves past a segment as soon as it is finished, and
/// a short step stops it there.
///
/// The common shape (an entry inside one page, from its start, wholly wanted) runs in a loop of
/// its own, one step per entry and nothing else to track; any other entry is walked chunk by
/// chunk below it.
#[inline(always)]
fn iterate_bvec<P: Page, S: Step<P> + ?Sized>(
    table: &[Bvec<P>],
    idx: &mut usize,
    off: &mut usize,
    mut len: usize,
    step: &mut S,
) -> usize {
    let total = len;
    let mut rest = table.get(*idx..).unwrap_or_default();
    let mut skip = *off;
    'walk: loop {
        if skip == 0 {
            while let Some((bv, tail)) = rest.split_first() {
                let bv_len = bv.len() as usize;
                let bv_off = bv.offset() as usize;
                if bv_len > len || bv_off.wrapping_add(bv_len) > PAGE_SIZE {
                    break;
                }
                let remain = min(
                    step.page(bv.page(), bv_off, total.wrapping_sub(len), bv_len),
                    bv_len,
                );
                // `bv_len - remain <= bv_len <= len`: no wrap.
                len = len.wrapping_sub(bv_len - remain);
                if remain != 0 {
                    skip = bv_len - remain;
                    break 'walk;
                }
                rest = tail;
                if len == 0 {
                    break 'walk;
                }
            }
        }
        let Some((bv, tail)) = rest.split_first() else {
            break;
        };
        let bv_len = bv.len() as usize;
        // `skip <= bv_len <= u32::MAX` and `bv_offset <= u32::MAX`: the sum cannot wrap.
        let offset = (bv.offset() as usize).wrapping_add(skip);
        let in_page = offset & PAGE_MASK;
        // `skip < bv_len` (the position invariant), so a plain subtraction would do; saturating
        // (2 instructions per chunk) keeps an inconsistent state from reaching memory outside
        // the segment (a page past the bvec), defence in depth for the unsafe memory
        // implementations.
        let part = min(min(len, bv_len.saturating_sub(skip)), PAGE_SIZE - in_page);
        let remain = min(
            step.page(
                bv.page().nth(offset >> PAGE_SHIFT),
                in_page,
                total.wrapping_sub(len),
                part,
            ),
            part,
        );
        let done = part - remain;
        // `done <= part <= len` and `skip + done <= bv_len`: neither wraps.
        len = len.wrapping_sub(done);
        skip = skip.wrapping_add(done);
        if skip >= bv_len {
            skip = 0;
            rest = tail;
        }
        if remain != 0 || len == 0 {
            break;
        }
    }
    // `rest` is a suffix of `table`.
    *idx = table.len().wrapping_sub(rest.len());
    *off = skip;
    total.wrapping_sub(len)
}

/// `iterate_folioq` over a flat folio table: page by page inside each folio.
///
/// As in [`iterate_bvec`], the common shape (a single-page folio from its start, wholly
/// wanted) runs in a loop of its own, one step of a whole page per folio; any other folio is
/// walked below it.
#[inline(always)]
fn iterate_folios<P: Page, S: Step<P> + ?Sized>(
    table: &[Folio<P>],
    idx: &mut usize,
    off: &mut usize,
    mut len: usize,
    step: &mut S,
) -> usize {
    let total = len;
    let mut rest = table.get(*idx..).unwrap_or_default();
    let mut skip = *off;
    'walk: loop {
        if skip == 0 {
            while let Some((folio, tail)) = rest.split_first() {
                if folio.size() != PAGE_SIZE || len < PAGE_SIZE {
                    break;
                }
                let remain = min(
                    step.page(folio.head(), 0, total.wrapping_sub(len), PAGE_SIZE),
                    PAGE_SIZE,
                );
                // `PAGE_SIZE - remain <= PAGE_SIZE <= len`: no wrap.
                len = len.wrapping_sub(PAGE_SIZE - remain);
                if remain != 0 {
                    skip = PAGE_SIZE - remain;
                    break 'walk;
                }
                rest = tail;
                if len == 0 {
                    break 'walk;
                }
            }
        }
        let Some((folio, tail)) = rest.split_first() else {
            break;
        };
        let fsize = folio.size();
        let mut remain = 0;
        if skip < fsize {
            let in_page = skip & PAGE_MASK;
            let part = min(len, PAGE_SIZE - in_page);
            remain = min(
                step.page(
                    folio.head().nth(skip >> PAGE_SHIFT),
                    in_page,
                    total.wrapping_sub(len),
                    part,
                ),
                part,
            );
            let done = part - remain;
            // `done <= part <= len` and `skip + done <= fsize` (part stops at the page end,
            // `fsize` is a whole number of pages): neither wraps.
            len = len.wrapping_sub(done);
            skip = skip.wrapping_add(done);
        }
        if skip >= fsize {
            skip = 0;
            rest = tail;
        }
        if remain != 0 || len == 0 {
            break;
        }
    }
    // `rest` is a suffix of `table`.
    *idx = table.len().wrapping_sub(rest.len());
    *off = skip;
    total.wrapping_sub(len)
}

impl<P: Page, D: Direction> IovIter<'_, P, D> {
    /// Walks up to `len` bytes calling `step` on each chunk, then advances by what was processed
    /// (`iterate_and_advance`). Returns the bytes processed.
    ///
    /// `len` is clamped to [`IovIter::count`]; when the result is 0 the iterator is not touched
    /// (leading empty segments are not skipped). DISCARD never calls the step and consumes
    /// `min(len, count)`. There is no direction check (that is the caller's business, as in the
    /// kernel).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::Pfn;
    /// use iov::{IovIter, Iovec, Source, Step};
    /// struct Sum(usize);
    /// impl Step<Pfn> for Sum {
    ///     fn user(&mut self, _a: usize, _p: usize, len: usize) -> usize {
    ///         self.0 += len;
    ///         if len > 3 { 1 } else { 0 } // pretend the last byte faults
    ///     }
    ///     fn kernel(&mut self, _a: usize, _p: usize, _l: usize) -> usize { 0 }
    ///     fn page(&mut self, _pg: Pfn, _o: usize, _p: usize, _l: usize) -> usize { 0 }
    /// }
    /// let t = [Iovec::new(0x100, 2), Iovec::new(0x200, 0), Iovec::new(0x300, 8)];
    /// let mut it = IovIter::<Pfn, Source>::iovec(&t, 10)?;
    /// let mut s = Sum(0);
    /// assert_eq!(it.iterate_and_advance(10, &mut s), 9); // 2 + (8 - 1)
    /// assert_eq!((it.count(), it.nr_segs(), it.iov_offset()), (1, 1, 7));
    /// # Ok::<(), iov::IovError>(())
    /// ```
    #[inline(always)]
    pub fn iterate_and_advance<S: Step<P> + ?Sized>(&mut self, len: usize, step: &mut S) -> usize {
        let len = min(len, self.count);
        if len == 0 {
            return 0;
        }
        let progress = match self.kind {
            Kind::Ubuf { base } => return self.iterate_ubuf(base, len, step),
            Kind::Iovec(t) => iterate_addr(t, &mut self.idx, &mut self.iov_offset, len, step),
            Kind::Bvec { table, .. } => {
                iterate_bvec(table, &mut self.idx, &mut self.iov_offset, len, step)
            }
            Kind::Kvec(t) => iterate_addr(t, &mut self.idx, &mut self.iov_offset, len, step),
            Kind::PageList(t) => iterate_folios(t, &mut self.idx, &mut self.iov_offset, len, step),
            Kind::Discard => len,
        };
        // INVARIANT: progress <= len <= count; the position moved by exactly `progress` bytes.
        self.count -= progress;
        self.consumed += progress;
        progress
    }

    /// The UBUF case of [`IovIter::iterate_and_advance`], small enough to inline where the
    /// copy is called: the kernel's `iterate_and_advance2` also tests `iter_is_ubuf` first.
    #[inline(always)]
    pub(crate) fn iterate_ubuf<S: Step<P> + ?Sized>(
        &mut self,
        base: usize,
        len: usize,
        step: &mut S,
    ) -> usize {
        let len = min(len, self.count);
        if len == 0 {
            return 0;
        }
        let remain = min(step.user(base.wrapping_add(self.iov_offset), 0, len), len);
        let done = len - remain;
        // INVARIANT: done <= len <= count; a UBUF position is `iov_offset == consumed`.
        self.iov_offset += done;
        self.count -= done;
        self.consumed += done;
        done
    }

    /// [`IovIter::iterate_and_advance`] with a dynamically dispatched step: the same engine
    /// instantiated once for `dyn Step` (used to measure dyn against generic steps).
    #[inline(never)]
    pub fn iterate_and_advance_dyn(&mut self, len: usize, step: &mut dyn Step<P>) -> usize {
        self.iterate_and_advance(len, step)
    }
}
