//! User-space memory model for the iov crate: one byte arena seen as user, kernel and page memory.
//!
//! Arena byte `o` is user address [`USER_BASE`]` + o`, kernel address [`KERNEL_BASE`]` + o` and
//! byte `o % PAGE_SIZE` of page [`Pfn`]`(o / PAGE_SIZE)`. Anything outside the arena, and any
//! byte marked with [`ArenaMem::add_fault`], faults: copies stop exactly before the first faulting
//! byte and report the rest as not copied, like `copy_to_user` on an unmapped page. Faults apply
//! to all three views, so short steps can be provoked for every iterator kind.

use std::ops::Range;
use std::sync::OnceLock;

use bvec::{PageMemory, Pfn, PAGE_SIZE};
use iov::{GupFlags, KernelMemory, Memory, UserMemory};

/// User address of arena byte 0.
pub const USER_BASE: usize = 0x10_0000;
/// Kernel address of arena byte 0 (a direct-map-like address).
pub const KERNEL_BASE: usize = 0xffff_8880_0000_0000;

/// A byte arena implementing every memory trait the iterators need.
///
/// # Invariants
///
/// `fault_bits` has bit `o` set exactly when arena byte `o` lies in one of `faults` (it is
/// empty while `faults` is). `dirty` covers every byte written since the last
/// [`ArenaMem::take_dirty`] (or since creation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArenaMem {
    bytes: Vec<u8>,
    faults: Vec<Range<usize>>,
    /// `faults` as one bit per arena byte, so that per-byte checks cost one lookup.
    fault_bits: Vec<u64>,
    /// Smallest range holding every byte written since the last `take_dirty` (empty: none).
    dirty: Range<usize>,
    /// Pages handed out by GUP (`user_pages`), with whether they were pinned.
    pub gup: Vec<(Pfn, bool)>,
    /// Pages `get_page` was called on.
    pub refs: Vec<Pfn>,
}

impl ArenaMem {
    /// An arena of `npages` pages filled with the pattern `byte(o) = o as u8` ... mixed with
    /// the page number so different pages differ.
    pub fn new(npages: usize) -> Self {
        // The pattern of a prefix does not depend on the arena size: compute it once for the
        // largest arena asked for so far and copy it (the fuzz targets build arenas per input).
        static PATTERN: OnceLock<Vec<u8>> = OnceLock::new();
        let len = npages * PAGE_SIZE;
        let pattern = PATTERN.get_or_init(|| Self::pattern(64 * PAGE_SIZE));
        let bytes = match pattern.get(..len) {
            Some(p) => p.to_vec(),
            None => Self::pattern(len),
        };
        Self {
            bytes,
            ..Self::default()
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|o| (o as u8) ^ ((o / PAGE_SIZE) as u8).wrapping_mul(37))
            .collect()
    }

    /// An arena of `npages` zeroed pages.
    pub fn zeroed(npages: usize) -> Self {
        Self {
            bytes: vec![0; npages * PAGE_SIZE],
            ..Self::default()
        }
    }

    /// The arena bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The arena bytes, mutable (the whole arena counts as written).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.mark(0..self.bytes.len());
        &mut self.bytes
    }

    /// Sets arena byte `o` (inside the arena) to `b`.
    pub fn set(&mut self, o: usize, b: u8) {
        self.bytes[o] = b;
        self.mark(o..o + 1);
    }

    fn mark(&mut self, r: Range<usize>) {
        if r.is_empty() {
            return;
        }
        self.dirty = if self.dirty.is_empty() {
            r
        } else {
            self.dirty.start.min(r.start)..self.dirty.end.max(r.end)
        };
    }

    /// The smallest range holding every byte written since the last call (or since creation);
    /// empty if none. Two arenas that were equal and whose bytes outside both ranges were not
    /// written are still equal there, so comparing the union of the ranges is enough.
    pub fn take_dirty(&mut self) -> Range<usize> {
        std::mem::replace(&mut self.dirty, 0..0)
    }

    /// Makes arena bytes `range` fault in every view.
    pub fn add_fault(&mut self, range: Range<usize>) {
        if self.fault_bits.is_empty() {
            self.fault_bits = vec![0; self.bytes.len().div_ceil(64)];
        }
        for o in range.start..range.end.min(self.bytes.len()) {
            self.fault_bits[o / 64] |= 1 << (o % 64);
        }
        self.faults.push(range);
    }

    /// Whether arena byte `o` faults (outside the arena or marked).
    pub fn is_fault(&self, o: usize) -> bool {
        o >= self.bytes.len()
            || self
                .fault_bits
                .get(o / 64)
                .is_some_and(|w| w & (1 << (o % 64)) != 0)
    }

    /// User address of arena byte `o`.
    pub fn user_addr(o: usize) -> usize {
        USER_BASE + o
    }

    /// Kernel address of arena byte `o`.
    pub fn kernel_addr(o: usize) -> usize {
        KERNEL_BASE + o
    }

    /// Arena offset of a page byte, if it is representable.
    pub fn page_offset(page: Pfn, offset: usize) -> Option<usize> {
        usize::try_from(page.0)
            .ok()?
            .checked_mul(PAGE_SIZE)?
            .checked_add(offset)
    }

    /// How many bytes from arena offset `o` on are accessible, up to `len`.
    fn ok_len(&self, o: Option<usize>, len: usize) -> usize {
        let Some(o) = o else { return 0 };
        if o >= self.bytes.len() {
            return 0;
        }
        let mut ok = (self.bytes.len() - o).min(len);
        for r in &self.faults {
            if r.end > o && r.start < o + ok {
                ok = ok.min(r.start.saturating_sub(o));
            }
        }
        ok
    }

    fn write_at(&mut self, o: Option<usize>, src: &[u8]) -> usize {
        let ok = self.ok_len(o, src.len());
        if let Some(o) = o {
            if ok > 0 {
                self.bytes[o..o + ok].copy_from_slice(&src[..ok]);
                self.mark(o..o + ok);
            }
        }
        src.len() - ok
    }

    fn read_at(&self, o: Option<usize>, dst: &mut [u8]) -> usize {
        let ok = self.ok_len(o, dst.len());
        if let Some(o) = o {
            if ok > 0 {
                dst[..ok].copy_from_slice(&self.bytes[o..o + ok]);
            }
        }
        dst.len() - ok
    }

    fn zero_at(&mut self, o: Option<usize>, len: usize) -> usize {
        let ok = self.ok_len(o, len);
        if let Some(o) = o {
            if ok > 0 {
                self.bytes[o..o + ok].fill(0);
                self.mark(o..o + ok);
            }
        }
        len - ok
    }

    fn user(addr: usize) -> Option<usize> {
        addr.checked_sub(USER_BASE)
    }

    fn kernel(addr: usize) -> Option<usize> {
        addr.checked_sub(KERNEL_BASE)
    }
}

impl UserMemory<Pfn> for ArenaMem {
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize {
        self.write_at(Self::user(addr), src)
    }
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.read_at(Self::user(addr), dst)
    }
    fn clear_user(&mut self, addr: usize, len: usize) -> usize {
        self.zero_at(Self::user(addr), len)
    }
    fn user_pages(&mut self, addr: usize, flags: GupFlags, pages: &mut [Pfn]) -> usize {
        let mut n = 0;
        for (k, slot) in pages.iter_mut().enumerate() {
            let Some(o) = Self::user(addr).and_then(|o| o.checked_add(k * PAGE_SIZE)) else {
                break;
            };
            if self.ok_len(Some(o), PAGE_SIZE) != PAGE_SIZE {
                break;
            }
            *slot = Pfn((o / PAGE_SIZE) as u64);
            self.gup.push((*slot, flags.pin));
            n += 1;
        }
        n
    }
}

impl KernelMemory<Pfn> for ArenaMem {
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize {
        self.write_at(Self::kernel(addr), src)
    }
    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.read_at(Self::kernel(addr), dst)
    }
    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize {
        self.zero_at(Self::kernel(addr), len)
    }
    fn kernel_page(&self, addr: usize) -> Option<Pfn> {
        let o = Self::kernel(addr)?;
        (o < self.bytes.len()).then_some(Pfn((o / PAGE_SIZE) as u64))
    }
    fn get_page(&mut self, page: Pfn) {
        self.refs.push(page);
    }
}

impl PageMemory<Pfn> for ArenaMem {
    fn read(&self, page: Pfn, offset: usize, dst: &mut [u8]) -> usize {
        self.read_at(Self::page_offset(page, offset), dst)
    }
    fn write(&mut self, page: Pfn, offset: usize, src: &[u8]) -> usize {
        self.write_at(Self::page_offset(page, offset), src)
    }
    fn zero(&mut self, page: Pfn, offset: usize, len: usize) -> usize {
        self.zero_at(Self::page_offset(page, offset), len)
    }
}

/// The cross-space copies use the trait's bounce-buffer defaults, so the tests cover them.
impl Memory<Pfn> for ArenaMem {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_and_written_ranges() {
        let mut m = ArenaMem::new(2);
        assert_eq!(m.bytes(), &ArenaMem::pattern(2 * PAGE_SIZE)[..]);
        assert!(!m.is_fault(0) && !m.is_fault(8191) && m.is_fault(8192));
        m.add_fault(100..130);
        m.add_fault(8000..9000);
        let faulty: Vec<usize> = (0..8200).filter(|&o| m.is_fault(o)).collect();
        let want: Vec<usize> = (100..130).chain(8000..8200).collect();
        assert_eq!(faulty, want);
        assert!(m.take_dirty().is_empty());
        assert_eq!(
            m.copy_to_kernel(KERNEL_BASE + 90, &[1; 20]),
            10,
            "stops at the fault"
        );
        m.set(5000, 7);
        assert_eq!(m.clear_user(USER_BASE + 20, 3), 0);
        assert_eq!(m.take_dirty(), 20..5001);
        assert!(m.take_dirty().is_empty());
    }
}
