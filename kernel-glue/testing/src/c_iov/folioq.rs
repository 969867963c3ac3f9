// SPDX-License-Identifier: GPL-2.0

//! `ITER_FOLIOQ` iterators: [`CIovIter::folioq`] over a `struct folio_queue` built from a folio
//! table, the kernel's counterpart of `iov::IovIter::page_list`.
//!
//! C header: [`include/linux/folio_queue.h`](srctree/include/linux/folio_queue.h)

use core::ptr::NonNull;

use iov::Folio;
use kernel::{
    alloc::{flags::GFP_KERNEL, KVec},
    bindings,
};

use kernel_glue::KPage;

use super::{check_count, CDirection, CIovIter, CIterError, Segs};
use crate::{helpers, CheckedMemory};

/// Most folios in one table: one `struct folio_queue` segment (`PAGEVEC_SIZE` slots, less one so
/// that a walk that reaches the end stops on a slot of the segment and never follows the NULL
/// `next` or `prev` pointer).
pub const MAX_FOLIOS: usize = bindings::PAGEVEC_SIZE as usize - 1;

/// A `struct folio_queue` segment, freed on drop.
///
/// # Invariants
///
/// `ptr` was returned by `rnvme_glue_folioq_new` and is freed only by `drop`.
pub(super) struct FolioQueue {
    ptr: NonNull<bindings::folio_queue>,
}

impl Drop for FolioQueue {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `rnvme_glue_folioq_new` and is freed only here (invariant).
        unsafe { helpers::rnvme_glue_folioq_free(self.ptr.as_ptr()) };
    }
}

impl<'a> CIovIter<'a> {
    /// `iov_iter_folio_queue(dir, folioq, 0, offset, count)` over a queue holding `table`'s
    /// folios in slots `0..table.len()` with their orders.
    ///
    /// In the kernel state ([`CIovIter::state`]) `nr_segs` reads as the current slot
    /// (`folioq_slot` shares its union in `struct iov_iter`).
    ///
    /// # Errors
    ///
    /// [`CIterError`] if a folio is not wholly inside one allocation of the memory's page pool,
    /// the table is longer than [`MAX_FOLIOS`], `offset` exceeds the first folio, `offset +
    /// count` exceeds the folios, or the queue cannot be allocated.
    pub fn folioq(
        dir: CDirection,
        table: &'a [Folio<KPage>],
        offset: usize,
        mem: &'a mut CheckedMemory,
        count: usize,
    ) -> Result<Self, CIterError> {
        if table.len() > MAX_FOLIOS {
            return Err(CIterError::TooManyFolios { nr: table.len() });
        }
        let mut heads =
            KVec::with_capacity(table.len(), GFP_KERNEL).map_err(|_| CIterError::NoMemory)?;
        let mut orders =
            KVec::with_capacity(table.len(), GFP_KERNEL).map_err(|_| CIterError::NoMemory)?;
        let mut total = 0u64;
        for (idx, f) in table.iter().enumerate() {
            if !mem.pool().contains_range(f.head(), 0, f.size() as u64) {
                return Err(CIterError::OutsideMemory { idx });
            }
            total += f.size() as u64;
            heads
                .push(f.head().as_ptr(), GFP_KERNEL)
                .map_err(|_| CIterError::NoMemory)?;
            orders
                .push(f.order(), GFP_KERNEL)
                .map_err(|_| CIterError::NoMemory)?;
        }
        let first = table.first().map_or(0, |f| f.size());
        let off = u32::try_from(offset)
            .ok()
            .filter(|_| offset <= first)
            .ok_or(CIterError::BadOffset { offset })?;
        check_count(count, total - offset as u64)?;
        let nr = table.len() as u32;
        // SAFETY: `heads` and `orders` hold `nr` entries each; the helper only reads them.
        let raw = unsafe { helpers::rnvme_glue_folioq_new(heads.as_ptr(), orders.as_ptr(), nr) };
        let ptr = NonNull::new(raw).ok_or(CIterError::NoMemory)?;
        // INVARIANT: `ptr` was just returned by `rnvme_glue_folioq_new`.
        let queue = FolioQueue { ptr };
        let mut iter = bindings::iov_iter::default();
        // SAFETY: `iter` is valid to initialise; the queue lives as long as the iterator (owned
        // by it below) and holds `nr < PAGEVEC_SIZE` folios, each inside memory borrowed mutably
        // for `'a`; `offset + count` fits the folios, so the walkers stay in slots `0..=nr`.
        unsafe {
            bindings::iov_iter_folio_queue(&mut iter, dir.raw(), queue.ptr.as_ptr(), 0, off, count)
        };
        let mut it = Self::new(iter, dir, Segs::Folioq(table), count, mem);
        // INVARIANT: initialised by `iov_iter_folio_queue` over checked folios, offset and
        // count, with the queue now owned by the iterator.
        it.queue = Some(queue);
        Ok(it)
    }
}
