// SPDX-License-Identifier: GPL-2.0

//! The six copy geometries of the kunit iov_iter benchmarks, run by the kernel and by our crates.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! Every kind moves `npages * 4096` bytes out of an `ITER_SOURCE` iterator with
//! `copy_from_iter` into a scratch buffer that tiles one page (so the copy stays cache-resident
//! and the iterators' own cost shows), from memory that tiles one source page ("iov_iter: Add
//! benchmarking kunit tests", David Howells, 2023):
//!
//! | kind | segments | timed |
//! |---|---|---|
//! | `ubuf` | `npages` x { new 4 KiB UBUF iterator on the same user page; copy 4 KiB } | all |
//! | `iovec` | `npages` iovecs of 4 KiB over a user mapping | the copy |
//! | `kvec` | 8 kvecs over the tiled source vmap | the copy |
//! | `bvec` | `npages` bvecs `{page, 4096, 0}` of the source page | the copy |
//! | `bvec_split` | `npages / 64` x { refill a 64-entry table; new BVEC iterator; copy 256 KiB } | all |
//! | `page_list` | `npages` order-0 folios; the kernel's `ITER_FOLIOQ` over a `folio_queue` chain | the copy |
//!
//! The kunit `bvec_split` kmallocs each 64-entry table; both sides here refill one table
//! instead, so the comparison is of the iterators, not of the allocator.

use core::hint::black_box;

use bvec::{Bvec, PAGE_SIZE};
use iov::{Folio, IovIter, Iovec, Kvec, Source};

use kernel_glue::KPage;
use kernel_glue_bench::{
    c_copy::{self, Timed, SPLIT_PAGES},
    now_ns, BenchMemory, CFolioQueue, TiledVmap, UserMapping,
};

/// Segments of the `kvec` kind (8 x 32 MiB at 256 MiB).
pub(crate) const KVEC_SEGS: usize = 8;

/// A copy geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One 4 KiB user buffer per iterator.
    Ubuf,
    /// 4 KiB iovecs.
    Iovec,
    /// 8 kvecs.
    Kvec,
    /// Single-page bvecs.
    Bvec,
    /// 64-page bvec tables built per 256 KiB.
    BvecSplit,
    /// Order-0 folios (our page list; the kernel's `ITER_FOLIOQ`).
    PageList,
}

impl Kind {
    /// Every kind, in the order they are printed.
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Ubuf,
        Kind::Iovec,
        Kind::Kvec,
        Kind::Bvec,
        Kind::BvecSplit,
        Kind::PageList,
    ];

    /// Name in the output lines.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Ubuf => "ubuf",
            Kind::Iovec => "iovec",
            Kind::Kvec => "kvec",
            Kind::Bvec => "bvec",
            Kind::BvecSplit => "bvec_split",
            Kind::PageList => "page_list",
        }
    }

    /// Whether the bytes come from user memory (which reads as zeroes) rather than the source
    /// page.
    fn reads_user(self) -> bool {
        matches!(self, Kind::Ubuf | Kind::Iovec)
    }
}

/// The memory and segment tables every sample runs over, built once.
#[derive(Debug)]
pub(crate) struct Geometry<'s, 'p> {
    /// The source: one page tiled over `npages` pages.
    pub(crate) src: &'s TiledVmap<'p>,
    /// The user mapping (`npages` pages, never written: reads the zero page).
    pub(crate) user: &'s UserMapping,
    /// `npages` iovecs of 4 KiB over `user`.
    pub(crate) iovec: &'s [Iovec],
    /// [`KVEC_SEGS`] kvecs over `src`.
    pub(crate) kvec: &'s [Kvec],
    /// `npages` bvecs of the source page.
    pub(crate) bvec: &'s [Bvec<KPage>],
    /// `npages` order-0 folios of the source page.
    pub(crate) folios: &'s [Folio<KPage>],
    /// The kernel's folio queue over the same folios.
    pub(crate) fq: &'s CFolioQueue<'s>,
    /// Pages per sample.
    pub(crate) npages: usize,
}

impl Geometry<'_, '_> {
    /// Bytes per sample.
    pub(crate) fn bytes(&self) -> usize {
        self.npages * PAGE_SIZE
    }

    /// The byte every copied byte must equal: the source page's fill, or 0 from user memory.
    pub(crate) fn expected(&self, kind: Kind, fill: u8) -> u8 {
        if kind.reads_user() {
            0
        } else {
            fill
        }
    }

    /// One sample of `kind` through the kernel's `iov_iter` (timed in C).
    pub(crate) fn c(&self, kind: Kind, scratch: &mut TiledVmap<'_>) -> Option<Timed> {
        let bytes = self.bytes();
        match kind {
            Kind::Ubuf => c_copy::ubuf(self.user, PAGE_SIZE, self.npages, scratch),
            Kind::Iovec => c_copy::iovec(self.iovec, bytes, scratch),
            Kind::Kvec => c_copy::kvec(self.kvec, bytes, self.src, scratch),
            Kind::Bvec => c_copy::bvec(self.bvec, bytes, self.src, scratch),
            Kind::BvecSplit => c_copy::bvec_split(self.src, self.npages / SPLIT_PAGES, scratch),
            Kind::PageList => c_copy::folioq(self.fq, bytes, scratch),
        }
    }

    /// One sample of `kind` through our `iov` crate over the same memory.
    pub(crate) fn rust(&self, kind: Kind, scratch: &mut TiledVmap<'_>) -> Option<Timed> {
        let mut mem = BenchMemory::new(self.src);
        let bytes = self.bytes();
        let dst = scratch.as_mut_slice();
        match kind {
            Kind::Ubuf => {
                let dst = dst.get_mut(..PAGE_SIZE)?;
                let addr = self.user.addr();
                let t0 = now_ns();
                let mut copied = 0;
                for _ in 0..self.npages {
                    // An opaque address each time, as the C loop's out-of-line copy forces:
                    // the set-up cannot be hoisted out of the loop.
                    let mut it = IovIter::<KPage, Source>::ubuf(black_box(addr), PAGE_SIZE);
                    copied += it.copy_from_iter(&mut mem, &mut *dst);
                }
                let t1 = now_ns();
                Some(Timed {
                    ns: t1.saturating_sub(t0),
                    copied,
                })
            }
            Kind::Iovec => drain(
                IovIter::iovec(self.iovec, bytes).ok()?,
                &mut mem,
                dst,
                bytes,
            ),
            Kind::Kvec => drain(IovIter::kvec(self.kvec, bytes).ok()?, &mut mem, dst, bytes),
            Kind::Bvec => drain(IovIter::bvec(self.bvec, bytes).ok()?, &mut mem, dst, bytes),
            Kind::PageList => drain(
                IovIter::page_list(self.folios, 0, bytes).ok()?,
                &mut mem,
                dst,
                bytes,
            ),
            Kind::BvecSplit => {
                const SPLIT_BYTES: usize = SPLIT_PAGES * PAGE_SIZE;
                let dst = dst.get_mut(..SPLIT_BYTES)?;
                let page = self.src.page();
                let seg = Bvec::new(page, 0, PAGE_SIZE as u32).ok()?;
                let mut table = [seg; SPLIT_PAGES];
                let t0 = now_ns();
                let mut copied = 0;
                for _ in 0..self.npages / SPLIT_PAGES {
                    for slot in table.iter_mut() {
                        if let Ok(b) = Bvec::new(black_box(page), 0, PAGE_SIZE as u32) {
                            *slot = b;
                        }
                    }
                    let mut it = IovIter::<KPage, Source>::bvec(&table, SPLIT_BYTES).ok()?;
                    copied += it.copy_from_iter(&mut mem, &mut *dst);
                }
                let t1 = now_ns();
                Some(Timed {
                    ns: t1.saturating_sub(t0),
                    copied,
                })
            }
        }
    }
}

/// One timed `copy_from_iter` of `bytes` from `it` into the start of `dst`.
fn drain(
    mut it: IovIter<'_, KPage, Source>,
    mem: &mut BenchMemory<'_>,
    dst: &mut [u8],
    bytes: usize,
) -> Option<Timed> {
    let dst = dst.get_mut(..bytes)?;
    let t0 = now_ns();
    let copied = it.copy_from_iter(mem, dst);
    let t1 = now_ns();
    Some(Timed {
        ns: t1.saturating_sub(t0),
        copied,
    })
}
