//! Fuzz target `iov_ops`: an iterator geometry and an operation sequence, checked step by step
//! against the flat reference model by [`crate::iov_harness::check`].
//!
//! Input format (missing bytes read as zero):
//! - `kind % 6` (0 UBUF, 1 IOVEC, 2 KVEC, 3 BVEC, 4 page list, 5 DISCARD), a flags byte (bit 0:
//!   source, bit 1: count = everything), a segment count byte `n` (`n % 21` BVEC entries, else
//!   `n % 9` segments);
//! - per segment: IOVEC/KVEC an address (`mode u8`, `u16`) and a length (`mode u8`, `u16`);
//!   BVEC a frame byte, a `u16` offset and a length (`mode u8`, `u16`); page list a frame byte
//!   and an order byte; UBUF/DISCARD use one address and one length (ignoring `n`);
//! - a page-list start offset `u16`, a count `u32`;
//! - then up to 64 operations: an opcode byte and two `u16` arguments each.

use crate::iov_harness::{check, Geometry, Op, Shape, ARENA_PAGES, PAGE_OP_PAGES};
use crate::mem::{KERNEL_BASE, USER_BASE};

const ARENA: usize = ARENA_PAGES * 4096;
const SEG_START: usize = PAGE_OP_PAGES * 4096;

/// Reads bytes front to back; zero past the end.
struct Reader<'d>(&'d [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> usize {
        usize::from(u16::from_le_bytes([self.u8(), self.u8()]))
    }
    fn u32(&mut self) -> usize {
        self.u16() | (self.u16() << 16)
    }
}

fn addr(r: &mut Reader<'_>, base: usize) -> usize {
    let (mode, v) = (r.u8() % 4, r.u16());
    let span = ARENA - SEG_START;
    match mode {
        0 | 1 => base + SEG_START + (v * 3) % span,
        2 => base + SEG_START + (v * 4096) % span,
        _ => base + ARENA + (v << 20),
    }
}

fn len(r: &mut Reader<'_>) -> usize {
    let (mode, v) = (r.u8() % 4, r.u16());
    match mode {
        0 => 0,
        1 => v,
        2 => (v % 4 + 1) * 4096,
        _ => (v + 1) << 24,
    }
}

/// A byte count from a `u16`: mostly small, sometimes huge or `usize::MAX`.
fn size(v: usize) -> usize {
    match v % 8 {
        0 => usize::MAX,
        1 => v << 20,
        _ => v,
    }
}

fn geometry(r: &mut Reader<'_>) -> Geometry {
    let kind = r.u8() % 6;
    let flags = r.u8();
    let n_byte = r.u8();
    let n = usize::from(n_byte % 9);
    let shape = match kind {
        0 => Shape::Ubuf(addr(r, USER_BASE), len(r)),
        1 => Shape::Iovec((0..n).map(|_| (addr(r, USER_BASE), len(r))).collect()),
        2 => Shape::Kvec((0..n).map(|_| (addr(r, KERNEL_BASE), len(r))).collect()),
        // Flag 4: a registered-buffer-like table (page-sized middle entries, a last entry of at
        // most a page) and an I/O imported at an offset in it (`io_import_fixed`).
        3 if flags & 4 != 0 => {
            let pfn = |r: &mut Reader<'_>| PAGE_OP_PAGES as u64 + u64::from(r.u8() % 30);
            let mut v = Vec::new();
            for i in 0..n.max(1) {
                let p = pfn(r);
                let (off, l) = if i == 0 {
                    let off = (r.u16() % 4096) as u32;
                    (off, 1 + (r.u16() % (4096 * 3)) as u32)
                } else if i + 1 == n {
                    (0, 1 + (r.u16() % 4096) as u32)
                } else {
                    (0, 4096)
                };
                v.push((p, off, l));
            }
            let total: usize = v.iter().map(|e| e.2 as usize).sum();
            Shape::BvecFixed(v, r.u32() % (total + 1))
        }
        // Up to 20 entries: `IovIter::bvec` checks its count eight entries per compare.
        3 => Shape::Bvec(
            (0..usize::from(n_byte % 21))
                .map(|_| {
                    let pfn = PAGE_OP_PAGES as u64 + u64::from(r.u8() % 30);
                    let off = (r.u16() % (3 * 4096)) as u32;
                    let l = len(r).clamp(1, (u32::MAX - off) as usize) as u32;
                    (pfn, off, l)
                })
                .collect(),
        ),
        4 => {
            let f: Vec<(u64, u8)> = (0..n)
                .map(|_| (PAGE_OP_PAGES as u64 + u64::from(r.u8() % 26), r.u8() % 3))
                .collect();
            let first = f.first().map_or(0, |&(_, o)| 4096usize << o);
            Shape::PageList(f, r.u16() % (first + 1))
        }
        _ => Shape::Discard(len(r)),
    };
    let mut g = Geometry {
        shape,
        source: flags & 1 != 0,
        count: usize::MAX,
    };
    let c = r.u32();
    if flags & 2 == 0 {
        g.count = c % (g.capacity().min(1 << 20) + 1);
    }
    g
}

fn op(r: &mut Reader<'_>) -> Op {
    let code = r.u8() % 16;
    let (a, b) = (r.u16(), r.u16());
    let small = a % 12_000;
    match code {
        0 => Op::CopyTo(small),
        1 => Op::CopyFrom(small),
        2 => Op::CopyToFull(small),
        3 => Op::CopyFromFull(small),
        4 => Op::Zero(small),
        5 => Op::Advance(size(a)),
        6 => Op::Revert(size(a)),
        7 => Op::Truncate(a as u64),
        8 => Op::Reexpand(a.wrapping_mul(b.max(1))),
        9 => Op::Save,
        10 => Op::Restore,
        11 => Op::CopyPageTo((a % 3) as u64, b % 8192, small % 9000),
        12 => Op::CopyPageFrom((a % 3) as u64, b % 8192, small % 9000),
        13 => Op::GetPages(b % 6, size(a)),
        14 => Op::ExtractPages(b % 6, size(a)),
        _ => {
            let s = SEG_START + (a * 5) % (ARENA - SEG_START);
            Op::Fault(s..s + b % 300 + 1)
        }
    }
}

/// Decodes `data` and checks every operation against the model; panics on disagreement.
pub fn run(data: &[u8]) {
    let mut r = Reader(data);
    let geo = geometry(&mut r);
    let mut ops = Vec::new();
    while !r.0.is_empty() && ops.len() < 64 {
        ops.push(op(&mut r));
    }
    check(&geo, &ops);
}

/// Hand-written seed inputs: one per kind with the interesting operations.
pub fn seeds() -> Vec<Vec<u8>> {
    let le = |v: u16| v.to_le_bytes();
    let mut out = Vec::new();
    // Operations shared by all seeds: copies, advance/revert around boundaries, truncate,
    // save/restore, page ops, page getters and a fault.
    let mut ops = Vec::new();
    for (code, a, b) in [
        (0u8, 100u16, 0u16),
        (1, 100, 0),
        (5, 4093, 0),
        (6, 4091, 0),
        (9, 0, 0),
        (7, 50, 0),
        (4, 200, 0),
        (8, 3000, 1),
        (10, 0, 0),
        (11, 1, 4000),
        (12, 2, 100),
        (13, 9000, 3),
        (14, 9000, 5),
        (15, 1000, 40),
        (0, 11_000, 0),
        (1, 11_000, 0),
        (2, 7, 0),
        (3, 7, 0),
        (6, 9, 0),
        (5, 0, 0),
    ] {
        ops.push(code);
        ops.extend(le(a));
        ops.extend(le(b));
    }
    for kind in 0u8..6 {
        for flags in [0u8, 1, 2, 3] {
            let mut s = vec![kind, flags, 5];
            for i in 0u8..5 {
                match kind {
                    3 => s.extend([i * 3, 0x10 + i, 0x0f, 1 + i % 3, 0x00, 0x12]),
                    4 => s.extend([i * 2, i % 3]),
                    _ => s.extend([i % 4, 0x30 + i, 0x01, (i + 1) % 4, 0x10 * i, 0x09]),
                }
            }
            s.extend(le(0x123));
            s.extend(le(0x4567));
            s.extend(le(0x0001));
            s.extend(&ops);
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run() {
        for s in seeds() {
            run(&s);
        }
    }

    #[test]
    fn arbitrary_bytes_run() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200usize {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            run(&data);
        }
    }

    #[test]
    #[ignore = "writes fuzz/corpus/iov_ops; run by hand after changing the input format or seeds"]
    fn write_seed_corpus() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/iov_ops");
        std::fs::create_dir_all(&dir).expect("create corpus dir");
        for (i, s) in seeds().iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), s).expect("write seed");
        }
    }
}
