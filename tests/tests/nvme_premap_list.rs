//! The premapped PRP list of a whole buffer (`nvme::premap_list_entries`) and the data pointer
//! of an I/O inside it (`nvme::premap_prps`), decoded by the independent PRP walker
//! (`iovstack_tests::dptr_walk::walk_prps`, written from the NVMe specification): the walk must
//! give exactly the bytes of the I/O, and the per-I/O fallback must be taken exactly when the
//! walker would otherwise read a chain pointer as data.

use iovstack_tests::dptr_walk::{coalesce, walk_prps, BusMemory, PAGE};
use nvme::{
    premap_list_entries, premap_list_pages, premap_prps, PremapPrps, PremappedPages, PrpListLayout,
    TagRange, PREMAP_LIST_DATA_SLOTS,
};
use proptest::prelude::*;

/// Bus address of the per-I/O list page in the model.
const PER_IO_LIST: u64 = 0xF000_0000;

/// A page table of `n` pages: scattered, with runs of bus-contiguous pages.
fn table(n: usize, seed: u64) -> Vec<u64> {
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(n);
    let mut next = 0x1_0000_0000u64;
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if s % 3 == 0 {
            next += (s % 1000 + 1) * PAGE;
        }
        out.push(next);
        next += PAGE;
    }
    out
}

/// List pages at addresses apart from the data.
fn list_dma(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| 0x8000_0000 + i * 0x3000).collect()
}

/// The bus memory holding the premapped list.
fn list_memory(buf: &PremappedPages<'_>, lists: &[u64]) -> BusMemory {
    let mut mem = BusMemory::default();
    for &a in lists {
        mem.pages.insert(a, vec![0; 512]);
    }
    for (page, slot, v) in premap_list_entries(buf, lists).expect("list") {
        mem.pages.get_mut(&lists[page]).expect("page")[slot] = v.to_le();
    }
    mem
}

/// The bytes of `r`, as the per-I/O path would map them.
fn expected(pages: &[u64], fpo: u32, r: TagRange) -> Vec<(u64, u64)> {
    let mut out = vec![];
    let mut pos = u64::from(fpo) + r.offset;
    let end = pos + u64::from(r.len);
    while pos < end {
        let n = (PAGE - pos % PAGE).min(end - pos);
        out.push((pages[(pos / PAGE) as usize] + pos % PAGE, n));
        pos += n;
    }
    coalesce(&out)
}

/// Walks the data pointer `premap_prps` gives for `r`; `Err` when the walker fails. Also
/// returns whether the per-I/O list was used.
fn walk(
    buf: &PremappedPages<'_>,
    lists: &[u64],
    mem: &mut BusMemory,
    r: TagRange,
) -> (Result<Vec<(u64, u64)>, String>, bool) {
    match premap_prps(buf, lists, r).expect("prps") {
        PremapPrps::Direct { prp1, prp2 } => (
            walk_prps(prp1, prp2, u64::from(r.len), mem).map(|v| coalesce(&v)),
            false,
        ),
        PremapPrps::PerIoList { prp1, entries } => {
            // The I/O's own list, chained as a command's list is (`PrpListLayout::new`).
            let layout = PrpListLayout::new(entries.len());
            let dma: Vec<u64> = (0..layout.pages() as u64)
                .map(|i| PER_IO_LIST + i * PAGE)
                .collect();
            for &a in &dma {
                mem.pages.insert(a, vec![0; 512]);
            }
            for (p, slot, v) in layout
                .stores(entries.iter().copied(), &dma)
                .expect("stores")
            {
                mem.pages.get_mut(&dma[p]).expect("page")[slot] = v.to_le();
            }
            let out = walk_prps(prp1, PER_IO_LIST, u64::from(r.len), mem).map(|v| coalesce(&v));
            for a in &dma {
                mem.pages.remove(a);
            }
            (out, true)
        }
    }
}

/// Whether pointing PRP2 into the premapped list would make the walker read the wrong pages.
fn naive_fails(buf: &PremappedPages<'_>, lists: &[u64], mem: &BusMemory, r: TagRange) -> bool {
    let fpo = u64::from(buf_fpo(buf));
    let abs = fpo + r.offset;
    let first = (abs / PAGE) as usize;
    let entry = first + 1;
    let prp2 = lists[entry / PREMAP_LIST_DATA_SLOTS] + (entry % PREMAP_LIST_DATA_SLOTS) as u64 * 8;
    let prp1 = buf_pages(buf)[first] + abs % PAGE;
    walk_prps(prp1, prp2, u64::from(r.len), mem).map(|v| coalesce(&v))
        != Ok(expected(buf_pages(buf), buf_fpo(buf), r))
}

fn buf_pages<'a>(b: &'a PremappedPages<'_>) -> &'a [u64] {
    nvme::DmaPageTable::dma_pages(b)
}

fn buf_fpo(b: &PremappedPages<'_>) -> u32 {
    nvme::DmaPageTable::first_page_offset(b)
}

/// Page counts of I/Os (at most the 8 MiB + 1 page that an 8 MiB transfer can touch).
fn io_pages() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..4,
        3u64..40,
        Just(511),
        Just(512),
        Just(513),
        500u64..514,
        1020u64..1026,
        2040u64..=2049,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every I/O inside a buffer walks to exactly its bytes; the per-I/O list is used exactly
    /// when the premapped list would be walked wrongly.
    #[test]
    fn premapped_list_walks_to_the_io_bytes(
        nr_pages in prop_oneof![1usize..8, 500usize..1600, 2040usize..2600],
        fpo in prop_oneof![Just(0u32), (0u32..1024).prop_map(|x| x * 4)],
        seed in any::<u64>(),
        ios in proptest::collection::vec((any::<u64>(), io_pages(), 0u32..1024, any::<bool>()), 1..24),
    ) {
        let pages = table(nr_pages, seed);
        let buf_len = nr_pages as u64 * PAGE - u64::from(fpo);
        let buf = PremappedPages::new(&pages, fpo, buf_len).unwrap();
        let lists = list_dma(premap_list_pages(nr_pages));
        let mut mem = list_memory(&buf, &lists);
        for (start, npages, tail, end_on_slot0) in ios {
            // Start anywhere (dword aligned); with `end_on_slot0`, choose the length so the
            // last page is a multiple of 511 (the chain boundary) when the buffer allows it.
            let offset = (start % buf_len) & !3;
            let abs = u64::from(fpo) + offset;
            let first = abs / PAGE;
            let mut want = npages;
            if end_on_slot0 {
                let boundary = (first / 511 + 1) * 511;
                want = boundary - first + 1;
            }
            let max = buf_len - offset;
            let len = ((want - 1) * PAGE + u64::from(tail) * 4).saturating_sub(abs % PAGE).max(4)
                .min(max).min(8 << 20);
            let r = TagRange { offset, len: len as u32 };
            let (got, per_io) = walk(&buf, &lists, &mut mem, r);
            prop_assert_eq!(got, Ok(expected(&pages, fpo, r)), "range {:?}", r);
            let nr = (abs % PAGE + len).div_ceil(PAGE);
            if nr > 2 {
                prop_assert_eq!(per_io, naive_fails(&buf, &lists, &mem, r), "range {:?}", r);
            } else {
                prop_assert!(!per_io);
            }
        }
    }
}

/// The boundary cases by hand: an I/O ending on the first entry of the second list page.
#[test]
fn chain_boundary_by_hand() {
    let pages = table(1200, 7);
    let buf = PremappedPages::new(&pages, 0, 1200 * PAGE).unwrap();
    let lists = list_dma(premap_list_pages(1200));
    let mut mem = list_memory(&buf, &lists);
    // Pages 500..=511: last entry at list page 1 slot 0.
    let r = TagRange {
        offset: 500 * PAGE,
        len: (12 * PAGE) as u32,
    };
    assert_eq!(
        walk(&buf, &lists, &mut mem, r),
        (Ok(expected(&pages, 0, r)), true)
    );
    assert!(naive_fails(&buf, &lists, &mem, r));
    // One page more: the chain pointer is followed, the premapped list works.
    let r = TagRange {
        offset: 500 * PAGE,
        len: (13 * PAGE) as u32,
    };
    assert_eq!(
        walk(&buf, &lists, &mut mem, r),
        (Ok(expected(&pages, 0, r)), false)
    );
    // Ending on page 1022 (list page 2, slot 0) from list page 1.
    let r = TagRange {
        offset: 1000 * PAGE + 8,
        len: (22 * PAGE) as u32,
    };
    assert_eq!(
        walk(&buf, &lists, &mut mem, r),
        (Ok(expected(&pages, 0, r)), true)
    );
}
