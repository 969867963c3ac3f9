//! Independent decoders of NVMe data pointers, as a controller would read them: PRP1/PRP2 with
//! chained PRP lists, and SGLs. They turn a data pointer back into the byte ranges it describes,
//! for comparison with the segments it was built from. Written from the NVMe specification, not
//! from the bio crate.

use std::collections::HashMap;

/// The controller page size.
pub const PAGE: u64 = 4096;

/// Bus memory the walker may read: list pages by bus address (8-byte little-endian words).
#[derive(Debug, Default)]
pub struct BusMemory {
    /// Each list page's contents by its bus address, as raw words as stored (little-endian).
    pub pages: HashMap<u64, Vec<u64>>,
}

impl BusMemory {
    /// Reads the PRP entry at bus address `addr` (must lie in a known page, 8-byte aligned).
    fn read_u64(&self, addr: u64) -> Result<u64, String> {
        if addr % 8 != 0 {
            return Err(format!("unaligned list read at {addr:#x}"));
        }
        let base = addr - addr % PAGE;
        let page = self
            .pages
            .get(&base)
            .ok_or_else(|| format!("list read at unknown address {addr:#x}"))?;
        let idx = ((addr - base) / 8) as usize;
        page.get(idx)
            .map(|&v| u64::from_le(v))
            .ok_or_else(|| format!("list read past page at {addr:#x}"))
    }
}

/// Merges adjacent ranges (`a.end == b.start`) so that equal byte sequences compare equal.
pub fn coalesce(ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(addr, len) in ranges {
        if len == 0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.0 + last.1 == addr => last.1 += len,
            _ => out.push((addr, len)),
        }
    }
    out
}

/// Decodes PRP1/PRP2 for a transfer of `len` bytes into `(addr, len)` ranges, following list
/// pages in `mem`. Fails on any rule a controller would reject: PRP1 not dword aligned, a later
/// entry not page aligned, a list pointer with a non-qword offset, or a read outside `mem`.
pub fn walk_prps(
    prp1: u64,
    prp2: u64,
    len: u64,
    mem: &BusMemory,
) -> Result<Vec<(u64, u64)>, String> {
    if prp1 % 4 != 0 {
        return Err(format!("PRP1 {prp1:#x} not dword aligned"));
    }
    let mut out = Vec::new();
    let first = (PAGE - prp1 % PAGE).min(len);
    out.push((prp1, first));
    let mut left = len - first;
    if left == 0 {
        return Ok(out);
    }
    let data_page = |e: u64, out: &mut Vec<(u64, u64)>, left: &mut u64| -> Result<(), String> {
        if e % PAGE != 0 {
            return Err(format!("PRP entry {e:#x} not page aligned"));
        }
        let n = PAGE.min(*left);
        out.push((e, n));
        *left -= n;
        Ok(())
    };
    if left <= PAGE {
        data_page(prp2, &mut out, &mut left)?;
        return Ok(out);
    }
    // PRP2 is a list pointer. Entries run to the end of the list's page; when more entries are
    // needed than the page still holds, its last entry points at the next list.
    if prp2 % 8 != 0 {
        return Err(format!("PRP list pointer {prp2:#x} not qword aligned"));
    }
    let mut ptr = prp2;
    while left > 0 {
        let slots_left = (PAGE - ptr % PAGE) / 8;
        let entries_needed = left.div_ceil(PAGE);
        if slots_left == 1 && entries_needed > 1 {
            ptr = mem.read_u64(ptr)?;
            if ptr % 8 != 0 {
                return Err(format!("chained list pointer {ptr:#x} not qword aligned"));
            }
            continue;
        }
        let e = mem.read_u64(ptr)?;
        data_page(e, &mut out, &mut left)?;
        ptr += 8;
    }
    Ok(out)
}

/// Decodes a 16-byte SGL descriptor into `(addr, len, type nibble)`.
pub fn sgl_fields(d: &[u8; 16]) -> (u64, u32, u8) {
    let addr = u64::from_le_bytes(d[0..8].try_into().unwrap());
    let len = u32::from_le_bytes(d[8..12].try_into().unwrap());
    (addr, len, d[15] >> 4)
}

/// Decodes an SGL: an inline Data Block, or a Last Segment pointing at a list of Data Blocks
/// found in `lists` (by bus address, 16-byte descriptors).
pub fn walk_sgl(
    dptr: [u8; 16],
    lists: &HashMap<u64, Vec<[u8; 16]>>,
) -> Result<Vec<(u64, u64)>, String> {
    let (addr, len, ty) = sgl_fields(&dptr);
    match ty {
        0x0 => Ok(vec![(addr, u64::from(len))]),
        0x3 => {
            if len % 16 != 0 || len == 0 {
                return Err(format!("segment length {len} not a multiple of 16"));
            }
            let list = lists
                .get(&addr)
                .ok_or_else(|| format!("no SGL list at {addr:#x}"))?;
            let n = (len / 16) as usize;
            if n > list.len() {
                return Err("SGL list shorter than its descriptor says".into());
            }
            list[..n]
                .iter()
                .map(|d| match sgl_fields(d) {
                    (a, l, 0x0) => Ok((a, u64::from(l))),
                    (_, _, t) => Err(format!("unexpected descriptor type {t:#x} in list")),
                })
                .collect()
        }
        t => Err(format!("unexpected descriptor type {t:#x} in DPTR")),
    }
}

/// The PRP rules, stated on `(addr, len)` pairs: at least one segment, none empty or wrapping,
/// the first starting on a dword, later ones starting on a page, all but the last ending on one.
pub fn prp_rules_ok(segs: &[(u64, u32)]) -> bool {
    !segs.is_empty()
        && segs.iter().enumerate().all(|(i, &(addr, len))| {
            let end = addr.checked_add(u64::from(len));
            len > 0
                && end.is_some()
                && (i != 0 || addr % 4 == 0)
                && (i == 0 || addr % PAGE == 0)
                && (i + 1 == segs.len() || end.is_some_and(|e| e % PAGE == 0))
        })
}

/// PRP entries (controller pages touched) of valid segments.
pub fn prp_entries(segs: &[(u64, u32)]) -> u64 {
    segs.iter()
        .map(|&(addr, len)| (addr % PAGE + u64::from(len)).div_ceil(PAGE))
        .sum()
}

/// List pages a transfer of `entries` PRP entries needs: none for one or two entries; otherwise
/// the entries after PRP1 fill pages of 512 slots, each page but the last giving one slot to the
/// chain pointer.
pub fn prp_list_pages_needed(entries: u64) -> u64 {
    if entries <= 2 {
        return 0;
    }
    let list = entries - 1;
    let mut pages = 1;
    while 511 * pages + 1 < list {
        pages += 1;
    }
    pages
}
