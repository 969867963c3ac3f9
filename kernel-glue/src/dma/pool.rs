// SPDX-License-Identifier: GPL-2.0

//! Pools of small coherent DMA blocks (`dma_pool_create()`), e.g. NVMe PRP list pages.
//!
//! C header: [`include/linux/dmapool.h`](srctree/include/linux/dmapool.h)

use core::ptr::NonNull;

use kernel::{prelude::*, str::CStr, sync::Arc};

use crate::{helpers, pci};

/// A DMA pool of fixed-size coherent blocks; destroyed when the last [`PoolBlock`] and the last
/// `Arc` to it are gone.
///
/// # Invariants
///
/// `pool` is a `dma_pool_create` pool of `size`-byte blocks for `dev`, destroyed only by the
/// drop.
#[derive(Debug)]
pub struct DmaPool {
    dev: pci::Device,
    pool: NonNull<helpers::dma_pool>,
    size: usize,
}

// SAFETY: `dma_pool_alloc`/`dma_pool_free` take the pool's own lock; any thread may call them.
unsafe impl Send for DmaPool {}
// SAFETY: as above.
unsafe impl Sync for DmaPool {}

impl DmaPool {
    /// Creates a pool of `size`-byte blocks aligned to `align`, none crossing a `boundary`
    /// (0: no boundary), for `dev` (may sleep).
    pub fn new(
        dev: &pci::Device,
        name: &'static CStr,
        size: usize,
        align: usize,
        boundary: usize,
    ) -> Result<Arc<Self>> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is a valid device; `name` is static (the pool keeps a copy).
        let raw = unsafe {
            helpers::rnvme_glue_dma_pool_create(
                name.as_char_ptr(),
                dev.device_raw(),
                size,
                align,
                boundary,
            )
        };
        let pool = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: created just above.
        Ok(Arc::new(
            Self {
                dev: dev.clone(),
                pool,
                size,
            },
            GFP_KERNEL,
        )?)
    }

    /// Block size in bytes.
    pub fn block_size(&self) -> usize {
        self.size
    }

    /// Allocates one block without sleeping (`GFP_ATOMIC`: the I/O path may not sleep).
    pub fn alloc(this: &Arc<Self>) -> Result<PoolBlock> {
        let mut handle = 0u64;
        // SAFETY: the pool is live (type invariant); `handle` is a valid out pointer.
        let cpu = unsafe { helpers::rnvme_glue_dma_pool_alloc(this.pool.as_ptr(), &mut handle) };
        let cpu = NonNull::new(cpu.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: allocated from `this` just above.
        Ok(PoolBlock {
            pool: this.clone(),
            cpu,
            handle,
        })
    }
}

impl Drop for DmaPool {
    fn drop(&mut self) {
        // SAFETY: created by `new` (type invariant); every block holds an `Arc` on the pool, so
        // none is outstanding here.
        unsafe { helpers::rnvme_glue_dma_pool_destroy(self.pool.as_ptr()) };
        let _ = &self.dev;
    }
}

/// One block of a [`DmaPool`], returned to it on drop.
///
/// # Invariants
///
/// `cpu`/`handle` are the addresses of a block of `pool`, freed only by the drop.
#[derive(Debug)]
pub struct PoolBlock {
    pool: Arc<DmaPool>,
    cpu: NonNull<u8>,
    handle: u64,
}

// SAFETY: plain coherent memory, freed through the pool's own lock.
unsafe impl Send for PoolBlock {}
// SAFETY: `&self` only allows volatile accesses (see `CoherentAllocation`).
unsafe impl Sync for PoolBlock {}

impl PoolBlock {
    /// The bus address of the block.
    pub fn dma_handle(&self) -> u64 {
        self.handle
    }

    /// Block size in bytes.
    pub fn len(&self) -> usize {
        self.pool.size
    }

    /// Whether the block is empty (never: pools refuse size 0).
    pub fn is_empty(&self) -> bool {
        self.pool.size == 0
    }

    /// The block as 64-bit words (as many as fit; none if the block is not 8-byte aligned),
    /// to fill it with plain stores before the device is told its address, as the C driver
    /// fills a PRP list (`prp_list[i] = cpu_to_le64(dma_addr)` in `nvme_pci_setup_prps()`).
    ///
    /// # Safety
    ///
    /// The device must not access the block while the returned slice lives: no command the
    /// controller may be processing names the block.
    #[inline]
    pub unsafe fn as_words_mut(&mut self) -> &mut [u64] {
        let p = self.cpu.as_ptr();
        if p as usize % 8 != 0 {
            return &mut [];
        }
        // SAFETY: `cpu` is the block's `size` bytes of coherent memory, owned by this value
        // (type invariant) and borrowed exclusively through `&mut self`; 8-byte aligned
        // (checked above); the device does not access it meanwhile (function contract); every
        // bit pattern is a valid `u64`.
        unsafe { core::slice::from_raw_parts_mut(p.cast::<u64>(), self.pool.size / 8) }
    }

    /// Stores `value` little-endian at byte `offset` (one volatile 8-byte store), if the
    /// offset is 8-byte aligned and the value fits: a PRP entry or half an SGL descriptor.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the address is not 8-byte aligned (an unaligned offset, or a pool created
    /// with a smaller alignment) or `offset + 8` is past the block.
    #[inline]
    pub fn write_u64(&self, offset: usize, value: u64) -> Result {
        let p = self.cpu.as_ptr().wrapping_add(offset);
        if p as usize % 8 != 0
            || offset
                .checked_add(8)
                .map_or(true, |end| end > self.pool.size)
        {
            return Err(EINVAL);
        }
        // SAFETY: `offset + 8 <= size`: inside the block; the address is 8-byte aligned (both
        // checked above).
        unsafe { p.cast::<u64>().write_volatile(value.to_le()) };
        Ok(())
    }

    /// Copies `src` into the block at byte `offset` (volatile stores), if it fits.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let end = offset.checked_add(src.len()).ok_or(EINVAL)?;
        if end > self.pool.size {
            return Err(EINVAL);
        }
        let p = self.cpu.as_ptr().wrapping_add(offset);
        for (i, b) in src.iter().enumerate() {
            // SAFETY: `offset + i < size`: inside the block (checked above).
            unsafe { p.add(i).write_volatile(*b) };
        }
        Ok(())
    }
}

impl Drop for PoolBlock {
    fn drop(&mut self) {
        // SAFETY: a block of this live pool (type invariant; the `Arc` keeps the pool), freed
        // once here.
        unsafe {
            helpers::rnvme_glue_dma_pool_free(
                self.pool.pool.as_ptr(),
                self.cpu.as_ptr().cast(),
                self.handle,
            )
        };
    }
}
