//! The controller side of data pointers: walking PRP1/PRP2 with chained PRP lists, and SGLs,
//! in bus memory, into the `(address, length)` runs a transfer touches. Written from the NVMe
//! specification, independently of the host-side builders.

use super::bus::{Bus, BUS_PAGE};

/// Why a data pointer could not be walked (the command fails with a data-pointer status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkError(pub String);

/// The runs of a `len`-byte transfer described by PRP1/PRP2.
pub fn walk_prp(bus: &Bus, prp1: u64, prp2: u64, len: u64) -> Result<Vec<(u64, u64)>, WalkError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if prp1 % 4 != 0 {
        return Err(WalkError(format!("PRP1 {prp1:#x} not dword aligned")));
    }
    let first = (BUS_PAGE - prp1 % BUS_PAGE).min(len);
    let mut runs = vec![(prp1, first)];
    let mut left = len - first;
    if left == 0 {
        return Ok(runs);
    }
    if left <= BUS_PAGE {
        if prp2 % BUS_PAGE != 0 {
            return Err(WalkError(format!("PRP2 {prp2:#x} not page aligned")));
        }
        runs.push((prp2, left));
        return Ok(runs);
    }
    // PRP2 points at a list; a list page's last entry points at the next list page when more
    // entries remain than fit.
    if prp2 % 8 != 0 {
        return Err(WalkError(format!("PRP list {prp2:#x} not qword aligned")));
    }
    let mut entry = prp2;
    let mut list_pages = 1;
    while left > 0 {
        let last_slot = entry % BUS_PAGE == BUS_PAGE - 8;
        if last_slot && left > BUS_PAGE {
            entry = bus.read_u64(entry);
            list_pages += 1;
            if entry % BUS_PAGE != 0 || list_pages > 4096 {
                return Err(WalkError(format!("bad PRP list chain at {entry:#x}")));
            }
            continue;
        }
        let page = bus.read_u64(entry);
        if page % BUS_PAGE != 0 {
            return Err(WalkError(format!("PRP entry {page:#x} not page aligned")));
        }
        let n = left.min(BUS_PAGE);
        runs.push((page, n));
        left -= n;
        entry += 8;
    }
    Ok(runs)
}

/// Reads descriptor `i` of a list at `addr`: (address, length, type nibble).
fn descriptor(bus: &Bus, addr: u64) -> (u64, u32, u8) {
    let mut d = [0u8; 16];
    bus.read(addr, &mut d);
    let a = u64::from_le_bytes(d[0..8].try_into().unwrap_or_default());
    let l = u32::from_le_bytes(d[8..12].try_into().unwrap_or_default());
    (a, l, d[15] >> 4)
}

/// The runs of a `len`-byte transfer described by the SGL descriptor `dptr` (the command's
/// bytes 24..40). Data Block, Segment and Last Segment descriptors are understood; the SGL may
/// describe more than `len` bytes (the excess is ignored) but not less.
pub fn walk_sgl(bus: &Bus, dptr: [u8; 16], len: u64) -> Result<Vec<(u64, u64)>, WalkError> {
    let a = u64::from_le_bytes(dptr[0..8].try_into().unwrap_or_default());
    let l = u32::from_le_bytes(dptr[8..12].try_into().unwrap_or_default());
    let mut runs = Vec::new();
    let mut left = len;
    let mut take = |addr: u64, n: u32, runs: &mut Vec<(u64, u64)>| {
        let n = u64::from(n).min(left);
        if n > 0 {
            runs.push((addr, n));
            left -= n;
        }
    };
    let mut seg = match dptr[15] >> 4 {
        0 => {
            take(a, l, &mut runs);
            None
        }
        2 | 3 => Some((a, l)),
        t => return Err(WalkError(format!("descriptor type {t:#x} in DPTR"))),
    };
    let mut hops = 0;
    while let Some((addr, bytes)) = seg.take() {
        hops += 1;
        if bytes % 16 != 0 || bytes == 0 || addr % 16 != 0 || hops > 64 {
            return Err(WalkError(format!("bad SGL segment {addr:#x}+{bytes}")));
        }
        let n = u64::from(bytes / 16);
        for i in 0..n {
            let (da, dl, ty) = descriptor(bus, addr + 16 * i);
            match ty {
                0 => take(da, dl, &mut runs),
                2 | 3 if i + 1 == n => seg = Some((da, dl)),
                t => return Err(WalkError(format!("descriptor type {t:#x} in list"))),
            }
        }
    }
    if left > 0 {
        return Err(WalkError(format!("SGL {left} bytes short")));
    }
    Ok(runs)
}

/// Copies the bytes of `runs` out of bus memory.
pub fn gather(bus: &Bus, runs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(a, n) in runs {
        let mut chunk = vec![0; n as usize];
        bus.read(a, &mut chunk);
        out.extend_from_slice(&chunk);
    }
    out
}

/// Copies `data` into bus memory along `runs`.
pub fn scatter(bus: &mut Bus, runs: &[(u64, u64)], data: &[u8]) {
    let mut at = 0usize;
    for &(a, n) in runs {
        let end = (at + n as usize).min(data.len());
        if let Some(chunk) = data.get(at..end) {
            bus.write(a, chunk);
        }
        at = end;
    }
}
