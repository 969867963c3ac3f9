//! Decoding fuzz input bytes into bvec tables and byte counts, and the matching encoder that
//! writes seed inputs.
//!
//! Table format: one byte `n % 17` (entries), then per entry a kind byte, a little-endian `u16`
//! frame number and a kind-specific shape (see [`Decoder::table`]); then an 8-byte sector and a
//! size byte (255: the whole table, else `total * b / 255`, capped at `u32::MAX`).

use bvec::{Bvec, Pfn};

/// Offsets near page and sector edges, picked by kind-3 entries.
const EDGES: [u32; 8] = [0, 1, 7, 511, 512, 513, 4088, 4095];

/// Reads fuzz bytes front to back; past the end every read returns zero.
#[derive(Debug)]
pub struct Decoder<'d> {
    data: &'d [u8],
}

impl<'d> Decoder<'d> {
    /// Starts reading `data`.
    pub fn new(data: &'d [u8]) -> Self {
        Self { data }
    }

    /// True once every byte was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Next byte, or 0.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// Next little-endian `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// Next little-endian `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// Next little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A bvec table, its sector and an iterator size that fits it.
    ///
    /// Entry kinds (`kind % 4`): 0 = `u16` offset (mod 3 pages) and `u16` length + 1;
    /// 1 = page-aligned, `u8` page offset (mod 4) and `u8` pages (mod 8, + 1);
    /// 2 = raw `u32` offset and length (huge; length clamped so `offset + len` fits, 0 → 1);
    /// 3 = `u8` edge offset (`EDGES[b % 8]` in page `b / 8 % 3`) and `u16` length + 1.
    pub fn table(&mut self) -> (Vec<Bvec<Pfn>>, u64, u32) {
        let n = self.u8() % 17;
        let mut table = Vec::new();
        for _ in 0..n {
            let kind = self.u8() % 4;
            let pfn = u64::from(self.u16());
            let (off, len) = match kind {
                0 => (
                    u32::from(self.u16()) % (3 * 4096),
                    u32::from(self.u16()) + 1,
                ),
                1 => (
                    u32::from(self.u8() % 4) * 4096,
                    (u32::from(self.u8() % 8) + 1) * 4096,
                ),
                2 => {
                    let off = self.u32();
                    (off, self.u32().clamp(1, u32::MAX - off.min(u32::MAX - 1)))
                }
                _ => {
                    let b = self.u8();
                    let off = EDGES[usize::from(b % 8)] + u32::from(b / 8 % 3) * 4096;
                    (off, u32::from(self.u16()) + 1)
                }
            };
            if let Ok(bv) = Bvec::new(Pfn(pfn), off, len) {
                table.push(bv);
            }
        }
        let sector = self.u64();
        let total: u64 = table.iter().map(|b| u64::from(b.len())).sum();
        let cap = total.min(u64::from(u32::MAX));
        let size = match self.u8() {
            255 => cap,
            f => cap * u64::from(f) / 255,
        };
        (table, sector, u32::try_from(size).unwrap_or(u32::MAX))
    }

    /// A byte count relative to `base` (the natural bound of the operation) and `seg_left` (bytes
    /// to the end of the current segment). Mode byte `% 7`: zero, `base * u16 / 65535`, `base`,
    /// `base + 1`, `seg_left`, `seg_left + 1`, raw `u32`.
    pub fn amount(&mut self, base: u64, seg_left: u64) -> u32 {
        let n = match self.u8() % 7 {
            0 => 0,
            1 => base * u64::from(self.u16()) / 65535,
            2 => base,
            3 => base + 1,
            4 => seg_left,
            5 => seg_left + 1,
            _ => u64::from(self.u32()),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// How [`Encoder::amount`] picks a count; mirrors [`Decoder::amount`].
#[derive(Clone, Copy, Debug)]
pub enum Amount {
    /// 0.
    Zero,
    /// `base * n / 65535`.
    Frac(u16),
    /// `base`.
    Base,
    /// `base + 1`.
    BasePlus1,
    /// Bytes to the end of the current segment.
    SegLeft,
    /// One more than that.
    SegLeftPlus1,
    /// Exactly this many bytes.
    Raw(u32),
}

/// Writes inputs in the format [`Decoder`] reads, for seed corpora.
#[derive(Debug, Default)]
pub struct Encoder {
    bytes: Vec<u8>,
}

/// An entry shape for [`Encoder::table`]; mirrors the kinds of [`Decoder::table`].
#[derive(Clone, Copy, Debug)]
pub enum Entry {
    /// Kind 0: offset (mod 3 pages), length 1..=65536.
    Small(u16, u16, u32),
    /// Kind 1: page offset (0..4) and page count (1..=8).
    Pages(u16, u8, u8),
    /// Kind 2: raw offset and length.
    Huge(u16, u32, u32),
    /// Kind 3: `EDGES[edge]` in page `page`, length 1..=65536.
    Edge(u16, u8, u8, u32),
}

impl Encoder {
    /// An empty input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends raw bytes.
    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.bytes.extend_from_slice(bytes);
        self
    }

    /// Appends a table header: entries, sector and size byte (255 = whole table).
    pub fn table(mut self, entries: &[Entry], sector: u64, size: u8) -> Self {
        self.bytes.push(entries.len() as u8);
        for e in entries {
            let (kind, pfn, shape): (u8, u16, Vec<u8>) = match *e {
                Entry::Small(pfn, off, len) => {
                    let mut v = off.to_le_bytes().to_vec();
                    v.extend_from_slice(&((len.max(1) - 1) as u16).to_le_bytes());
                    (0, pfn, v)
                }
                Entry::Pages(pfn, page, pages) => (1, pfn, vec![page, pages.max(1) - 1]),
                Entry::Huge(pfn, off, len) => {
                    let mut v = off.to_le_bytes().to_vec();
                    v.extend_from_slice(&len.to_le_bytes());
                    (2, pfn, v)
                }
                Entry::Edge(pfn, edge, page, len) => {
                    let mut v = vec![edge % 8 + page % 3 * 8];
                    v.extend_from_slice(&((len.max(1) - 1) as u16).to_le_bytes());
                    (3, pfn, v)
                }
            };
            self.bytes.push(kind);
            self.bytes.extend_from_slice(&pfn.to_le_bytes());
            self.bytes.extend_from_slice(&shape);
        }
        self.bytes.extend_from_slice(&sector.to_le_bytes());
        self.bytes.push(size);
        self
    }

    /// Appends an operation byte.
    pub fn op(mut self, op: u8) -> Self {
        self.bytes.push(op);
        self
    }

    /// Appends an amount.
    pub fn amount(mut self, a: Amount) -> Self {
        match a {
            Amount::Zero => self.bytes.push(0),
            Amount::Frac(f) => {
                self.bytes.push(1);
                self.bytes.extend_from_slice(&f.to_le_bytes());
            }
            Amount::Base => self.bytes.push(2),
            Amount::BasePlus1 => self.bytes.push(3),
            Amount::SegLeft => self.bytes.push(4),
            Amount::SegLeftPlus1 => self.bytes.push(5),
            Amount::Raw(n) => {
                self.bytes.push(6);
                self.bytes.extend_from_slice(&n.to_le_bytes());
            }
        }
        self
    }

    /// The finished input.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}
