//! Chained PRP lists (`nvme::PrpListLayout`, `nvme::build_prps`, `nvme::build_prps_from_tag`)
//! for transfers up to the driver's 8 MiB, decoded by the independent PRP walker
//! (`iovstack_tests::dptr_walk::walk_prps`, written from the NVMe specification): the walk must
//! give exactly the bytes the list was built from, with as few list pages as the controller's
//! rule allows (the last slot of a page is a pointer only when more than one entry remains).

use iovstack_tests::dptr_walk::{coalesce, walk_prps, BusMemory, PAGE};
use nvme::{
    build_prps, build_prps_from_tag, tag_segments, DmaSegment, PremappedPages, PrpListLayout,
    PrpListPage, PrpLists, TagRange, NVME_MAX_HW_SECTORS, PRP_MAX_LIST_PAGES,
};
use proptest::prelude::*;

/// Bus addresses of the list pages, apart from the data.
fn list_dma(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| 0x8000_0000 + i * 0x3000).collect()
}

/// `n` scattered, page-aligned data addresses with some bus-contiguous runs.
fn data_pages(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed | 1;
    let mut next = 0x1_0000_0000u64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if s % 3 == 0 {
                next += (s % 1000 + 1) * PAGE;
            }
            let a = next;
            next += PAGE;
            a
        })
        .collect()
}

/// List entry counts, weighted towards the chain boundaries (multiples of 511, give or take).
fn list_entries() -> impl Strategy<Value = usize> {
    prop_oneof![
        2usize..40,
        (1usize..=4, 0usize..5).prop_map(|(k, d)| (k * 511 + d).saturating_sub(2).max(2)),
        2usize..=2048,
    ]
}

/// The list pages a build wrote, as the walker's bus memory.
fn memory(pages: &[PrpListPage], dma: &[u64]) -> BusMemory {
    let mut mem = BusMemory::default();
    for (p, &a) in pages.iter().zip(dma) {
        mem.pages.insert(a, p.to_vec());
    }
    mem
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A command's own list, written as the layout says, walks to its entries; the layout's
    /// three views (slot of each entry, runs, stores) agree; the page count is the fewest the
    /// walker's rule allows.
    #[test]
    fn command_list_walks_to_its_entries(
        n in list_entries(),
        first_off in (0u64..1024).prop_map(|x| x * 4),
        tail in 1u64..=PAGE,
        seed in any::<u64>(),
    ) {
        let layout = PrpListLayout::new(n);
        let dma = list_dma(layout.pages());
        let data = data_pages(n + 1, seed);
        let mut mem = BusMemory::default();
        for &a in &dma {
            mem.pages.insert(a, vec![0xdead_beef; 512]);
        }
        let mut last_page = 0;
        for (page, slot, v) in layout.stores(data[1..].iter().copied(), &dma).unwrap() {
            mem.pages.get_mut(&dma[page]).unwrap()[slot] = v.to_le();
            last_page = last_page.max(page);
        }
        prop_assert_eq!(last_page + 1, layout.pages());
        // Fewest pages: 512 entries in the last page, 511 in every other.
        prop_assert_eq!(layout.pages(), if n <= 512 { 1 } else { 1 + (n - 512).div_ceil(511) });
        let prp1 = data[0] + first_off;
        let len = (PAGE - first_off) + (n as u64 - 1) * PAGE + tail;
        let mut want = vec![(prp1, PAGE - first_off)];
        want.extend(data[1..n].iter().map(|&a| (a, PAGE)));
        want.push((data[n], tail));
        let got = walk_prps(prp1, dma[0], len, &mem).map(|v| coalesce(&v));
        prop_assert_eq!(got, Ok(coalesce(&want)));
        // The views agree.
        let mut from_runs = vec![None; n];
        for run in layout.runs() {
            for (k, j) in run.entries.clone().enumerate() {
                from_runs[j] = Some((run.page, run.first_slot + k));
            }
            prop_assert_eq!(run.chains, run.page + 1 < layout.pages());
        }
        for (j, r) in from_runs.iter().enumerate() {
            prop_assert_eq!(*r, layout.slot(j), "entry {}", j);
        }
        prop_assert_eq!(layout.slot(n), None);
    }

    /// `build_prps` on random segments of up to 8 MiB + a page (the driver's transfer limit
    /// from an unaligned start) walks to exactly the segments' bytes within
    /// `PRP_MAX_LIST_PAGES` list pages, and a premapped buffer holding the same bytes gives the
    /// same PRP1, the same number of list pages and the same list contents
    /// (`build_prps_from_tag`).
    #[test]
    fn segments_up_to_8mib_walk_to_their_bytes(
        first_off in (0u32..1024).prop_map(|x| x * 4),
        seg_pages in proptest::collection::vec(1u32..200, 1..40),
        tail in 1u32..=4096,
        seed in any::<u64>(),
    ) {
        let max = NVME_MAX_HW_SECTORS * 512;
        let pages = data_pages(2100, seed);
        // Segments over the pages: the first starts at `first_off`, each ends on a page but the
        // last, which ends `tail` bytes into its page.
        let mut segs = vec![];
        let mut idx = 0usize;
        let mut total = 0u32;
        for (i, &np) in seg_pages.iter().enumerate() {
            let off = if i == 0 { first_off } else { 0 };
            let mut len = np * 4096 - off;
            if i + 1 == seg_pages.len() {
                // Ends `tail` bytes into its last page; past its own start when that is the
                // first page too (a one-page first segment starts at `off`).
                let end_in_last = if np == 1 { tail.max(off + 4) } else { tail };
                len = (np - 1) * 4096 + end_in_last - off;
            }
            let len = len.min(max - total);
            if len == 0 {
                break;
            }
            // A segment is bus-contiguous: use consecutive addresses from its first page.
            segs.push(DmaSegment::new(pages[idx] + u64::from(off), len));
            total += len;
            idx += (u64::from(off) + u64::from(len)).div_ceil(PAGE) as usize;
            if total == max {
                break;
            }
        }
        // The cut at `max` may end a middle segment off a page: then it is the last one.
        let mut lists: Vec<PrpListPage> = vec![[0u64; 512]; PRP_MAX_LIST_PAGES];
        let dma = list_dma(PRP_MAX_LIST_PAGES);
        let p = build_prps(&segs, &mut PrpLists::new(&mut lists, &dma).unwrap()).unwrap();
        prop_assert!(p.plan.list_pages <= PRP_MAX_LIST_PAGES);
        let mem = memory(&lists, &dma);
        let want: Vec<(u64, u64)> = segs.iter().map(|s| (s.addr, u64::from(s.len))).collect();
        let got = walk_prps(p.prp1, p.prp2, u64::from(total), &mem).map(|v| coalesce(&v));
        prop_assert_eq!(got, Ok(coalesce(&want)));

        // The same bytes as a premapped buffer: one table entry per controller page.
        let mut table = vec![];
        for s in &segs {
            let base = s.addr & !(PAGE - 1);
            let n = ((s.addr - base) + u64::from(s.len)).div_ceil(PAGE);
            table.extend((0..n).map(|k| base + k * PAGE));
        }
        let buf = PremappedPages::new(&table, first_off, u64::from(total)).unwrap();
        let range = TagRange { offset: 0, len: total };
        prop_assert_eq!(tag_segments(&buf, range).map(|s| s.len).sum::<u32>(), total);
        let mut lists2: Vec<PrpListPage> = vec![[0u64; 512]; PRP_MAX_LIST_PAGES];
        let q = build_prps_from_tag(&buf, range, &mut PrpLists::new(&mut lists2, &dma).unwrap())
            .unwrap();
        prop_assert_eq!((q.prp1, q.prp2, q.plan), (p.prp1, p.prp2, p.plan));
        prop_assert_eq!(lists2, lists);
    }
}

/// The boundaries by hand: 511, 512, 513 and 1023/1024 list entries, and the largest list.
#[test]
fn chain_boundaries_by_hand() {
    for (n, pages, moved) in [
        (511, 1, false),
        (512, 1, true),
        (513, 2, false),
        (1022, 2, false),
        (1023, 2, true),
        (1024, 3, false),
        (2048, 5, false),
    ] {
        let l = PrpListLayout::new(n);
        assert_eq!(
            (l.pages(), l.last_in_chain_slot()),
            (pages, moved),
            "{n} entries"
        );
    }
    assert_eq!(PRP_MAX_LIST_PAGES, 5);
    // A window ending on slot 0 of a later page would need the chain slot before it.
    assert!(PrpListLayout::window(500, 12).last_in_chain_slot());
    assert!(!PrpListLayout::window(500, 13).last_in_chain_slot());
    assert!(!PrpListLayout::window(511, 1).last_in_chain_slot());
}
