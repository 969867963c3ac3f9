//! Filling a bio's vec table in caller storage (`bio_add_page`, `bio_add_hw_page`).
//!
//! C header: [`include/linux/bio.h`](srctree/include/linux/bio.h)
//!
//! A [`BioBuilder`] appends pages to a caller-provided `&mut [Bvec]`, merging each addition into
//! the last segment when it continues it, and then freezes into a [`Bio`] that borrows the filled
//! part. Nothing is allocated.

use bvec::{Bvec, BvecIter, Page};

use crate::SECTOR_SHIFT;
use crate::{gap_to_prev, try_merge_hw_page, try_merge_page, Bio, BioError, Op, QueueLimits};

/// Most vecs one bio holds (`BIO_MAX_VECS`).
pub const BIO_MAX_VECS: usize = 256;

/// Fixed-capacity storage for a vec table, for callers without a table of their own.
///
/// # Examples
///
/// ```
/// use bio::{BioBuilder, BvecArray, Op};
/// use bvec::{Bvec, Pfn};
/// let mut storage = BvecArray::<Pfn, 16>::new(Bvec::new(Pfn(0), 0, 1)?);
/// let b = BioBuilder::new(Op::Read, 0, storage.as_mut_slice())?;
/// assert_eq!(b.max_vecs(), 16);
/// # Ok::<(), bio::BioError>(())
/// ```
#[derive(Clone, Debug)]
pub struct BvecArray<P, const N: usize>([Bvec<P>; N]);

impl<P: Page, const N: usize> BvecArray<P, N> {
    /// Storage whose every slot holds `filler` until a builder overwrites it.
    pub const fn new(filler: Bvec<P>) -> Self {
        Self([filler; N])
    }

    /// The slots, to hand to [`BioBuilder::new`].
    pub fn as_mut_slice(&mut self) -> &mut [Bvec<P>] {
        &mut self.0
    }
}

/// A read or write being filled page by page in caller storage.
///
/// # Invariants
///
/// `vcnt <= max_vecs <= vecs.len()`, `max_vecs <= BIO_MAX_VECS`, and `size` is the sum of the
/// lengths of `vecs[..vcnt]`.
#[derive(Debug)]
pub struct BioBuilder<'a, P: Page> {
    op: Op,
    sector: u64,
    vecs: &'a mut [Bvec<P>],
    max_vecs: usize,
    vcnt: usize,
    size: u32,
}

impl<'a, P: Page> BioBuilder<'a, P> {
    /// Starts an empty read or write at `sector` whose table lives in `storage`; at most
    /// [`BIO_MAX_VECS`] of its slots are used and their old contents are ignored.
    ///
    /// # Errors
    ///
    /// [`BioError::WrongOp`] for an operation without data.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, BioError, Op, BIO_MAX_VECS};
    /// use bvec::{Bvec, Pfn};
    /// let mut big = [Bvec::new(Pfn(0), 0, 1)?; 300];
    /// assert_eq!(BioBuilder::new(Op::Write, 0, &mut big)?.max_vecs(), BIO_MAX_VECS);
    /// assert_eq!(BioBuilder::new(Op::Discard, 0, &mut big).unwrap_err(), BioError::WrongOp { op: Op::Discard });
    /// # Ok::<(), BioError>(())
    /// ```
    pub fn new(op: Op, sector: u64, storage: &'a mut [Bvec<P>]) -> Result<Self, BioError> {
        if !op.has_data() {
            return Err(BioError::WrongOp { op });
        }
        let max_vecs = storage.len().min(BIO_MAX_VECS);
        // INVARIANT: empty table, size 0, max_vecs bounded by both limits.
        Ok(Self {
            op,
            sector,
            vecs: storage,
            max_vecs,
            vcnt: 0,
            size: 0,
        })
    }

    /// The operation.
    pub const fn op(&self) -> Op {
        self.op
    }

    /// Bytes added so far (`bi_size`).
    pub const fn size(&self) -> u32 {
        self.size
    }

    /// Segments used so far (`bi_vcnt`).
    pub const fn vcnt(&self) -> usize {
        self.vcnt
    }

    /// Segment capacity (`bi_max_vecs`).
    pub const fn max_vecs(&self) -> usize {
        self.max_vecs
    }

    /// The segments filled so far.
    pub fn vecs(&self) -> &[Bvec<P>] {
        self.vecs.get(..self.vcnt).unwrap_or(&[])
    }

    /// Whether no segment is free or `len` more bytes would overflow the size (`bio_full`).
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, Op};
    /// use bvec::{Bvec, Pfn};
    /// let mut one = [Bvec::new(Pfn(0), 0, 1)?; 1];
    /// let mut b = BioBuilder::new(Op::Write, 0, &mut one)?;
    /// assert!(!b.is_full(0));
    /// b.add_page(Pfn(1), 512, 0);
    /// assert!(b.is_full(0));
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub const fn is_full(&self, len: u32) -> bool {
        self.vcnt >= self.max_vecs || self.size > u32::MAX - len
    }

    fn last(&self) -> Option<Bvec<P>> {
        self.vcnt
            .checked_sub(1)
            .and_then(|i| self.vecs.get(i))
            .copied()
    }

    fn set_last(&mut self, bv: Bvec<P>, len: u32) {
        if let Some(slot) = self.vcnt.checked_sub(1).and_then(|i| self.vecs.get_mut(i)) {
            *slot = bv;
            // INVARIANT: the last segment grew by `len` (callers checked the size bound).
            self.size += len;
        }
    }

    fn push(&mut self, bv: Bvec<P>) -> bool {
        if self.vcnt >= self.max_vecs {
            return false;
        }
        let Some(slot) = self.vecs.get_mut(self.vcnt) else {
            return false;
        };
        *slot = bv;
        // INVARIANT: one more segment below max_vecs; callers checked the size bound.
        self.vcnt += 1;
        self.size += bv.len();
        true
    }

    /// Adds `len` bytes at offset `off` of `page` (`bio_add_page`): merged into the last segment
    /// when they continue it physically and by page handle, else appended. `off` and `len` may
    /// span pages. Queue limits are not consulted (splitting deals with them).
    ///
    /// Returns `len`, or 0 when nothing was added: `len == 0`, the size would exceed `u32::MAX`,
    /// `off + len` overflows, or no segment is free. Never a partial add.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, Op};
    /// use bvec::{Bvec, Pfn};
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 2];
    /// let mut b = BioBuilder::new(Op::Write, 0, &mut storage)?;
    /// assert_eq!(b.add_page(Pfn(1), 4096, 0), 4096);
    /// assert_eq!(b.add_page(Pfn(2), 100, 0), 100);   // merged: still one segment
    /// assert_eq!(b.add_page(Pfn(9), 512, 0), 512);   // new segment
    /// assert_eq!(b.add_page(Pfn(3), 512, 0), 0);     // table full
    /// assert_eq!(b.add_page(Pfn(9), 0, 512), 0);     // nothing to add
    /// assert_eq!(b.add_page(Pfn(9), u32::MAX, 512), 0);
    /// assert_eq!((b.vcnt(), b.size()), (2, 4708));
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn add_page(&mut self, page: P, len: u32, off: u32) -> u32 {
        match self.add_page_inner(page, len, off) {
            Some(_) => len,
            None => 0,
        }
    }

    /// [`Self::add_page`] reporting `Some(same_page)` on success: whether the bytes were merged
    /// into the page already holding the last segment's final byte.
    pub(crate) fn add_page_inner(&mut self, page: P, len: u32, off: u32) -> Option<bool> {
        if len == 0 || self.size > u32::MAX - len {
            return None;
        }
        if let Some(last) = self.last() {
            if let Some(m) = try_merge_page(&last, page, off, len) {
                self.set_last(m.bvec, len);
                return Some(m.same_page);
            }
        }
        match Bvec::new(page, off, len) {
            Ok(bv) if self.push(bv) => Some(false),
            _ => None,
        }
    }

    /// Adds up to `len` bytes under hardware limits (`bio_add_hw_page`, used for passthrough):
    /// `len` is first cut to `max_sectors` and to the maximum segment size (so **less than asked
    /// may be added**); nothing is added when the bio would exceed `max_sectors`, when a new
    /// segment would exceed `max_segments` or the table, or when it would leave a virtual-boundary
    /// gap. A merge must also stay inside one segment-boundary window.
    ///
    /// Returns the number of bytes added.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, Op, QueueLimits};
    /// use bvec::{Bvec, Pfn};
    /// let lim = QueueLimits::nvme(512, 0, 0).unwrap();
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 4];
    /// let mut b = BioBuilder::new(Op::Read, 0, &mut storage)?;
    /// assert_eq!(b.add_hw_page(&lim, Pfn(1), 2048, 0, 8), 2048);
    /// assert_eq!(b.add_hw_page(&lim, Pfn(5), 512, 0, 8), 0);      // gap after a half page
    /// assert_eq!(b.add_hw_page(&lim, Pfn(1), 4096, 2048, 8), 0);    // more than 8 sectors in all
    /// assert_eq!(b.add_hw_page(&lim, Pfn(1), 2048, 2048, 8), 2048); // merged
    /// assert_eq!((b.size(), b.vcnt()), (4096, 1));
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 1];
    /// let mut b = BioBuilder::new(Op::Read, 0, &mut storage)?;
    /// assert_eq!(b.add_hw_page(&lim, Pfn(1), 10000, 0, 8), 4096);   // cut to 8 sectors
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn add_hw_page(
        &mut self,
        lim: &QueueLimits,
        page: P,
        len: u32,
        off: u32,
        max_sectors: u32,
    ) -> u32 {
        let max_size = u32::try_from(u64::from(max_sectors) << SECTOR_SHIFT).unwrap_or(u32::MAX);
        let len = len.min(max_size).min(lim.max_segment_size());
        if len == 0 || len > max_size.saturating_sub(self.size) {
            return 0;
        }
        let Some(last) = self.last() else {
            return match Bvec::new(page, off, len) {
                Ok(bv) if self.push(bv) => len,
                _ => 0,
            };
        };
        if let Some(m) = try_merge_hw_page(lim, &last, page, off, len) {
            self.set_last(m.bvec, len);
            return len;
        }
        if self.vcnt >= usize::from(lim.max_segments()) || gap_to_prev(lim, &last, off) {
            return 0;
        }
        match Bvec::new(page, off, len) {
            Ok(bv) if self.push(bv) => len,
            _ => 0,
        }
    }

    /// Drops the last `bytes` bytes added (used to trim to the logical block size); segments
    /// emptied by it are removed, so no zero-length segment remains.
    ///
    /// # Errors
    ///
    /// [`BioError::PastEnd`] when `bytes > self.size()`; nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, Op};
    /// use bvec::{Bvec, Pfn};
    /// let mut st = [Bvec::new(Pfn(0), 0, 1)?; 2];
    /// let mut b = BioBuilder::new(Op::Write, 0, &mut st)?;
    /// b.add_page(Pfn(1), 1000, 0);
    /// b.add_page(Pfn(7), 24, 0);
    /// b.revert(30)?;                                   // drops the 24-byte segment and 6 more bytes
    /// assert_eq!(b.vecs(), [Bvec::new(Pfn(1), 0, 994)?]);
    /// assert!(b.revert(995).is_err());
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn revert(&mut self, bytes: u32) -> Result<(), BioError> {
        if bytes > self.size {
            return Err(BioError::PastEnd {
                requested: u64::from(bytes),
                remaining: u64::from(self.size),
            });
        }
        let mut left = bytes;
        while left > 0 {
            let Some(last) = self.last() else { break };
            if last.len() <= left {
                left -= last.len();
                // INVARIANT: the last segment is removed with its bytes.
                self.vcnt -= 1;
                self.size -= last.len();
            } else {
                let keep = last.len() - left;
                if let Ok(bv) = Bvec::new(last.page(), last.offset(), keep) {
                    if let Some(slot) = self.vcnt.checked_sub(1).and_then(|i| self.vecs.get_mut(i))
                    {
                        *slot = bv;
                        // INVARIANT: the last segment shrank by `left` bytes.
                        self.size -= left;
                    }
                }
                left = 0;
            }
        }
        Ok(())
    }

    /// Freezes the table into a [`Bio`] borrowing the filled segments for `'a`.
    ///
    /// # Errors
    ///
    /// None in practice: the builder's invariants make the table hold exactly `size` bytes and
    /// the operation carry data; a [`BioError`] is returned rather than a panic if they did not.
    ///
    /// # Examples
    ///
    /// ```
    /// use bio::{BioBuilder, Op};
    /// use bvec::{Bvec, Pfn};
    /// let mut storage = [Bvec::new(Pfn(0), 0, 1)?; 4];
    /// let mut b = BioBuilder::new(Op::Write, 64, &mut storage)?;
    /// b.add_page(Pfn(3), 1024, 512);
    /// let bio = b.finish()?;
    /// assert_eq!((bio.sector(), bio.size(), bio.table().len()), (64, 1024, 1));
    /// # Ok::<(), bio::BioError>(())
    /// ```
    pub fn finish(self) -> Result<Bio<'a, P>, BioError> {
        let (op, sector, vcnt, size) = (self.op, self.sector, self.vcnt, self.size);
        let vecs: &'a [Bvec<P>] = self.vecs;
        let table = vecs.get(..vcnt).unwrap_or(&[]);
        Bio::new(op, BvecIter::new(table, sector, size)?)
    }
}
