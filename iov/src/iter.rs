//! The iterator: `struct iov_iter` with its kinds, position state and constructors.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)

use core::marker::PhantomData;

use bvec::{Bvec, BvecIter, IterState, Page, PAGE_SIZE};

use crate::segment::SegLen;
use crate::shape::Shape;
use crate::{AnyDir, BvecTable, Dest, Direction, FixedDirection, Folio, IovError, Iovec, Kvec};

/// `MAX_RW_COUNT`: `INT_MAX & PAGE_MASK`, the most one read/write (or page extraction) may move.
pub const MAX_RW_COUNT: usize = (i32::MAX as usize) & !(PAGE_SIZE - 1);

/// The kind of an iterator, numbered like the kernel's `enum iter_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum IterType {
    /// `ITER_UBUF`: one user buffer.
    Ubuf = 0,
    /// `ITER_IOVEC`: a table of user segments.
    Iovec = 1,
    /// `ITER_BVEC`: a table of page segments.
    Bvec = 2,
    /// `ITER_KVEC`: a table of kernel segments.
    Kvec = 3,
    /// `ITER_FOLIOQ`: a list of folios (this crate's page list).
    PageList = 4,
    /// `ITER_DISCARD`: a sink that drops data.
    Discard = 6,
}

/// The segment table (or buffer) of an iterator.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind<'a, P> {
    /// `ITER_UBUF`: `base` is never moved; the position is `iov_offset`.
    Ubuf { base: usize },
    /// `ITER_IOVEC`.
    Iovec(&'a [Iovec]),
    /// `ITER_KVEC`.
    Kvec(&'a [Kvec]),
    /// `ITER_BVEC`; `shape` caches whether every entry starts and ends on a page boundary,
    /// which makes `npages` O(1), and the stride of a table checked by [`BvecTable`] (positions
    /// are arithmetic, so advancing is O(1)).
    Bvec { table: &'a [Bvec<P>], shape: Shape },
    /// `ITER_FOLIOQ` over a flat folio table.
    PageList(&'a [Folio<P>]),
    /// `ITER_DISCARD`.
    Discard,
}

/// An iterator over the bytes of a segment table: the kernel's `struct iov_iter`.
///
/// `D` is the direction ([`Source`](crate::Source), [`Dest`], [`AnyDir`]). The iterator only
/// borrows its table; operations that move bytes take the memory as an argument.
///
/// Kinds (see [`IterType`]):
/// - UBUF ([`IovIter::ubuf`]) and IOVEC ([`IovIter::iovec`]): user memory;
/// - KVEC ([`IovIter::kvec`]): kernel addresses;
/// - BVEC ([`IovIter::bvec`]): page segments, possibly multipage;
/// - page list ([`IovIter::page_list`]): models `ITER_FOLIOQ` (and, for fully populated
///   ranges, `ITER_XARRAY`) as a flat table of [`Folio`]s of `PAGE_SIZE << order` bytes, with a
///   start offset into the first one. The kernel chains 31-slot `folio_queue` segments; the flat
///   table has no segment boundary, so the `slot == 31` wrap quirks do not arise;
/// - DISCARD ([`IovIter::discard`], DEST only): counts bytes and drops them.
///
/// The position mirrors the kernel: current segment index, `iov_offset` into it, `count` bytes
/// left, `nr_segs` segments left including the current one. Results match Linux 6.12 including
/// where the position lands (an iteration that ends exactly at a segment end moves past it but
/// not past following empty segments; an advance skips them).
///
/// # Invariants
///
/// - `consumed <= capacity` and `count <= capacity - consumed`, where `capacity` is the count
///   given at construction, which the segments were checked to hold: so they always hold the
///   bytes `count` promises (a rule lib/iov_iter.c only documents). Construction walks only the entries that count covers.
/// - The position (`idx`, `iov_offset`) lies `consumed` bytes after the start position, with
///   `idx <= table.len()`; for UBUF `iov_offset == consumed`.
/// - `source` agrees with `D` when `D` is [`Source`](crate::Source) or [`Dest`]; DISCARD is
///   never a source.
///
/// Walks never index out of bounds even if a state were inconsistent; they stop at the table end.
///
/// # Examples
///
/// ```
/// use bvec::Pfn;
/// use iov::{IovIter, Iovec, Dest, IterType};
/// let table = [Iovec::new(0x1000, 0), Iovec::new(0x2000, 10), Iovec::new(0x3000, 5)];
/// let mut it = IovIter::<Pfn, Dest>::iovec(&table, 15)?;
/// assert_eq!((it.iter_type(), it.count(), it.nr_segs()), (IterType::Iovec, 15, 3));
/// it.advance(10);
/// assert_eq!((it.count(), it.nr_segs(), it.iov_offset()), (5, 1, 0));
/// it.revert(7)?; // back into the second segment
/// assert_eq!((it.count(), it.nr_segs(), it.iov_offset()), (12, 2, 3));
/// assert!(it.revert(11).is_err()); // only 3 bytes were consumed
/// # Ok::<(), iov::IovError>(())
/// ```
#[derive(Clone, Debug)]
pub struct IovIter<'a, P, D> {
    pub(crate) kind: Kind<'a, P>,
    /// Index of the current segment (0 for UBUF and DISCARD).
    pub(crate) idx: usize,
    /// Bytes consumed in the current segment (UBUF: since `base`).
    pub(crate) iov_offset: usize,
    /// Bytes left.
    pub(crate) count: usize,
    /// Bytes consumed since construction; bounds `revert`.
    pub(crate) consumed: usize,
    /// The count at construction: the segments hold at least this many bytes after the start
    /// position (checked then); bounds `reexpand` and `restore`.
    pub(crate) capacity: usize,
    /// Where the construction count ends, as (`idx`, `iov_offset`) normalised like an advance
    /// landing there: advancing to it is O(1). Unused, and not computed, for UBUF, DISCARD and
    /// a strided BVEC table (`Kind::Bvec` whose `shape` has a stride), where every position is
    /// arithmetic.
    pub(crate) end: (usize, usize),
    /// `data_source`.
    pub(crate) source: bool,
    /// `nofault`: passed to GUP as `FOLL_NOFAULT`.
    pub(crate) nofault: bool,
    pub(crate) _dir: PhantomData<D>,
}

/// Entries `find_end` sums per compare when their lengths are below 2^32.
const FIND_BLOCK: usize = 8;

/// Finds where the first `need` bytes of `table` end, as (`idx`, offset) normalised like the
/// advance walk (a boundary lands at the next entry, past any empty ones), walking only the
/// entries those bytes cover: like the kernel's O(1) constructors, entries beyond the count cost
/// nothing. `f` sees each entry holding at least one of the bytes (and empty ones passed on the
/// way). `Err(total)` when the table holds only `total < need` bytes.
#[inline]
fn find_end<T: SegLen>(
    table: &[T],
    need: usize,
    mut f: impl FnMut(&T),
) -> Result<(usize, usize), usize> {
    let mut size = need;
    let mut rest = table;
    if T::LEN_FITS_U32 && usize::BITS >= 32 + FIND_BLOCK.ilog2() {
        // Whole blocks first: one compare per `FIND_BLOCK` entries instead of one per entry.
        // A block the count ends inside is left to the entry walk below, which stops in it.
        // The walk was 9 instructions per entry; this is about 5 (in-kernel `bvec_split`).
        while let Some((block, tail)) = rest.split_first_chunk::<FIND_BLOCK>() {
            // Written out: over a loop (or a fold) the compiler makes two loops.
            let [a, b, c, d, e, g, h, i] = block;
            // Each length is below 2^32 and `usize` has the bits for eight: no wrap.
            let sum = a.seg_len().wrapping_add(b.seg_len());
            let sum = sum.wrapping_add(c.seg_len()).wrapping_add(d.seg_len());
            let sum = sum.wrapping_add(e.seg_len()).wrapping_add(g.seg_len());
            let sum = sum.wrapping_add(h.seg_len()).wrapping_add(i.seg_len());
            if sum > size {
                break;
            }
            f(a);
            f(b);
            f(c);
            f(d);
            f(e);
            f(g);
            f(h);
            f(i);
            // `sum <= size`: no wrap.
            size = size.wrapping_sub(sum);
            rest = tail;
        }
    }
    // One induction variable (the slice iterator's pointer); the index is recovered from what
    // is left only where the walk stops.
    let mut rest = rest.iter();
    while let Some(seg) = rest.next() {
        let len = seg.seg_len();
        if size < len {
            if size > 0 {
                f(seg);
            }
            // `rest` is a suffix of `table` that no longer holds `seg`: the index cannot wrap.
            return Ok((table.len().wrapping_sub(rest.len()).wrapping_sub(1), size));
        }
        f(seg);
        // `len <= size`: no wrap.
        size = size.wrapping_sub(len);
    }
    if size == 0 {
        Ok((table.len(), 0))
    } else {
        // `size` only shrank from `need`: no wrap.
        Err(need.wrapping_sub(size))
    }
}

/// The error for a count the segments cannot hold.
fn exceeds(count: usize) -> impl FnOnce(usize) -> IovError {
    move |available| IovError::CountExceedsSegments { count, available }
}

impl<'a, P: Page, D: FixedDirection> IovIter<'a, P, D> {
    fn build(kind: Kind<'a, P>, iov_offset: usize, count: usize, end: (usize, usize)) -> Self {
        // INVARIANT: callers checked that the segments hold `count` bytes after the start
        // position and found where they end (`end`); the position is the start (consumed 0).
        Self {
            kind,
            idx: 0,
            iov_offset,
            count,
            consumed: 0,
            capacity: count,
            end,
            source: D::FIXED == Some(true),
            nofault: false,
            _dir: PhantomData,
        }
    }

    /// A single user buffer of `count` bytes at `base` (`iov_iter_ubuf`).
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Source};
    /// let it = IovIter::<bvec::Pfn, Source>::ubuf(0x4000, 0);
    /// assert_eq!((it.count(), it.nr_segs()), (0, 1));
    /// ```
    pub fn ubuf(base: usize, count: usize) -> Self {
        Self::build(Kind::Ubuf { base }, 0, count, (0, 0))
    }

    /// A table of user segments (`iov_iter_init`); `count` may be less than the table holds.
    ///
    /// # Errors
    ///
    /// [`IovError::CountExceedsSegments`] when `count` exceeds the sum of the lengths.
    pub fn iovec(table: &'a [Iovec], count: usize) -> Result<Self, IovError> {
        let end = find_end(table, count, |_| {}).map_err(exceeds(count))?;
        Ok(Self::build(Kind::Iovec(table), 0, count, end))
    }

    /// A table of kernel segments (`iov_iter_kvec`).
    ///
    /// # Errors
    ///
    /// [`IovError::CountExceedsSegments`] when `count` exceeds the sum of the lengths.
    pub fn kvec(table: &'a [Kvec], count: usize) -> Result<Self, IovError> {
        let end = find_end(table, count, |_| {}).map_err(exceeds(count))?;
        Ok(Self::build(Kind::Kvec(table), 0, count, end))
    }

    /// A table of page segments (`iov_iter_bvec`). Walks the table once (O(`nr_segs`)) to check
    /// the count and to note whether every entry is page-aligned at both ends.
    ///
    /// # Errors
    ///
    /// [`IovError::CountExceedsSegments`] when `count` exceeds the sum of the lengths.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{IovIter, Dest};
    /// let t = [Bvec::new(Pfn(1), 4000, 200)?];
    /// let it = IovIter::<Pfn, Dest>::bvec(&t, 200).unwrap();
    /// assert_eq!(it.npages(usize::MAX), 2);
    /// assert!(IovIter::<Pfn, Dest>::bvec(&t, 201).is_err());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    #[inline]
    pub fn bvec(table: &'a [Bvec<P>], count: usize) -> Result<Self, IovError> {
        // Every offset and length a multiple of the page size iff their bits below it, ORed
        // together, are all zero: one OR per entry, one test at the end.
        let mut bits = 0u32;
        let end =
            find_end(table, count, |bv| bits |= bv.offset() | bv.len()).map_err(exceeds(count))?;
        let kind = Kind::Bvec {
            table,
            shape: Shape::new(bits & (PAGE_SIZE - 1) as u32 == 0, None),
        };
        Ok(Self::build(kind, 0, count, end))
    }

    /// A BVEC iterator over the first `count` bytes of a checked table ([`BvecTable`], e.g. a
    /// registered buffer): the same iterator as [`IovIter::bvec`] over its entries, built in O(1)
    /// when `count` is the table's total or the table is strided (else a walk over the entries
    /// `count` covers, as [`IovIter::bvec`]). Advancing it is O(1) on a strided table.
    ///
    /// # Errors
    ///
    /// [`IovError::CountExceedsSegments`] when `count` exceeds the table's total.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{BvecTable, IovIter, Source};
    /// let t = [Bvec::new(Pfn(1), 0, 4096).unwrap(), Bvec::new(Pfn(2), 0, 4096).unwrap(), Bvec::new(Pfn(3), 0, 4096).unwrap()];
    /// let reg = BvecTable::new(&t)?;
    /// let mut it = IovIter::<Pfn, Source>::bvec_checked(&reg, 12288)?;
    /// it.advance(8200); // arithmetic, no walk
    /// assert_eq!((it.nr_segs(), it.iov_offset(), it.count()), (1, 8, 4088));
    /// assert!(IovIter::<Pfn, Source>::bvec_checked(&reg, 12289).is_err());
    /// # Ok::<(), iov::IovError>(())
    /// ```
    #[inline]
    pub fn bvec_checked(table: &BvecTable<'a, P>, count: usize) -> Result<Self, IovError> {
        // `import_fixed(table, 0, count)` without the start position it would compute.
        if count > table.total() {
            return Err(exceeds(count)(table.total()));
        }
        let end = table.end_within(count);
        Ok(Self::build(Self::checked_kind(table), 0, count, end))
    }

    /// The BVEC kind over a checked table, with what the check recorded.
    #[inline(always)]
    fn checked_kind(table: &BvecTable<'a, P>) -> Kind<'a, P> {
        Kind::Bvec {
            table: table.entries(),
            shape: table.shape(),
        }
    }

    /// The `len` bytes at byte `offset` of a checked table, as io_uring/rsrc.c
    /// `io_import_fixed()` imports an I/O on a registered buffer: an iterator over the whole
    /// table with count `offset + len`, advanced by `offset`. O(1) on a strided table (the
    /// kernel's arithmetic: entries after the first skipped by `offset >> shift`); else two walks
    /// over the entries before `offset + len`. The result equals
    /// `IovIter::bvec(entries, offset + len)` advanced by `offset` in every observable state,
    /// including that [`IovIter::revert`] may go back to the table start.
    ///
    /// # Errors
    ///
    /// [`IovError::OffsetOutOfRange`] when `offset` exceeds the table's total,
    /// [`IovError::CountExceedsSegments`] when `len` exceeds the bytes after `offset` (the
    /// kernel's `-EFAULT` for a range outside the registered region).
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{BvecTable, IovError, IovIter, Source};
    /// let t = [Bvec::new(Pfn(1), 96, 4000).unwrap(), Bvec::new(Pfn(2), 0, 4096).unwrap(), Bvec::new(Pfn(3), 0, 4096).unwrap()];
    /// let reg = BvecTable::new(&t)?;
    /// let it = IovIter::<Pfn, Source>::import_fixed(&reg, 8100, 4000)?;
    /// assert_eq!((it.segment_index(), it.iov_offset(), it.count(), it.consumed()), (2, 4, 4000, 8100));
    /// assert_eq!(IovIter::<Pfn, Source>::import_fixed(&reg, 8100, 4093).unwrap_err(),
    ///            IovError::CountExceedsSegments { count: 4093, available: 4092 });
    /// # Ok::<(), iov::IovError>(())
    /// ```
    #[inline]
    pub fn import_fixed(
        table: &BvecTable<'a, P>,
        offset: usize,
        len: usize,
    ) -> Result<Self, IovError> {
        let total = table.total();
        let Some(available) = total.checked_sub(offset) else {
            return Err(IovError::OffsetOutOfRange {
                offset,
                limit: total,
            });
        };
        if len > available {
            return Err(exceeds(len)(available));
        }
        // No wrap: offset + len <= total, so both positions exist; offset 0 is at (0, 0):
        // every entry holds at least one byte.
        let capacity = offset.wrapping_add(len);
        let (start, end) = table.start_and_end_within(offset, capacity);
        let kind = Self::checked_kind(table);
        // INVARIANT: the table holds `total >= offset + len` bytes; the position is `offset`
        // bytes after the start (consumed), `len` bytes are left, and `end` is where the
        // `capacity = offset + len` bytes end (unused for a strided table). A table checked by
        // `BvecTable` makes its `shape` (page alignment, stride) true of every entry.
        Ok(Self {
            kind,
            idx: start.0,
            iov_offset: start.1,
            count: len,
            consumed: offset,
            capacity,
            end,
            source: D::FIXED == Some(true),
            nofault: false,
            _dir: PhantomData,
        })
    }

    /// A folio list starting `offset` bytes into the first folio (`iov_iter_folio_queue` with
    /// `first_slot == 0`).
    ///
    /// # Errors
    ///
    /// [`IovError::OffsetOutOfRange`] when `offset` exceeds the first folio's size (the kernel's
    /// iteration and advance disagree on such offsets), [`IovError::CountExceedsSegments`] when
    /// `offset + count` exceeds the table.
    pub fn page_list(table: &'a [Folio<P>], offset: usize, count: usize) -> Result<Self, IovError> {
        let limit = table.first().map_or(0, Folio::size);
        if offset > limit {
            return Err(IovError::OffsetOutOfRange { offset, limit });
        }
        // No underflow in the error: offset <= first folio size <= total (or both are 0).
        let end = find_end(table, offset.saturating_add(count), |_| {})
            .map_err(|total| exceeds(count)(total - offset))?;
        Ok(Self::build(Kind::PageList(table), offset, count, end))
    }
}

impl<P: Page> IovIter<'_, P, Dest> {
    /// A sink of `count` bytes that drops what is copied to it (`iov_iter_discard`; READ only).
    ///
    /// # Examples
    ///
    /// ```
    /// use iov::{IovIter, Dest};
    /// let it = IovIter::<bvec::Pfn, Dest>::discard(100);
    /// assert_eq!((it.count(), it.nr_segs()), (100, 0));
    /// ```
    pub fn discard(count: usize) -> Self {
        Self::build(Kind::Discard, 0, count, (0, 0))
    }
}

impl<'a, P: Page, D: Direction> IovIter<'a, P, D> {
    /// Forgets the direction type, keeping it at run time (`AnyDir`).
    pub fn into_any(self) -> IovIter<'a, P, AnyDir> {
        IovIter {
            kind: self.kind,
            idx: self.idx,
            iov_offset: self.iov_offset,
            count: self.count,
            consumed: self.consumed,
            capacity: self.capacity,
            end: self.end,
            source: self.source,
            nofault: self.nofault,
            _dir: PhantomData,
        }
    }

    /// The kind of this iterator.
    pub fn iter_type(&self) -> IterType {
        match self.kind {
            Kind::Ubuf { .. } => IterType::Ubuf,
            Kind::Iovec(_) => IterType::Iovec,
            Kind::Kvec(_) => IterType::Kvec,
            Kind::Bvec { .. } => IterType::Bvec,
            Kind::PageList(_) => IterType::PageList,
            Kind::Discard => IterType::Discard,
        }
    }

    /// Whether the iterator holds the data (`iov_iter_rw() == WRITE`, `ITER_SOURCE`).
    #[inline]
    pub fn is_source(&self) -> bool {
        D::FIXED.unwrap_or(self.source)
    }

    /// Whether the memory is user memory (`user_backed_iter`: UBUF or IOVEC); extraction then pins.
    #[inline]
    pub fn user_backed(&self) -> bool {
        matches!(self.kind, Kind::Ubuf { .. } | Kind::Iovec(_))
    }

    /// Sets `nofault` (GUP lookups then pass `FOLL_NOFAULT`).
    pub fn set_nofault(&mut self, nofault: bool) {
        self.nofault = nofault;
    }

    /// Bytes left (`iov_iter_count`).
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes consumed in the current segment (UBUF: since the buffer start; page list: offset
    /// into the current folio).
    #[inline]
    pub fn iov_offset(&self) -> usize {
        self.iov_offset
    }

    /// Segments left including the current one (`nr_segs`): 1 for UBUF, 0 for DISCARD, folios
    /// left for a page list (the kernel keeps a slot number there instead).
    #[inline]
    pub fn nr_segs(&self) -> usize {
        match self.kind {
            Kind::Ubuf { .. } => 1,
            Kind::Discard => 0,
            Kind::Iovec(t) => t.len().saturating_sub(self.idx),
            Kind::Kvec(t) => t.len().saturating_sub(self.idx),
            Kind::Bvec { table, .. } => table.len().saturating_sub(self.idx),
            Kind::PageList(t) => t.len().saturating_sub(self.idx),
        }
    }

    /// Index of the current segment in the table given at construction (`folioq_slot` for a
    /// page list).
    #[inline]
    pub fn segment_index(&self) -> usize {
        self.idx
    }

    /// Bytes consumed since construction: the most [`IovIter::revert`] accepts.
    #[inline]
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// For a BVEC iterator: the remaining table (current segment first) and the offset into its
    /// first entry, as `bio_iov_bvec_set` needs to share the table with a bio without copying.
    /// The bytes described are the first [`IovIter::count`] bytes from that offset.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{IovIter, Source};
    /// let t = [Bvec::new(Pfn(1), 0, 4096)?, Bvec::new(Pfn(9), 0, 4096)?];
    /// let mut it = IovIter::<Pfn, Source>::bvec(&t, 8192).unwrap();
    /// it.advance(4100);
    /// let (rest, off) = it.bvec_table().unwrap();
    /// assert_eq!((rest.len(), off, it.count()), (1, 4, 4092));
    /// assert!(IovIter::<Pfn, Source>::ubuf(0, 1).bvec_table().is_none());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn bvec_table(&self) -> Option<(&'a [Bvec<P>], usize)> {
        match self.kind {
            Kind::Bvec { table, .. } => {
                Some((table.get(self.idx..).unwrap_or(&[]), self.iov_offset))
            }
            _ => None,
        }
    }

    /// For a BVEC iterator: a [`BvecIter`] over the remaining table covering the first
    /// `min(count, max_bytes)` bytes, starting at `sector` — what a bio that reuses this
    /// iterator's table iterates (`bio_iov_bvec_set`, seed 000).
    ///
    /// O(1): the table is neither copied nor walked, because this iterator's invariant already
    /// guarantees that `count` bytes follow its position. `None` for other kinds.
    ///
    /// # Examples
    ///
    /// ```
    /// use bvec::{Bvec, Pfn};
    /// use iov::{IovIter, Source};
    /// let t = [Bvec::new(Pfn(1), 0, 4096)?, Bvec::new(Pfn(9), 0, 4096)?];
    /// let mut it = IovIter::<Pfn, Source>::bvec(&t, 8192).unwrap();
    /// it.advance(4100);
    /// let bi = it.bvec_iter(8, u32::MAX).unwrap();
    /// assert_eq!((bi.sector(), bi.remaining(), bi.table().len()), (8, 4092, 1));
    /// assert_eq!(bi.current(), Some(Bvec::new(Pfn(9), 4, 4092)?));
    /// assert!(IovIter::<Pfn, Source>::ubuf(0, 1).bvec_iter(0, 1).is_none());
    /// # Ok::<(), bvec::BvecError>(())
    /// ```
    pub fn bvec_iter(&self, sector: u64, max_bytes: u32) -> Option<BvecIter<'a, P>> {
        let (table, offset) = self.bvec_table()?;
        let size = u32::try_from(self.count).unwrap_or(u32::MAX).min(max_bytes);
        let done = u32::try_from(offset).ok()?;
        // The position is normalised (`offset` inside the first remaining entry, or the table
        // end), and the invariant `count <= capacity - consumed` means `size` bytes follow it.
        BvecIter::from_state_unchecked(table, IterState::new(sector, size, 0, done)).ok()
    }

    /// For an IOVEC iterator: the remaining table and the offset into its first entry.
    pub fn iovec_table(&self) -> Option<(&'a [Iovec], usize)> {
        match self.kind {
            Kind::Iovec(t) => Some((t.get(self.idx..).unwrap_or(&[]), self.iov_offset)),
            _ => None,
        }
    }

    /// For a KVEC iterator: the remaining table and the offset into its first entry.
    pub fn kvec_table(&self) -> Option<(&'a [Kvec], usize)> {
        match self.kind {
            Kind::Kvec(t) => Some((t.get(self.idx..).unwrap_or(&[]), self.iov_offset)),
            _ => None,
        }
    }

    /// For a page list: the remaining folios and the offset into the first one.
    pub fn folio_table(&self) -> Option<(&'a [Folio<P>], usize)> {
        match self.kind {
            Kind::PageList(t) => Some((t.get(self.idx..).unwrap_or(&[]), self.iov_offset)),
            _ => None,
        }
    }

    /// For a UBUF iterator: the buffer's base address (never moved; see [`IovIter::iov_offset`]).
    pub fn ubuf_base(&self) -> Option<usize> {
        match self.kind {
            Kind::Ubuf { base } => Some(base),
            _ => None,
        }
    }
}
