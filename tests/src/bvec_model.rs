//! Reference model of a bvec iterator: the table as a flat sequence of bytes plus a cursor.
//!
//! Written without the `bvec` crate's iterator logic: it only reads each segment's page number,
//! offset and length, and answers every question in absolute byte positions (byte `i` of the
//! table's concatenation), never through `(idx, done)` bookkeeping. Byte `i` is located by a binary
//! search over prefix sums, so the flat sequence is never materialised and tables of several GiB
//! stay cheap; [`BvecModel::bytes`] materialises it for small windows.

use bvec::{Bvec, Pfn};

/// One table entry, widened to `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    /// Page frame number the offset counts from.
    pub pfn: u64,
    /// Offset of the first byte from the start of that page (may exceed a page).
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// Where one byte of the table lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteLoc {
    /// Index of the table entry holding it.
    pub seg: usize,
    /// Page frame holding it.
    pub pfn: u64,
    /// Offset inside that page (`< 4096`).
    pub off: u64,
}

/// A run of bytes the model expects a view to yield: `len` bytes from `offset` in frame `pfn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Page frame the offset counts from.
    pub pfn: u64,
    /// Offset from the start of that frame.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// The model: a table, a window `[cursor, end)` of its bytes, and a sector label.
#[derive(Clone, Debug)]
pub struct BvecModel {
    segs: Vec<Seg>,
    /// `starts[k]` is the absolute position of the first byte of entry `k`; one extra final entry
    /// holds the total.
    starts: Vec<u64>,
    cursor: u64,
    end: u64,
    sector: u64,
}

/// Bytes in a page of the model.
const PAGE: u64 = 4096;

impl BvecModel {
    /// Models an iterator over the first `size` bytes of `table`; `None` if the table is shorter.
    pub fn new(table: &[Bvec<Pfn>], sector: u64, size: u64) -> Option<Self> {
        let segs: Vec<Seg> = table
            .iter()
            .map(|b| Seg {
                pfn: b.page().0,
                offset: u64::from(b.offset()),
                len: u64::from(b.len()),
            })
            .collect();
        let mut starts = vec![0u64];
        for s in &segs {
            starts.push(starts[starts.len() - 1] + s.len);
        }
        let total = starts[starts.len() - 1];
        (size <= total).then_some(Self {
            segs,
            starts,
            cursor: 0,
            end: size,
            sector,
        })
    }

    /// Total bytes in the table.
    pub fn total(&self) -> u64 {
        self.starts[self.segs.len()]
    }

    /// Bytes left in the window.
    pub fn remaining(&self) -> u64 {
        self.end - self.cursor
    }

    /// Absolute position of the cursor (bytes consumed since the table start).
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// The sector label.
    pub fn sector(&self) -> u64 {
        self.sector
    }

    /// Location of absolute byte `i`, or `None` past the table.
    pub fn byte(&self, i: u64) -> Option<ByteLoc> {
        if i >= self.total() {
            return None;
        }
        // The entry holding `i` is the last one starting at or before it.
        let seg = self.starts.partition_point(|&s| s <= i) - 1;
        let s = self.segs[seg];
        let abs = s.offset + (i - self.starts[seg]);
        Some(ByteLoc {
            seg,
            pfn: s.pfn + abs / PAGE,
            off: abs % PAGE,
        })
    }

    /// Every byte of the window, in order (use on small windows only): [`Self::byte`] of each
    /// position, with the entry found once per entry rather than searched for per byte.
    pub fn bytes(&self) -> Vec<ByteLoc> {
        let mut out = Vec::new();
        for (seg, s) in self.segs.iter().enumerate() {
            let (lo, hi) = (self.starts[seg], self.starts[seg + 1]);
            for i in lo.max(self.cursor)..hi.min(self.end) {
                let abs = s.offset + (i - lo);
                out.push(ByteLoc {
                    seg,
                    pfn: s.pfn + abs / PAGE,
                    off: abs % PAGE,
                });
            }
        }
        out
    }

    /// Expected `(sector, size, idx, done)` of the iterator: the cursor as "entry holding the next
    /// byte of the table, and bytes before it in that entry"; past the last byte, `(len, 0)`.
    pub fn expected_state(&self) -> (u64, u64, u64, u64) {
        let (idx, done) = match self.byte(self.cursor) {
            Some(b) => (b.seg as u64, self.cursor - self.starts[b.seg]),
            None => (self.segs.len() as u64, 0),
        };
        (self.sector, self.remaining(), idx, done)
    }

    /// Bytes from the cursor to the end of the entry holding it (ignores the window end).
    pub fn seg_left(&self) -> u64 {
        match self.byte(self.cursor) {
            Some(b) => self.starts[b.seg + 1] - self.cursor,
            None => 0,
        }
    }

    /// Moves the cursor forward; `Err(remaining)` when `n` is larger than the window.
    pub fn advance(&mut self, n: u64) -> Result<(), u64> {
        if n > self.remaining() {
            return Err(self.remaining());
        }
        self.cursor += n;
        self.sector = self.sector.wrapping_add(n >> 9);
        Ok(())
    }

    /// Moves the cursor back, growing the window; `Err(largest possible)` when `n` exceeds the
    /// bytes before the cursor or the window would exceed `u32::MAX` bytes.
    pub fn revert(&mut self, n: u64) -> Result<(), u64> {
        let limit = self.cursor.min(u64::from(u32::MAX) - self.remaining());
        if n > limit {
            return Err(limit);
        }
        self.cursor -= n;
        self.sector = self.sector.wrapping_sub(n >> 9);
        Ok(())
    }

    /// Shrinks the window to its first `n` bytes; `Err(remaining)` if it has fewer.
    pub fn truncate(&mut self, n: u64) -> Result<(), u64> {
        if n > self.remaining() {
            return Err(self.remaining());
        }
        self.end = self.cursor + n;
        Ok(())
    }

    /// The window cut at `n`: `[cursor, cursor + n)` and `[cursor + n, end)`.
    pub fn split(&self, n: u64) -> Result<(Self, Self), u64> {
        let mut front = self.clone();
        front.truncate(n)?;
        let mut back = self.clone();
        back.advance(n)?;
        Ok((front, back))
    }

    /// Expected multipage view: the part of each entry inside the window.
    pub fn segments(&self) -> Vec<Piece> {
        let mut out = Vec::new();
        for (k, s) in self.segs.iter().enumerate() {
            let (lo, hi) = (self.starts[k], self.starts[k + 1]);
            let from = lo.max(self.cursor);
            let to = hi.min(self.end);
            if from < to {
                out.push(Piece {
                    pfn: s.pfn,
                    offset: s.offset + (from - lo),
                    len: to - from,
                });
            }
        }
        out
    }

    /// Expected single-page view, built byte by byte: a new piece starts whenever the entry or the
    /// page changes (use on small windows only).
    pub fn page_groups(&self) -> Vec<Piece> {
        Self::groups(&self.bytes())
    }

    /// [`Self::page_groups`] of bytes already listed by [`Self::bytes`].
    pub fn groups(bytes: &[ByteLoc]) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::new();
        let mut prev: Option<ByteLoc> = None;
        for &b in bytes {
            match (prev, out.last_mut()) {
                (Some(p), Some(last)) if p.seg == b.seg && p.pfn == b.pfn => last.len += 1,
                _ => out.push(Piece {
                    pfn: b.pfn,
                    offset: b.off,
                    len: 1,
                }),
            }
            prev = Some(b);
        }
        out
    }

    /// Entries touched by the next `n` bytes; `Err(remaining)` past the window.
    pub fn nr_segments(&self, n: u64) -> Result<u64, u64> {
        if n > self.remaining() {
            return Err(self.remaining());
        }
        if n == 0 {
            return Ok(0);
        }
        let (Some(a), Some(z)) = (self.byte(self.cursor), self.byte(self.cursor + n - 1)) else {
            return Err(self.remaining());
        };
        Ok((z.seg - a.seg + 1) as u64)
    }

    /// Distinct (entry, page) pairs among the next `n` bytes; `Err(remaining)` past the window.
    pub fn nr_pages(&self, n: u64) -> Result<u64, u64> {
        if n > self.remaining() {
            return Err(self.remaining());
        }
        let (from, to) = (self.cursor, self.cursor + n);
        let mut count = 0;
        for k in 0..self.segs.len() {
            let lo = self.starts[k].max(from);
            let hi = self.starts[k + 1].min(to);
            if lo < hi {
                // Inside one entry the frame number grows by one at each page boundary.
                let (Some(a), Some(z)) = (self.byte(lo), self.byte(hi - 1)) else {
                    return Err(self.remaining());
                };
                count += z.pfn - a.pfn + 1;
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bytes` walks entries in order; it must list exactly `byte(i)` for every window position.
    #[test]
    fn bytes_is_byte_of_each_position() {
        let table = [
            Bvec::new(Pfn(3), 4000, 200).unwrap(),
            Bvec::new(Pfn(9), 0, 1).unwrap(),
            Bvec::new(Pfn(1), 8191, 4099).unwrap(),
            Bvec::new(Pfn(7), 5, 3).unwrap(),
        ];
        let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
        for (cursor, size) in [
            (0, total),
            (0, 0),
            (150, 60),
            (199, 2),
            (201, 4100),
            (4300, 3),
        ] {
            let mut m = BvecModel::new(&table, 0, cursor + size).unwrap();
            m.advance(cursor).unwrap();
            let want: Vec<ByteLoc> = (cursor..cursor + size).filter_map(|i| m.byte(i)).collect();
            assert_eq!(m.bytes(), want, "window {cursor}+{size}");
        }
    }
}
