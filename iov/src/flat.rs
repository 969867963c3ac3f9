//! A memory over one byte slice, for examples and tests outside the kernel.
//!
//! C header: [`include/linux/uaccess.h`](srctree/include/linux/uaccess.h)

use bvec::{PageMemory, Pfn, PAGE_SHIFT, PAGE_SIZE};

use crate::{GupFlags, KernelMemory, Memory, UserMemory};

/// Every address space over one borrowed byte slice: user address `a`, kernel address `a` and
/// byte `o` of page `Pfn(n)` (at `n * PAGE_SIZE + o`) all name slice bytes. Anything outside the
/// slice faults: copies stop at the slice end and report the rest as not copied.
///
/// Not built for the kernel (`--cfg kbuild`), whose memory is the real thing.
///
/// # Examples
///
/// ```
/// use iov::{FlatMemory, UserMemory};
/// let mut bytes = [0u8; 16];
/// let mut mem = FlatMemory::new(&mut bytes);
/// assert_eq!(mem.copy_to_user(12, &[1, 2, 3, 4, 5, 6]), 2); // 2 bytes past the end
/// assert_eq!(mem.refs(), 0);
/// assert_eq!(bytes[12..], [1, 2, 3, 4]);
/// ```
#[derive(Debug)]
pub struct FlatMemory<'m> {
    bytes: &'m mut [u8],
    refs: usize,
}

impl<'m> FlatMemory<'m> {
    /// A memory over `bytes`.
    pub fn new(bytes: &'m mut [u8]) -> Self {
        Self { bytes, refs: 0 }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// How many page references `get_pages` took (through [`KernelMemory::get_page`]).
    pub fn refs(&self) -> usize {
        self.refs
    }

    /// The part of `len` bytes at `at` that lies inside the slice.
    fn span(&self, at: Option<usize>, len: usize) -> (usize, usize) {
        match at {
            Some(a) if a < self.bytes.len() => (a, core::cmp::min(len, self.bytes.len() - a)),
            _ => (0, 0),
        }
    }

    fn put(&mut self, at: Option<usize>, src: &[u8]) -> usize {
        let (a, n) = self.span(at, src.len());
        if let (Some(d), Some(s)) = (self.bytes.get_mut(a..a + n), src.get(..n)) {
            d.copy_from_slice(s);
            return src.len() - n;
        }
        src.len()
    }

    fn get(&self, at: Option<usize>, dst: &mut [u8]) -> usize {
        let (a, n) = self.span(at, dst.len());
        let len = dst.len();
        if let (Some(d), Some(s)) = (dst.get_mut(..n), self.bytes.get(a..a + n)) {
            d.copy_from_slice(s);
            return len - n;
        }
        len
    }

    fn clear(&mut self, at: Option<usize>, len: usize) -> usize {
        let (a, n) = self.span(at, len);
        if let Some(d) = self.bytes.get_mut(a..a + n) {
            d.fill(0);
            return len - n;
        }
        len
    }

    fn page_at(page: Pfn, offset: usize) -> Option<usize> {
        usize::try_from(page.0)
            .ok()?
            .checked_mul(PAGE_SIZE)?
            .checked_add(offset)
    }
}

impl UserMemory<Pfn> for FlatMemory<'_> {
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize {
        self.put(Some(addr), src)
    }
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.get(Some(addr), dst)
    }
    fn clear_user(&mut self, addr: usize, len: usize) -> usize {
        self.clear(Some(addr), len)
    }
    fn user_pages(&mut self, addr: usize, _flags: GupFlags, pages: &mut [Pfn]) -> usize {
        let mut n = 0;
        for (k, slot) in pages.iter_mut().enumerate() {
            let Some(a) = addr.checked_add(k << PAGE_SHIFT) else {
                break;
            };
            if self.span(Some(a), PAGE_SIZE).1 != PAGE_SIZE {
                break;
            }
            *slot = Pfn((a >> PAGE_SHIFT) as u64);
            n += 1;
        }
        n
    }
}

impl KernelMemory<Pfn> for FlatMemory<'_> {
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize {
        self.put(Some(addr), src)
    }
    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.get(Some(addr), dst)
    }
    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize {
        self.clear(Some(addr), len)
    }
    fn kernel_page(&self, addr: usize) -> Option<Pfn> {
        (addr < self.bytes.len()).then_some(Pfn((addr >> PAGE_SHIFT) as u64))
    }
    fn get_page(&mut self, _page: Pfn) {
        self.refs += 1;
    }
}

impl PageMemory<Pfn> for FlatMemory<'_> {
    fn read(&self, page: Pfn, offset: usize, dst: &mut [u8]) -> usize {
        self.get(Self::page_at(page, offset), dst)
    }
    fn write(&mut self, page: Pfn, offset: usize, src: &[u8]) -> usize {
        self.put(Self::page_at(page, offset), src)
    }
    fn zero(&mut self, page: Pfn, offset: usize, len: usize) -> usize {
        self.clear(Self::page_at(page, offset), len)
    }
}

impl Memory<Pfn> for FlatMemory<'_> {}
