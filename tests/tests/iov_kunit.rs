//! The geometries of Linux's `lib/kunit_iov_iter.c` (iov-semantics.md §8) run through the iov
//! crate with the same expectations: scatter/gather copies over `kvec_test_ranges` and
//! `bvec_test_ranges`, folio-list copies per range, and the page extraction loops.

use bvec::{Bvec, Pfn, PAGE_SIZE};
use iov::{Dest, Folio, IovIter, Kvec, Source};
use iovstack_tests::mem::{ArenaMem, KERNEL_BASE};

/// 1 MiB buffer, as in the kunit test.
const NPAGES: usize = 256;
const BUFSIZE: usize = NPAGES * PAGE_SIZE;

/// `kvec_test_ranges` (two of them empty).
const KVEC_RANGES: [(usize, usize); 8] = [
    (0x2, 0x2),
    (0x27, 0x3000),
    (0x5193, 0x18794),
    (0x20000, 0x20000),
    (0x20000, 0x24000),
    (0x24000, 0x27001),
    (0x29000, 0xffffb),
    (0xffffd, 0xffffe),
];

/// `bvec_test_ranges` as (page, from, to). The first is the kunit test's zero-length bvec, which
/// a `Bvec` cannot express (the type forbids length 0); the loader skips it, which is what the
/// kernel's iteration does with it anyway.
const BVEC_RANGES: [(u64, u32, u32); 8] = [
    (0, 0x2, 0x2),
    (1, 0x27, 0x893),
    (2, 0x193, 0x794),
    (3, 0, 0x1000),
    (4, 0, 0x1000),
    (5, 0, 0x1000),
    (6, 0, 0xffb),
    (6, 0xffd, 0xffe),
];

fn pattern(x: usize) -> u8 {
    (x & 0xff) as u8
}

fn kvecs() -> (Vec<Kvec>, usize) {
    let v: Vec<Kvec> = KVEC_RANGES
        .iter()
        .map(|&(from, to)| Kvec::new(KERNEL_BASE + from, to - from))
        .collect();
    let size = v.iter().map(|k| k.len).sum();
    (v, size)
}

/// `iov_kunit_load_bvec`: with `merge`, a range starting at offset 0 of the page right after the
/// previous bvec's end joins it (the multipage case of consecutive struct pages).
fn bvecs(merge: bool) -> (Vec<Bvec<Pfn>>, usize) {
    let mut v: Vec<Bvec<Pfn>> = Vec::new();
    for &(page, from, to) in &BVEC_RANGES {
        if from == to {
            continue;
        }
        if let Some(last) = v.last_mut() {
            let next_page = last.page().0 + u64::from(last.end()) / PAGE_SIZE as u64;
            if merge && from == 0 && page == next_page {
                *last = Bvec::new(last.page(), last.offset(), last.len() + (to - from)).unwrap();
                continue;
            }
        }
        v.push(Bvec::new(Pfn(page), from, to - from).unwrap());
    }
    let size = v.iter().map(|b| b.len() as usize).sum();
    (v, size)
}

/// The expected buffer after scattering `pattern` into `ranges` (arena offsets).
fn scattered(ranges: &[(usize, usize)]) -> Vec<u8> {
    let mut want = vec![0u8; BUFSIZE];
    let mut i = 0;
    for &(from, to) in ranges {
        for b in &mut want[from..to] {
            *b = pattern(i);
            i += 1;
        }
    }
    want
}

fn bvec_ranges_flat() -> Vec<(usize, usize)> {
    BVEC_RANGES
        .iter()
        .map(|&(p, f, t)| {
            (
                p as usize * PAGE_SIZE + f as usize,
                p as usize * PAGE_SIZE + t as usize,
            )
        })
        .collect()
}

#[test]
fn kvec_ranges_total() {
    assert_eq!(kvecs().1, 0xF45D7);
    assert_eq!(bvecs(false).1, 0x4E69);
    assert_eq!(bvecs(true).1, 0x4E69);
    // The merge produced one multipage bvec over pages 3..=6.
    assert_eq!(bvecs(true).0.len(), 4);
    assert_eq!(bvecs(true).0[2].len(), 0x3ffb);
}

#[test]
fn copy_to_kvec() {
    let (kv, size) = kvecs();
    let mut mem = ArenaMem::zeroed(NPAGES);
    let scratch: Vec<u8> = (0..size).map(pattern).collect();
    let mut it = IovIter::<Pfn, Dest>::kvec(&kv, size).unwrap();
    assert_eq!(it.copy_to_iter(&mut mem, &scratch), size);
    assert_eq!((it.count(), it.nr_segs()), (0, 0));
    assert!(mem.bytes() == &scattered(&KVEC_RANGES)[..]);
}

#[test]
fn copy_from_kvec() {
    let (kv, size) = kvecs();
    let mut mem = ArenaMem::zeroed(NPAGES);
    for (o, b) in mem.bytes_mut().iter_mut().enumerate() {
        *b = pattern(o);
    }
    let mut scratch = vec![0u8; size];
    let mut it = IovIter::<Pfn, Source>::kvec(&kv, size).unwrap();
    assert_eq!(it.copy_from_iter(&mut mem, &mut scratch), size);
    assert_eq!((it.count(), it.nr_segs()), (0, 0));
    let want: Vec<u8> = KVEC_RANGES
        .iter()
        .flat_map(|&(f, t)| (f..t).map(pattern))
        .collect();
    assert!(scratch == want);
}

#[test]
fn copy_to_bvec() {
    for merge in [false, true] {
        let (bv, size) = bvecs(merge);
        let mut mem = ArenaMem::zeroed(NPAGES);
        let scratch: Vec<u8> = (0..size).map(pattern).collect();
        let mut it = IovIter::<Pfn, Dest>::bvec(&bv, size).unwrap();
        assert_eq!(it.copy_to_iter(&mut mem, &scratch), size);
        assert_eq!((it.count(), it.nr_segs()), (0, 0));
        assert!(
            mem.bytes() == &scattered(&bvec_ranges_flat())[..],
            "merge {merge}"
        );
    }
}

#[test]
fn copy_from_bvec() {
    for merge in [false, true] {
        let (bv, size) = bvecs(merge);
        let mut mem = ArenaMem::zeroed(NPAGES);
        for (o, b) in mem.bytes_mut().iter_mut().enumerate() {
            *b = pattern(o);
        }
        let mut scratch = vec![0u8; size];
        let mut it = IovIter::<Pfn, Source>::bvec(&bv, size).unwrap();
        assert_eq!(it.copy_from_iter(&mut mem, &mut scratch), size);
        assert_eq!((it.count(), it.nr_segs()), (0, 0));
        let want: Vec<u8> = bvec_ranges_flat()
            .iter()
            .flat_map(|&(f, t)| (f..t).map(pattern))
            .collect();
        assert!(scratch == want, "merge {merge}");
    }
}

fn folios() -> Vec<Folio<Pfn>> {
    (0..NPAGES as u64).map(|p| Folio::page(Pfn(p))).collect()
}

#[test]
fn copy_to_folioq() {
    let fq = folios();
    let mut mem = ArenaMem::zeroed(NPAGES);
    let scratch: Vec<u8> = (0..BUFSIZE).map(pattern).collect();
    let mut i = 0;
    for &(from, to) in &KVEC_RANGES {
        let mut it = IovIter::<Pfn, Dest>::page_list(&fq, 0, to).unwrap();
        it.advance(from);
        let size = to - from;
        assert_eq!(it.copy_to_iter(&mut mem, &scratch[i..i + size]), size);
        assert_eq!(it.count(), 0);
        assert_eq!(it.iov_offset(), to % PAGE_SIZE);
        i += size;
    }
    assert!(mem.bytes() == &scattered(&KVEC_RANGES)[..]);
}

#[test]
fn copy_from_folioq() {
    let fq = folios();
    let mut mem = ArenaMem::zeroed(NPAGES);
    for (o, b) in mem.bytes_mut().iter_mut().enumerate() {
        *b = pattern(o);
    }
    for &(from, to) in &KVEC_RANGES {
        let mut it = IovIter::<Pfn, Source>::page_list(&fq, 0, to).unwrap();
        it.advance(from);
        let mut scratch = vec![0u8; to - from];
        assert_eq!(it.copy_from_iter(&mut mem, &mut scratch), to - from);
        assert_eq!((it.count(), it.iov_offset()), (0, to % PAGE_SIZE));
        assert!(scratch
            .iter()
            .enumerate()
            .all(|(k, &b)| b == pattern(from + k)));
    }
}

/// The kunit extraction loop: 8-entry page list, 100 KiB per call, checks each page against the
/// range walk `ranges` (arena offsets), offset0 on the first page only.
fn extract_loop<D: iov::Direction>(
    it: &mut IovIter<'_, Pfn, D>,
    mem: &mut ArenaMem,
    ranges: &[(usize, usize)],
) {
    let mut size = it.count();
    let mut r = 0;
    let mut from = ranges[0].0;
    loop {
        let mut pages = [Pfn(0xaa55_aa55_aa55_aa55); 8];
        let (len, mut offset0) = it.extract_pages(mem, &mut pages, 100 * 1024).unwrap();
        assert!(offset0 < PAGE_SIZE);
        assert!(len <= size);
        assert_eq!(it.count(), size - len);
        size -= len;
        if len == 0 {
            break;
        }
        let mut left = len;
        for page in pages {
            let part = left.min(PAGE_SIZE - offset0);
            while from == ranges[r].1 {
                r += 1;
                from = ranges[r].0;
            }
            assert_eq!(page, Pfn((from / PAGE_SIZE) as u64));
            assert_eq!(offset0, from % PAGE_SIZE);
            from += part;
            left -= part;
            if left == 0 {
                break;
            }
            offset0 = 0;
        }
        if it.count() == 0 {
            break;
        }
    }
    assert_eq!((size, it.count()), (0, 0));
    assert!(
        mem.gup.is_empty() && mem.refs.is_empty(),
        "extraction takes no references"
    );
}

#[test]
fn extract_pages_kvec() {
    let (kv, size) = kvecs();
    let mut mem = ArenaMem::zeroed(NPAGES);
    let mut it = IovIter::<Pfn, Dest>::kvec(&kv, size).unwrap();
    extract_loop(&mut it, &mut mem, &KVEC_RANGES);
}

#[test]
fn extract_pages_bvec() {
    for merge in [false, true] {
        let (bv, size) = bvecs(merge);
        let mut mem = ArenaMem::zeroed(NPAGES);
        let mut it = IovIter::<Pfn, Dest>::bvec(&bv, size).unwrap();
        extract_loop(&mut it, &mut mem, &bvec_ranges_flat());
    }
}

#[test]
fn extract_pages_folioq() {
    let fq = folios();
    let mut mem = ArenaMem::zeroed(NPAGES);
    for &(from, to) in &KVEC_RANGES {
        let mut it = IovIter::<Pfn, Source>::page_list(&fq, 0, to).unwrap();
        it.advance(from);
        if from == to {
            continue;
        }
        extract_loop(&mut it, &mut mem, &[(from, to)]);
    }
}
