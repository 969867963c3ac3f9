// SPDX-License-Identifier: GPL-2.0

//! Streaming DMA mappings of page segments (`dma_map_page_attrs()`), unmapped on drop.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)

use core::{mem::MaybeUninit, ptr::NonNull};

use bvec::Bvec;
use kernel::{bindings, prelude::*, sync::Arc};

use crate::{helpers, pci, KPage};

/// `DMA_MAPPING_ERROR` (`include/linux/dma-mapping.h`, a macro bindgen does not see; value
/// checked against C in helpers.c).
const DMA_MAPPING_ERROR: u64 = u64::MAX;

/// Direction of a streaming mapping (`enum dma_data_direction`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    /// The device reads the memory (a write command).
    ToDevice,
    /// The device writes the memory (a read command).
    FromDevice,
}

impl Direction {
    fn raw(self) -> bindings::dma_data_direction {
        match self {
            Self::ToDevice => bindings::dma_data_direction_DMA_TO_DEVICE,
            Self::FromDevice => bindings::dma_data_direction_DMA_FROM_DEVICE,
        }
    }
}

/// One mapped segment: the bus address and length the device uses (the layout of helpers.h's
/// `struct rnvme_glue_dma_seg`, which the scatterlist path fills in place).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct MappedSegment {
    /// Bus address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
}

/// Up to `N` page segments mapped for one direction; every segment is unmapped on drop.
///
/// The drop skips the unmap calls when the DMA layer says they would do nothing
/// (`rnvme_glue_dma_need_unmap()`, upstream's later `dma_need_unmap()`: a direct, coherent
/// mapping that no swiotlb bounce buffer backs, without DMA-API debugging). 6.12's C driver
/// unmaps every segment (`nvme_unmap_data()` in `drivers/nvme/host/pci.c`); for a 128 KiB
/// request of 32 pages those calls were about 1,600 instructions (`docs/DEVIATIONS.md`).
///
/// # Invariants
///
/// `dev` is a live device while the value lives: `hold` keeps a reference on it, or (`hold`
/// empty, [`Mapping::new_unheld`]) its maker guaranteed that it outlives the value.
/// `n <= N`, and the first `n` entries of `segs` are initialised and are live
/// `dma_map_page_attrs` mappings for `dev` in direction `dir`, unmapped only by the drop (or
/// not at all, where unmapping them does nothing). The
/// entries after them are never read: a table is not cleared when it is made (for the
/// 128-entry table of a large request that was a 2 KiB `memset` per I/O).
pub struct Mapping<const N: usize> {
    /// The device the segments are mapped for.
    dev: NonNull<bindings::device>,
    /// Keeps `dev` alive: a plain reference count, not a `get_device()`/`put_device()` pair
    /// (three calls each way). Empty for a mapping whose maker guarantees the device outlives
    /// it (a request's mapping: its tag set's data holds the device), which spares the two
    /// reference count calls per I/O that the C driver does not make either.
    hold: Option<Arc<pci::Device>>,
    dir: Direction,
    segs: [MaybeUninit<MappedSegment>; N],
    n: usize,
}

// SAFETY: `dev` is only passed to the DMA API, which may be called from any thread; the rest
// is plain data and an `Arc` of a `Send + Sync` device.
unsafe impl<const N: usize> Send for Mapping<N> {}
// SAFETY: `&Mapping` only reads the segment table.
unsafe impl<const N: usize> Sync for Mapping<N> {}

impl<const N: usize> core::fmt::Debug for Mapping<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mapping")
            .field("dir", &self.dir)
            .field("segs", &self.segments())
            .finish()
    }
}

impl<const N: usize> Mapping<N> {
    /// An empty mapping set for `dev`, to which segments are added with [`Mapping::map`].
    pub fn new(dev: &Arc<pci::Device>, dir: Direction) -> Self {
        // INVARIANT: no mapping yet; `hold` keeps the device alive.
        Self {
            dev: dev.device_nonnull(),
            hold: Some(dev.clone()),
            dir,
            segs: [MaybeUninit::uninit(); N],
            n: 0,
        }
    }

    /// As [`Mapping::new`], without taking a reference on `dev`.
    ///
    /// # Safety
    ///
    /// `dev` must stay alive until the value is dropped (e.g. a request's mapping, whose tag
    /// set's data holds the device and is released only after every request's state is
    /// dropped: [`crate::block::mq::Operations::Owned`]).
    pub unsafe fn new_unheld(dev: &pci::Device, dir: Direction) -> Self {
        // INVARIANT: no mapping yet; the caller keeps the device alive.
        Self {
            dev: dev.device_nonnull(),
            hold: None,
            dir,
            segs: [MaybeUninit::uninit(); N],
            n: 0,
        }
    }

    /// As [`Mapping::new`], built directly on the heap (`flags`: allocation context), so a
    /// large table never sits on the caller's stack (e.g. deep in `queue_rq`).
    pub fn new_boxed(
        dev: &Arc<pci::Device>,
        dir: Direction,
        flags: kernel::alloc::Flags,
    ) -> Result<KBox<Self>> {
        let mut b = KBox::<Self>::new_uninit(flags)?;
        let p = b.as_mut_ptr();
        // SAFETY: `p` is valid, aligned, uninitialised memory for a `Self`; every field but
        // the table is written once below, and the table is an array of `MaybeUninit`, which
        // needs no initialisation, so the value is initialised before `assume_init`.
        unsafe {
            core::ptr::addr_of_mut!((*p).dev).write(dev.device_nonnull());
            core::ptr::addr_of_mut!((*p).hold).write(Some(dev.clone()));
            core::ptr::addr_of_mut!((*p).dir).write(dir);
            core::ptr::addr_of_mut!((*p).n).write(0);
        }
        // INVARIANT: no mapping yet; `hold` keeps the device alive.
        // SAFETY: all fields initialised above.
        Ok(unsafe { b.assume_init() })
    }

    /// Maps `seg` (a segment of physically contiguous pages, e.g. a multipage `bio_vec`).
    ///
    /// # Errors
    ///
    /// `ENOSPC` when `N` segments are already mapped, `EIO` when the DMA API refuses.
    ///
    /// # Safety
    ///
    /// `seg` must name memory that stays allocated, and that nothing but the device accesses
    /// against the direction (e.g. the pages of an in-flight request), until this value is
    /// dropped.
    pub unsafe fn map(&mut self, seg: &Bvec<KPage>) -> Result {
        // The entry after the live ones (none when `N` are mapped); a field of its own, so
        // `dev` and `dir` stay readable below.
        let slot = self.segs.get_mut(self.n).ok_or(ENOSPC)?;
        let dev = self.dev.as_ptr();
        // SAFETY: `dev` is valid; `seg` is `len` bytes at `offset` in physically contiguous
        // pages starting at `page` (the `Bvec` invariant and the function contract).
        let addr = unsafe {
            bindings::dma_map_page_attrs(
                dev,
                seg.page().as_ptr(),
                seg.offset() as usize,
                seg.len() as usize,
                self.dir.raw(),
                0,
            )
        };
        // `dma_mapping_error()` (`include/linux/dma-mapping.h`), inline in C: DMA-API debugging
        // records that the driver checked the result, then the error value is compared.
        #[cfg(CONFIG_DMA_API_DEBUG)]
        // SAFETY: `dev` is valid; `addr` was just returned for it.
        unsafe {
            bindings::debug_dma_mapping_error(dev, addr)
        };
        if addr == DMA_MAPPING_ERROR {
            return Err(EIO);
        }
        slot.write(MappedSegment {
            addr,
            len: seg.len(),
        });
        // INVARIANT: entry `n` is now initialised and a live mapping.
        self.n += 1;
        Ok(())
    }

    /// The mapped segments, in order.
    pub fn segments(&self) -> &[MappedSegment] {
        let live = self.segs.get(..self.n).unwrap_or(&[]);
        // SAFETY: the first `n` entries are initialised (type invariant), and
        // `MaybeUninit<MappedSegment>` has the layout of `MappedSegment`.
        unsafe { core::slice::from_raw_parts(live.as_ptr().cast::<MappedSegment>(), live.len()) }
    }
}

impl<const N: usize> Mapping<N> {
    /// [`Drop`]'s work for a value holding mappings: out of line, so that dropping an empty
    /// value (an `Option` of one that is `None`, or nothing mapped) inlines to a test.
    #[inline(never)]
    fn unmap_all(&mut self) {
        // SAFETY: `dev` is a live device (type invariant). Asked after the mappings were
        // made: a bounce in any of them would have made it true (the helper's contract).
        if !unsafe { helpers::rnvme_glue_dma_need_unmap(self.dev.as_ptr()) } {
            return;
        }
        for s in self.segments() {
            // SAFETY: a live mapping of `dev` in `dir` (type invariant), unmapped once here.
            unsafe {
                bindings::dma_unmap_page_attrs(
                    self.dev.as_ptr(),
                    s.addr,
                    s.len as usize,
                    self.dir.raw(),
                    0,
                )
            };
        }
    }
}

impl<const N: usize> Drop for Mapping<N> {
    #[inline]
    fn drop(&mut self) {
        if self.n != 0 {
            self.unmap_all();
        }
    }
}
