// SPDX-License-Identifier: GPL-2.0

//! A set of page allocations reached through `kmap_local_page`: [`bvec::PageMemory`] for
//! [`KPage`] handles.
//!
//! C header: [`include/linux/highmem.h`](srctree/include/linux/highmem.h)

use bvec::{PageMemory, PAGE_SIZE};
use kernel::{
    alloc::{flags::GFP_KERNEL, AllocError, KVec},
    bindings,
};

use kernel_glue::{KPage, OwnedPages};

/// Page allocations owned together; handles into them can be read and written.
///
/// Any [`KPage`] can be passed to the [`PageMemory`] methods: a handle that is not a page of one
/// of the pool's allocations, or a range that leaves the page, is treated as a fault (nothing is
/// copied, the whole length is returned as not processed), never dereferenced. That is what
/// makes this memory safe to use with segment tables built by safe code.
///
/// # Examples
///
/// ```ignore
/// let mut pool = PagePool::new();
/// let i = pool.alloc(1)?;
/// let page = pool.get(i).ok_or(ENOMEM)?.page();
/// assert_eq!(pool.write(page.nth(1), 4090, &[1, 2, 3]), 0);
/// assert_eq!(pool.write(page.nth(2), 0, &[1]), 1); // not in the pool: fault
/// assert_eq!(pool.write(page, 4095, &[1, 2]), 2); // leaves the page: fault
/// ```
#[derive(Debug, Default)]
pub struct PagePool {
    allocs: KVec<OwnedPages>,
}

impl PagePool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allocates `2^order` zeroed pages into the pool and returns their index.
    ///
    /// # Errors
    ///
    /// [`AllocError`] if the pages or the table entry cannot be allocated.
    pub fn alloc(&mut self, order: u32) -> Result<usize, AllocError> {
        let pages = OwnedPages::alloc_zeroed(order)?;
        self.allocs.push(pages, GFP_KERNEL)?;
        Ok(self.allocs.len() - 1)
    }

    /// Number of allocations.
    pub fn len(&self) -> usize {
        self.allocs.len()
    }

    /// Whether the pool has no allocation.
    pub fn is_empty(&self) -> bool {
        self.allocs.is_empty()
    }

    /// Allocation `idx`.
    pub fn get(&self, idx: usize) -> Option<&OwnedPages> {
        self.allocs.get(idx)
    }

    /// Allocation `idx`, mutably (to fill or inspect its bytes).
    pub fn get_mut(&mut self, idx: usize) -> Option<&mut OwnedPages> {
        self.allocs.get_mut(idx)
    }

    /// All allocations in order.
    pub fn allocations(&self) -> &[OwnedPages] {
        &self.allocs
    }

    /// All allocations in order, mutably.
    pub fn allocations_mut(&mut self) -> &mut [OwnedPages] {
        &mut self.allocs
    }

    /// Whether bytes `offset .. offset + len` counted from the start of `page` (which may span
    /// pages, as in a multipage bvec) all lie in one allocation of the pool. `len == 0` asks
    /// whether `page` plus `offset` is inside or at the end of an allocation.
    pub fn contains_range(&self, page: KPage, offset: u64, len: u64) -> bool {
        let Some(end) = offset.checked_add(len) else {
            return false;
        };
        self.allocs.iter().any(|a| {
            a.index_of(page).is_some_and(|idx| {
                let start = (idx * PAGE_SIZE) as u64;
                start.checked_add(end).is_some_and(|e| e <= a.len() as u64)
            })
        })
    }

    /// Whether `offset .. offset + len` lies inside the page `page` and `page` is in the pool.
    fn in_page(&self, page: KPage, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= PAGE_SIZE)
            && self.allocs.iter().any(|a| a.index_of(page).is_some())
    }

    /// Runs `f` on the kernel address of `page`, mapped with `kmap_local_page`.
    ///
    /// Only called with pages for which `in_page` holds.
    fn with_kmap<R>(&self, page: KPage, f: impl FnOnce(*mut u8) -> R) -> R {
        // SAFETY: `page` is a page of an allocation owned by the pool (checked by the callers
        // through `in_page`), which stays allocated while `self` is borrowed.
        let kaddr = unsafe { bindings::kmap_local_page(page.as_ptr()) }.cast::<u8>();
        let r = f(kaddr);
        // SAFETY: `kaddr` came from `kmap_local_page` just above, in this context, and every
        // mapping made inside `f` has been released (LIFO order holds).
        unsafe { bindings::kunmap_local(kaddr.cast_const().cast()) };
        r
    }
}

impl PageMemory<KPage> for PagePool {
    fn read(&self, page: KPage, offset: usize, dst: &mut [u8]) -> usize {
        if !self.in_page(page, offset, dst.len()) {
            return dst.len();
        }
        self.with_kmap(page, |kaddr| {
            // SAFETY: `kaddr` maps the whole page; `offset + dst.len() <= PAGE_SIZE` was checked.
            // `dst` cannot alias pool memory: the pool's bytes are only reachable as slices
            // through `&self`/`&mut self` borrows of the pool, and `dst` is a live `&mut`.
            unsafe {
                core::ptr::copy_nonoverlapping(kaddr.add(offset), dst.as_mut_ptr(), dst.len())
            };
        });
        0
    }

    fn write(&mut self, page: KPage, offset: usize, src: &[u8]) -> usize {
        if !self.in_page(page, offset, src.len()) {
            return src.len();
        }
        self.with_kmap(page, |kaddr| {
            // SAFETY: as in `read`; `&mut self` guarantees no other Rust reference to the pool's
            // bytes exists, and `src` cannot point into them for the same reason.
            unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), kaddr.add(offset), src.len()) };
        });
        0
    }

    fn zero(&mut self, page: KPage, offset: usize, len: usize) -> usize {
        if !self.in_page(page, offset, len) {
            return len;
        }
        self.with_kmap(page, |kaddr| {
            // SAFETY: `kaddr + offset .. + len` lies inside the mapped page (checked above) and
            // `&mut self` excludes any other reference to it.
            unsafe { core::ptr::write_bytes(kaddr.add(offset), 0, len) };
        });
        0
    }
}
