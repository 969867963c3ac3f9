// SPDX-License-Identifier: GPL-2.0

//! Coherent DMA buffers (`dma_alloc_attrs()`), read and written with volatile accesses.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)

use core::ptr::NonNull;

use kernel::{bindings, prelude::*};

use crate::pci;

/// A zeroed coherent DMA buffer of `len` bytes, freed on drop.
///
/// The device may read and write the buffer at any time, so the CPU side reaches it only
/// through volatile, bounds-checked copies (no Rust reference to the memory ever exists).
///
/// # Invariants
///
/// `cpu` and `handle` are the CPU and bus addresses of a `dma_alloc_attrs` allocation of `len`
/// (> 0) bytes for `dev`, freed only by the drop.
#[derive(Debug)]
pub struct CoherentAllocation {
    dev: pci::Device,
    cpu: NonNull<u8>,
    handle: u64,
    len: usize,
}

// SAFETY: the buffer is plain memory reached through volatile accesses from any thread.
unsafe impl Send for CoherentAllocation {}
// SAFETY: `&self` methods do volatile reads/writes of plain memory; what concurrent writers
// mean is the caller's protocol (as with the device itself), never a Rust data race on a
// reference.
unsafe impl Sync for CoherentAllocation {}

impl CoherentAllocation {
    /// Allocates `len` bytes of zeroed coherent memory for `dev` (may sleep).
    pub fn new(dev: &pci::Device, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let mut handle: bindings::dma_addr_t = 0;
        // SAFETY: `dev` is a valid device; `handle` is a valid out pointer. The DMA API returns
        // zeroed memory (`dma_alloc_attrs` has zeroed since Linux 5.0).
        let cpu = unsafe {
            bindings::dma_alloc_attrs(
                dev.device_raw(),
                len,
                &mut handle,
                bindings::GFP_KERNEL | bindings::__GFP_ZERO,
                0,
            )
        };
        let cpu = NonNull::new(cpu.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: allocated just above.
        Ok(Self {
            dev: dev.clone(),
            cpu,
            handle,
            len,
        })
    }

    /// The bus address the device uses.
    pub fn dma_handle(&self) -> u64 {
        self.handle
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never, by the type invariant).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pointer to `n` bytes at `offset`, if in range.
    #[inline]
    fn range(&self, offset: usize, n: usize) -> Result<*mut u8> {
        let end = offset.checked_add(n).ok_or(EINVAL)?;
        if end > self.len {
            return Err(EINVAL);
        }
        Ok(self.cpu.as_ptr().wrapping_add(offset))
    }

    /// Copies `src` into the buffer at `offset` (volatile byte stores).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let p = self.range(offset, src.len())?;
        for (i, b) in src.iter().enumerate() {
            // SAFETY: `p + i` is inside the allocation (range-checked above).
            unsafe { p.add(i).write_volatile(*b) };
        }
        Ok(())
    }

    /// Copies bytes at `offset` into `dst` (volatile byte loads).
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let p = self.range(offset, dst.len())?;
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: `p + i` is inside the allocation (range-checked above).
            *b = unsafe { p.add(i).read_volatile() };
        }
        Ok(())
    }

    /// Stores `src` at `offset` as little-endian quadwords, one volatile 8-byte store each
    /// (a submission queue entry in eight stores, as the C driver's `memcpy()` of it).
    /// `offset` must be 8-byte aligned.
    #[inline]
    pub fn write_u64s(&self, offset: usize, src: &[u64]) -> Result {
        let p = self.range(offset, src.len().checked_mul(8).ok_or(EINVAL)?)?;
        if offset % 8 != 0 {
            return Err(EINVAL);
        }
        let p = p.cast::<u64>();
        for (i, v) in src.iter().enumerate() {
            // SAFETY: 8-byte aligned (the allocation is page aligned, `offset` checked above) and
            // `p + i` is inside the allocation (range-checked above).
            unsafe { p.add(i).write_volatile(v.to_le()) };
        }
        Ok(())
    }

    /// Loads little-endian quadwords at `offset` into `dst`, one volatile 8-byte load each.
    /// `offset` must be 8-byte aligned.
    #[inline]
    pub fn read_u64s(&self, offset: usize, dst: &mut [u64]) -> Result {
        let p = self.range(offset, dst.len().checked_mul(8).ok_or(EINVAL)?)?;
        if offset % 8 != 0 {
            return Err(EINVAL);
        }
        let p = p.cast::<u64>();
        for (i, v) in dst.iter_mut().enumerate() {
            // SAFETY: as in `write_u64s`.
            *v = u64::from_le(unsafe { p.add(i).read_volatile() });
        }
        Ok(())
    }

    /// Reads the little-endian `u16` at `offset` (one volatile load if aligned).
    #[inline]
    pub fn read_u16(&self, offset: usize) -> Result<u16> {
        let p = self.range(offset, 2)?;
        if offset % 2 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: aligned and inside the allocation (checked above; the allocation is page
        // aligned).
        Ok(u16::from_le(unsafe { p.cast::<u16>().read_volatile() }))
    }

    /// Reads the little-endian `u32` at `offset` (one volatile load if aligned).
    #[inline]
    pub fn read_u32(&self, offset: usize) -> Result<u32> {
        let p = self.range(offset, 4)?;
        if offset % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: as in `read_u16`.
        Ok(u32::from_le(unsafe { p.cast::<u32>().read_volatile() }))
    }

    /// Writes the little-endian `u32` at `offset` (one volatile store).
    #[inline]
    pub fn write_u32(&self, offset: usize, v: u32) -> Result {
        let p = self.range(offset, 4)?;
        if offset % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: as in `read_u16`.
        unsafe { p.cast::<u32>().write_volatile(v.to_le()) };
        Ok(())
    }

    /// Writes the little-endian `u64` at `offset` (one volatile store).
    pub fn write_u64(&self, offset: usize, v: u64) -> Result {
        let p = self.range(offset, 8)?;
        if offset % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: as in `read_u16`.
        unsafe { p.cast::<u64>().write_volatile(v.to_le()) };
        Ok(())
    }

    /// Fills the buffer with zeroes.
    pub fn zero(&self) {
        for i in 0..self.len {
            // SAFETY: `i < len`: inside the allocation.
            unsafe { self.cpu.as_ptr().add(i).write_volatile(0) };
        }
    }
}

impl Drop for CoherentAllocation {
    fn drop(&mut self) {
        // SAFETY: allocated by `new` with these arguments (type invariant), freed once here.
        unsafe {
            bindings::dma_free_attrs(
                self.dev.device_raw(),
                self.len,
                self.cpu.as_ptr().cast(),
                self.handle,
                0,
            )
        };
    }
}
