//! Benchmark memory: one physical page tiled over the whole address space of a benchmark.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! The kernel's iov_iter benchmarks (`iov_kunit_create_source`, iov-semantics §8.2) vmap a single
//! 4 KiB page 65,536 times, so a 256 MiB "buffer" is backed by one cache-hot physical page and the
//! benchmark measures iterator overhead plus a cache-resident memcpy. [`TiledMem`] is the
//! user-space equivalent (recipe §8.4): every user address, kernel address and page frame number
//! inside its mapped ranges resolves to the same 4 KiB page (`addr & 4095`, any in-range pfn), and
//! every copy really moves the bytes, one `copy_from_slice` per piece of that page.
//!
//! User and kernel accesses outside the mapped ranges fault (the whole chunk is reported as not
//! copied), like `access_ok` failing, so that check is part of the measured work just as in the
//! kernel. Otherwise the memory costs what the kernel's does: a range inside one page is one
//! slice bounds check and one `copy_from_slice` (the kernel: `memcpy` on a direct-mapped or
//! vmapped address, `kmap_local_page` being `page_address` on 64-bit); page handles are not
//! looked up, every frame number is the page.

use core::cmp::min;

use bvec::{PageMemory, Pfn, PAGE_SHIFT, PAGE_SIZE};
use iov::{GupFlags, KernelMemory, Memory, UserMemory};

const PAGE_MASK: usize = PAGE_SIZE - 1;

/// User address of byte 0 of the tiled user mapping (page-aligned, like an `mmap` result).
pub const USER_BASE: usize = 0x7f00_0000_0000;
/// Kernel address of byte 0 of the tiled kernel mapping (a vmalloc-area address).
pub const KERNEL_BASE: usize = 0xffff_c900_0000_0000;

/// One page-aligned 4 KiB page.
#[derive(Clone, Debug)]
#[repr(C, align(4096))]
struct PageBuf([u8; PAGE_SIZE]);

/// The test pattern of byte `i` of the tiled page (`pattern(x) = x & 0xff` in the kunit test,
/// mixed so that neighbouring pages of a mis-tiled copy would differ).
#[inline]
pub const fn pattern(i: usize) -> u8 {
    (i as u8) ^ ((i >> 8) as u8).wrapping_mul(29)
}

/// A memory whose user range, kernel range and page frames are all the same physical page.
///
/// - User addresses `USER_BASE .. USER_BASE + mapped` map to page byte `addr & 4095`.
/// - Kernel addresses `KERNEL_BASE .. KERNEL_BASE + mapped` likewise.
/// - Every page frame `Pfn(n)` is that page (a page handle is trusted, as in the kernel); a
///   page range must lie inside the page (`offset + len <= 4096`), like `PageMemory` asks.
///
/// Writes land in the page too, so a DEST copy is as honest as a SOURCE one. `get_page` only
/// counts references.
///
/// # Examples
///
/// ```
/// use iovstack_benches::tiled::{pattern, TiledMem, USER_BASE};
/// use iov::UserMemory;
/// let mut m = TiledMem::new(1 << 20);
/// let mut buf = [0u8; 6000];
/// assert_eq!(m.copy_from_user(USER_BASE + 4090, &mut buf), 0);
/// assert_eq!((buf[0], buf[6], buf[5999]), (pattern(4090), pattern(0), pattern(1897)));
/// assert_eq!(m.copy_from_user(USER_BASE + (1 << 20) - 10, &mut buf), 6000); // past the mapping
/// ```
#[derive(Clone, Debug)]
pub struct TiledMem {
    page: Box<PageBuf>,
    mapped: usize,
    refs: u64,
}

impl TiledMem {
    /// A tiled memory mapping `mapped` bytes (rounded down to whole pages) in each space.
    pub fn new(mapped: usize) -> Self {
        let mut page = Box::new(PageBuf([0; PAGE_SIZE]));
        for (i, b) in page.0.iter_mut().enumerate() {
            *b = pattern(i);
        }
        Self {
            page,
            mapped: mapped & !PAGE_MASK,
            refs: 0,
        }
    }

    /// The bytes of the single backing page.
    pub fn page_bytes(&self) -> &[u8] {
        &self.page.0
    }

    /// References taken through [`KernelMemory::get_page`].
    pub fn refs(&self) -> u64 {
        self.refs
    }

    /// Offset into the mapping of `addr` if `len` bytes from there are mapped in the space
    /// starting at `base`.
    #[inline(always)]
    fn check(&self, base: usize, addr: usize, len: usize) -> Option<usize> {
        // An address below `base` wraps to a huge offset and fails like one past the end.
        let off = addr.wrapping_sub(base);
        let end = off.checked_add(len)?;
        (end <= self.mapped).then_some(off)
    }

    /// Copies out of the tiled range starting at mapping offset `off`, exactly as many bytes as
    /// `dst` holds. A range inside one page (every chunk of the page kinds, every 4 KiB segment)
    /// is one bounds check and one `copy_from_slice`, as cheap as the kernel's plain `memcpy` on
    /// a mapped address; a longer range (a 256 KiB KVEC chunk) goes piece by piece.
    #[inline(always)]
    fn read_tiled(&self, off: usize, dst: &mut [u8]) -> usize {
        let in_page = off & PAGE_MASK;
        // `in_page < 4096`, so the first `get` cannot fail and the second is the one check.
        match self.page.0.get(in_page..).and_then(|p| p.get(..dst.len())) {
            Some(s) => {
                dst.copy_from_slice(s);
                0
            }
            None => self.read_pieces(in_page, dst),
        }
    }

    /// [`TiledMem::read_tiled`] of a range that crosses a page boundary: the rest of the page,
    /// then one `copy_from_slice` per 4 KiB of `dst` (the loop of the memcpy ceiling).
    #[inline(never)]
    fn read_pieces(&self, in_page: usize, dst: &mut [u8]) -> usize {
        let first = min(PAGE_SIZE - in_page, dst.len());
        match (
            dst.get_mut(..first),
            self.page.0.get(in_page..in_page + first),
        ) {
            (Some(d), Some(s)) => d.copy_from_slice(s),
            _ => return dst.len(),
        }
        let mut done = first;
        for d in dst
            .get_mut(first..)
            .unwrap_or_default()
            .chunks_mut(PAGE_SIZE)
        {
            match self.page.0.get(..d.len()) {
                Some(s) => d.copy_from_slice(s),
                None => break,
            }
            done += d.len();
        }
        dst.len() - done
    }

    /// Copies `src` into the tiled range at mapping offset `off`.
    #[inline(always)]
    fn write_tiled(&mut self, off: usize, src: &[u8]) -> usize {
        let mut in_page = off & PAGE_MASK;
        let mut done = 0;
        while done < src.len() {
            let n = min(PAGE_SIZE - in_page, src.len() - done);
            match (
                self.page.0.get_mut(in_page..in_page + n),
                src.get(done..done + n),
            ) {
                (Some(d), Some(s)) => d.copy_from_slice(s),
                _ => break,
            }
            done += n;
            in_page = 0;
        }
        src.len() - done
    }

    /// Zeroes `len` bytes of the tiled range at mapping offset `off`.
    #[inline(always)]
    fn zero_tiled(&mut self, off: usize, len: usize) -> usize {
        let mut in_page = off & PAGE_MASK;
        let mut done = 0;
        while done < len {
            let n = min(PAGE_SIZE - in_page, len - done);
            match self.page.0.get_mut(in_page..in_page + n) {
                Some(d) => d.fill(0),
                None => break,
            }
            done += n;
            in_page = 0;
        }
        len - done
    }

    /// The `len` bytes at `offset` of the page, if they lie inside it. Every frame number is
    /// the tiled page, and a page handle is trusted as the kernel trusts a `struct page *`
    /// (`kmap_local_page` is `page_address` on 64-bit): only the byte range is checked.
    #[inline(always)]
    fn page_range(&self, offset: usize, len: usize) -> Option<&[u8]> {
        self.page.0.get(offset..offset.wrapping_add(len))
    }

    /// [`UserMemory::copy_from_user`] through a shared reference (reads do not need `&mut`).
    #[inline(always)]
    pub fn read_user(&self, addr: usize, dst: &mut [u8]) -> usize {
        match self.check(USER_BASE, addr, dst.len()) {
            Some(off) => self.read_tiled(off, dst),
            None => dst.len(),
        }
    }

    /// [`KernelMemory::copy_from_kernel`] through a shared reference.
    #[inline(always)]
    pub fn read_kernel(&self, addr: usize, dst: &mut [u8]) -> usize {
        match self.check(KERNEL_BASE, addr, dst.len()) {
            Some(off) => self.read_tiled(off, dst),
            None => dst.len(),
        }
    }
}

impl UserMemory<Pfn> for TiledMem {
    #[inline(always)]
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize {
        match self.check(USER_BASE, addr, src.len()) {
            Some(off) => self.write_tiled(off, src),
            None => src.len(),
        }
    }

    #[inline(always)]
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.read_user(addr, dst)
    }

    #[inline(always)]
    fn clear_user(&mut self, addr: usize, len: usize) -> usize {
        match self.check(USER_BASE, addr, len) {
            Some(off) => self.zero_tiled(off, len),
            None => len,
        }
    }

    fn user_pages(&mut self, addr: usize, _flags: GupFlags, pages: &mut [Pfn]) -> usize {
        let mut n = 0;
        for (k, slot) in pages.iter_mut().enumerate() {
            let a = addr.wrapping_add(k << PAGE_SHIFT);
            let Some(off) = self.check(USER_BASE, a, PAGE_SIZE) else {
                break;
            };
            *slot = Pfn((off >> PAGE_SHIFT) as u64);
            n += 1;
        }
        n
    }
}

impl KernelMemory<Pfn> for TiledMem {
    #[inline(always)]
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize {
        match self.check(KERNEL_BASE, addr, src.len()) {
            Some(off) => self.write_tiled(off, src),
            None => src.len(),
        }
    }

    #[inline(always)]
    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        self.read_kernel(addr, dst)
    }

    #[inline(always)]
    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize {
        match self.check(KERNEL_BASE, addr, len) {
            Some(off) => self.zero_tiled(off, len),
            None => len,
        }
    }

    fn kernel_page(&self, addr: usize) -> Option<Pfn> {
        let off = self.check(KERNEL_BASE, addr, 1)?;
        Some(Pfn((off >> PAGE_SHIFT) as u64))
    }

    fn get_page(&mut self, _page: Pfn) {
        self.refs += 1;
    }
}

impl PageMemory<Pfn> for TiledMem {
    #[inline(always)]
    fn read(&self, _page: Pfn, offset: usize, dst: &mut [u8]) -> usize {
        match self.page_range(offset, dst.len()) {
            Some(s) => {
                dst.copy_from_slice(s);
                0
            }
            None => dst.len(),
        }
    }

    #[inline(always)]
    fn write(&mut self, _page: Pfn, offset: usize, src: &[u8]) -> usize {
        match self.page.0.get_mut(offset..offset.wrapping_add(src.len())) {
            Some(d) => {
                d.copy_from_slice(src);
                0
            }
            None => src.len(),
        }
    }

    #[inline(always)]
    fn zero(&mut self, _page: Pfn, offset: usize, len: usize) -> usize {
        match self.page.0.get_mut(offset..offset.wrapping_add(len)) {
            Some(d) => {
                d.fill(0);
                0
            }
            None => len,
        }
    }
}

impl Memory<Pfn> for TiledMem {}

/// A zero-filled, page-aligned byte buffer (the destination "scratch" of the copy benchmarks).
///
/// # Examples
///
/// ```
/// use iovstack_benches::tiled::AlignedBuf;
/// let mut b = AlignedBuf::new(8192);
/// assert_eq!(b.as_mut_slice().len(), 8192);
/// assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
/// ```
#[derive(Clone, Debug)]
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` zero bytes whose first byte is 4096-aligned.
    pub fn new(len: usize) -> Self {
        let raw = vec![0u8; len + PAGE_SIZE];
        // `align_offset` may give up (usize::MAX); the buffer is then merely unaligned.
        let start = raw.as_ptr().align_offset(PAGE_SIZE).min(PAGE_SIZE);
        Self { raw, start, len }
    }

    /// The buffer.
    pub fn as_slice(&self) -> &[u8] {
        self.raw
            .get(self.start..self.start + self.len)
            .unwrap_or(&[])
    }

    /// The buffer, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.raw
            .get_mut(self.start..self.start + self.len)
            .unwrap_or(&mut [])
    }
}
