//! Edge cases of iov-semantics.md §2-§4 and §9, one test each, with exact expected values.

use bvec::{Bvec, Pfn, PAGE_SIZE};
use iov::{
    AnyDir, Dest, Folio, IovError, IovIter, Iovec, IterType, Kvec, Source, Step, MAX_RW_COUNT,
};
use iovstack_tests::mem::{ArenaMem, KERNEL_BASE, USER_BASE};

fn u(o: usize) -> usize {
    USER_BASE + o
}

fn k(o: usize) -> usize {
    KERNEL_BASE + o
}

/// (count, nr_segs, iov_offset).
fn pos<D: iov::Direction>(it: &IovIter<'_, Pfn, D>) -> (usize, usize, usize) {
    (it.count(), it.nr_segs(), it.iov_offset())
}

#[test]
fn zero_length_iovecs_head_middle_tail() {
    let t = [
        Iovec::new(u(0), 0),
        Iovec::new(u(100), 5),
        Iovec::new(u(200), 0),
        Iovec::new(u(300), 0),
        Iovec::new(u(400), 5),
        Iovec::new(u(500), 0),
    ];
    let mut mem = ArenaMem::zeroed(1);
    let mut it = IovIter::<Pfn, Dest>::iovec(&t, 10).unwrap();
    // A zero-length request touches nothing, not even the empty head.
    assert_eq!(it.copy_to_iter(&mut mem, &[]), 0);
    assert_eq!(pos(&it), (10, 6, 0));
    // Ending exactly at a segment end moves past it but not past the empty ones after it.
    assert_eq!(it.copy_to_iter(&mut mem, &[1; 5]), 5);
    assert_eq!(pos(&it), (5, 4, 0));
    assert_eq!(it.single_seg_count(), 0, "current segment is the empty one");
    // advance(0) with bytes left skips empty segments.
    it.advance(0);
    assert_eq!(pos(&it), (5, 2, 0));
    assert_eq!(it.copy_to_iter(&mut mem, &[2; 9]), 5);
    assert_eq!(pos(&it), (0, 1, 0), "the empty tail stays");
    // With nothing left, advance does not move.
    it.advance(0);
    assert_eq!(pos(&it), (0, 1, 0));
    assert_eq!(&mem.bytes()[100..105], &[1; 5]);
    assert_eq!(&mem.bytes()[400..405], &[2; 5]);
}

#[test]
fn advance_skips_trailing_empties_iterate_does_not() {
    let t = [Kvec::new(k(0), 4), Kvec::new(k(8), 0), Kvec::new(k(9), 0)];
    let mut a = IovIter::<Pfn, Dest>::kvec(&t, 4).unwrap();
    let mut b = a.clone();
    a.advance(4);
    assert_eq!(pos(&a), (0, 0, 0));
    let mut mem = ArenaMem::zeroed(1);
    assert_eq!(b.copy_to_iter(&mut mem, &[7; 4]), 4);
    assert_eq!(pos(&b), (0, 2, 0));
}

#[test]
fn advance_landing_on_boundaries() {
    let t = [
        Iovec::new(u(0), 10),
        Iovec::new(u(50), 10),
        Iovec::new(u(90), 10),
    ];
    let mut it = IovIter::<Pfn, Source>::iovec(&t, 30).unwrap();
    it.advance(10);
    assert_eq!(pos(&it), (20, 2, 0));
    it.advance(9);
    assert_eq!(pos(&it), (11, 2, 9));
    it.advance(1);
    assert_eq!(pos(&it), (10, 1, 0));
    it.advance(usize::MAX);
    assert_eq!(pos(&it), (0, 0, 0));
}

#[test]
fn truncated_advance_stops_at_first_segment_with_bytes() {
    let t = [
        Iovec::new(u(0), 10),
        Iovec::new(u(50), 0),
        Iovec::new(u(90), 10),
    ];
    let mut it = IovIter::<Pfn, Source>::iovec(&t, 20).unwrap();
    it.truncate(10);
    it.advance(10);
    assert_eq!(pos(&it), (0, 1, 0));
    it.reexpand(10).unwrap();
    assert_eq!(
        it.reexpand(11),
        Err(IovError::CountExceedsSegments {
            count: 11,
            available: 10
        })
    );
}

#[test]
fn revert_crosses_zero_length_segments() {
    let t = [
        Iovec::new(u(0), 4),
        Iovec::new(u(10), 0),
        Iovec::new(u(20), 0),
        Iovec::new(u(30), 4),
    ];
    let mut it = IovIter::<Pfn, Source>::iovec(&t, 8).unwrap();
    it.advance(6);
    assert_eq!(pos(&it), (2, 1, 2));
    it.revert(2).unwrap();
    assert_eq!(
        pos(&it),
        (4, 1, 0),
        "unroll <= iov_offset stays in the segment"
    );
    it.revert(1).unwrap();
    assert_eq!(pos(&it), (5, 4, 3), "back over both empty segments");
    it.revert(3).unwrap();
    assert_eq!(pos(&it), (8, 4, 0));
    assert_eq!(
        it.revert(1),
        Err(IovError::RevertTooFar {
            requested: 1,
            available: 0
        })
    );
    assert_eq!(it.revert(0), Ok(()));
    assert_eq!(
        it.revert(MAX_RW_COUNT + 1),
        Err(IovError::RevertTooLarge {
            requested: MAX_RW_COUNT + 1
        })
    );
}

#[test]
fn revert_of_ubuf_and_discard() {
    let mut it = IovIter::<Pfn, Dest>::ubuf(u(0), 100);
    it.advance(30);
    it.revert(30).unwrap();
    assert_eq!(pos(&it), (100, 1, 0));
    assert!(it.revert(1).is_err(), "the kernel BUGs here");
    let mut d = IovIter::<Pfn, Dest>::discard(10);
    let mut mem = ArenaMem::zeroed(1);
    assert_eq!(d.copy_to_iter(&mut mem, &[0; 4]), 4);
    d.revert(4).unwrap();
    assert_eq!(d.count(), 10);
    assert!(d.revert(1).is_err());
}

#[test]
fn construction_enforces_count() {
    let t = [Iovec::new(u(0), 3), Iovec::new(u(9), 0)];
    assert_eq!(
        IovIter::<Pfn, Source>::iovec(&t, 4).unwrap_err(),
        IovError::CountExceedsSegments {
            count: 4,
            available: 3
        }
    );
    assert!(IovIter::<Pfn, Source>::iovec(&[], 0).is_ok());
    let f = [Folio::page(Pfn(1))];
    assert_eq!(
        IovIter::<Pfn, Source>::page_list(&f, 4097, 0).unwrap_err(),
        IovError::OffsetOutOfRange {
            offset: 4097,
            limit: 4096
        }
    );
    assert!(IovIter::<Pfn, Source>::page_list(&f, 4096, 0).is_ok());
    assert!(IovIter::<Pfn, Source>::page_list(&f, 96, 4001).is_err());
    assert_eq!(
        Folio::new(Pfn(0), 19).unwrap_err(),
        IovError::FolioOrder { order: 19 }
    );
}

#[test]
fn direction_misuse_at_run_time_returns_zero() {
    let mut mem = ArenaMem::new(1);
    let t = [Kvec::new(k(0), 64)];
    let mut src: IovIter<'_, Pfn, AnyDir> =
        IovIter::<Pfn, Source>::kvec(&t, 64).unwrap().into_any();
    assert_eq!(src.copy_to_iter(&mut mem, &[1; 8]), 0);
    assert_eq!(src.copy_page_to_iter(&mut mem, Pfn(0), 0, 8), 0);
    assert_eq!(src.count(), 64);
    let mut buf = [0u8; 8];
    assert_eq!(src.copy_from_iter(&mut mem, &mut buf), 8);
    let mut dst = IovIter::<Pfn, Dest>::kvec(&t, 64).unwrap().into_any();
    assert_eq!(dst.copy_from_iter(&mut mem, &mut buf), 0);
    assert_eq!(dst.copy_page_from_iter(&mut mem, Pfn(0), 0, 8), 0);
    let mut discard = IovIter::<Pfn, Dest>::discard(5).into_any();
    assert!(!discard.is_source());
    assert_eq!(discard.copy_from_iter(&mut mem, &mut buf), 0);
    // iov_iter_zero has no direction check.
    assert_eq!(src.zero(&mut mem, 8), 8);
    assert_eq!(&mem.bytes()[8..16], &[0; 8]);
}

#[test]
fn short_step_from_user_fault_stops_inside_segment() {
    let t = [Iovec::new(u(0), 100), Iovec::new(u(1000), 100)];
    let mut mem = ArenaMem::zeroed(1);
    mem.add_fault(1040..1041);
    let mut it = IovIter::<Pfn, Dest>::iovec(&t, 200).unwrap();
    assert_eq!(it.copy_to_iter(&mut mem, &[9; 200]), 140);
    assert_eq!(pos(&it), (60, 1, 40));
    // Nothing more can be copied; the position does not move.
    assert_eq!(it.copy_to_iter(&mut mem, &[9; 10]), 0);
    assert_eq!(pos(&it), (60, 1, 40));
    // The _full variant reverts its partial copy.
    let mut it = IovIter::<Pfn, Dest>::iovec(&t, 200).unwrap();
    assert!(!it.copy_to_iter_full(&mut mem, &[9; 200]));
    assert_eq!(pos(&it), (200, 2, 0));
    assert!(it.copy_to_iter_full(&mut mem, &[9; 140]));
}

#[test]
fn short_step_in_bvec_stops_page_exactly() {
    // A multipage bvec over pages 1..=2 from offset 4000; a fault in page 2.
    let t = [
        Bvec::new(Pfn(1), 4000, 5000).unwrap(),
        Bvec::new(Pfn(5), 0, 10).unwrap(),
    ];
    let mut mem = ArenaMem::zeroed(8);
    mem.add_fault(2 * PAGE_SIZE + 100..2 * PAGE_SIZE + 101);
    let mut it = IovIter::<Pfn, Source>::bvec(&t, 5010).unwrap();
    let mut buf = vec![0u8; 5010];
    // 96 bytes in page 1 (4000..4096), then 100 bytes of page 2 before the fault.
    assert_eq!(it.copy_from_iter(&mut mem, &mut buf), 196);
    assert_eq!(pos(&it), (5010 - 196, 2, 196));
}

#[test]
fn get_and_extract_pages_rules() {
    let mut mem = ArenaMem::zeroed(8);
    let mut pages = [Pfn(0); 4];
    let kv = [Kvec::new(k(4096 + 10), 100)];
    let mut it = IovIter::<Pfn, Dest>::kvec(&kv, 100).unwrap();
    assert_eq!(
        it.get_pages(&mut mem, &mut pages, 100),
        Err(IovError::Unsupported)
    );
    assert_eq!(IovError::Unsupported.to_errno(), -14);
    assert_eq!(
        it.extract_pages(&mut mem, &mut [], 100),
        Err(IovError::NoPageRoom)
    );
    assert_eq!(it.extract_pages(&mut mem, &mut pages, 100), Ok((100, 10)));
    assert_eq!(pages[0], Pfn(1));
    let mut d = IovIter::<Pfn, Dest>::discard(10);
    assert_eq!(
        d.extract_pages(&mut mem, &mut pages, 10),
        Err(IovError::Unsupported)
    );
    assert_eq!(
        d.get_pages(&mut mem, &mut [], 10),
        Ok((0, 0)),
        "maxpages 0 checked first"
    );
    // User pages: GUP references for get_pages (FOLL_WRITE for a DEST), pins for extract.
    let iv = [Iovec::new(u(0), 0), Iovec::new(u(3 * 4096 - 5), 20)];
    let mut it = IovIter::<Pfn, Dest>::iovec(&iv, 20).unwrap();
    assert_eq!(it.get_pages(&mut mem, &mut pages[..1], 20), Ok((5, 4091)));
    assert_eq!(pages[0], Pfn(2));
    assert_eq!(it.extract_pages(&mut mem, &mut pages, 20), Ok((15, 0)));
    assert_eq!(mem.gup, vec![(Pfn(2), false), (Pfn(3), true)]);
    // A BVEC get_pages takes a reference per page and stays in one bvec.
    let bv = [
        Bvec::new(Pfn(1), 4090, 10).unwrap(),
        Bvec::new(Pfn(6), 0, 10).unwrap(),
    ];
    let mut it = IovIter::<Pfn, Source>::bvec(&bv, 20).unwrap();
    assert_eq!(it.get_pages(&mut mem, &mut pages, 100), Ok((10, 4090)));
    assert_eq!(&pages[..2], &[Pfn(1), Pfn(2)]);
    assert_eq!(mem.refs, vec![Pfn(1), Pfn(2)]);
    assert_eq!(pos(&it), (10, 1, 0));
    // A fault on the first user page is -EFAULT and moves nothing.
    let iv = [Iovec::new(u(100 * 4096), 8)];
    let mut it = IovIter::<Pfn, Dest>::iovec(&iv, 8).unwrap();
    assert_eq!(
        it.extract_pages(&mut mem, &mut pages, 8),
        Err(IovError::Fault {
            addr: u(100 * 4096)
        })
    );
    assert_eq!(it.count(), 8);
}

#[test]
fn page_list_extract_may_end_unnormalised() {
    let f = [Folio::page(Pfn(1)), Folio::new(Pfn(4), 1).unwrap()];
    let mut mem = ArenaMem::zeroed(8);
    let mut it = IovIter::<Pfn, Source>::page_list(&f, 100, 8000).unwrap();
    let mut pages = [Pfn(0); 1];
    assert_eq!(
        it.extract_pages(&mut mem, &mut pages, 9999),
        Ok((3996, 100))
    );
    // The kernel leaves iov_offset == folio size until the next operation.
    assert_eq!((it.segment_index(), it.iov_offset()), (0, 4096));
    assert_eq!(
        it.single_seg_count(),
        4004,
        "min(folio size, count), offset ignored"
    );
    let mut pages = [Pfn(0); 3];
    assert_eq!(it.extract_pages(&mut mem, &mut pages, 9999), Ok((4004, 0)));
    assert_eq!(pages, [Pfn(4), Pfn(0), Pfn(0)]);
    assert_eq!(
        it.restore(&it.save_state()),
        Err(IovError::RestoreUnsupported)
    );
}

#[test]
fn restore_kvec_and_bad_state() {
    let t = [Kvec::new(k(0), 4), Kvec::new(k(8), 4)];
    let mut it = IovIter::<Pfn, Source>::kvec(&t, 8).unwrap();
    it.advance(5);
    let s = it.save_state();
    it.advance(3);
    it.restore(&s).unwrap();
    assert_eq!(pos(&it), (3, 1, 1));
    let other = [Kvec::new(k(0), 1)];
    let mut small = IovIter::<Pfn, Source>::kvec(&other, 1).unwrap();
    assert_eq!(small.restore(&s), Err(IovError::BadState));
}

/// Bytes the remaining KVEC segments hold after the position.
fn kvec_room<D: iov::Direction>(it: &IovIter<'_, Pfn, D>) -> usize {
    let (rest, off) = it.kvec_table().unwrap();
    rest.iter().map(|s| s.len).sum::<usize>() - off
}

/// Issue 11 item 5: a state saved from a KVEC `[100]` iterator (count 10, after advancing 9) is
/// refused by a KVEC `[20, 3]` iterator (count 20), which keeps its position, and its segments
/// still hold `count` bytes: a copy then moves exactly what it reports.
#[test]
fn restore_refuses_another_iterators_state() {
    let a = [Kvec::new(k(0), 100)];
    let mut ia = IovIter::<Pfn, Dest>::kvec(&a, 10).unwrap();
    ia.advance(9);
    let s = ia.save_state();
    let b = [Kvec::new(k(200), 20), Kvec::new(k(300), 3)];
    let mut ib = IovIter::<Pfn, Dest>::kvec(&b, 20).unwrap();
    assert_eq!(ib.restore(&s), Err(IovError::BadState));
    assert_eq!(pos(&ib), (20, 2, 0));
    assert!(kvec_room(&ib) >= ib.count());
    let mut mem = ArenaMem::zeroed(1);
    assert_eq!(ib.copy_to_iter(&mut mem, &[1]), 1);
    assert_eq!((pos(&ib), ib.consumed()), ((19, 2, 1), 1));
    // The same table through another iterator (a clone) accepts it, and a table with the same
    // contents elsewhere does not.
    let mut ic = ia.clone();
    ic.advance(1);
    ic.restore(&s).unwrap();
    assert_eq!((pos(&ic), ic.consumed()), ((1, 1, 9), 9));
    let copy = a;
    let mut id = IovIter::<Pfn, Dest>::kvec(&copy, 10).unwrap();
    assert_eq!(id.restore(&s), Err(IovError::BadState));
    // Another kind over nothing alike, and a UBUF with another buffer, are refused too.
    let mut u1 = IovIter::<Pfn, Dest>::ubuf(u(0), 50);
    u1.advance(5);
    let su = u1.save_state();
    let mut u2 = IovIter::<Pfn, Dest>::ubuf(u(64), 50);
    assert_eq!(u2.restore(&su), Err(IovError::BadState));
    assert_eq!(ib.restore(&su), Err(IovError::BadState));
    assert_eq!(u1.restore(&s), Err(IovError::BadState));
}

#[test]
fn queries_follow_the_kernel_quirks() {
    let t = [
        Iovec::new(u(4000), 200),
        Iovec::new(u(4200), 0),
        Iovec::new(u(4200), 10),
    ];
    let it = IovIter::<Pfn, Dest>::iovec(&t, 210).unwrap();
    // Page 1 is counted by both segments.
    assert_eq!(it.npages(usize::MAX), 3);
    assert_eq!(it.npages(2), 2);
    assert_eq!(it.alignment(), u(4000) | 200 | u(4200) | 10);
    assert_eq!(it.gap_alignment(), u(4200) | u(4200));
    assert_eq!(it.iter_type(), IterType::Iovec);
    let kv = [Kvec::new(k(0), 1)];
    let it = IovIter::<Pfn, Dest>::kvec(&kv, 1).unwrap();
    assert_eq!(it.gap_alignment(), u32::MAX as usize);
    // Count 0 still reports the current segment's start (do-while).
    let t2 = [Iovec::new(u(3), 8)];
    let mut z = IovIter::<Pfn, Dest>::iovec(&t2, 8).unwrap();
    z.truncate(0);
    assert_eq!(z.alignment(), u(3));
    assert!(!z.is_aligned(3, 0));
    assert_eq!(z.npages(10), 0);
    // Page lists ignore the offset in single_seg_count.
    let f = [Folio::page(Pfn(1)), Folio::page(Pfn(2))];
    let mut p = IovIter::<Pfn, Dest>::page_list(&f, 0, 8192).unwrap();
    p.advance(4000);
    assert_eq!(p.single_seg_count(), 4096);
    assert_eq!(p.alignment(), 4000 | 4192);
}

#[test]
fn bvec_table_is_shared_not_copied() {
    let t = [
        Bvec::new(Pfn(1), 0, 4096).unwrap(),
        Bvec::new(Pfn(2), 0, 4096).unwrap(),
        Bvec::new(Pfn(3), 0, 4096).unwrap(),
    ];
    let mut it = IovIter::<Pfn, Source>::bvec(&t, 12288).unwrap();
    it.advance(5000);
    let (rest, off) = it.bvec_table().unwrap();
    assert!(core::ptr::eq(rest.as_ptr(), &t[1]));
    assert_eq!((rest.len(), off, it.count()), (2, 904, 7288));
    assert_eq!(it.npages(usize::MAX), 2);
}

#[test]
fn copy_page_spans_compound_pages() {
    let mut mem = ArenaMem::new(8);
    let t = [Kvec::new(k(7 * 4096), 3000)];
    let mut it = IovIter::<Pfn, Dest>::kvec(&t, 3000).unwrap();
    // Offset 6000 into the compound page starting at frame 2: frame 3 + 1904.
    assert_eq!(it.copy_page_to_iter(&mut mem, Pfn(2), 6000, 3000), 3000);
    let want: Vec<u8> = ArenaMem::new(8).bytes()[2 * 4096 + 6000..2 * 4096 + 9000].to_vec();
    assert_eq!(&mem.bytes()[7 * 4096..7 * 4096 + 3000], &want[..]);
    assert_eq!(
        it.copy_page_to_iter(&mut mem, Pfn(2), usize::MAX, 2),
        0,
        "overflow"
    );
}

/// A step that counts chunks, used through both the generic and the `dyn` engine.
struct Chunks(Vec<(usize, usize)>);

impl Step<Pfn> for Chunks {
    fn user(&mut self, _a: usize, p: usize, len: usize) -> usize {
        self.0.push((p, len));
        0
    }
    fn kernel(&mut self, _a: usize, p: usize, len: usize) -> usize {
        self.0.push((p, len));
        0
    }
    fn page(&mut self, _pg: Pfn, off: usize, p: usize, len: usize) -> usize {
        assert!(off + len <= PAGE_SIZE, "page chunks never cross a page");
        self.0.push((p, len));
        0
    }
}

#[test]
fn dyn_and_generic_engines_agree() {
    let t = [
        Bvec::new(Pfn(0), 4000, 9000).unwrap(),
        Bvec::new(Pfn(9), 5, 5).unwrap(),
    ];
    let mut a = IovIter::<Pfn, Source>::bvec(&t, 9005).unwrap();
    let mut b = a.clone();
    let mut ca = Chunks(Vec::new());
    let mut cb = Chunks(Vec::new());
    assert_eq!(a.iterate_and_advance(9005, &mut ca), 9005);
    let dynstep: &mut dyn Step<Pfn> = &mut cb;
    assert_eq!(b.iterate_and_advance_dyn(9005, dynstep), 9005);
    assert_eq!(ca.0, cb.0);
    assert_eq!(
        ca.0,
        vec![(0, 96), (96, 4096), (4192, 4096), (8288, 712), (9000, 5)]
    );
}

#[test]
fn ubuf_kind_basics() {
    let mut mem = ArenaMem::zeroed(2);
    let mut it = IovIter::<Pfn, Dest>::ubuf(u(4000), 200);
    assert_eq!(it.npages(9), 2);
    assert_eq!(it.copy_to_iter(&mut mem, &[5; 150]), 150);
    assert_eq!(pos(&it), (50, 1, 150));
    assert_eq!(it.ubuf_base(), Some(u(4000)));
    assert!(it.user_backed());
    assert!(it.is_aligned(0, 1));
    assert_eq!(it.alignment(), u(4150) | 50);
}
