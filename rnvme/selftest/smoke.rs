// SPDX-License-Identifier: GPL-2.0

//! Self-test: bvec, iov and bio on real kernel pages and buffers, with known answers.

use bio::{BioBuilder, Op};
use bvec::{Bvec, BvecIter, Page, PageMemory, PAGE_SIZE};
use iov::{Dest, IovIter, Kvec, Source};
use kernel::prelude::*;
use kernel_glue::{phys_follows, KPage, OwnedPages};
use kernel_glue_testing::CheckedMemory;

/// Counts checks and reports the failed ones.
#[derive(Debug, Default)]
pub(crate) struct Checks {
    /// Checks run.
    pub(crate) run: usize,
    /// Checks failed.
    pub(crate) failed: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        self.run += 1;
        if !ok {
            self.failed += 1;
            pr_err!("smoke: FAILED: {}\n", what);
        }
    }
}

/// The byte a smoke test writes at position `i` of a stream.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 8)) as u8
}

/// Page handles: `nth` and `phys` agree with the allocation; foreign handles are refused.
fn pages_and_phys(c: &mut Checks) -> Result {
    let p = OwnedPages::alloc_zeroed(3)?;
    let ok = (0..p.nr_pages()).all(|i| p.page().nth(i).phys() == p.phys() + (i * PAGE_SIZE) as u64);
    c.check(
        ok,
        "phys(page + i) == phys(page) + i * PAGE_SIZE in an order-3 block",
    );
    let ok = (0..p.nr_pages()).all(|i| p.index_of(p.page().nth(i)) == Some(i));
    c.check(ok, "index_of(page + i) == i");
    c.check(
        p.index_of(p.page().nth(8)).is_none(),
        "index_of(page + 8) is None",
    );
    c.check(
        p.as_slice().iter().all(|&b| b == 0),
        "__GFP_ZERO pages read as zero",
    );
    c.check(
        p.phys() % (8 * PAGE_SIZE) as u64 == 0,
        "an order-3 block is 32 KiB aligned",
    );
    // With the vmemmap, `page + n` is the page n frames on: handle and physical arithmetic agree
    // across the whole order-3 block (the multipage bio_vec rule the bvec crate relies on).
    c.check(
        (0..8).all(|n| p.page().nth(n).phys() == p.phys() + (n * PAGE_SIZE) as u64),
        "page + n is n pages on physically (vmemmap)",
    );

    let mut mem = CheckedMemory::new();
    let a = mem.alloc_pages(1)?;
    let page = mem.pool().get(a).ok_or(EINVAL)?.page();
    let data = [1u8, 2, 3, 4, 5];
    c.check(
        mem.write(page.nth(1), 4091, &data) == 0,
        "kmap write at the end of page 1",
    );
    let mut back = [0u8; 5];
    c.check(
        mem.read(page.nth(1), 4091, &mut back) == 0 && back == data,
        "kmap read back",
    );
    let direct = mem
        .pool()
        .get(a)
        .and_then(|p| p.as_slice().get(2 * PAGE_SIZE - 5..));
    c.check(
        direct == Some(&data[..]),
        "kmap write visible through page_address",
    );
    c.check(
        mem.write(page.nth(1), 4092, &data) == 5,
        "a write leaving the page is refused",
    );
    c.check(
        mem.write(page.nth(2), 0, &data) == 5,
        "a page outside the pool is refused",
    );
    c.check(
        mem.read(page.nth(1 << 20), 0, &mut back) == 5,
        "a far-away handle is refused",
    );
    Ok(())
}

/// A multipage bvec table walked page by page, written through kmap, read back directly.
fn bvec_pages(c: &mut Checks) -> Result {
    let mut mem = CheckedMemory::new();
    let a = mem.alloc_pages(2)?;
    let b = mem.alloc_pages(0)?;
    let pa = mem.pool().get(a).ok_or(EINVAL)?.page();
    let pb = mem.pool().get(b).ok_or(EINVAL)?.page();
    let table = [
        Bvec::new(pa, 100, 3 * 4096 + 50).map_err(|_| EINVAL)?,
        Bvec::new(pb, 4000, 96).map_err(|_| EINVAL)?,
    ];
    let total = 3 * 4096 + 50 + 96;
    let it = BvecIter::new(&table, 0, total).map_err(|_| EINVAL)?;
    c.check(it.segments().count() == 2, "two multipage segments");
    let mut pos = 0usize;
    let mut pieces = 0usize;
    let mut in_page = true;
    let mut buf = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
    for piece in it.pages() {
        pieces += 1;
        in_page &= piece.offset() as usize + piece.len() as usize <= PAGE_SIZE;
        let part = buf.get_mut(..piece.len() as usize).ok_or(EINVAL)?;
        for (i, x) in part.iter_mut().enumerate() {
            *x = pattern(pos + i);
        }
        c.check(
            mem.write(piece.page(), piece.offset() as usize, part) == 0,
            "write one piece",
        );
        pos += piece.len() as usize;
    }
    c.check(in_page, "single-page pieces never cross a page");
    c.check(
        pieces == 5,
        "4 pieces for 100+12338 bytes from offset 100, 1 for the second",
    );
    c.check(pos == total as usize, "pieces cover the table");
    let first = mem.pool().get(a).map(|p| p.as_slice()).ok_or(EINVAL)?;
    let ok = first.iter().enumerate().all(|(i, &x)| {
        if (100..100 + 3 * 4096 + 50).contains(&i) {
            x == pattern(i - 100)
        } else {
            x == 0
        }
    });
    c.check(
        ok,
        "multipage bvec bytes landed in the order-2 block, nothing else changed",
    );
    let second = mem
        .pool()
        .get(b)
        .and_then(|p| p.as_slice().get(4000..))
        .ok_or(EINVAL)?;
    let ok = second
        .iter()
        .enumerate()
        .all(|(i, &x)| x == pattern(3 * 4096 + 50 + i));
    c.check(ok, "second bvec bytes landed at offset 4000 of its page");
    Ok(())
}

/// `copy_to_iter` then `copy_from_iter` over a bvec table and a kvec table on real memory.
fn iov_copies(c: &mut Checks) -> Result {
    let mut mem = CheckedMemory::new();
    let a = mem.alloc_pages(3)?;
    let k = mem.alloc_buffer(3000)?;
    let pa = mem.pool().get(a).ok_or(EINVAL)?.page();
    let va = mem.pool().get(a).ok_or(EINVAL)?.virt_addr();
    let kb = mem.buffer_addr(k).ok_or(EINVAL)?;

    let bvecs = [
        Bvec::new(pa, 4095, 2).map_err(|_| EINVAL)?,
        Bvec::new(pa, 5 * 4096 + 7, 2 * 4096).map_err(|_| EINVAL)?,
    ];
    let total = 2 + 2 * 4096;
    let mut src = KVec::with_capacity(total, GFP_KERNEL)?;
    for i in 0..total {
        src.push(pattern(i), GFP_KERNEL)?;
    }
    let mut it = IovIter::<KPage, Dest>::bvec(&bvecs, total).map_err(|_| EINVAL)?;
    c.check(
        it.copy_to_iter(&mut mem, &src) == total,
        "copy_to_iter over bvecs is complete",
    );
    c.check(
        it.count() == 0 && it.nr_segs() == 0,
        "bvec iterator exhausted",
    );
    let bytes = mem.pool().get(a).map(|p| p.as_slice()).ok_or(EINVAL)?;
    let ok = bytes.get(4095..4097) == src.get(..2)
        && bytes.get(5 * 4096 + 7..5 * 4096 + 7 + 2 * 4096) == src.get(2..);
    c.check(ok, "bvec bytes are where the table says");

    let mut back = KVec::from_elem(0u8, total, GFP_KERNEL)?;
    let mut it = IovIter::<KPage, Source>::bvec(&bvecs, total).map_err(|_| EINVAL)?;
    it.advance(1);
    c.check(it.revert(1).is_ok(), "revert after advance");
    c.check(
        it.copy_from_iter(&mut mem, &mut back) == total && back == src,
        "copy_from_iter round trip",
    );

    let kvecs = [
        Kvec::new(kb + 10, 100),
        Kvec::new(kb + 200, 0),
        Kvec::new(va + 4000, 200),
    ];
    let mut it = IovIter::<KPage, Dest>::kvec(&kvecs, 300).map_err(|_| EINVAL)?;
    c.check(
        it.copy_to_iter(&mut mem, src.get(..300).ok_or(EINVAL)?) == 300,
        "kvec copy_to_iter",
    );
    let ok = mem.buffer(k).and_then(|b| b.get(10..110)) == src.get(..100)
        && mem.pool().get(a).and_then(|p| p.as_slice().get(4000..4200)) == src.get(100..300);
    c.check(
        ok,
        "kvec bytes landed in the kmalloc buffer and across a page of the block",
    );
    let bad = [Kvec::new(kb + 2990, 20)];
    let mut it = IovIter::<KPage, Dest>::kvec(&bad, 20).map_err(|_| EINVAL)?;
    c.check(
        it.copy_to_iter(&mut mem, src.get(..20).ok_or(EINVAL)?) == 0,
        "kvec past a buffer faults",
    );
    Ok(())
}

/// A bio built page by page merges physically contiguous pages and splits on sectors.
fn bio_build(c: &mut Checks) -> Result {
    let a = OwnedPages::alloc_zeroed(2)?;
    let b = OwnedPages::alloc_zeroed(0)?;
    let filler = Bvec::new(a.page(), 0, 1).map_err(|_| EINVAL)?;
    let mut storage = [filler; 8];
    let mut builder = BioBuilder::new(Op::Write, 8, &mut storage).map_err(|_| EINVAL)?;
    let mut added = 0;
    for i in 0..4 {
        added += builder.add_page(a.page().nth(i), PAGE_SIZE as u32, 0);
    }
    c.check(added == 4 * PAGE_SIZE as u32, "4 pages added");
    c.check(
        builder.vcnt() == 1,
        "4 pages of an order-2 block merge into one multipage bvec",
    );
    let contiguous = a.phys() + (4 * PAGE_SIZE) as u64 == b.phys();
    c.check(
        builder.add_page(b.page(), 512, 0) == 512,
        "a page of another block is added",
    );
    let want = if contiguous { 1 } else { 2 };
    c.check(
        builder.vcnt() == want,
        "it merges only if physically contiguous",
    );
    let mut bio = builder.finish().map_err(|_| EINVAL)?;
    c.check(bio.size() == 4 * PAGE_SIZE as u32 + 512, "bio size");
    c.check(
        bio.pages().count() == 5,
        "bio_for_each_segment sees 5 pages",
    );
    let front = bio.split(2 * PAGE_SIZE as u32).map_err(|_| EINVAL)?;
    c.check(
        front.size() == 2 * PAGE_SIZE as u32 && front.sector() == 8,
        "split front",
    );
    c.check(
        bio.size() == 2 * PAGE_SIZE as u32 + 512 && bio.sector() == 24,
        "split remainder",
    );
    c.check(
        bio.split(100).is_err(),
        "a split inside a sector is refused",
    );
    let phys_ok = bio.segments().next().map(|s| s.phys()) == Some(a.phys() + 2 * PAGE_SIZE as u64);
    c.check(phys_ok, "the remainder starts at page 2 of the block");
    Ok(())
}

/// `phys_follows` (handle arithmetic, used by rnvme to merge segments) against the physical
/// addresses `page_to_phys` gives, for segments inside one order-3 block, in either order, and
/// across two separate blocks.
fn phys_follows_agrees(c: &mut Checks) -> Result {
    let a = OwnedPages::alloc_zeroed(3)?;
    let b = OwnedPages::alloc_zeroed(0)?;
    let mut handles = KVec::new();
    for i in 0..a.nr_pages() {
        handles.push(a.page().nth(i), GFP_KERNEL)?;
    }
    handles.push(b.page(), GFP_KERNEL)?;
    let (mut run, mut agree, mut merges) = (0usize, 0usize, 0usize);
    for &p in handles.iter() {
        for &q in handles.iter() {
            for (off, len) in [(0u32, 4096u32), (512, 3584), (0, 512), (3584, 4608), (0, 8192)] {
                for q_off in [0u32, 512] {
                    let (Ok(x), Ok(y)) = (Bvec::new(p, off, len), Bvec::new(q, q_off, 512)) else {
                        continue;
                    };
                    // The reference: the addresses themselves.
                    let want = p.phys() + u64::from(off) + u64::from(len) == q.phys() + u64::from(q_off);
                    let got = phys_follows(&x, &y);
                    run += 1;
                    agree += usize::from(want == got);
                    merges += usize::from(got);
                }
            }
        }
    }
    c.check(
        agree == run,
        "phys_follows agrees with page_to_phys for every pair of segments",
    );
    c.check(merges > 0, "phys_follows finds the contiguous pairs");
    Ok(())
}

/// Runs every smoke test.
pub(crate) fn run() -> Result<Checks> {
    let mut c = Checks::default();
    pages_and_phys(&mut c)?;
    bvec_pages(&mut c)?;
    iov_copies(&mut c)?;
    bio_build(&mut c)?;
    phys_follows_agrees(&mut c)?;
    Ok(c)
}
