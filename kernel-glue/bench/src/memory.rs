// SPDX-License-Identifier: GPL-2.0

//! The memory our crates copy through in the benchmark: one page, one kernel range, user space.
//!
//! C header: [`include/linux/uaccess.h`](srctree/include/linux/uaccess.h)

use bvec::{PageMemory, PAGE_SIZE};
use iov::{GupFlags, KernelMemory, Memory, UserMemory};

use kernel_glue::KPage;

use crate::{helpers, TiledVmap};

/// [`iov::Memory`] over the benchmark's buffers, with the checks a production implementation
/// needs and nothing more: a page handle must be the tiled page (one compare), a kernel
/// address range must lie in the one [`TiledVmap`] (one range check), user addresses go to
/// `access_ok` + `raw_copy_{from,to}_user` as in lib/iov_iter.c's user steps.
///
/// Anything else is a fault: nothing is touched and the length is returned as not processed.
///
/// # Invariants
///
/// `virt` is the direct-map address of `page`, and `kbase .. kbase + klen` the range of a
/// tiled vmap of that page, borrowed for `'a`. While it is borrowed no Rust reference to its
/// bytes or its page's bytes exists (the vmap hands out a slice only through `&mut self`, and
/// it borrows its page mutably), so the raw-pointer reads and writes here alias nothing.
#[derive(Debug)]
pub struct BenchMemory<'a> {
    page: KPage,
    virt: *mut u8,
    kbase: usize,
    klen: usize,
    _borrow: core::marker::PhantomData<&'a ()>,
}

impl<'a> BenchMemory<'a> {
    /// Memory over `tiled`: its page (page segments must name it) and its range (kernel
    /// segments must lie in it).
    pub fn new(tiled: &'a TiledVmap<'_>) -> Self {
        // INVARIANT: the vmap (which owns its page's borrow) is borrowed for `'a`.
        Self {
            page: tiled.page(),
            virt: tiled.page_virt(),
            kbase: tiled.addr(),
            klen: tiled.len(),
            _borrow: core::marker::PhantomData,
        }
    }

    /// The address of `offset .. offset + len` of the page, if `page` is ours and the range fits.
    #[inline(always)]
    fn page_ptr(&self, page: KPage, offset: usize, len: usize) -> Option<*mut u8> {
        if page != self.page || offset > PAGE_SIZE || len > PAGE_SIZE - offset {
            return None;
        }
        // SAFETY: `offset < PAGE_SIZE` or equal with `len == 0`: in (or one past) the page.
        Some(unsafe { self.virt.add(offset) })
    }

    /// Whether `addr .. addr + len` lies in the kernel range.
    #[inline(always)]
    fn in_kernel(&self, addr: usize, len: usize) -> bool {
        let off = addr.wrapping_sub(self.kbase);
        off <= self.klen && len <= self.klen - off
    }
}

impl PageMemory<KPage> for BenchMemory<'_> {
    #[inline]
    fn read(&self, page: KPage, offset: usize, dst: &mut [u8]) -> usize {
        let Some(src) = self.page_ptr(page, offset, dst.len()) else {
            return dst.len();
        };
        // SAFETY: `src` is valid for `dst.len()` bytes of our page (checked above); `dst` is a
        // live `&mut`, so it cannot point into the page (type invariant: no reference does).
        unsafe { core::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
        0
    }

    #[inline]
    fn write(&mut self, page: KPage, offset: usize, src: &[u8]) -> usize {
        let Some(dst) = self.page_ptr(page, offset, src.len()) else {
            return src.len();
        };
        // SAFETY: as in `read`, the other way round.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        0
    }

    #[inline]
    fn zero(&mut self, page: KPage, offset: usize, len: usize) -> usize {
        let Some(dst) = self.page_ptr(page, offset, len) else {
            return len;
        };
        // SAFETY: `dst` is valid for `len` bytes of our page (checked above).
        unsafe { core::ptr::write_bytes(dst, 0, len) };
        0
    }
}

impl KernelMemory<KPage> for BenchMemory<'_> {
    #[inline]
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize {
        if !self.in_kernel(addr, src.len()) {
            return src.len();
        }
        // SAFETY: the range lies in the vmap borrowed by `self` (checked above), which no
        // reference points into (type invariant), so `src` cannot alias it.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, src.len()) };
        0
    }

    #[inline]
    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        if !self.in_kernel(addr, dst.len()) {
            return dst.len();
        }
        // SAFETY: as in `copy_to_kernel`, the other way round.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), dst.len()) };
        0
    }

    #[inline]
    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize {
        if !self.in_kernel(addr, len) {
            return len;
        }
        // SAFETY: the range lies in the vmap borrowed by `self` (checked above).
        unsafe { core::ptr::write_bytes(addr as *mut u8, 0, len) };
        0
    }

    /// `None`: page extraction from kernel segments is not benchmarked.
    fn kernel_page(&self, _addr: usize) -> Option<KPage> {
        None
    }

    /// A no-op: the benchmark's page outlives every iterator.
    fn get_page(&mut self, _page: KPage) {}
}

impl UserMemory<KPage> for BenchMemory<'_> {
    #[inline]
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize {
        // SAFETY: the helper checks `access_ok` and handles faults; `src` is readable.
        unsafe {
            helpers::rnvme_glue_bench_copy_to_user(
                addr as *mut _,
                src.as_ptr().cast(),
                src.len() as _,
            ) as usize
        }
    }

    #[inline]
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        // SAFETY: the helper checks `access_ok` and handles faults; `dst` is writable.
        unsafe {
            helpers::rnvme_glue_bench_copy_from_user(
                dst.as_mut_ptr().cast(),
                addr as *const _,
                dst.len() as _,
            ) as usize
        }
    }

    #[inline]
    fn clear_user(&mut self, addr: usize, len: usize) -> usize {
        // SAFETY: `clear_user` checks `access_ok` and handles faults.
        unsafe { helpers::rnvme_glue_bench_clear_user(addr as *mut _, len as _) as usize }
    }

    /// 0 (the first page "faults"): page extraction is not benchmarked.
    fn user_pages(&mut self, _addr: usize, _flags: GupFlags, _pages: &mut [KPage]) -> usize {
        0
    }
}

/// Cross-space copies use the trait's bounce-buffer defaults (not benchmarked).
impl Memory<KPage> for BenchMemory<'_> {}
