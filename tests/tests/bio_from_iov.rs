//! Building bios from iov iterators: BVEC borrowing, page extraction for the other kinds, logical
//! block trimming, pin accounting, and `vecs_to_alloc`.

use bio::{vecs_to_alloc, Bio, BioBuilder, BioError, Op, QueueLimits};
use bvec::{Bvec, Page, Pfn, PAGE_SIZE};
use iov::{Dest, Folio, IovIter, Iovec, Kvec, Source};
use iovstack_tests::mem::ArenaMem;

fn lim(lbs: u32) -> QueueLimits {
    QueueLimits::nvme(lbs, 0, 0).unwrap()
}

fn storage(n: usize) -> Vec<Bvec<Pfn>> {
    vec![Bvec::new(Pfn(0), 0, 1).unwrap(); n]
}

/// The (page, offset-in-page, len) single-page pieces of a bio, for comparisons.
fn pieces(bio: &Bio<'_, Pfn>) -> Vec<(u64, usize)> {
    bio.pages()
        .map(|b| (b.page().phys() + u64::from(b.offset()), b.len() as usize))
        .collect()
}

/// Checks that the pins still held (GUP pins minus `unpinned`, as a multiset) are exactly one per
/// page per segment of `bio`.
fn assert_pins_balanced(mem: &ArenaMem, unpinned: &[Pfn], bio: &Bio<'_, Pfn>) {
    let mut held: Vec<u64> = mem.gup.iter().filter(|g| g.1).map(|g| g.0 .0).collect();
    for p in unpinned {
        let i = held
            .iter()
            .position(|&h| h == p.0)
            .expect("unpinned a page that was not pinned");
        held.swap_remove(i);
    }
    let mut want: Vec<u64> = bio
        .segments()
        .flat_map(|s| {
            let first = u64::from(s.offset()) / PAGE_SIZE as u64;
            (0..u64::from(s.nr_pages())).map(move |k| s.page().nth((first + k) as usize).0)
        })
        .collect();
    held.sort_unstable();
    want.sort_unstable();
    assert_eq!(held, want);
}

#[test]
fn bvec_iterators_are_borrowed_not_copied() {
    let t = [
        Bvec::new(Pfn(1), 0, 4096).unwrap(),
        Bvec::new(Pfn(9), 100, 1000).unwrap(),
        Bvec::new(Pfn(20), 0, 8192).unwrap(),
    ];
    // The bio outlives the iterator: it borrows the table, not the iterator.
    let bio = {
        let mut it = IovIter::<Pfn, Source>::bvec(&t, 13288).unwrap();
        it.advance(4196);
        assert_eq!(vecs_to_alloc(&it, 257), 0);
        let bio = Bio::from_bvec_iov(Op::Write, 8, &mut it).unwrap();
        assert_eq!(it.count(), 0);
        bio
    };
    assert_eq!((bio.sector(), bio.size()), (8, 9092));
    assert!(std::ptr::eq(bio.table(), &t[1..]));
    let segs: Vec<_> = bio.segments().collect();
    assert_eq!(segs, [Bvec::new(Pfn(9), 200, 900).unwrap(), t[2]]);
    assert_eq!(bio.pages().count(), 3);
}

#[test]
fn bvec_direction_and_kind_are_checked() {
    let t = [Bvec::new(Pfn(1), 0, 4096).unwrap()];
    let mut it = IovIter::<Pfn, Source>::bvec(&t, 4096).unwrap();
    assert_eq!(
        Bio::from_bvec_iov(Op::Read, 0, &mut it).unwrap_err(),
        BioError::WrongOp { op: Op::Read }
    );
    assert_eq!(it.count(), 4096, "unchanged on error");
    let mut d = IovIter::<Pfn, Dest>::bvec(&t, 4096).unwrap();
    assert!(Bio::from_bvec_iov(Op::Read, 0, &mut d).is_ok());
    let mut u = IovIter::<Pfn, Source>::ubuf(0x1000, 10);
    assert_eq!(
        Bio::from_bvec_iov(Op::Write, 0, &mut u).unwrap_err(),
        BioError::UnsupportedIter
    );
    // An exhausted iterator gives an empty bio at the end of the table.
    let mut e = IovIter::<Pfn, Source>::bvec(&t, 4096).unwrap();
    e.advance(4096);
    let bio = Bio::from_bvec_iov(Op::Write, 0, &mut e).unwrap();
    assert!(bio.is_empty());
}

#[test]
fn iovec_pages_are_extracted_merged_and_trimmed() {
    let mut mem = ArenaMem::new(64);
    let base = ArenaMem::user_addr(0);
    // 5000 bytes from 0x100, then 3072 bytes from page 10: 4608 + (392 trimmed).
    let v = [
        Iovec::new(base + 0x100, 5000),
        Iovec::new(base + 10 * PAGE_SIZE, 3072),
    ];
    let mut it = IovIter::<Pfn, Source>::iovec(&v, 8072).unwrap();
    assert_eq!(vecs_to_alloc(&it, 257), 3);
    let mut st = storage(8);
    let mut scratch = [Pfn(0); 16];
    let mut unpinned = vec![];
    let bio = Bio::from_iov(
        Op::Write,
        0,
        &mut it,
        &lim(512),
        &mut st,
        &mut scratch,
        &mut mem,
        |p| unpinned.push(p),
    )
    .unwrap();
    // The 392-byte tail of the first iovec is not a whole block: the bio stops there.
    assert_eq!(bio.size(), 4608);
    assert_eq!(it.count(), 8072 - 4608);
    assert_eq!(
        bio.segments().collect::<Vec<_>>(),
        [Bvec::new(Pfn(0), 0x100, 4608).unwrap()]
    );
    // Round 2 pinned page 1 again for the 392-byte tail, trimmed it to nothing and unpinned it.
    assert_eq!(unpinned, [Pfn(1)]);
    let pinned: Vec<_> = mem.gup.iter().filter(|g| g.1).map(|g| g.0).collect();
    assert_eq!(pinned, [Pfn(0), Pfn(1), Pfn(1)]);
    assert_pins_balanced(&mem, &unpinned, &bio);
    assert_eq!(pieces(&bio), [(0x100, 4096 - 0x100), (4096, 0x100 + 512)]);
}

#[test]
fn trimmed_tail_pages_are_unpinned() {
    let mut mem = ArenaMem::new(64);
    let base = ArenaMem::user_addr(0);
    // 4096 + 100 bytes starting at page 3: the 100 bytes on page 4 are trimmed away.
    let v = [Iovec::new(base + 3 * PAGE_SIZE, 4196)];
    let mut it = IovIter::<Pfn, Source>::iovec(&v, 4196).unwrap();
    let mut st = storage(8);
    let mut scratch = [Pfn(0); 16];
    let mut unpinned = vec![];
    let mut b = BioBuilder::new(Op::Write, 0, &mut st).unwrap();
    let added = b
        .add_iov(&mut it, &lim(512), &mut scratch, &mut mem, |p| {
            unpinned.push(p)
        })
        .unwrap();
    assert_eq!((added, it.count()), (4096, 100));
    // Page 4 is pinned twice (once per round) and unpinned twice.
    assert_eq!(unpinned, [Pfn(4), Pfn(4)]);
    // Nothing more can be added: the rest is below one block.
    assert_eq!(
        b.add_iov(&mut it, &lim(512), &mut scratch, &mut mem, |p| unpinned
            .push(p)),
        Err(BioError::NoProgress)
    );
    assert_eq!(it.count(), 100);
    assert_eq!(unpinned, [Pfn(4), Pfn(4), Pfn(4)]);
    let bio = b.finish().unwrap();
    assert_pins_balanced(&mem, &unpinned, &bio);
}

#[test]
fn same_page_merges_drop_the_duplicate_pin() {
    let mut mem = ArenaMem::new(64);
    let base = ArenaMem::user_addr(0);
    // Two iovecs continuing each other inside page 5, then into page 6.
    let v = [
        Iovec::new(base + 5 * PAGE_SIZE, 2048),
        Iovec::new(base + 5 * PAGE_SIZE + 2048, 4096),
    ];
    let mut it = IovIter::<Pfn, Dest>::iovec(&v, 6144).unwrap();
    let mut st = storage(4);
    let mut scratch = [Pfn(0); 4];
    let mut unpinned = vec![];
    let bio = Bio::from_iov(
        Op::Read,
        0,
        &mut it,
        &lim(512),
        &mut st,
        &mut scratch,
        &mut mem,
        |p| unpinned.push(p),
    )
    .unwrap();
    assert_eq!(
        bio.segments().collect::<Vec<_>>(),
        [Bvec::new(Pfn(5), 0, 6144).unwrap()]
    );
    assert_eq!(unpinned, [Pfn(5)]);
    assert_pins_balanced(&mem, &unpinned, &bio);
}

#[test]
fn kvec_and_page_lists_take_no_pins() {
    let mut mem = ArenaMem::new(64);
    let k = [
        Kvec::new(ArenaMem::kernel_addr(0x800), 0x800),
        Kvec::new(ArenaMem::kernel_addr(0), 0),
        Kvec::new(ArenaMem::kernel_addr(0x1000), 0x1200),
    ];
    let mut it = IovIter::<Pfn, Source>::kvec(&k, 0x1a00).unwrap();
    let mut st = storage(4);
    let mut scratch = [Pfn(0); 1]; // one page per round
    let mut calls = 0;
    let bio = Bio::from_iov(
        Op::Write,
        0,
        &mut it,
        &lim(512),
        &mut st,
        &mut scratch,
        &mut mem,
        |_| calls += 1,
    )
    .unwrap();
    assert_eq!(calls, 0);
    assert_eq!((bio.size(), it.count()), (0x1a00, 0));
    assert_eq!(
        bio.segments().collect::<Vec<_>>(),
        [Bvec::new(Pfn(0), 0x800, 0x1a00).unwrap()]
    );
    let f = [Folio::new(Pfn(8), 1).unwrap(), Folio::page(Pfn(30))];
    let mut it = IovIter::<Pfn, Dest>::page_list(&f, 0x200, 3 * 4096 - 0x200).unwrap();
    let mut st = storage(4);
    let mut scratch = [Pfn(0); 8];
    let bio = Bio::from_iov(
        Op::Read,
        0,
        &mut it,
        &lim(512),
        &mut st,
        &mut scratch,
        &mut mem,
        |_| calls += 1,
    )
    .unwrap();
    assert_eq!(calls, 0);
    assert_eq!(
        bio.segments().collect::<Vec<_>>(),
        [
            Bvec::new(Pfn(8), 0x200, 8192 - 0x200).unwrap(),
            Bvec::new(Pfn(30), 0, 4096).unwrap()
        ]
    );
}

#[test]
fn full_table_stops_and_leaves_the_rest_in_the_iterator() {
    let mut mem = ArenaMem::new(64);
    let base = ArenaMem::user_addr(0);
    let v: Vec<_> = (0..5)
        .map(|i| Iovec::new(base + i * 2 * PAGE_SIZE, 4096))
        .collect();
    let mut it = IovIter::<Pfn, Source>::iovec(&v, 5 * 4096).unwrap();
    let mut st = storage(3);
    let mut scratch = [Pfn(0); 8];
    let bio = Bio::from_iov(
        Op::Write,
        0,
        &mut it,
        &lim(4096),
        &mut st,
        &mut scratch,
        &mut mem,
        |_| {},
    )
    .unwrap();
    assert_eq!(
        (bio.size(), bio.table().len(), it.count()),
        (3 * 4096, 3, 2 * 4096)
    );
}

#[test]
fn bvec_iterators_can_also_be_copied() {
    let mut mem = ArenaMem::new(64);
    let t: Vec<_> = (0..10)
        .map(|i| Bvec::new(Pfn(i * 3), 0, 4096).unwrap())
        .collect();
    let mut it = IovIter::<Pfn, Source>::bvec(&t, 10 * 4096).unwrap();
    let mut st = storage(16);
    let mut scratch = [Pfn(0); 16];
    let mut b = BioBuilder::new(Op::Write, 0, &mut st).unwrap();
    assert_eq!(
        b.add_iov(&mut it, &lim(512), &mut scratch, &mut mem, |_| {}),
        Ok(10 * 4096)
    );
    let bio = b.finish().unwrap();
    assert_eq!(bio.segments().collect::<Vec<_>>(), t);
}

#[test]
fn refusals() {
    let mut mem = ArenaMem::new(4);
    let mut st = storage(4);
    let mut scratch = [Pfn(0); 4];
    let mut d = IovIter::<Pfn, Dest>::discard(4096);
    assert_eq!(
        Bio::from_iov(
            Op::Read,
            0,
            &mut d,
            &lim(512),
            &mut st,
            &mut scratch,
            &mut mem,
            |_| {}
        )
        .unwrap_err(),
        BioError::UnsupportedIter
    );
    let mut st = storage(4);
    let mut u = IovIter::<Pfn, Dest>::ubuf(ArenaMem::user_addr(0), 4096);
    assert_eq!(
        Bio::from_iov(
            Op::Write,
            0,
            &mut u,
            &lim(512),
            &mut st,
            &mut scratch,
            &mut mem,
            |_| {}
        )
        .unwrap_err(),
        BioError::WrongOp { op: Op::Write }
    );
    // A faulting user buffer: the first extraction fails.
    let mut st = storage(4);
    let mut u = IovIter::<Pfn, Dest>::ubuf(ArenaMem::user_addr(100 * PAGE_SIZE), 4096);
    assert!(matches!(
        Bio::from_iov(
            Op::Read,
            0,
            &mut u,
            &lim(512),
            &mut st,
            &mut scratch,
            &mut mem,
            |_| {}
        ),
        Err(BioError::Iov(_))
    ));
    assert_eq!(u.count(), 4096);
    // Less than one logical block.
    let mut st = storage(4);
    let mut u = IovIter::<Pfn, Dest>::ubuf(ArenaMem::user_addr(0), 511);
    assert_eq!(
        Bio::from_iov(
            Op::Read,
            0,
            &mut u,
            &lim(512),
            &mut st,
            &mut scratch,
            &mut mem,
            |_| {}
        )
        .unwrap_err(),
        BioError::NoProgress
    );
    assert_eq!(u.count(), 511);
}
