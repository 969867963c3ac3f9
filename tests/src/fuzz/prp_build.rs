//! Fuzz target `prp_build`: decode DMA segments and list storage, build PRPs and an SGL, and
//! check them with the independent decoders of `dptr_walk`; fill a one-page list in one pass
//! (`prp_fill`, the driver's path) and check it the same way; then build PRPs for a range of a
//! premapped page table and compare them with per-I/O mapping of the same bytes.

use std::collections::HashMap;

use nvme::{
    build_prps, build_prps_from_tag, build_sgl, prp_fill, DmaSegment, DptrError, PremappedPages,
    PrpLists, SglDescriptor, TagRange,
};

use super::input::Decoder;
use crate::dptr_walk::{
    coalesce, prp_entries, prp_list_pages_needed, prp_rules_ok, walk_prps, walk_sgl, BusMemory,
};

/// Segments decoded per input at most.
const MAX_SEGS: u8 = 12;
/// List pages offered at most.
const MAX_LIST_PAGES: u8 = 7;

/// Decodes one segment. Mode `% 4`: 0 = PRP-shaped for its position (dword offset if first,
/// page count `u16 % 1100`, tail if last), 1 = raw `u64` address and `u32` length, 2 = page
/// aligned with `(u8 + 1) * 512` bytes, 3 = near the top of the address space.
fn segment(d: &mut Decoder<'_>, first: bool, last: bool) -> DmaSegment {
    match d.u8() % 4 {
        0 => {
            let page = u64::from(d.u32());
            let off = if first {
                u32::from(d.u16() % 1024) * 4
            } else {
                0
            };
            let pages = u32::from(d.u16() % 1100);
            let tail = u32::from(d.u16() % 4096) + 1;
            let len = if last {
                pages * 4096 + tail
            } else {
                (4096 - off) + pages * 4096
            };
            DmaSegment::new(page * 4096 + u64::from(off), len)
        }
        1 => DmaSegment::new(d.u64(), d.u32()),
        2 => DmaSegment::new(u64::from(d.u16()) * 4096, (u32::from(d.u8()) + 1) * 512),
        _ => DmaSegment::new(u64::MAX - u64::from(d.u16()), u32::from(d.u16())),
    }
}

/// Decodes `data` and checks the builders; panics on a broken invariant.
///
/// Input: a segment count byte, the segments (see `segment` below), a list-page byte (count `% 8`,
/// bit 7: misalign the last list address), an SGL list-size byte, then a premapped-table part:
/// page count byte, first-page offset `u16`, a contiguity bitmap `u64`, offset `u32`, length
/// `u32`.
pub fn run(data: &[u8]) {
    let mut d = Decoder::new(data);
    let n = d.u8() % (MAX_SEGS + 1);
    let segs: Vec<DmaSegment> = (0..n)
        .map(|i| segment(&mut d, i == 0, i + 1 == n))
        .collect();
    let raw: Vec<(u64, u32)> = segs.iter().map(|s| (s.addr, s.len)).collect();

    // PRPs.
    let lp = d.u8();
    let k = usize::from(lp % (MAX_LIST_PAGES + 1));
    let mut dma: Vec<u64> = (0..k as u64).map(|i| 0x9_0000_0000 + i * 0x2000).collect();
    let misalign = lp & 0x80 != 0 && k > 0;
    if misalign {
        if let Some(last) = dma.last_mut() {
            *last += 8;
        }
    }
    let mut pages = vec![[0u64; 512]; k];
    match PrpLists::new(&mut pages, &dma) {
        Err(e) => {
            assert!(misalign, "valid list pages refused: {e}");
            assert!(matches!(e, DptrError::ListMisaligned { .. }));
        }
        Ok(mut lists) => {
            assert!(!misalign, "misaligned list page accepted");
            let r = build_prps(&segs, &mut lists);
            check_prps(&raw, r, &pages, &dma);
        }
    }

    check_fill(&segs, &raw);

    // SGL.
    let m = usize::from(d.u8() % 20);
    let mut list = vec![SglDescriptor::default(); m];
    let sane = !segs.is_empty()
        && raw
            .iter()
            .all(|&(a, l)| l > 0 && a.checked_add(u64::from(l)).is_some());
    match build_sgl(segs.iter().copied(), &mut list, 0x4000) {
        Ok(s) => {
            assert!(sane && (segs.len() == 1 || segs.len() <= m));
            let mut lists = HashMap::new();
            lists.insert(
                0x4000u64,
                list.iter().map(|d| d.to_bytes()).collect::<Vec<_>>(),
            );
            let ranges = walk_sgl(s.dptr.to_bytes(), &lists).expect("SGL decodes");
            let want: Vec<(u64, u64)> = raw.iter().map(|&(a, l)| (a, u64::from(l))).collect();
            assert_eq!(ranges, want);
        }
        Err(e) => assert!(
            !sane || (segs.len() > 1 && segs.len() > m),
            "SGL refused: {e}"
        ),
    }

    tag(&mut d);
}

/// Checks a PRP build result against the rules, the page count and the walker.
fn check_prps(
    raw: &[(u64, u32)],
    r: Result<nvme::Prps, DptrError>,
    pages: &[[u64; 512]],
    dma: &[u64],
) {
    if !prp_rules_ok(raw) {
        assert!(r.is_err(), "PRP rules broken but built: {raw:x?}");
        assert!(
            pages.iter().all(|p| p.iter().all(|&e| e == 0)),
            "list written on error"
        );
        return;
    }
    let entries = prp_entries(raw);
    let needed = prp_list_pages_needed(entries);
    let p = match r {
        Ok(p) => p,
        Err(DptrError::ListTooSmall {
            needed: n,
            available,
        }) => {
            assert!(needed > pages.len() as u64);
            assert_eq!((n as u64, available), (needed, pages.len()));
            return;
        }
        Err(e) => panic!("valid segments refused: {e}"),
    };
    assert_eq!(
        (p.plan.entries as u64, p.plan.list_pages as u64),
        (entries, needed)
    );
    let mut mem = BusMemory::default();
    for (a, page) in dma.iter().zip(pages) {
        mem.pages.insert(*a, page.to_vec());
    }
    let total: u64 = raw.iter().map(|&(_, l)| u64::from(l)).sum();
    let ranges = walk_prps(p.prp1, p.prp2, total, &mem).expect("PRPs decode");
    let want: Vec<(u64, u64)> = raw.iter().map(|&(a, l)| (a, u64::from(l))).collect();
    assert_eq!(coalesce(&ranges), coalesce(&want));
}

/// The one-pass fill into one list page: accepted exactly when the rules are kept, with the
/// independent entry count, and (when the list fits the page) a list that walks back to the
/// segments.
fn check_fill(segs: &[DmaSegment], raw: &[(u64, u32)]) {
    let mut page = vec![0u64; 512];
    let f = match prp_fill(segs.iter().copied(), &mut page) {
        Ok(f) => f,
        Err(e) => {
            assert!(
                !prp_rules_ok(raw),
                "valid segments refused by prp_fill: {e}"
            );
            return;
        }
    };
    assert!(prp_rules_ok(raw), "PRP rules broken but filled: {raw:x?}");
    assert_eq!(f.prp1, raw[0].0);
    assert_eq!(f.list_entries as u64 + 1, prp_entries(raw));
    if f.list_entries == 0 || f.list_entries > page.len() {
        return;
    }
    let mut mem = BusMemory::default();
    let prp2 = if f.list_entries == 1 {
        u64::from_le(page[0])
    } else {
        mem.pages.insert(0xb_0000_0000, page);
        0xb_0000_0000
    };
    let total: u64 = raw.iter().map(|&(_, l)| u64::from(l)).sum();
    let ranges = walk_prps(f.prp1, prp2, total, &mem).expect("filled PRPs decode");
    let want: Vec<(u64, u64)> = raw.iter().map(|&(a, l)| (a, u64::from(l))).collect();
    assert_eq!(coalesce(&ranges), coalesce(&want));
}

/// Premapped buffer part: PRPs by arithmetic equal PRPs of the per-I/O mapping.
fn tag(d: &mut Decoder<'_>) {
    let npages = u64::from(d.u8() % 64) + 1;
    let fpo = u32::from(d.u16() % 4096);
    let contiguity = d.u64();
    let mut table: Vec<u64> = Vec::new();
    for i in 0..npages {
        let next = match table.last() {
            Some(&prev) if (contiguity >> (i % 64)) & 1 == 1 => prev + 4096,
            _ => 0x100_0000 + i * 0x3_0000,
        };
        table.push(next);
    }
    let buf_len = npages * 4096 - u64::from(fpo);
    let buf = PremappedPages::new(&table, fpo, buf_len).expect("table covers the buffer");
    let r = TagRange {
        offset: u64::from(d.u32()) % (buf_len + 8),
        len: d.u32() % (1 << 19),
    };
    let mut a = vec![[0u64; 512]; 1];
    let dma = [0xa_0000_0000u64];
    let got = build_prps_from_tag(&buf, r, &mut PrpLists::new(&mut a, &dma).expect("aligned"));
    let end = r.offset.checked_add(u64::from(r.len));
    if r.len == 0 || end.is_none_or(|e| e > buf_len) {
        assert!(got.is_err(), "out-of-range tag I/O accepted");
        return;
    }
    let mut segs = Vec::new();
    let mut pos = u64::from(fpo) + r.offset;
    let stop = pos + u64::from(r.len);
    while pos < stop {
        let n = (4096 - pos % 4096).min(stop - pos);
        segs.push(DmaSegment::new(
            table[(pos / 4096) as usize] + pos % 4096,
            n as u32,
        ));
        pos += n;
    }
    let mut b = vec![[0u64; 512]; 1];
    let want = build_prps(&segs, &mut PrpLists::new(&mut b, &dma).expect("aligned"));
    assert_eq!(got, want);
    if got.is_ok() {
        assert_eq!(a, b);
    }
}

/// Seed inputs: the §7.4 shapes (one page, two pages, offsets, 512/513 list entries, 8 MiB),
/// rule violations, and tag ranges.
pub fn seeds() -> Vec<Vec<u8>> {
    let prp = |page: u32, off_dw: u16, pages: u16, tail: u16| {
        let mut v = vec![0u8];
        v.extend_from_slice(&page.to_le_bytes());
        v.extend_from_slice(&off_dw.to_le_bytes());
        v.extend_from_slice(&pages.to_le_bytes());
        v.extend_from_slice(&tail.to_le_bytes());
        v
    };
    let tail = |lists: u8, sgl: u8, tag: &[u8]| {
        let mut v = vec![lists, sgl];
        v.extend_from_slice(tag);
        v
    };
    let tag_a: &[u8] = &[
        10, 0x00, 0x02, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x00, 0x40, 0, 0,
    ];
    let tag_b: &[u8] = &[
        63, 0xfc, 0x0f, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 4, 0, 0, 0, 0, 0, 4, 0,
    ];
    let mut out = vec![Vec::new()];
    // One segment: 1 page, 2 pages, offset, 512 and 513 list entries, 1024 entries, 8 MiB.
    for (off, pages, t) in [
        (0u16, 0u16, 4095u16),
        (0, 1, 4095),
        (128, 1, 100),
        (0, 512, 4095),
        (0, 513, 4095),
        (0, 1023, 4095),
        (0, 2047, 4095),
    ] {
        let mut v = vec![1u8];
        v.extend(prp(0x1234, off, pages, t));
        v.extend(tail(7, 4, tag_a));
        out.push(v);
    }
    // Three PRP-shaped segments, with too few list pages and with enough.
    for lists in [0u8, 1, 3, 0x83] {
        let mut v = vec![3u8];
        v.extend(prp(0x10, 3, 2, 0));
        v.extend(prp(0x2000, 0, 600, 0));
        v.extend(prp(0x9000, 0, 0, 17));
        v.extend(tail(lists, 19, tag_b));
        out.push(v);
    }
    // Rule violations: a misaligned middle segment; a raw segment; an empty segment.
    let mut v = vec![3u8];
    v.extend(prp(1, 0, 1, 0));
    v.extend([2u8, 5, 0, 7]); // page-aligned, 4096 bytes: ends aligned, fine
    v.extend([1u8, 8, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]); // raw, not page aligned
    v.extend(tail(7, 5, tag_a));
    out.push(v);
    let mut v = vec![2u8];
    v.extend(prp(1, 0, 1, 0));
    v.extend([3u8, 0, 0, 0, 0]); // zero length near the top
    v.extend(tail(2, 2, tag_b));
    out.push(v);
    out
}
