//! Sparse bus memory shared by the test host and the simulated controller: 4 KiB pages
//! allocated on demand, byte-addressed by bus address, plus a bump allocator for DMA buffers.

use std::collections::HashMap;

/// Page size of the bus memory and of the allocator.
pub const BUS_PAGE: u64 = 4096;

/// Byte-addressable memory at bus addresses. Reads of never-written bytes return 0.
#[derive(Debug, Default)]
pub struct Bus {
    pages: HashMap<u64, Box<[u8; BUS_PAGE as usize]>>,
    next: u64,
}

impl Bus {
    /// Empty memory; the allocator starts at 1 MiB (bus address 0 is never handed out).
    pub fn new() -> Self {
        Self {
            pages: HashMap::new(),
            next: 0x10_0000,
        }
    }

    /// Allocates `pages` page-aligned, contiguous pages and returns the first address.
    /// A guard page is left after each allocation.
    pub fn alloc(&mut self, pages: u64) -> u64 {
        let addr = self.next;
        self.next += (pages.max(1) + 1) * BUS_PAGE;
        addr
    }

    /// Reads `out.len()` bytes at `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0usize;
        while done < out.len() {
            let a = addr + done as u64;
            let off = (a % BUS_PAGE) as usize;
            let n = (BUS_PAGE as usize - off).min(out.len() - done);
            let dst = &mut out[done..done + n];
            match self.pages.get(&(a / BUS_PAGE)) {
                Some(p) => dst.copy_from_slice(&p[off..off + n]),
                None => dst.fill(0),
            }
            done += n;
        }
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let off = (a % BUS_PAGE) as usize;
            let n = (BUS_PAGE as usize - off).min(data.len() - done);
            let page = self
                .pages
                .entry(a / BUS_PAGE)
                .or_insert_with(|| Box::new([0; BUS_PAGE as usize]));
            page[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// Reads a little-endian `u16`.
    pub fn read_u16(&self, addr: u64) -> u16 {
        let mut b = [0; 2];
        self.read(addr, &mut b);
        u16::from_le_bytes(b)
    }

    /// Reads a little-endian `u32`.
    pub fn read_u32(&self, addr: u64) -> u32 {
        let mut b = [0; 4];
        self.read(addr, &mut b);
        u32::from_le_bytes(b)
    }

    /// Reads a little-endian `u64`.
    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }

    /// Fills `len` bytes at `addr` with zero.
    pub fn zero(&mut self, addr: u64, len: u64) {
        self.write(addr, &vec![0; len as usize]);
    }
}
