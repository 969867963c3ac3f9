// SPDX-License-Identifier: GPL-2.0

//! All memory a test iterator may reach, with every address checked before it is used.
//!
//! C header: [`include/linux/uaccess.h`](srctree/include/linux/uaccess.h)

use bvec::{Page, PageMemory, PAGE_SIZE};
use iov::{GupFlags, KernelMemory, Memory, UserMemory};
use kernel::{
    alloc::{flags::GFP_KERNEL, AllocError, KVec},
    bindings,
    error::{code::EINVAL, Result},
};

use kernel_glue::KPage;

use crate::{helpers, PagePool, UserMapping, UserPins};

/// Kind of region a kernel address falls in.
#[derive(Clone, Copy)]
enum Region {
    Buffer,
    Pages,
}

/// Pages, kernel buffers and an optional user mapping, reachable through addresses and page
/// handles that are validated on every access.
///
/// - Page handles ([`KPage`]) must name a page of the [`PagePool`].
/// - Kernel addresses (`struct kvec` bases) must lie in one of the kmalloc'd buffers or in the
///   direct-map range of one of the pool's allocations.
/// - User addresses are passed to `copy_to_user`/`copy_from_user`/`clear_user`, which check
///   `access_ok` and handle faults themselves.
///
/// Anything else is a fault: nothing is touched and the length is returned as not processed.
/// This makes the memory safe to use with segment tables built by safe code, and lets the kernel's
/// own `struct iov_iter` ([`crate::c_iov`]) run over the same bytes once its tables have been
/// checked against it.
#[derive(Debug, Default)]
pub struct CheckedMemory {
    pool: PagePool,
    bufs: KVec<KVec<u8>>,
    user: Option<UserMapping>,
    pins: UserPins,
}

impl CheckedMemory {
    /// Empty memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The page allocations.
    pub fn pool(&self) -> &PagePool {
        &self.pool
    }

    /// The page allocations, mutably.
    pub fn pool_mut(&mut self) -> &mut PagePool {
        &mut self.pool
    }

    /// Allocates `2^order` zeroed pages; returns their index in [`Self::pool`].
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the allocation fails.
    pub fn alloc_pages(&mut self, order: u32) -> Result<usize, AllocError> {
        self.pool.alloc(order)
    }

    /// Allocates a zeroed kmalloc'd buffer of `len` bytes (at least 1); returns its index.
    ///
    /// # Errors
    ///
    /// [`AllocError`] when the allocation fails or `len == 0`.
    pub fn alloc_buffer(&mut self, len: usize) -> Result<usize, AllocError> {
        if len == 0 {
            return Err(AllocError);
        }
        let buf = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        self.bufs.push(buf, GFP_KERNEL)?;
        Ok(self.bufs.len() - 1)
    }

    /// Buffer `idx`.
    pub fn buffer(&self, idx: usize) -> Option<&[u8]> {
        self.bufs.get(idx).map(|b| b.as_slice())
    }

    /// Buffer `idx`, mutably.
    pub fn buffer_mut(&mut self, idx: usize) -> Option<&mut [u8]> {
        self.bufs.get_mut(idx).map(|b| b.as_mut_slice())
    }

    /// Kernel address of the first byte of buffer `idx`.
    pub fn buffer_addr(&self, idx: usize) -> Option<usize> {
        self.bufs.get(idx).map(|b| b.as_ptr() as usize)
    }

    /// Number of buffers.
    pub fn nr_buffers(&self) -> usize {
        self.bufs.len()
    }

    /// Maps `len` bytes of anonymous memory in the current process (see [`UserMapping`]),
    /// replacing any previous mapping.
    ///
    /// # Errors
    ///
    /// As [`UserMapping::new`]; `EINVAL` from a kernel thread.
    pub fn map_user(&mut self, len: usize) -> Result {
        self.user = Some(UserMapping::new(len)?);
        Ok(())
    }

    /// The user mapping, if any.
    pub fn user(&self) -> Option<&UserMapping> {
        self.user.as_ref()
    }

    /// The user pages pinned by `extract_pages` through this memory (see
    /// [`UserMemory::user_pages`] below) and not yet released.
    pub fn pins(&self) -> &UserPins {
        &self.pins
    }

    /// Releases every pin taken through this memory (`unpin_user_pages`); also done on drop.
    pub fn release_pins(&mut self) {
        self.pins.release();
    }

    /// Kernel (direct-map) address of byte `offset` of pool page `page`, if it is one.
    pub fn page_virt(&self, page: KPage, offset: usize) -> Option<usize> {
        self.pool.allocations().iter().find_map(|a| {
            let idx = a.index_of(page)?;
            Some(a.virt_addr() + idx * PAGE_SIZE + offset)
        })
    }

    /// Whether `addr .. addr + len` lies inside one kernel buffer or one page allocation's
    /// direct-map range. `len == 0` is accepted anywhere (nothing would be touched).
    pub fn contains_kernel_range(&self, addr: usize, len: usize) -> bool {
        len == 0 || self.locate(addr, len).is_some()
    }

    /// The region holding `addr .. addr + len`: (kind, index, offset into it).
    fn locate(&self, addr: usize, len: usize) -> Option<(Region, usize, usize)> {
        let end = addr.checked_add(len)?;
        let inside = |base: usize, size: usize| addr >= base && end <= base.saturating_add(size);
        for (i, b) in self.bufs.iter().enumerate() {
            let base = b.as_ptr() as usize;
            if inside(base, b.len()) {
                return Some((Region::Buffer, i, addr - base));
            }
        }
        for (i, a) in self.pool.allocations().iter().enumerate() {
            let base = a.virt_addr();
            if inside(base, a.len()) {
                return Some((Region::Pages, i, addr - base));
            }
        }
        None
    }

    /// The bytes at kernel address `addr .. addr + len`, if they lie in one region.
    fn kernel_slice(&self, addr: usize, len: usize) -> Option<&[u8]> {
        let (region, i, off) = self.locate(addr, len)?;
        let bytes = match region {
            Region::Buffer => self.bufs.get(i)?.as_slice(),
            Region::Pages => self.pool.get(i)?.as_slice(),
        };
        bytes.get(off..off.checked_add(len)?)
    }

    /// The bytes at kernel address `addr .. addr + len`, mutably, if they lie in one region.
    fn kernel_slice_mut(&mut self, addr: usize, len: usize) -> Option<&mut [u8]> {
        let (region, i, off) = self.locate(addr, len)?;
        let bytes = match region {
            Region::Buffer => self.bufs.get_mut(i)?.as_mut_slice(),
            Region::Pages => self.pool.get_mut(i)?.as_mut_slice(),
        };
        bytes.get_mut(off..off.checked_add(len)?)
    }

    /// Total bytes of all regions: the length [`Self::snapshot_into`] and
    /// [`Self::restore_from`] work on.
    pub fn total_len(&self) -> usize {
        let pages: usize = self.pool.allocations().iter().map(|a| a.len()).sum();
        let bufs: usize = self.bufs.iter().map(|b| b.len()).sum();
        pages + bufs + self.user.as_ref().map_or(0, |u| u.len())
    }

    /// Copies every region, in a fixed order (pages, buffers, user mapping), into `out`.
    ///
    /// # Errors
    ///
    /// `EINVAL` if `out.len() != self.total_len()`; `EFAULT` if the user mapping cannot be read.
    pub fn snapshot_into(&self, out: &mut [u8]) -> Result {
        if out.len() != self.total_len() {
            return Err(EINVAL);
        }
        let mut rest = out;
        for a in self.pool.allocations() {
            let (head, tail) = split_mut(rest, a.len())?;
            head.copy_from_slice(a.as_slice());
            rest = tail;
        }
        for b in self.bufs.iter() {
            let (head, tail) = split_mut(rest, b.len())?;
            head.copy_from_slice(b);
            rest = tail;
        }
        if let Some(u) = &self.user {
            u.read(0, rest)?;
        }
        Ok(())
    }

    /// Overwrites every region with `src`, in the order of [`Self::snapshot_into`].
    ///
    /// # Errors
    ///
    /// `EINVAL` if `src.len() != self.total_len()`; `EFAULT` if the user mapping cannot be
    /// written.
    pub fn restore_from(&mut self, src: &[u8]) -> Result {
        if src.len() != self.total_len() {
            return Err(EINVAL);
        }
        let mut rest = src;
        for a in self.pool.allocations_mut() {
            let (head, tail) = split(rest, a.len())?;
            a.as_mut_slice().copy_from_slice(head);
            rest = tail;
        }
        for b in self.bufs.iter_mut() {
            let (head, tail) = split(rest, b.len())?;
            b.copy_from_slice(head);
            rest = tail;
        }
        if let Some(u) = &self.user {
            u.write(0, rest)?;
        }
        Ok(())
    }
}

/// `s.split_at(n)`, or `EINVAL` if `n > s.len()`.
fn split(s: &[u8], n: usize) -> Result<(&[u8], &[u8])> {
    if n > s.len() {
        return Err(EINVAL);
    }
    Ok(s.split_at(n))
}

/// `s.split_at_mut(n)`, or `EINVAL` if `n > s.len()`.
fn split_mut(s: &mut [u8], n: usize) -> Result<(&mut [u8], &mut [u8])> {
    if n > s.len() {
        return Err(EINVAL);
    }
    Ok(s.split_at_mut(n))
}

impl PageMemory<KPage> for CheckedMemory {
    fn read(&self, page: KPage, offset: usize, dst: &mut [u8]) -> usize {
        self.pool.read(page, offset, dst)
    }

    fn write(&mut self, page: KPage, offset: usize, src: &[u8]) -> usize {
        self.pool.write(page, offset, src)
    }

    fn zero(&mut self, page: KPage, offset: usize, len: usize) -> usize {
        self.pool.zero(page, offset, len)
    }
}

impl KernelMemory<KPage> for CheckedMemory {
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize {
        match self.kernel_slice_mut(addr, src.len()) {
            Some(dst) => {
                dst.copy_from_slice(src);
                0
            }
            None => src.len(),
        }
    }

    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        match self.kernel_slice(addr, dst.len()) {
            Some(src) => {
                dst.copy_from_slice(src);
                0
            }
            None => dst.len(),
        }
    }

    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize {
        match self.kernel_slice_mut(addr, len) {
            Some(dst) => {
                dst.fill(0);
                0
            }
            None => len,
        }
    }

    /// `virt_to_page(addr)` when the page holding `addr` contains bytes of one of the memory's
    /// regions (callers pass page-aligned addresses, whose page a region may start inside), `None`
    /// otherwise. Pages of kmalloc'd buffers are slab pages outside the pool: [`PageMemory`]
    /// refuses them, but their handles are what `iov_iter_extract_pages` returns for a kvec.
    fn kernel_page(&self, addr: usize) -> Option<KPage> {
        let start = addr & !(PAGE_SIZE - 1);
        let end = start.checked_add(PAGE_SIZE)?;
        let meets = |base: usize, len: usize| base < end && start < base.saturating_add(len);
        for a in self.pool.allocations() {
            if meets(a.virt_addr(), a.len()) {
                // The allocation is page aligned, so `start` is one of its pages.
                return Some(a.page().nth((start - a.virt_addr()) / PAGE_SIZE));
            }
        }
        if self
            .bufs
            .iter()
            .any(|b| meets(b.as_ptr() as usize, b.len()))
        {
            // SAFETY: the page holding `start` contains bytes of a kmalloc'd buffer we own, so
            // it is a direct-map page, for which `virt_to_page` is defined.
            let page = unsafe { helpers::rnvme_glue_virt_to_page(start as *const _) };
            return Some(KPage::from_ptr(page));
        }
        None
    }

    /// A no-op: the pool owns its pages for its whole lifetime, which outlives every iterator
    /// over it, so references are not needed (and a [`KPage`] could not drop one).
    fn get_page(&mut self, _page: KPage) {}
}

impl UserMemory<KPage> for CheckedMemory {
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize {
        // SAFETY: `copy_to_user` checks `access_ok` and handles faults, so any `addr` is fine;
        // `src` is valid for reads of its length.
        unsafe { bindings::copy_to_user(addr as *mut _, src.as_ptr().cast(), src.len()) }
    }

    /// Like the kernel's iov_iter step, bytes that could not be copied are left as they were
    /// (plain `copy_from_user` would zero them).
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize {
        // SAFETY: the helper checks `access_ok` and handles faults, so any `addr` is fine; `dst`
        // is valid for writes of its length.
        unsafe {
            helpers::rnvme_glue_copy_from_user_nozero(
                dst.as_mut_ptr().cast(),
                addr as *const _,
                dst.len(),
            )
        }
    }

    fn clear_user(&mut self, addr: usize, len: usize) -> usize {
        // SAFETY: `clear_user` checks `access_ok` and handles faults.
        unsafe { helpers::rnvme_glue_clear_user(addr as *mut _, len) }
    }

    /// Pins (`flags.pin`, from `extract_pages`): `pin_user_pages_fast`, the pins kept in
    /// [`CheckedMemory::pins`] until [`CheckedMemory::release_pins`] or drop. References
    /// (`get_pages`): always 0 (the first page "faults"), as a [`KPage`] cannot own the reference
    /// `get_user_pages_fast` would take and nothing here would drop it.
    fn user_pages(&mut self, addr: usize, flags: GupFlags, pages: &mut [KPage]) -> usize {
        if !flags.pin {
            return 0;
        }
        self.pins.pin_fast(addr, flags.write, flags.nofault, pages)
    }
}

/// Cross-space copies use the trait's bounce-buffer defaults: every byte still goes through the
/// checked accessors above.
impl Memory<KPage> for CheckedMemory {}
