//! The kunit iov_iter benchmark geometries (iov-semantics §8.3), direction SOURCE.
//!
//! C header: [`include/linux/uio.h`](srctree/include/linux/uio.h)
//!
//! Every function here moves `npages * 4096` bytes (256 MiB with [`NPAGES`]) out of an iterator
//! with `copy_from_iter` and returns the bytes copied. The source is a [`TiledMem`] (one page
//! tiled over the whole range, §8.4). The kernel's destination is a 256 MiB vmap of one page; a
//! user-space slice cannot alias like that, so the destination is a cache-resident scratch
//! buffer and the copy is issued in chunks of [`CHUNK`] bytes (1,024 `copy_from_iter` calls per
//! 256 MiB). The iterator is built once, outside the timed region as in the kernel, and still
//! walks all its segments; only UBUF and bvec_split build an iterator per 4 KiB / 256 KiB inside
//! the timed loop, as the kernel benchmarks do.
//!
//! [`memcpy_chunked`] and [`memcpy_4k`] are the ceilings: the same bytes moved with plain
//! `copy_from_slice` calls in the same chunking, without any iterator.

use std::hint::black_box;

use bvec::{Bvec, Pfn, PAGE_SIZE};
use iov::{Folio, IovIter, Iovec, Kvec, Source, Step};

use crate::tiled::{TiledMem, KERNEL_BASE, USER_BASE};

/// Pages moved per sample (`npages` of the kernel benchmarks).
pub const NPAGES: usize = 65_536;
/// Bytes moved per sample: 256 MiB.
pub const TOTAL: usize = NPAGES * PAGE_SIZE;
/// Bytes per `copy_from_iter` call for the one-iterator kinds: 256 KiB (64 pages), so the
/// scratch buffer stays in the L2 cache.
pub const CHUNK: usize = 256 * 1024;
/// Pages per bvec_split chunk (the final kunit code uses 64).
pub const SPLIT_PAGES: usize = 64;
/// KVEC segments (8 × 32 MiB).
pub const KVEC_SEGS: usize = 8;

/// The segment tables of one geometry, built once outside the timed region.
#[derive(Clone, Debug)]
pub struct Tables {
    /// `npages` iovecs of 4 KiB at consecutive user addresses.
    pub iovec: Vec<Iovec>,
    /// [`KVEC_SEGS`] kvecs splitting the kernel range evenly.
    pub kvec: Vec<Kvec>,
    /// `npages` single-page bvecs, every one naming the same page (`{page, 4096, 0}`).
    pub bvec: Vec<Bvec<Pfn>>,
    /// `npages` order-0 folios, every one the same page (the xarray/folioq benchmark).
    pub folios: Vec<Folio<Pfn>>,
    /// Total bytes the tables describe.
    pub total: usize,
}

/// A single-page bvec of page 0 (`{page, 4096, 0}`), checked at compile time.
pub const PAGE_BVEC: Bvec<Pfn> = match Bvec::new(Pfn(0), 0, PAGE_SIZE as u32) {
    Ok(b) => b,
    Err(_) => panic!("a page-sized bvec is valid"),
};

impl Tables {
    /// Tables for `npages` pages; `npages` should be a multiple of [`KVEC_SEGS`] and of
    /// [`SPLIT_PAGES`].
    pub fn new(npages: usize) -> Self {
        let total = npages * PAGE_SIZE;
        let kv = total / KVEC_SEGS;
        Self {
            iovec: (0..npages)
                .map(|i| Iovec::new(USER_BASE + i * PAGE_SIZE, PAGE_SIZE))
                .collect(),
            kvec: (0..KVEC_SEGS)
                .map(|i| Kvec::new(KERNEL_BASE + i * kv, kv))
                .collect(),
            bvec: vec![PAGE_BVEC; npages],
            folios: vec![Folio::page(Pfn(0)); npages],
            total,
        }
    }
}

/// Calls `copy` on the scratch buffer until `total` bytes were moved (or it stops making
/// progress); `black_box` keeps each chunk's stores alive.
#[inline(always)]
fn drain(total: usize, scratch: &mut [u8], mut copy: impl FnMut(&mut [u8]) -> usize) -> usize {
    let mut done = 0;
    while done < total {
        let n = copy(&mut *scratch);
        black_box(&mut *scratch);
        if n == 0 {
            break;
        }
        done += n;
    }
    done
}

/// UBUF: `npages` × { new 4 KiB UBUF iterator on the same buffer; `copy_from_iter` 4 KiB }
/// into the same 4 KiB of `scratch`.
pub fn ubuf(mem: &mut TiledMem, npages: usize, scratch: &mut [u8]) -> usize {
    let Some(dst) = scratch.get_mut(..PAGE_SIZE) else {
        return 0;
    };
    let mut done = 0;
    for _ in 0..npages {
        // A fresh, opaque address each time: the user-range check (`access_ok`) and the
        // iterator set-up cannot be hoisted out of the loop once the UBUF copy is inlined.
        let mut it = IovIter::<Pfn, Source>::ubuf(black_box(USER_BASE), PAGE_SIZE);
        done += it.copy_from_iter(mem, &mut *dst);
        black_box(&mut *dst);
    }
    done
}

/// IOVEC: an iterator over `t.iovec` (construction is outside the kernel's timed region).
pub fn iovec_iter(t: &Tables) -> Option<IovIter<'_, Pfn, Source>> {
    IovIter::iovec(&t.iovec, t.total).ok()
}

/// KVEC: an iterator over the 8 × 32 MiB kvecs.
pub fn kvec_iter(t: &Tables) -> Option<IovIter<'_, Pfn, Source>> {
    IovIter::kvec(&t.kvec, t.total).ok()
}

/// BVEC: an iterator over the page bvecs.
pub fn bvec_iter(t: &Tables) -> Option<IovIter<'_, Pfn, Source>> {
    IovIter::bvec(&t.bvec, t.total).ok()
}

/// Page list (FOLIOQ/XARRAY): an iterator over `npages` order-0 folios.
pub fn page_list_iter(t: &Tables) -> Option<IovIter<'_, Pfn, Source>> {
    IovIter::page_list(&t.folios, 0, t.total).ok()
}

/// Drains `it` into `scratch` with `copy_from_iter` calls of `scratch.len()` bytes (the timed
/// part of the IOVEC, KVEC, BVEC and page-list benchmarks). Returns the bytes copied.
pub fn copy_all(
    mem: &mut TiledMem,
    it: &mut IovIter<'_, Pfn, Source>,
    scratch: &mut [u8],
) -> usize {
    let total = it.count();
    drain(total, scratch, |s| it.copy_from_iter(mem, s))
}

/// bvec_split: `npages / 64` × { fill a caller-provided 64-entry table afresh; build a BVEC
/// iterator over it; `copy_from_iter` 256 KiB }. The kernel kmallocs the table each time; here
/// it is a stack array refilled each time (no heap in the timed loop).
pub fn bvec_split(mem: &mut TiledMem, npages: usize, scratch: &mut [u8]) -> usize {
    let Some(dst) = scratch.get_mut(..SPLIT_PAGES * PAGE_SIZE) else {
        return 0;
    };
    let mut table = [PAGE_BVEC; SPLIT_PAGES];
    let mut done = 0;
    for _ in 0..npages / SPLIT_PAGES {
        for slot in table.iter_mut() {
            if let Ok(b) = Bvec::new(black_box(Pfn(0)), 0, PAGE_SIZE as u32) {
                *slot = b;
            }
        }
        let Ok(mut it) = IovIter::<Pfn, Source>::bvec(&table, SPLIT_PAGES * PAGE_SIZE) else {
            return done;
        };
        done += it.copy_from_iter(mem, &mut *dst);
        black_box(&mut *dst);
    }
    done
}

/// The ceiling for the chunked kinds: `total / CHUNK` rounds of `copy_from_slice` of the source
/// page into each 4 KiB of the scratch chunk.
pub fn memcpy_chunked(mem: &TiledMem, total: usize, scratch: &mut [u8]) -> usize {
    let src = black_box(mem.page_bytes());
    drain(total, scratch, |s| {
        for d in s.chunks_exact_mut(PAGE_SIZE) {
            d.copy_from_slice(src);
        }
        s.len() - s.len() % PAGE_SIZE
    })
}

/// The ceiling for UBUF: `npages` × `copy_from_slice` of the source page into the same 4 KiB.
pub fn memcpy_4k(mem: &TiledMem, npages: usize, scratch: &mut [u8]) -> usize {
    let Some(dst) = scratch.get_mut(..PAGE_SIZE) else {
        return 0;
    };
    let src = black_box(mem.page_bytes());
    for _ in 0..npages {
        dst.copy_from_slice(src);
        black_box(&mut *dst);
    }
    npages * PAGE_SIZE
}

/// A copy-out step for [`IovIter::iterate_and_advance`]: chunk at `progress` lands at the same
/// offset of `dst`. Written here (the crate's own copy step is private) so the same step runs
/// through the generic engine and through [`IovIter::iterate_and_advance_dyn`].
#[derive(Debug)]
pub struct CopyStep<'m, 'd> {
    /// The source memory.
    pub mem: &'m TiledMem,
    /// The destination chunk.
    pub dst: &'d mut [u8],
}

impl Step<Pfn> for CopyStep<'_, '_> {
    #[inline]
    fn user(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        match self.dst.get_mut(progress..progress + len) {
            Some(d) => self.mem.read_user(addr, d),
            None => len,
        }
    }
    #[inline]
    fn kernel(&mut self, addr: usize, progress: usize, len: usize) -> usize {
        match self.dst.get_mut(progress..progress + len) {
            Some(d) => self.mem.read_kernel(addr, d),
            None => len,
        }
    }
    #[inline]
    fn page(&mut self, page: Pfn, offset: usize, progress: usize, len: usize) -> usize {
        match self.dst.get_mut(progress..progress + len) {
            Some(d) => bvec::PageMemory::read(self.mem, page, offset, d),
            None => len,
        }
    }
}

/// Drains `it` through the generic (monomorphised) engine with [`CopyStep`].
pub fn copy_all_generic_step(
    mem: &TiledMem,
    it: &mut IovIter<'_, Pfn, Source>,
    scratch: &mut [u8],
) -> usize {
    let total = it.count();
    drain(total, scratch, |s| {
        let len = s.len();
        let mut step = CopyStep { mem, dst: s };
        // Same barrier as the dyn variant, so the two differ only in the dispatch.
        let step: &mut CopyStep<'_, '_> = black_box(&mut step);
        it.iterate_and_advance(len, step)
    })
}

/// Drains `it` through the `dyn Step` engine with the same [`CopyStep`]: one indirect call per
/// page for BVEC.
pub fn copy_all_dyn_step(
    mem: &TiledMem,
    it: &mut IovIter<'_, Pfn, Source>,
    scratch: &mut [u8],
) -> usize {
    let total = it.count();
    drain(total, scratch, |s| {
        let len = s.len();
        let mut step = CopyStep { mem, dst: s };
        // Hide the vtable from the optimiser: without this, LTO may propagate the only vtable
        // ever passed into the (single) caller of the dyn engine and devirtualise it.
        let step: &mut dyn Step<Pfn> = black_box(&mut step);
        it.iterate_and_advance_dyn(len, step)
    })
}
/// A step that touches one byte per chunk instead of copying it: isolates the engine and the
/// dispatch cost, which the copy benchmarks hide behind a 4 KiB memcpy per page.
#[derive(Debug)]
pub struct TouchStep<'m> {
    /// The memory read.
    pub mem: &'m TiledMem,
    /// XOR of the bytes read (keeps the reads alive).
    pub acc: u8,
}

impl Step<Pfn> for TouchStep<'_> {
    #[inline]
    fn user(&mut self, addr: usize, _progress: usize, _len: usize) -> usize {
        let mut b = [0u8; 1];
        let left = self.mem.read_user(addr, &mut b);
        self.acc ^= b[0];
        left
    }
    #[inline]
    fn kernel(&mut self, addr: usize, _progress: usize, _len: usize) -> usize {
        let mut b = [0u8; 1];
        let left = self.mem.read_kernel(addr, &mut b);
        self.acc ^= b[0];
        left
    }
    #[inline]
    fn page(&mut self, page: Pfn, offset: usize, _progress: usize, _len: usize) -> usize {
        let mut b = [0u8; 1];
        let left = bvec::PageMemory::read(self.mem, page, offset, &mut b);
        self.acc ^= b[0];
        left
    }
}

/// Walks all of `it` with [`TouchStep`] through the generic engine; returns the bytes walked.
pub fn touch_all_generic_step(mem: &TiledMem, it: &mut IovIter<'_, Pfn, Source>) -> usize {
    let mut step = TouchStep { mem, acc: 0 };
    let step: &mut TouchStep<'_> = black_box(&mut step);
    let n = it.iterate_and_advance(usize::MAX, step);
    black_box(step.acc);
    n
}

/// Walks all of `it` with [`TouchStep`] through the `dyn Step` engine.
pub fn touch_all_dyn_step(mem: &TiledMem, it: &mut IovIter<'_, Pfn, Source>) -> usize {
    let mut step = TouchStep { mem, acc: 0 };
    let step: &mut dyn Step<Pfn> = black_box(&mut step);
    let n = it.iterate_and_advance_dyn(usize::MAX, step);
    black_box(&mut *step);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 512 pages: a multiple of the kvec count and of the split chunk.
    const N: usize = 512;

    fn check(name: &str, mem: &TiledMem, moved: usize, scratch: &[u8], chunk: usize) {
        assert_eq!(moved, N * PAGE_SIZE, "{name}: bytes moved");
        for (i, page) in scratch[..chunk].chunks_exact(PAGE_SIZE).enumerate() {
            assert_eq!(page, mem.page_bytes(), "{name}: page {i} of the scratch");
        }
    }

    #[test]
    fn every_geometry_copies_every_byte() {
        let t = Tables::new(N);
        let mut mem = TiledMem::new(N * PAGE_SIZE);
        type Run = fn(&mut TiledMem, &Tables, &mut [u8]) -> usize;
        let runs: [(&str, Run, usize); 9] = [
            ("ubuf", |m, _, s| ubuf(m, N, s), PAGE_SIZE),
            (
                "iovec",
                |m, t, s| copy_all(m, &mut iovec_iter(t).unwrap(), s),
                CHUNK,
            ),
            (
                "kvec",
                |m, t, s| copy_all(m, &mut kvec_iter(t).unwrap(), s),
                CHUNK,
            ),
            (
                "bvec",
                |m, t, s| copy_all(m, &mut bvec_iter(t).unwrap(), s),
                CHUNK,
            ),
            (
                "pages",
                |m, t, s| copy_all(m, &mut page_list_iter(t).unwrap(), s),
                CHUNK,
            ),
            (
                "split",
                |m, _, s| bvec_split(m, N, s),
                SPLIT_PAGES * PAGE_SIZE,
            ),
            (
                "generic",
                |m, t, s| copy_all_generic_step(m, &mut bvec_iter(t).unwrap(), s),
                CHUNK,
            ),
            (
                "dyn",
                |m, t, s| copy_all_dyn_step(m, &mut bvec_iter(t).unwrap(), s),
                CHUNK,
            ),
            ("memcpy", |m, t, s| memcpy_chunked(m, t.total, s), CHUNK),
        ];
        for (name, run, chunk) in runs {
            let mut scratch = crate::tiled::AlignedBuf::new(CHUNK);
            let moved = run(&mut mem, &t, scratch.as_mut_slice());
            check(name, &mem, moved, scratch.as_slice(), chunk);
        }
        let mut scratch = crate::tiled::AlignedBuf::new(CHUNK);
        assert_eq!(memcpy_4k(&mem, N, scratch.as_mut_slice()), N * PAGE_SIZE);
        assert_eq!(&scratch.as_slice()[..PAGE_SIZE], mem.page_bytes());
        let full = N * PAGE_SIZE;
        assert_eq!(
            touch_all_generic_step(&mem, &mut bvec_iter(&t).unwrap()),
            full
        );
        assert_eq!(touch_all_dyn_step(&mem, &mut bvec_iter(&t).unwrap()), full);
    }

    #[test]
    fn a_fault_stops_the_copy() {
        // The user and kernel mappings are one page short: the last page (IOVEC) or the last
        // chunk (KVEC, whose chunks are 256 KiB) faults. Page kinds name only page 0.
        let t = Tables::new(N);
        let mut mem = TiledMem::new((N - 1) * PAGE_SIZE);
        let mut scratch = crate::tiled::AlignedBuf::new(CHUNK);
        let s = scratch.as_mut_slice();
        let full = N * PAGE_SIZE;
        let iovec = copy_all(&mut mem, &mut iovec_iter(&t).unwrap(), s);
        assert_eq!(iovec, full - PAGE_SIZE);
        let kvec = copy_all(&mut mem, &mut kvec_iter(&t).unwrap(), s);
        assert_eq!(kvec, full - CHUNK);
    }
}
