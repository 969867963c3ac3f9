// SPDX-License-Identifier: GPL-2.0

//! Premapped io_uring registered buffers: the registration an io_uring command names, its pages
//! referenced and DMA-mapped once ([`PremappedBuffer`], released on drop), and the check that
//! an I/O's bytes are those pages ([`PremappedBuffer::covers`]).
//!
//! C header: [`include/linux/io_uring/cmd.h`](srctree/include/linux/io_uring/cmd.h)
//!
//! The registration is read from io_uring's private `struct io_mapped_ubuf`
//! (`io_uring/rsrc.h`; `kernel-glue/premap.c` says why). What it says is only used to choose
//! pages to reference and map; an I/O uses premapped pages only after [`PremappedBuffer::covers`]
//! compared them, byte for byte, with what `io_uring_cmd_import_fixed()` gives for the I/O. The
//! buffer holds its own page references, so mapped memory is never freed or reused while the
//! mapping exists, whatever user space does with its registration.

use kernel::{alloc::KVVec, bindings, prelude::*};

use bvec::{Bvec, Page};

use crate::{chardev::UringCmd, helpers, pci, KPage};

/// The page size the tables count in.
const PAGE: u64 = 4096;

/// The registered buffer an io_uring command names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedBuf {
    /// Identifies the registration while it lives (a cache key, never trusted).
    pub id: u64,
    /// User address of its first byte.
    pub ubuf: u64,
    /// Length in bytes.
    pub len: u64,
    /// 4 KiB pages it spans.
    pub nr_pages: u64,
    /// Offset of its first byte in the first page.
    pub first_page_offset: u32,
    /// Its index in the ring's table of registered buffers (`sqe->buf_index`): a cache hint,
    /// never trusted.
    pub index: u32,
}

impl UringCmd<'_> {
    /// The registered buffer this command names (`IORING_URING_CMD_FIXED`), if any.
    #[inline]
    pub fn fixed_buf(&self) -> Option<FixedBuf> {
        let mut b = FixedBuf {
            id: 0,
            ubuf: 0,
            len: 0,
            nr_pages: 0,
            first_page_offset: 0,
            index: 0,
        };
        // SAFETY: the command is live; the out pointers are valid.
        let r = unsafe {
            helpers::rnvme_glue_uring_fixed_buf(
                self.raw(),
                &mut b.id,
                &mut b.ubuf,
                &mut b.len,
                &mut b.nr_pages,
                &mut b.first_page_offset,
                &mut b.index,
            )
        };
        (r == 0).then_some(b)
    }
}

/// The pages of a registered buffer with a reference held on each, mapped for a device
/// (`DMA_BIDIRECTIONAL`): the bus address of every 4 KiB page is known, so an I/O inside the
/// buffer needs no mapping. Unmapped, then the references dropped, on drop.
///
/// # Invariants
///
/// `pages[..]` each hold one page reference of ours; the `nr_runs` runs in `runs` are live
/// mappings of those pages for `dev`, and `dma[i]` is page `i`'s bus address in them;
/// `need_sync` is false only if `dma_need_sync()` said so for every run.
pub struct PremappedBuffer {
    dev: pci::Device,
    buf: FixedBuf,
    pages: KVVec<*mut bindings::page>,
    dma: KVVec<u64>,
    runs: KVVec<u64>,
    nr_runs: u64,
    need_sync: bool,
}

// SAFETY: page references and DMA mappings may be released from any thread; the raw page
// pointers are only handed to C functions that accept any context.
unsafe impl Send for PremappedBuffer {}
// SAFETY: `&PremappedBuffer` only reads the tables and syncs (thread-safe DMA API calls).
unsafe impl Sync for PremappedBuffer {}

impl core::fmt::Debug for PremappedBuffer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PremappedBuffer")
            .field("buf", &self.buf)
            .field("nr_runs", &self.nr_runs)
            .finish()
    }
}

impl PremappedBuffer {
    /// References and maps, for `dev`, every page of the registered buffer `cmd` names (may
    /// sleep; vmalloc-backed tables for large buffers).
    ///
    /// # Errors
    ///
    /// `EINVAL` without a registered buffer (or when it changed under us), `ENOMEM`, `EIO` when
    /// the DMA API refuses.
    pub fn new(cmd: &UringCmd<'_>, dev: &pci::Device) -> Result<Self> {
        let buf = cmd.fixed_buf().ok_or(EINVAL)?;
        let n = usize::try_from(buf.nr_pages).map_err(|_| EINVAL)?;
        let mut pages = KVVec::from_elem(core::ptr::null_mut(), n, GFP_KERNEL)?;
        let mut dma = KVVec::from_elem(0u64, n, GFP_KERNEL)?;
        let mut runs = KVVec::from_elem(0u64, n.checked_mul(2).ok_or(EINVAL)?, GFP_KERNEL)?;
        // SAFETY: the command is live and its registration pinned by the request; `pages` has
        // room for `n` pointers.
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_uring_fixed_get_pages(cmd.raw(), pages.as_mut_ptr(), buf.nr_pages)
        })?;
        let mut need_sync = true;
        // SAFETY: `pages` holds `n` referenced pages (kept until the drop or the error path
        // below); `dma`/`runs` have room for `n` and `2n` values.
        let r = unsafe {
            helpers::rnvme_glue_dma_map_page_runs(
                dev.device_raw(),
                pages.as_ptr(),
                buf.nr_pages,
                dma.as_mut_ptr(),
                runs.as_mut_ptr(),
                &mut need_sync,
            )
        };
        let Ok(nr_runs) = u64::try_from(r) else {
            // SAFETY: the references taken above, dropped once; nothing is mapped.
            unsafe { helpers::rnvme_glue_put_pages(pages.as_ptr(), buf.nr_pages) };
            return Err(EIO);
        };
        // INVARIANT: references and mappings made above.
        Ok(Self {
            dev: dev.clone(),
            buf,
            pages,
            dma,
            runs,
            nr_runs,
            need_sync,
        })
    }

    /// The registration this buffer was made from.
    #[inline]
    pub fn buf(&self) -> &FixedBuf {
        &self.buf
    }

    /// Bus address of each 4 KiB page, in order.
    #[inline]
    pub fn dma_pages(&self) -> &[u64] {
        &self.dma
    }

    /// Bytes held mapped (whole pages).
    #[inline]
    pub fn mapped_bytes(&self) -> u64 {
        self.buf.nr_pages.saturating_mul(4096)
    }

    /// Whether the `len` bytes at user address `addr` of the registered buffer `cmd` names
    /// (read for a `write` command, else written) are exactly the bytes of this buffer at the
    /// same offset from its start: same pages, same offsets in them.
    ///
    /// # Errors
    ///
    /// `EFAULT` when the range is outside `cmd`'s registered buffer.
    #[inline]
    pub fn covers(&self, cmd: &UringCmd<'_>, addr: u64, len: u32, write: bool) -> Result<bool> {
        let Some(pos) = addr
            .checked_sub(self.buf.ubuf)
            .and_then(|o| o.checked_add(u64::from(self.buf.first_page_offset)))
        else {
            return Ok(false);
        };
        // SAFETY: the command is live; `pages` holds `nr_pages` pointers.
        let r = unsafe {
            helpers::rnvme_glue_uring_fixed_check(
                cmd.raw(),
                addr,
                len,
                write,
                pos,
                self.pages.as_ptr(),
                self.buf.nr_pages,
            )
        };
        match r {
            0 => Ok(true),
            1 => Ok(false),
            r => Err(Error::from_errno(r)),
        }
    }

    /// Whether the `seg.len()` bytes of `seg` are the bytes at `offset` from the buffer's start:
    /// the same physical pages, at the same offsets in them (e.g. a plain I/O's pinned user
    /// pages, to send it on this mapping instead of mapping the same pages twice).
    pub fn holds(&self, offset: u64, seg: &Bvec<KPage>) -> bool {
        let fpo = u64::from(self.buf.first_page_offset);
        let Some(mut pos) = offset.checked_add(fpo) else {
            return false;
        };
        let mut phys = seg.phys();
        let mut left = u64::from(seg.len());
        while left > 0 {
            let in_page = pos % PAGE;
            let Some(&p) = usize::try_from(pos / PAGE)
                .ok()
                .and_then(|i| self.pages.get(i))
            else {
                return false;
            };
            if KPage::from_ptr(p).phys().wrapping_add(in_page) != phys {
                return false;
            }
            let chunk = left.min(PAGE - in_page);
            pos += chunk;
            phys = phys.wrapping_add(chunk);
            left -= chunk;
        }
        pos - fpo <= self.buf.len
    }

    /// Hands `len` bytes at `offset` from the buffer's start to the device
    /// (`dma_sync_single_for_device()`), for a command that reads them (`to_device`) or writes
    /// them. Nothing to do, and nothing done, where `dma_need_sync()` said no sync is needed
    /// (cache-coherent platforms without bouncing).
    #[inline]
    pub fn sync_for_device(&self, offset: u64, len: u32, to_device: bool) {
        self.sync(offset, len, false, to_device);
    }

    /// Hands `len` bytes at `offset` back to the CPU after the device wrote them
    /// (`dma_sync_single_for_cpu()`; skipped as `sync_for_device` says).
    #[inline]
    pub fn sync_for_cpu(&self, offset: u64, len: u32) {
        self.sync(offset, len, true, false);
    }

    #[inline]
    fn sync(&self, offset: u64, len: u32, for_cpu: bool, to_device: bool) {
        if !self.need_sync {
            return;
        }
        let pos = offset.saturating_add(u64::from(self.buf.first_page_offset));
        // SAFETY: `dma` holds the bus addresses of live mappings (type invariant); the C side
        // ignores bytes past the table.
        unsafe {
            helpers::rnvme_glue_dma_sync_pages(
                self.dev.device_raw(),
                self.dma.as_ptr(),
                self.buf.nr_pages,
                pos,
                len,
                for_cpu,
                to_device,
            )
        };
    }
}

impl Drop for PremappedBuffer {
    fn drop(&mut self) {
        // SAFETY: the live mappings and our page references (type invariant), released once,
        // mappings first.
        unsafe {
            helpers::rnvme_glue_dma_unmap_page_runs(
                self.dev.device_raw(),
                self.runs.as_ptr(),
                self.nr_runs,
            );
            helpers::rnvme_glue_put_pages(self.pages.as_ptr(), self.buf.nr_pages);
        }
    }
}
