//! Reference model of an `iov_iter`: the iterator's logical bytes as one flat line plus a cursor.
//!
//! Written from the semantics reference (§2-§3 of iov-semantics.md), independently of the `iov`
//! crate: it never calls the crate. Every segment is a run of the flat line; positions are
//! `u128` so no arithmetic can overflow. Bytes live in an [`ArenaMem`] the model touches one
//! byte at a time ([`ArenaMem::set`] and [`ArenaMem::is_fault`]).
//!
//! Where the segment pointer lands is described by three rules over the flat line:
//! - *containing(p)*: the non-empty segment with `start <= p < end` (or the table end);
//! - after a walk that stopped because the length ran out at `p > 0` bytes in: if `p` ends a
//!   non-empty segment, the segment right after it, else *containing(p)*;
//! - after a walk cut short by a fault: *containing(p)*.

use bvec::{Pfn, PAGE_SIZE};

use crate::mem::{ArenaMem, KERNEL_BASE, USER_BASE};

const PS: u128 = PAGE_SIZE as u128;
/// `MAX_RW_COUNT`.
pub const MODEL_MAX_RW: u128 = 0x7FFF_F000;

/// What kind of memory a segment's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MKind {
    /// One user buffer.
    Ubuf,
    /// User segments.
    Iovec,
    /// Kernel segments.
    Kvec,
    /// Page segments.
    Bvec,
    /// Folios.
    PageList,
    /// Sink.
    Discard,
}

/// A segment as the geometry describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MSeg {
    /// Address (iovec/kvec/ubuf), in-page-counted offset from the page start (bvec), 0 (folio).
    pub addr: u128,
    /// Page frame (bvec and folios).
    pub pfn: u128,
    /// Length in bytes.
    pub len: u128,
}

/// Errors the model predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MErr {
    /// Kind does not support the operation.
    Unsupported,
    /// First page lookup failed at this address.
    Fault(u128),
    /// No room for pages.
    NoRoom,
    /// Revert beyond consumed.
    TooFar(u128, u128),
    /// Revert beyond MAX_RW_COUNT.
    TooLarge(u128),
    /// Reexpand beyond the segments.
    Exceeds(u128, u128),
    /// Restore unsupported.
    NoRestore,
    /// A saved state that does not belong to this iterator's table, or whose count its
    /// construction count does not cover.
    BadState,
}

/// A saved position (`struct iov_iter_state`: offset, count, segments) together with the table
/// it is a position in, named by the caller's `origin` id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MState {
    pos: u128,
    count: u128,
    idx: usize,
    origin: u64,
}

/// The model iterator.
#[derive(Clone, Debug)]
pub struct IovModel {
    /// Kind.
    pub kind: MKind,
    /// Whether it is a source (copy_from allowed).
    pub source: bool,
    /// The segments.
    pub segs: Vec<MSeg>,
    starts: Vec<u128>,
    total: u128,
    /// Where the construction count ends on the flat line: `reexpand` may not reach past it
    /// (the kernel's contract: reexpand only undoes a truncation).
    limit: u128,
    start_pos: u128,
    /// Position on the flat line (from the table start).
    pub pos: u128,
    /// Bytes left.
    pub count: u128,
    /// Current segment.
    pub idx: usize,
    saved: Option<(u128, u128, usize)>,
}

impl IovModel {
    /// A model over `segs` starting `offset` bytes in, with `count` bytes.
    pub fn new(kind: MKind, source: bool, segs: Vec<MSeg>, offset: u128, count: u128) -> Self {
        let mut starts = Vec::new();
        let mut total = 0u128;
        for s in &segs {
            starts.push(total);
            total += s.len;
        }
        if matches!(kind, MKind::Ubuf | MKind::Discard) {
            total = count;
        }
        Self {
            kind,
            source,
            segs,
            starts,
            total,
            limit: offset + count,
            start_pos: offset,
            pos: offset,
            count,
            idx: 0,
            saved: None,
        }
    }

    fn vector(&self) -> bool {
        matches!(
            self.kind,
            MKind::Iovec | MKind::Kvec | MKind::Bvec | MKind::PageList
        )
    }

    fn end_of(&self, k: usize) -> u128 {
        self.starts[k] + self.segs[k].len
    }

    /// Bytes consumed since construction.
    pub fn consumed(&self) -> u128 {
        self.pos - self.start_pos
    }

    fn containing(&self, p: u128) -> usize {
        (0..self.segs.len())
            .find(|&k| self.segs[k].len > 0 && self.starts[k] <= p && p < self.end_of(k))
            .unwrap_or(self.segs.len())
    }

    fn after_walk(&self, p: u128) -> usize {
        match (0..self.segs.len()).find(|&k| self.segs[k].len > 0 && self.end_of(k) == p) {
            Some(k) => k + 1,
            None => self.containing(p),
        }
    }

    /// `nr_segs` as the crate reports it.
    pub fn nr_segs(&self) -> usize {
        match self.kind {
            MKind::Ubuf => 1,
            MKind::Discard => 0,
            _ => self.segs.len() - self.idx,
        }
    }

    /// `iov_offset`.
    pub fn iov_offset(&self) -> u128 {
        match self.kind {
            MKind::Ubuf => self.pos,
            MKind::Discard => 0,
            _ if self.idx >= self.segs.len() => 0,
            _ => self.pos - self.starts[self.idx],
        }
    }

    /// Arena offset of flat byte `p`, `None` if it cannot be in the arena. The search for the
    /// segment holding `p` starts at segment `*k` (which must not lie after it) and leaves `*k`
    /// there, so a walk over increasing positions does not search again for each byte.
    fn loc_from(&self, p: u128, k: &mut usize) -> Option<usize> {
        let (k, seg) = match self.kind {
            MKind::Ubuf => (
                0,
                MSeg {
                    addr: self.segs[0].addr,
                    pfn: 0,
                    len: self.total,
                },
            ),
            _ => {
                // Segments tile the flat line in order, so the one holding `p` is the first
                // from `*k` on that ends after it (empty segments end where they start).
                while *k < self.segs.len() && self.end_of(*k) <= p {
                    *k += 1;
                }
                let k = *k;
                if k == self.segs.len() || self.starts[k] > p {
                    return None;
                }
                (k, self.segs[k])
            }
        };
        let rel = p - if self.kind == MKind::Ubuf {
            0
        } else {
            self.starts[k]
        };
        let o = match self.kind {
            MKind::Ubuf | MKind::Iovec => (seg.addr + rel).checked_sub(USER_BASE as u128)?,
            MKind::Kvec => (seg.addr + rel).checked_sub(KERNEL_BASE as u128)?,
            MKind::Bvec => seg.pfn * PS + seg.addr + rel,
            MKind::PageList => seg.pfn * PS + rel,
            MKind::Discard => return None,
        };
        usize::try_from(o).ok()
    }

    fn byte_ok(mem: &ArenaMem, o: Option<usize>) -> Option<usize> {
        o.filter(|&o| !mem.is_fault(o))
    }

    /// Moves the position after a byte walk of `done` out of `want` bytes.
    fn walked(&mut self, done: u128, want: u128) {
        self.pos += done;
        self.count -= done;
        if self.vector() {
            self.idx = if done < want {
                self.containing(self.pos)
            } else {
                self.after_walk(self.pos)
            };
        }
    }

    /// A byte walk: `f(mem, flat position, i)` returns false at a fault.
    fn walk(
        &mut self,
        mem: &mut ArenaMem,
        want: u128,
        mut f: impl FnMut(&mut ArenaMem, Option<usize>, usize) -> bool,
    ) -> u128 {
        let n = want.min(self.count);
        if n == 0 {
            return 0;
        }
        if self.kind == MKind::Discard {
            self.pos += n;
            self.count -= n;
            return n;
        }
        let mut done = 0;
        let mut k = 0;
        while done < n {
            let o = self.loc_from(self.pos + done, &mut k);
            if !f(mem, o, done as usize) {
                break;
            }
            done += 1;
        }
        self.walked(done, n);
        done
    }

    /// `copy_to_iter`.
    pub fn copy_to(&mut self, mem: &mut ArenaMem, src: &[u8]) -> u128 {
        if self.source {
            return 0;
        }
        self.walk(mem, src.len() as u128, |m, o, i| {
            match Self::byte_ok(m, o) {
                Some(o) => {
                    m.set(o, src[i]);
                    true
                }
                None => false,
            }
        })
    }

    /// `copy_from_iter`; fills `dst`'s prefix.
    pub fn copy_from(&mut self, mem: &mut ArenaMem, dst: &mut [u8]) -> u128 {
        if !self.source {
            return 0;
        }
        self.walk(mem, dst.len() as u128, |m, o, i| {
            match Self::byte_ok(m, o) {
                Some(o) => {
                    dst[i] = m.bytes()[o];
                    true
                }
                None => false,
            }
        })
    }

    /// `copy_*_iter_full`: on a short copy, revert it.
    pub fn full(&mut self, done: u128, want: u128) -> bool {
        if done == want {
            return true;
        }
        let _ = self.revert(done);
        false
    }

    /// `iov_iter_zero`.
    pub fn zero(&mut self, mem: &mut ArenaMem, n: u128) -> u128 {
        self.walk(mem, n, |m, o, _| match Self::byte_ok(m, o) {
            Some(o) => {
                m.set(o, 0);
                true
            }
            None => false,
        })
    }

    /// `copy_page_to_iter` (`to == true`) or `copy_page_from_iter`.
    pub fn copy_page(
        &mut self,
        mem: &mut ArenaMem,
        to: bool,
        pfn: u64,
        offset: usize,
        bytes: usize,
    ) -> u128 {
        if offset.checked_add(bytes).is_none() || self.source == to {
            return 0;
        }
        let base = pfn as u128 * PS + offset as u128;
        self.walk(mem, bytes as u128, |m, o, i| {
            let p = usize::try_from(base + i as u128).ok();
            let (src, dst) = if to { (p, o) } else { (o, p) };
            match (Self::byte_ok(m, src), Self::byte_ok(m, dst)) {
                (Some(s), Some(d)) => {
                    let b = m.bytes()[s];
                    m.set(d, b);
                    true
                }
                _ => false,
            }
        })
    }

    /// `iov_iter_advance`.
    pub fn advance(&mut self, n: u128) {
        let n = n.min(self.count);
        if self.vector() && self.count == 0 {
            return;
        }
        self.pos += n;
        self.count -= n;
        if self.vector() {
            self.idx = self.containing(self.pos);
        }
    }

    /// `iov_iter_revert`, bounded.
    pub fn revert(&mut self, n: u128) -> Result<(), MErr> {
        if n == 0 {
            return Ok(());
        }
        if n > MODEL_MAX_RW {
            return Err(MErr::TooLarge(n));
        }
        if n > self.consumed() {
            return Err(MErr::TooFar(n, self.consumed()));
        }
        let stay = n <= self.iov_offset();
        self.pos -= n;
        self.count += n;
        if self.vector() && !stay {
            self.idx = self.containing(self.pos);
        }
        Ok(())
    }

    /// `iov_iter_truncate`.
    pub fn truncate(&mut self, n: u128) {
        self.count = self.count.min(n);
    }

    /// `iov_iter_reexpand`, bounded.
    pub fn reexpand(&mut self, n: u128) -> Result<(), MErr> {
        let avail = self.limit - self.pos;
        if n > avail {
            return Err(MErr::Exceeds(n, avail));
        }
        self.count = n;
        Ok(())
    }

    /// `iov_iter_save_state`.
    pub fn save(&mut self) {
        self.saved = Some((self.pos, self.count, self.idx));
    }

    /// `iov_iter_save_state` of an iterator over the table named `origin`.
    pub fn save_state(&self, origin: u64) -> MState {
        MState {
            pos: self.pos,
            count: self.count,
            idx: self.idx,
            origin,
        }
    }

    /// `iov_iter_restore(i, state)` into this iterator (over the table named `origin`) of a state
    /// saved from any iterator. The kernel (lib/iov_iter.c) applies any state it is given: it sets
    /// `iov_offset` and `count` and moves the segment pointer back by the difference in
    /// `nr_segs`, so a state from another table leaves a position its segments do not back. The
    /// rule a safe port keeps (iov_iter_restore() in lib/iov_iter.c trusts its caller) is: the state must come from an iterator over the same table
    /// (so its position is a position in this table) and `count` must fit within what this
    /// iterator's construction count covers from that position. Anything else is refused and
    /// changes nothing.
    pub fn restore_state(&mut self, st: &MState, origin: u64) -> Result<(), MErr> {
        if matches!(self.kind, MKind::PageList | MKind::Discard) {
            return Err(MErr::NoRestore);
        }
        if st.origin != origin || st.pos < self.start_pos || st.pos > self.limit {
            return Err(MErr::BadState);
        }
        if st.count > self.limit - st.pos {
            return Err(MErr::BadState);
        }
        self.pos = st.pos;
        self.count = st.count;
        self.idx = st.idx;
        Ok(())
    }

    /// `iov_iter_restore` of the last save (no-op if none).
    pub fn restore(&mut self) -> Result<(), MErr> {
        if matches!(self.kind, MKind::PageList | MKind::Discard) {
            return Err(MErr::NoRestore);
        }
        if let Some((p, c, i)) = self.saved {
            self.pos = p;
            self.count = c;
            self.idx = i;
        }
        Ok(())
    }

    fn cur_len(&self) -> u128 {
        self.segs.get(self.idx).map_or(0, |s| s.len)
    }

    /// `iov_iter_single_seg_count`.
    pub fn single_seg_count(&self) -> u128 {
        match self.kind {
            MKind::Iovec | MKind::Kvec | MKind::Bvec if self.nr_segs() > 1 => {
                self.count.min(self.cur_len() - self.iov_offset())
            }
            MKind::PageList if self.count == 0 => 0,
            MKind::PageList => self.cur_len().min(self.count),
            _ => self.count,
        }
    }

    /// Pages touched by `len > 0` bytes starting at `a`.
    fn span(a: u128, len: u128) -> u128 {
        (a + len - 1) / PS - a / PS + 1
    }

    /// The remaining segments from the current one, each clipped: (segment, skip, len).
    fn remaining(&self) -> Vec<(MSeg, u128, u128)> {
        let mut out = Vec::new();
        let mut left = self.count;
        let mut skip = self.iov_offset();
        for s in self.segs.iter().skip(self.idx) {
            let len = (s.len - skip.min(s.len)).min(left);
            out.push((*s, skip, len));
            left -= len;
            skip = 0;
            if left == 0 {
                break;
            }
        }
        out
    }

    /// `iov_iter_npages`.
    pub fn npages(&self, max: u128) -> u128 {
        if self.count == 0 {
            return 0;
        }
        let n = match self.kind {
            MKind::Ubuf => Self::span(self.segs[0].addr + self.pos, self.count),
            MKind::Iovec | MKind::Kvec => self
                .remaining()
                .iter()
                .filter(|r| r.2 > 0)
                .map(|(s, skip, len)| Self::span(s.addr + skip, *len))
                .sum(),
            MKind::Bvec => self
                .remaining()
                .iter()
                .map(|(s, skip, len)| {
                    if *len == 0 {
                        u128::from((s.addr + skip) % PS != 0)
                    } else {
                        Self::span((s.addr + skip) % PS, *len)
                    }
                })
                .sum(),
            MKind::PageList => Self::span(self.iov_offset() % PS, self.count),
            MKind::Discard => 0,
        };
        n.min(max)
    }

    /// `iov_iter_alignment` (with the do-while reading the current segment when count is 0).
    pub fn alignment(&self) -> u128 {
        match self.kind {
            MKind::Ubuf if self.count == 0 => 0,
            MKind::Ubuf => (self.segs[0].addr + self.pos) | self.count,
            MKind::Iovec | MKind::Kvec => self
                .remaining()
                .iter()
                .filter(|(s, skip, _)| s.len > *skip)
                .fold(0, |acc, (s, skip, len)| acc | (s.addr + skip) | len),
            MKind::Bvec => self
                .remaining()
                .iter()
                .fold(0, |acc, (s, skip, len)| acc | (s.addr + skip) | len),
            MKind::PageList => self.iov_offset() | self.count,
            MKind::Discard => 0,
        }
    }

    /// `iov_iter_gap_alignment`.
    pub fn gap_alignment(&self) -> u128 {
        match self.kind {
            MKind::Ubuf => 0,
            MKind::Iovec => {
                let mut res = 0;
                let mut prev: Option<u128> = None;
                let mut size = self.count;
                for s in self.segs.iter().skip(self.idx).filter(|s| s.len > 0) {
                    if let Some(end) = prev.filter(|&e| e != 0) {
                        res |= s.addr | end;
                    }
                    prev = Some(s.addr + s.len);
                    if size <= s.len {
                        break;
                    }
                    size -= s.len;
                }
                res
            }
            _ => u32::MAX as u128,
        }
    }

    /// `iov_iter_is_aligned`.
    pub fn is_aligned(&self, am: u128, lm: u128) -> bool {
        match self.kind {
            MKind::Ubuf => self.count & lm == 0 && (self.segs[0].addr + self.pos) & am == 0,
            MKind::Iovec | MKind::Kvec | MKind::Bvec => self
                .remaining()
                .iter()
                .all(|(s, skip, len)| len & lm == 0 && (s.addr + skip) & am == 0),
            MKind::PageList => self.count & lm == 0 && self.iov_offset() & am == 0,
            MKind::Discard => true,
        }
    }

    /// `iov_iter_get_pages2` (`extract == false`, `maxpages` = the array length) or
    /// `iov_iter_extract_pages`: (bytes, offset0, pages).
    pub fn pages(
        &mut self,
        mem: &mut ArenaMem,
        maxpages: usize,
        maxsize: u128,
        extract: bool,
    ) -> Result<(u128, u128, Vec<Pfn>), MErr> {
        if !extract && maxpages == 0 {
            return Ok((0, 0, Vec::new()));
        }
        let maxsize = maxsize.min(self.count).min(MODEL_MAX_RW);
        if maxsize == 0 {
            return Ok((0, 0, Vec::new()));
        }
        let want = |size: u128, start: u128| ((size + start).div_ceil(PS)).min(maxpages as u128);
        match self.kind {
            MKind::Discard => Err(MErr::Unsupported),
            MKind::Kvec if !extract => Err(MErr::Unsupported),
            MKind::Ubuf | MKind::Iovec | MKind::Kvec | MKind::Bvec => {
                if extract && matches!(self.kind, MKind::Kvec | MKind::Bvec) {
                    // KVEC/BVEC extraction steps over used-up segments before anything else.
                    self.idx = self.containing(self.pos);
                }
                if extract && maxpages == 0 {
                    return Err(MErr::NoRoom);
                }
                let (addr, size) = match self.kind {
                    MKind::Ubuf => (self.segs[0].addr + self.pos, maxsize),
                    _ => {
                        let k = self.containing(self.pos);
                        let skip = self.pos - self.starts[k];
                        (
                            self.segs[k].addr + skip,
                            maxsize.min(self.segs[k].len - skip),
                        )
                    }
                };
                let start = addr % PS;
                let n = want(size, start);
                let mut pages = Vec::new();
                for j in 0..n {
                    let page_addr = addr - start + j * PS;
                    let pfn = match self.kind {
                        MKind::Ubuf | MKind::Iovec => page_addr
                            .checked_sub(USER_BASE as u128)
                            .filter(|&o| (0..PS).all(|b| !mem.is_fault((o + b) as usize))),
                        MKind::Kvec => page_addr
                            .checked_sub(KERNEL_BASE as u128)
                            .filter(|&o| o < mem.bytes().len() as u128),
                        _ => Some((self.segs[self.containing(self.pos)].pfn + page_addr / PS) * PS),
                    };
                    let Some(o) = pfn else { break };
                    let pfn = Pfn((o / PS) as u64);
                    match self.kind {
                        MKind::Ubuf | MKind::Iovec => mem.gup.push((pfn, extract)),
                        MKind::Bvec if !extract => mem.refs.push(pfn),
                        _ => {}
                    }
                    pages.push(pfn);
                }
                if pages.is_empty() {
                    return Err(MErr::Fault(addr - start));
                }
                let size = size.min(pages.len() as u128 * PS - start);
                self.advance(size);
                Ok((size, start, pages))
            }
            MKind::PageList => {
                if extract && maxpages == 0 {
                    return Err(MErr::NoRoom);
                }
                let offset0 = self.iov_offset() % PS;
                let maxp = want(maxsize, offset0);
                let mut p = self.pos;
                let mut pages = Vec::new();
                while p - self.pos < maxsize && (pages.len() as u128) < maxp {
                    let k = self.containing(p);
                    let rel = p - self.starts[k];
                    let piece = (PS - rel % PS)
                        .min(maxsize - (p - self.pos))
                        .min(self.end_of(k) - p);
                    let pfn = Pfn((self.segs[k].pfn + rel / PS) as u64);
                    if !extract {
                        mem.refs.push(pfn);
                    }
                    pages.push(pfn);
                    p += piece;
                }
                let got = p - self.pos;
                self.idx = self.containing(p - 1);
                self.pos = p;
                self.count -= got;
                Ok((got, offset0, pages))
            }
        }
    }
}
