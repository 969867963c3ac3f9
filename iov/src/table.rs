//! A validated bvec table: what a registered buffer (io_uring/rsrc.c `io_sqe_buffer_register()`)
//! or a bio's table is checked for once, so that iterators over it are built, advanced and
//! imported at an offset in O(1), as the kernel's are.
//!
//! C header: [`include/linux/bvec.h`](srctree/include/linux/bvec.h)

use bvec::{Bvec, Page, PAGE_SIZE};

use crate::shape::Shape;
use crate::IovError;

/// A bvec table checked once (O(entries)): its total length, whether every entry is page-aligned
/// at both ends, and whether byte positions in it are arithmetic.
///
/// The kernel trusts a registered buffer's table (io_uring/rsrc.c `io_import_fixed()` skips to an
/// offset by `offset >> imu->folio_shift` because registration made every entry after the first
/// one folio). This type is where that trust comes from here: [`BvecTable::new`] walks the table
/// once and records
///
/// - the total bytes, so an iterator over any count up to it needs no walk to check the count;
/// - *strided*: every entry after the first holds exactly `1 << shift` bytes except the last,
///   which holds at most that (page-sized entries, or the folio-sized entries of a registration
///   of huge pages). The byte at position `b` then lies in entry `1 + ((b - first) >> shift)` at
///   offset `(b - first) & mask`, so construction, advance and import are O(1);
/// - *page-aligned*: every entry starts and ends on a page boundary (O(1) `npages`).
///
/// # Invariants
///
/// - `total` is the sum of the entry lengths (it fits in `usize`); `first` is the first
///   entry's length (0 for an empty table).
/// - `shape` is page-aligned iff every entry has `(offset | len) % PAGE_SIZE == 0`.
/// - When `shape` has a stride shift `s` (at most 32, by the invariant of its type,
///   `shape::Shape`): every entry after the first holds `1 << s` bytes except the last, which
///   holds at most `1 << s`.
///
/// The table is borrowed for `'a`, so it cannot change while this record of it exists.
///
/// # Examples
///
/// ```
/// use bvec::{Bvec, Pfn};
/// use iov::BvecTable;
/// let t = [Bvec::new(Pfn(1), 512, 3584).unwrap(), Bvec::new(Pfn(2), 0, 4096).unwrap(), Bvec::new(Pfn(3), 0, 100).unwrap()];
/// let reg = BvecTable::new(&t)?;
/// assert_eq!((reg.total(), reg.stride_shift(), reg.is_page_aligned()), (7780, Some(12), false));
/// assert_eq!(reg.position(3584), Some((1, 0)));   // arithmetic: the second entry's start
/// assert_eq!(reg.position(7779), Some((2, 99)));
/// assert_eq!(reg.position(7780), Some((3, 0)));   // the end
/// assert_eq!(reg.position(7781), None);
/// # Ok::<(), iov::IovError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BvecTable<'a, P> {
    table: &'a [Bvec<P>],
    total: usize,
    first: usize,
    shape: Shape,
}

/// The stride shift of `table` if it has one (see [`BvecTable`]), computed in one pass.
fn stride_of<P: Page>(table: &[Bvec<P>]) -> Option<u8> {
    let rest = table.get(1..).unwrap_or_default();
    let Some((last, middle)) = rest.split_last() else {
        // Zero or one entry: every position is in the first entry (or the end).
        return Some(0);
    };
    // The stride is the second entry's length when there are middle entries, else any power of
    // two holding the last entry. `u64`: the next power of two of a `u32` can be 2^32.
    let stride = match middle.first() {
        Some(bv) => u64::from(bv.len()),
        None => u64::from(last.len()).next_power_of_two(),
    };
    if !stride.is_power_of_two() {
        return None;
    }
    let all_full = middle.iter().all(|bv| u64::from(bv.len()) == stride);
    if !all_full || u64::from(last.len()) > stride {
        return None;
    }
    // <= 32: stride <= 2^32.
    u8::try_from(stride.trailing_zeros()).ok()
}

impl<'a, P: Page> BvecTable<'a, P> {
    /// Checks `table` once (O(entries)) and records its total, stride and page alignment.
    ///
    /// # Errors
    ///
    /// [`IovError::TableTooLarge`] when the lengths sum to more than `usize::MAX` (only possible
    /// on 32-bit targets).
    pub fn new(table: &'a [Bvec<P>]) -> Result<Self, IovError> {
        let mask = (PAGE_SIZE - 1) as u32;
        let mut total = 0usize;
        let mut page_aligned = true;
        for bv in table {
            total = total
                .checked_add(bv.len() as usize)
                .ok_or(IovError::TableTooLarge)?;
            page_aligned &= (bv.offset() | bv.len()) & mask == 0;
        }
        // INVARIANT: `total` and `page_aligned` computed over every entry just now, the stride
        // by `stride_of` (which checks the stride rule over every entry after the first).
        Ok(Self {
            table,
            total,
            first: table.first().map_or(0, |bv| bv.len() as usize),
            shape: Shape::new(page_aligned, stride_of(table)),
        })
    }

    /// The entries.
    #[inline]
    pub fn entries(&self) -> &'a [Bvec<P>] {
        self.table
    }

    /// Bytes in the table.
    #[inline]
    pub fn total(&self) -> usize {
        self.total
    }

    /// log2 of the stride when byte positions are arithmetic (see [`BvecTable`]), else `None`.
    #[inline]
    pub fn stride_shift(&self) -> Option<u8> {
        self.shape.stride_shift()
    }

    /// Whether every entry starts and ends on a page boundary.
    #[inline]
    pub fn is_page_aligned(&self) -> bool {
        self.shape.page_aligned()
    }

    /// Page alignment and stride in the form a BVEC iterator carries them.
    #[inline]
    pub(crate) fn shape(&self) -> Shape {
        self.shape
    }

    /// Where byte `byte` of the table lies, as (entry index, offset in the entry), normalised
    /// like an advance landing there: an entry boundary is the next entry's start, `total` is
    /// `(entries, 0)`. `None` past the total. O(1) for a strided table, else a walk over the
    /// entries before `byte`.
    #[inline]
    pub fn position(&self, byte: usize) -> Option<(usize, usize)> {
        (byte <= self.total).then(|| self.position_within(byte))
    }

    /// [`BvecTable::position`] of a byte the caller knows is at most the total (a larger one
    /// is placed at the end).
    #[inline]
    fn position_within(&self, byte: usize) -> (usize, usize) {
        if byte >= self.total {
            return (self.table.len(), 0);
        }
        match self.shape.stride_shift() {
            Some(shift) => strided_position(self.first, shift, byte),
            None => walk_position(self.table, byte),
        }
    }

    /// The `end` an iterator over this table records for a count `byte <= total` (see
    /// `IovIter`): its position, or, short of the total, `(0, 0)` for a strided table, whose
    /// iterators compute positions arithmetically and never read it.
    #[inline]
    pub(crate) fn end_within(&self, byte: usize) -> (usize, usize) {
        // The total first: a whole-table iterator (the common case) needs no test of the shape.
        if byte >= self.total {
            return (self.table.len(), 0);
        }
        match self.shape.stride_shift() {
            Some(_) => UNUSED_END,
            None => walk_position(self.table, byte),
        }
    }

    /// The start position (`a`) and the recorded `end` (see [`BvecTable::end_within`]) of an
    /// iterator over bytes `a..b` of the table (`a <= b <= total`), with one test of the
    /// table's shape.
    #[inline]
    pub(crate) fn start_and_end_within(
        &self,
        a: usize,
        b: usize,
    ) -> ((usize, usize), (usize, usize)) {
        match self.shape.stride_shift() {
            Some(shift) => (self.strided(shift, a), UNUSED_END),
            None => (self.walked(a), self.walked(b)),
        }
    }

    /// The position of `byte <= total` in the table of stride shift `shift`.
    #[inline(always)]
    fn strided(&self, shift: u8, byte: usize) -> (usize, usize) {
        if byte >= self.total {
            return (self.table.len(), 0);
        }
        strided_position(self.first, shift, byte)
    }

    /// The position of `byte <= total`, by a walk over the entries before it.
    #[inline(always)]
    fn walked(&self, byte: usize) -> (usize, usize) {
        if byte >= self.total {
            return (self.table.len(), 0);
        }
        walk_position(self.table, byte)
    }
}

/// The `end` recorded for iterators over a strided table, which never read it.
const UNUSED_END: (usize, usize) = (0, 0);

/// Where an advance to byte `byte` (at most the total) of a strided table with stride shift
/// `shift` lands, normalised as the kernel's walk leaves it: [`strided_position`], except that
/// the total of a table whose last entry is short is `(entries, 0)`, not the last entry's end.
/// `at_capacity`: whether `byte` is the iterator's capacity, the only byte that can be the total.
#[inline]
pub(crate) fn strided_landing<P: Page>(
    table: &[Bvec<P>],
    shift: u8,
    byte: usize,
    at_capacity: bool,
) -> (usize, usize) {
    let first = table.first().map_or(0, |bv| bv.len() as usize);
    let (idx, off) = strided_position(first, shift, byte);
    if !at_capacity {
        return (idx, off);
    }
    // Only the last entry can hold `off == len`: the first holds `off < first`, the middle
    // ones `off < 1 << shift`, their length. `idx < len`, so `idx + 1` cannot wrap.
    match table.get(idx) {
        Some(bv) if off == bv.len() as usize => (idx.wrapping_add(1), 0),
        _ => (idx, off),
    }
}

/// [`BvecTable::position`] of a byte before the end of a strided table (shift `shift`) whose
/// first entry holds `first` bytes.
#[inline]
fn strided_position(first: usize, shift: u8, byte: usize) -> (usize, usize) {
    match byte.checked_sub(first) {
        None => (0, byte),
        Some(k) => {
            // `shift <= 32` (the invariant), so the shifts are exact; `k < total`, so
            // `1 + (k >> shift)` cannot wrap.
            let mask = 1usize.wrapping_shl(u32::from(shift)).wrapping_sub(1);
            (
                1usize.wrapping_add(k.wrapping_shr(u32::from(shift))),
                k & mask,
            )
        }
    }
}

/// [`BvecTable::position`] of a byte before the end of any table: walks the entries before it.
/// Out of line, so that the strided path's callers keep their registers.
#[inline(never)]
fn walk_position<P: Page>(table: &[Bvec<P>], byte: usize) -> (usize, usize) {
    let mut rest = byte;
    for (i, bv) in table.iter().enumerate() {
        let len = bv.len() as usize;
        if rest < len {
            return (i, rest);
        }
        rest -= len;
    }
    (table.len(), 0)
}
