// SPDX-License-Identifier: GPL-2.0

//! Memory-mapped I/O on a PCI memory BAR, every access bounds- and alignment-checked.
//!
//! C header: [`include/linux/io.h`](srctree/include/linux/io.h)

use core::ptr::NonNull;

use kernel::{prelude::*, str::CStr};

use crate::{helpers, pci};

/// A PCI memory BAR: its regions requested (`pci_request_mem_regions()`) and mapped
/// (`pci_iomap()`); unmapped and released on drop.
///
/// # Invariants
///
/// `addr` is the `pci_iomap` mapping of `len` bytes of BAR `bar` of `dev`, whose memory regions
/// this value requested; both are undone only by the drop.
#[derive(Debug)]
pub struct Bar {
    dev: pci::Device,
    addr: NonNull<u8>,
    len: usize,
}

// SAFETY: MMIO through `readl`/`writel` may be done from any thread.
unsafe impl Send for Bar {}
// SAFETY: every access is a single `readl`/`writel` (or two for 64 bits), which the hardware
// serialises; concurrent access is the driver's protocol concern, never memory unsafety.
unsafe impl Sync for Bar {}

impl Bar {
    /// Requests `dev`'s memory regions under `name` and maps `len` bytes of memory BAR `bar`
    /// (0 = the whole BAR).
    pub fn new(dev: &pci::Device, bar: i32, len: usize, name: &'static CStr) -> Result<Self> {
        let avail = usize::try_from(dev.mem_bar_len(bar)).map_err(|_| EINVAL)?;
        if avail == 0 {
            return Err(ENODEV);
        }
        let len = if len == 0 { avail } else { len };
        if len > avail {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is a valid, enabled PCI device; `name` is a static string (the region
        // keeps the pointer).
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_pci_request_mem_regions(dev.as_raw(), name.as_char_ptr())
        })?;
        // SAFETY: as above; `bar` is a memory BAR of at least `len` bytes (checked above).
        let raw = unsafe { helpers::rnvme_glue_pci_iomap(dev.as_raw(), bar, len as _) };
        let Some(addr) = NonNull::new(raw.cast::<u8>()) else {
            // SAFETY: the regions were requested just above.
            unsafe { helpers::rnvme_glue_pci_release_mem_regions(dev.as_raw()) };
            return Err(ENOMEM);
        };
        // INVARIANT: mapped and requested above.
        Ok(Self {
            dev: dev.clone(),
            addr,
            len,
        })
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never: a BAR mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of `size` bytes at `offset`, if in range and `size`-aligned.
    #[inline]
    fn at(&self, offset: usize, size: usize) -> Result<*mut core::ffi::c_void> {
        let end = offset.checked_add(size).ok_or(EINVAL)?;
        // `checked_rem`: no divide-by-zero panic path (objtool does not know that panic
        // function never returns).
        if end > self.len || offset.checked_rem(size) != Some(0) {
            return Err(EINVAL);
        }
        // `offset < len`: inside the mapping (type invariant).
        Ok(self.addr.as_ptr().wrapping_add(offset).cast())
    }

    /// Reads the 32-bit register at `offset` (`readl()`).
    #[inline]
    pub fn read32(&self, offset: usize) -> Result<u32> {
        let p = self.at(offset, 4)?;
        // SAFETY: `p` is an aligned address inside the mapping (checked by `at`).
        Ok(unsafe { helpers::rnvme_glue_readl(p) })
    }

    /// Writes the 32-bit register at `offset` (`writel()`: ordered after earlier writes to
    /// coherent DMA memory, as a doorbell write must be).
    ///
    /// On x86-64 this is the one `mov` that `writel()` is there (`build_mmio_write()` in
    /// `arch/x86/include/asm/io.h`: x86 keeps stores in order, so a compiler barrier is all
    /// the ordering needed), inline as in C; elsewhere the glue calls `writel()`.
    #[inline]
    pub fn write32(&self, offset: usize, value: u32) -> Result {
        let p = self.at(offset, 4)?;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `read32`. Without `nomem` the asm block is a compiler barrier, as the
        // C macro's `"memory"` clobber is: earlier stores are emitted before it.
        unsafe {
            core::arch::asm!(
                "mov dword ptr [{p}], {v:e}",
                p = in(reg) p,
                v = in(reg) value,
                options(nostack, preserves_flags)
            )
        };
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as in `read32`.
        unsafe {
            helpers::rnvme_glue_writel(value, p)
        };
        Ok(())
    }

    /// Reads the 64-bit register at `offset` as two 32-bit reads, low half first.
    pub fn read64(&self, offset: usize) -> Result<u64> {
        let p = self.at(offset, 8)?;
        // SAFETY: as in `read32`, for 8 bytes.
        Ok(unsafe { helpers::rnvme_glue_lo_hi_readq(p) })
    }

    /// Writes the 64-bit register at `offset` as two 32-bit writes, low half first.
    pub fn write64(&self, offset: usize, value: u64) -> Result {
        let p = self.at(offset, 8)?;
        // SAFETY: as in `read64`.
        unsafe { helpers::rnvme_glue_lo_hi_writeq(value, p) };
        Ok(())
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        // SAFETY: mapped and requested by `new` (type invariant), undone once here.
        unsafe {
            helpers::rnvme_glue_pci_iounmap(self.dev.as_raw(), self.addr.as_ptr().cast());
            helpers::rnvme_glue_pci_release_mem_regions(self.dev.as_raw());
        }
    }
}
