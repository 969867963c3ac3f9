// SPDX-License-Identifier: GPL-2.0

//! The memory every differential case runs on: pages, kmalloc'd buffers and a user mapping.

use kernel::{alloc::KVVec, prelude::*};
use kernel_glue::KPage;
use kernel_glue_testing::CheckedMemory;

use crate::rng::Rng;

/// Orders of the page allocations: single pages and 2-, 4- and 8-page blocks for multipage
/// bvecs.
const PAGE_ORDERS: [u32; 5] = [0, 0, 1, 2, 3];
/// Sizes of the kmalloc'd kvec buffers (odd sizes: unaligned ends).
const BUFFER_SIZES: [usize; 4] = [64, 1000, 5003, 12000];
/// Size of the user mapping for UBUF/IOVEC cases.
pub(crate) const USER_LEN: usize = 32 * 1024;
/// Largest copy the cases do; the source and destination scratch buffers have this size.
pub(crate) const MAX_COPY: usize = 128 * 1024;
/// Window slack of the base pattern: each case starts at a different offset in it.
const PATTERN_SLACK: usize = 4096;

/// A kernel region a kvec may point into: start address and length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelRegion {
    pub(crate) addr: usize,
    pub(crate) len: usize,
}

/// Memory plus the buffers the comparison needs.
pub(crate) struct Arena {
    /// The memory both implementations run on.
    pub(crate) mem: CheckedMemory,
    /// Random bytes; each case restores the memory from a window of it.
    pattern: KVVec<u8>,
    /// Memory image after the kernel's run.
    pub(crate) snap_c: KVVec<u8>,
    /// Memory image after our run.
    pub(crate) snap_rust: KVVec<u8>,
    /// Source bytes for `copy_to_iter`.
    pub(crate) src: KVVec<u8>,
    /// Destination for `copy_from_iter`.
    pub(crate) dst: KVVec<u8>,
    /// Kernel regions for kvecs: the buffers and the pages' direct-map ranges.
    pub(crate) kregions: KVec<KernelRegion>,
    /// Whether a user mapping could be made (module init runs in `insmod`'s process).
    pub(crate) have_user: bool,
    /// Number of page allocations segment tables may use (the first ones in the pool).
    pub(crate) table_allocs: usize,
    /// A page no table uses: the page argument of `copy_page_{to,from}_iter`.
    pub(crate) page_src: KPage,
}

impl Arena {
    /// Allocates everything; the user mapping is optional (see [`Arena::have_user`]).
    pub(crate) fn new(rng: &mut Rng) -> Result<Self> {
        let mut mem = CheckedMemory::new();
        for order in PAGE_ORDERS {
            mem.alloc_pages(order)?;
        }
        let table_allocs = mem.pool().len();
        let src_idx = mem.alloc_pages(0)?;
        let page_src = mem.pool().get(src_idx).ok_or(EINVAL)?.page();
        for size in BUFFER_SIZES {
            mem.alloc_buffer(size)?;
        }
        let have_user = match mem.map_user(USER_LEN) {
            Ok(()) => true,
            Err(e) => {
                pr_warn!("no user mapping ({:?}): UBUF/IOVEC cases skipped\n", e);
                false
            }
        };
        let mut kregions = KVec::new();
        for i in 0..mem.nr_buffers() {
            let (Some(addr), Some(buf)) = (mem.buffer_addr(i), mem.buffer(i)) else {
                continue;
            };
            kregions.push(
                KernelRegion {
                    addr,
                    len: buf.len(),
                },
                GFP_KERNEL,
            )?;
        }
        for a in mem.pool().allocations().iter().take(table_allocs) {
            kregions.push(
                KernelRegion {
                    addr: a.virt_addr(),
                    len: a.len(),
                },
                GFP_KERNEL,
            )?;
        }
        let total = mem.total_len();
        let mut pattern = KVVec::from_elem(0u8, total + PATTERN_SLACK, GFP_KERNEL)?;
        rng.fill(&mut pattern);
        let mut src = KVVec::from_elem(0u8, MAX_COPY, GFP_KERNEL)?;
        rng.fill(&mut src);
        Ok(Self {
            mem,
            pattern,
            snap_c: KVVec::from_elem(0u8, total, GFP_KERNEL)?,
            snap_rust: KVVec::from_elem(0u8, total, GFP_KERNEL)?,
            src,
            dst: KVVec::from_elem(0u8, MAX_COPY, GFP_KERNEL)?,
            kregions,
            have_user,
            table_allocs,
            page_src,
        })
    }

    /// Restores every region from the pattern window of case `case`.
    pub(crate) fn restore(&mut self, case: usize) -> Result {
        let total = self.mem.total_len();
        let start = case % PATTERN_SLACK;
        let window = self.pattern.get(start..start + total).ok_or(EINVAL)?;
        self.mem.restore_from(window)
    }
}
