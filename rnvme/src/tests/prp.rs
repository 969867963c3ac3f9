//! `plan_prps`, `build_prps` and `PrpLists`: the §7.4 cases.

use std::vec;
use std::vec::Vec;

use crate::{build_prps, plan_prps, DmaSegment, DptrError, PrpListPage, PrpLists, PrpPool, Prps};

const LIST_DMA: [u64; 6] = [
    0xA000_0000,
    0xB000_0000,
    0xC000_0000,
    0xD000_0000,
    0xE000_0000,
    0xF000_0000,
];

fn seg(addr: u64, len: u32) -> DmaSegment {
    DmaSegment::new(addr, len)
}

/// Builds into six zeroed list pages and returns the result and the pages.
fn build(segs: &[DmaSegment]) -> (Result<Prps, DptrError>, Vec<PrpListPage>) {
    let mut pages = vec![[0u64; 512]; 6];
    let r = {
        let mut lists = PrpLists::new(&mut pages, &LIST_DMA).unwrap();
        build_prps(segs, &mut lists)
    };
    (r, pages)
}

/// Entries after PRP1, following PRP2 and the chain (local walker for unit tests).
fn entries(p: &Prps, pages: &[PrpListPage]) -> Vec<u64> {
    if p.plan.entries <= 1 {
        return vec![];
    }
    if p.plan.list_pages == 0 {
        return vec![p.prp2];
    }
    let mut out = vec![];
    let mut left = p.plan.list_entries;
    let mut page = LIST_DMA.iter().position(|&d| d == p.prp2).unwrap();
    loop {
        for slot in 0..512 {
            if left == 0 {
                return out;
            }
            let v = u64::from_le(pages[page][slot]);
            if slot == 511 && left > 1 {
                page = LIST_DMA.iter().position(|&d| d == v).unwrap();
                break;
            }
            out.push(v);
            left -= 1;
        }
    }
}

#[test]
fn one_page_and_two_pages() {
    let (p, _) = build(&[seg(0x10_0000, 4096)]);
    let p = p.unwrap();
    assert_eq!(
        (p.prp1, p.prp2, p.plan.entries, p.plan.pool),
        (0x10_0000, 0, 1, PrpPool::None)
    );
    let (p, _) = build(&[seg(0x10_0000, 8192)]);
    let p = p.unwrap();
    assert_eq!(
        (p.prp1, p.prp2, p.plan.list_pages),
        (0x10_0000, 0x10_1000, 0)
    );
    // Exactly two pages in two segments.
    let (p, _) = build(&[seg(0x10_0000, 4096), seg(0x30_0000, 4096)]);
    assert_eq!(p.unwrap().prp2, 0x30_0000);
    // A 4-byte transfer.
    let (p, _) = build(&[seg(0x10_0ffc, 4)]);
    assert_eq!(p.unwrap().prp2, 0);
}

#[test]
fn first_page_offset() {
    // Offset 0x200: 4096 - 0x200 bytes fit in PRP1's page.
    let (p, _) = build(&[seg(0x10_0200, 4096 - 0x200)]);
    assert_eq!(p.unwrap().plan.entries, 1);
    let (p, _) = build(&[seg(0x10_0200, 4096)]);
    let p = p.unwrap();
    assert_eq!((p.prp1, p.prp2, p.plan.entries), (0x10_0200, 0x10_1000, 2));
    let (p, _) = build(&[seg(0x10_0200, 8192 - 0x200)]);
    assert_eq!(p.unwrap().plan.entries, 2);
    // One byte more needs a list (the nvme_setup_prp_simple bound: offset + len <= 8192).
    let (p, pages) = build(&[seg(0x10_0200, 8192 - 0x200 + 1)]);
    let p = p.unwrap();
    assert_eq!(
        (p.prp2, p.plan.list_entries, p.plan.pool),
        (LIST_DMA[0], 2, PrpPool::Small)
    );
    assert_eq!(entries(&p, &pages), [0x10_1000, 0x10_2000]);
}

#[test]
fn list_of_512_entries_does_not_chain() {
    // 513 pages: PRP1 + 512 list entries fill one list page exactly.
    let (p, pages) = build(&[seg(0, 513 * 4096)]);
    let p = p.unwrap();
    assert_eq!(
        (p.plan.list_entries, p.plan.list_pages, p.plan.pool),
        (512, 1, PrpPool::Page)
    );
    assert_eq!(u64::from_le(pages[0][511]), 513 * 4096 - 4096);
    assert_eq!(pages[1][0], 0, "second page untouched");
    assert_eq!(
        entries(&p, &pages),
        (1..513).map(|i| i * 4096).collect::<Vec<u64>>()
    );
}

#[test]
fn list_of_513_entries_chains_through_last_slot() {
    let (p, pages) = build(&[seg(0, 514 * 4096)]);
    let p = p.unwrap();
    assert_eq!((p.plan.list_entries, p.plan.list_pages), (513, 2));
    assert_eq!(u64::from_le(pages[0][510]), 511 * 4096);
    assert_eq!(u64::from_le(pages[0][511]), LIST_DMA[1]);
    assert_eq!(u64::from_le(pages[1][0]), 512 * 4096);
    assert_eq!(u64::from_le(pages[1][1]), 513 * 4096);
    assert_eq!(
        entries(&p, &pages),
        (1..514).map(|i| i * 4096).collect::<Vec<u64>>()
    );
}

#[test]
fn list_of_1024_entries_uses_three_pages() {
    let (p, pages) = build(&[seg(0, 1025 * 4096)]);
    let p = p.unwrap();
    assert_eq!((p.plan.list_entries, p.plan.list_pages), (1024, 3));
    assert_eq!(u64::from_le(pages[1][511]), LIST_DMA[2]);
    assert_eq!(entries(&p, &pages).len(), 1024);
    // 1023 entries fit in two pages (511 + 512).
    let (p, _) = build(&[seg(0, 1024 * 4096)]);
    assert_eq!(p.unwrap().plan.list_pages, 2);
}

#[test]
fn eight_mib_with_offset_needs_five_pages() {
    // nvme_pci_npages_prp(): 8 MiB + 4 KiB of entries need 5 list pages.
    let segs = [
        seg(0x1_0000_0200, 4096 - 0x200),
        seg(0x2_0000_0000, 8 << 20),
        seg(0x3_0000_0000, 0x200),
    ];
    let plan = plan_prps(&segs).unwrap();
    assert_eq!(
        (plan.entries, plan.list_entries, plan.list_pages),
        (2050, 2049, 5)
    );
    let (p, pages) = build(&segs);
    let p = p.unwrap();
    let e = entries(&p, &pages);
    assert_eq!(e.len(), 2049);
    assert_eq!(e[0], 0x2_0000_0000);
    assert_eq!(e[2047], 0x2_0000_0000 + 2047 * 4096);
    assert_eq!(e[2048], 0x3_0000_0000);
    // Four pages are not enough.
    let mut four = vec![[0u64; 512]; 4];
    let mut lists = PrpLists::new(&mut four, &LIST_DMA[..4]).unwrap();
    assert_eq!(
        build_prps(&segs, &mut lists),
        Err(DptrError::ListTooSmall {
            needed: 5,
            available: 4
        })
    );
    assert!(
        four.iter().all(|p| p.iter().all(|&e| e == 0)),
        "untouched on error"
    );
}

#[test]
fn pool_choice() {
    assert_eq!(
        plan_prps(&[seg(0, 33 * 4096)]).unwrap().pool,
        PrpPool::Small
    ); // 32 list entries
    assert_eq!(plan_prps(&[seg(0, 34 * 4096)]).unwrap().pool, PrpPool::Page);
    assert_eq!(plan_prps(&[seg(0, 2 * 4096)]).unwrap().pool, PrpPool::None);
}

#[test]
fn rule_violations_are_errors() {
    assert_eq!(plan_prps(&[]), Err(DptrError::NoSegments));
    assert_eq!(
        plan_prps(&[seg(0, 0)]),
        Err(DptrError::ZeroLength { index: 0 })
    );
    assert_eq!(
        plan_prps(&[seg(2, 10)]),
        Err(DptrError::FirstNotDwordAligned { addr: 2 })
    );
    assert_eq!(
        plan_prps(&[seg(0, 4096), seg(0x5008, 10)]),
        Err(DptrError::StartNotPageAligned {
            index: 1,
            addr: 0x5008
        })
    );
    assert_eq!(
        plan_prps(&[seg(0, 4000), seg(0x5000, 10)]),
        Err(DptrError::EndNotPageAligned {
            index: 0,
            end: 4000
        })
    );
    assert_eq!(
        plan_prps(&[seg(0, 4096), seg(0x5000, 10), seg(0x9000, 10)]),
        Err(DptrError::EndNotPageAligned {
            index: 1,
            end: 0x500a
        })
    );
    assert_eq!(
        plan_prps(&[seg(u64::MAX - 3, 8)]),
        Err(DptrError::AddressOverflow { index: 0 })
    );
    assert_eq!(
        plan_prps(&[seg(4, 4092), seg(0x8000, 0)]),
        Err(DptrError::ZeroLength { index: 1 })
    );
    // A list is needed but none was given.
    let mut none = PrpLists::new(&mut [], &[]).unwrap();
    assert_eq!(
        build_prps(&[seg(0, 3 * 4096)], &mut none),
        Err(DptrError::ListTooSmall {
            needed: 1,
            available: 0
        })
    );
}

#[test]
fn list_pages_are_validated() {
    let mut pages = vec![[0u64; 512]; 2];
    assert_eq!(
        PrpLists::new(&mut pages, &[0x1000, 0x2800]).unwrap_err(),
        DptrError::ListMisaligned {
            index: 1,
            addr: 0x2800
        }
    );
    assert_eq!(
        PrpLists::new(&mut pages, &[]).unwrap_err(),
        DptrError::ListDmaCount { pages: 2, addrs: 0 }
    );
    // Extra addresses are ignored.
    assert_eq!(
        PrpLists::new(&mut pages, &[0x1000, 0x2000, 0x3001])
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn dptr_bytes_are_little_endian() {
    let (p, _) = build(&[seg(0x0102_0304_0506_0708, 4096)]);
    let mut p = p.unwrap();
    p.prp2 = 0x1112_1314_1516_1718;
    let b = p.dptr_bytes();
    assert_eq!(b[..8], [8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(b[8..], [0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11]);
}

#[test]
fn many_small_segments() {
    // 128 segments of one page each (max_segments under NVMe limits), first with an offset.
    let mut segs = vec![seg(0x7_0000_0100, 4096 - 0x100)];
    segs.extend((1..128u64).map(|i| seg(0x1000_0000 + i * 0x10_000, 4096)));
    let (p, pages) = build(&segs);
    let p = p.unwrap();
    assert_eq!((p.prp1, p.plan.list_entries), (0x7_0000_0100, 127));
    let e = entries(&p, &pages);
    assert_eq!(
        e,
        (1..128u64)
            .map(|i| 0x1000_0000 + i * 0x10_000)
            .collect::<Vec<_>>()
    );
}

#[test]
fn top_of_address_space() {
    // The last page: the next page address would overflow.
    let (p, _) = build(&[seg(u64::MAX - 4095, 100)]);
    assert_eq!(p.unwrap().plan.entries, 1);
    let (p, pages) = build(&[seg(u64::MAX - 8191, 8192 - 4)]);
    let p = p.unwrap();
    assert_eq!((p.prp2, p.plan.entries), (u64::MAX - 4095, 2));
    assert!(pages[0].iter().all(|&e| e == 0));
    assert_eq!(
        plan_prps(&[seg(u64::MAX - 4095, 4096)]),
        Err(DptrError::AddressOverflow { index: 0 })
    );
}
