// SPDX-License-Identifier: GPL-2.0

//! A chain of `struct folio_queue` segments over one tiled page, for the kernel's `ITER_FOLIOQ`.
//!
//! C header: [`include/linux/folio_queue.h`](srctree/include/linux/folio_queue.h)

use bvec::PAGE_SIZE;
use kernel::{alloc::AllocError, bindings};

use crate::{helpers, TiledVmap};

/// `nr` order-0 folios, every one the tiled page of a [`TiledVmap`], in a chain of
/// `folio_queue` segments (31 folios each), freed on drop.
///
/// # Invariants
///
/// `head` is a non-NULL chain from `rnvme_glue_bench_folioq_tiled` holding `nr` folios of the
/// page of the vmap borrowed for `'v` (so the page outlives the chain).
#[derive(Debug)]
pub struct CFolioQueue<'v> {
    head: *mut bindings::folio_queue,
    nr: usize,
    _page: core::marker::PhantomData<&'v ()>,
}

impl<'v> CFolioQueue<'v> {
    /// A chain of `nr` folios of `tiled`'s page.
    ///
    /// # Errors
    ///
    /// [`AllocError`] for `nr == 0` or when a segment cannot be allocated.
    pub fn new(tiled: &'v TiledVmap<'_>, nr: usize) -> Result<Self, AllocError> {
        if nr == 0 {
            return Err(AllocError);
        }
        // SAFETY: the page is live for `'v`; the helper only records its folio.
        let head = unsafe { helpers::rnvme_glue_bench_folioq_tiled(tiled.page_ptr(), nr as _) };
        if head.is_null() {
            return Err(AllocError);
        }
        // INVARIANT: a fresh chain of `nr` folios of the borrowed page.
        Ok(Self {
            head,
            nr,
            _page: core::marker::PhantomData,
        })
    }

    /// Bytes the chain holds (`nr * PAGE_SIZE`).
    #[inline]
    pub fn bytes(&self) -> usize {
        self.nr.saturating_mul(PAGE_SIZE)
    }

    /// The first segment, for the C helpers of this crate.
    #[inline]
    pub(crate) fn head(&self) -> *const bindings::folio_queue {
        self.head
    }
}

impl Drop for CFolioQueue<'_> {
    fn drop(&mut self) {
        // SAFETY: the chain came from `rnvme_glue_bench_folioq_tiled` (type invariant) and no
        // iterator over it outlives the borrow of `self` that built it.
        unsafe { helpers::rnvme_glue_bench_folioq_free(self.head) };
    }
}
