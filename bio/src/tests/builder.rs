//! `BioBuilder`: add_page / add_hw_page / revert / finish.

use std::vec;
use std::vec::Vec;

use super::TestPage;
use crate::{BioBuilder, BvecArray, Op, QueueLimits, BIO_MAX_VECS};
use bvec::{Bvec, Pfn};

fn storage(n: usize) -> Vec<Bvec<Pfn>> {
    vec![Bvec::new(Pfn(0), 0, 1).unwrap(); n]
}

#[test]
fn add_page_merges_multipage() {
    let mut s = storage(4);
    let mut b = BioBuilder::new(Op::Read, 0, &mut s).unwrap();
    assert_eq!(b.add_page(Pfn(4), 100, 4000), 100); // offset 4000, crosses nothing
    assert_eq!(b.add_page(Pfn(5), 4096, 4), 4096); // continues into the next page
    assert_eq!(b.add_page(Pfn(4), 10, 8196), 10); // same bytes named from the first page
    assert_eq!(b.vcnt(), 1);
    assert_eq!(b.vecs(), [Bvec::new(Pfn(4), 4000, 4206).unwrap()]);
    assert_eq!(b.add_page(Pfn(7), 1, 0), 1);
    assert_eq!(b.vcnt(), 2);
}

#[test]
fn add_page_refuses_without_partial_adds() {
    let mut s = storage(300);
    let mut b = BioBuilder::new(Op::Write, 0, &mut s).unwrap();
    assert_eq!(b.max_vecs(), BIO_MAX_VECS);
    for i in 0..256u64 {
        assert_eq!(b.add_page(Pfn(i * 2), 512, 0), 512);
    }
    assert!(b.is_full(0));
    assert_eq!(b.add_page(Pfn(999), 512, 0), 0);
    // But merging into the last segment still works when full.
    assert_eq!(b.add_page(Pfn(510), 512, 512), 512);
    assert_eq!(b.size(), 257 * 512);
    // Size overflow.
    let mut s = storage(4);
    let mut b = BioBuilder::new(Op::Write, 0, &mut s).unwrap();
    assert_eq!(b.add_page(Pfn(0), u32::MAX - 1, 0), u32::MAX - 1);
    assert_eq!(b.add_page(Pfn(1 << 40), 2, 0), 0);
    assert_eq!(b.add_page(Pfn(1 << 40), 1, 0), 1);
    assert_eq!(b.size(), u32::MAX);
    assert!(b.is_full(1));
}

#[test]
fn physically_contiguous_but_other_handle_is_not_merged() {
    let mut s = vec![Bvec::new(TestPage { id: 0, phys: 0 }, 0, 1).unwrap(); 4];
    let mut b = BioBuilder::new(Op::Read, 0, &mut s).unwrap();
    let a = TestPage {
        id: 1,
        phys: 0x1000,
    };
    let alias = TestPage {
        id: 50,
        phys: 0x2000,
    };
    assert_eq!(b.add_page(a, 4096, 0), 4096);
    assert_eq!(b.add_page(alias, 4096, 0), 4096);
    assert_eq!(b.vcnt(), 2);
}

#[test]
fn add_hw_page_honours_limits() {
    let lim = QueueLimits::nvme(512, 0, 0).unwrap();
    let mut s = storage(8);
    let mut b = BioBuilder::new(Op::Read, 0, &mut s).unwrap();
    assert_eq!(b.add_hw_page(&lim, Pfn(1), 4096, 0, 64), 4096);
    assert_eq!(b.add_hw_page(&lim, Pfn(9), 512, 512, 64), 0); // starts mid-page: gap
    assert_eq!(b.add_hw_page(&lim, Pfn(9), 512, 0, 64), 512);
    assert_eq!(b.add_hw_page(&lim, Pfn(20), 512, 0, 64), 0); // previous ends mid-page
    assert_eq!(b.add_hw_page(&lim, Pfn(9), 3584, 512, 64), 3584); // merge completes the page
    assert_eq!(b.add_hw_page(&lim, Pfn(20), 1 << 20, 0, 64), 0); // cut to 32 KiB, but 8 KiB used
    assert_eq!(b.add_hw_page(&lim, Pfn(20), 4096 * 6, 0, 64), 4096 * 6);
    assert_eq!(b.size(), 32768);
    assert_eq!(b.add_hw_page(&lim, Pfn(40), 512, 0, 64), 0); // max_sectors reached
                                                             // max_segments (3 for an 8 KiB transfer limit); with a virtual boundary only whole pages
                                                             // can follow each other.
    let lim = QueueLimits::nvme(512, 1, 0).unwrap();
    let mut s = storage(8);
    let mut b = BioBuilder::new(Op::Read, 0, &mut s).unwrap();
    assert_eq!(b.add_hw_page(&lim, Pfn(0), 4096, 0, 64), 4096);
    assert_eq!(b.add_hw_page(&lim, Pfn(2), 4096, 0, 64), 4096);
    assert_eq!(b.add_hw_page(&lim, Pfn(4), 4096, 0, 64), 4096);
    assert_eq!(b.add_hw_page(&lim, Pfn(6), 4096, 0, 64), 0);
    assert_eq!(b.vcnt(), 3);
}

#[test]
fn revert_never_leaves_empty_segments() {
    let mut s = storage(4);
    let mut b = BioBuilder::new(Op::Read, 0, &mut s).unwrap();
    b.add_page(Pfn(0), 1000, 0);
    b.add_page(Pfn(5), 300, 0);
    b.add_page(Pfn(9), 200, 0);
    assert!(b.revert(1501).is_err());
    b.revert(250).unwrap();
    assert_eq!(
        b.vecs(),
        [
            Bvec::new(Pfn(0), 0, 1000).unwrap(),
            Bvec::new(Pfn(5), 0, 250).unwrap()
        ]
    );
    b.revert(250).unwrap();
    assert_eq!((b.vcnt(), b.size()), (1, 1000));
    b.revert(1000).unwrap();
    assert_eq!((b.vcnt(), b.size()), (0, 0));
    let bio = b.finish().unwrap();
    assert!(bio.is_empty());
}

#[test]
fn finish_borrows_storage() {
    let mut arr = BvecArray::<Pfn, 4>::new(Bvec::new(Pfn(0), 0, 1).unwrap());
    let mut b = BioBuilder::new(Op::Write, 7, arr.as_mut_slice()).unwrap();
    b.add_page(Pfn(3), 512, 0);
    b.add_page(Pfn(8), 512, 0);
    let bio = b.finish().unwrap();
    assert_eq!((bio.sector(), bio.size(), bio.table().len()), (7, 1024, 2));
    assert!(BioBuilder::new(Op::Flush, 0, &mut storage(1)).is_err());
    let mut empty: [Bvec<Pfn>; 0] = [];
    let mut b = BioBuilder::new(Op::Read, 0, &mut empty).unwrap();
    assert_eq!(b.add_page(Pfn(1), 1, 0), 0);
}
