//! Premapped buffers: `build_prps_from_tag`, `build_sgl_from_tag`, `tag_segments`.

use std::vec;
use std::vec::Vec;

use crate::{
    build_prps, build_prps_from_tag, build_sgl, build_sgl_from_tag, tag_segments, DmaPageTable,
    DmaSegment, DptrError, PremappedPages, PrpLists, SglDescriptor, TagRange,
};

const LIST_DMA: [u64; 3] = [0xA000_0000, 0xB000_0000, 0xC000_0000];

/// A table of `n` pages where every third page continues the previous one on the bus.
fn table(n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| {
            if i % 3 == 2 {
                0x40_0000 + (i - 1) * 0x10_000 + 0x1000
            } else {
                0x40_0000 + i * 0x10_000
            }
        })
        .collect()
}

/// Per-I/O mapping of the same bytes: one segment per page piece.
fn per_io_segments(pages: &[u64], fpo: u32, r: TagRange) -> Vec<DmaSegment> {
    let mut out = vec![];
    let mut pos = u64::from(fpo) + r.offset;
    let end = pos + u64::from(r.len);
    while pos < end {
        let page = pages[(pos / 4096) as usize];
        let n = (4096 - pos % 4096).min(end - pos);
        out.push(DmaSegment::new(page + pos % 4096, n as u32));
        pos += n;
    }
    out
}

#[test]
fn tag_prps_equal_per_io_mapping() {
    let pages = table(700);
    for fpo in [0u32, 0x200, 4092] {
        let len = 700 * 4096 - u64::from(fpo);
        let buf = PremappedPages::new(&pages, fpo, len).unwrap();
        for (offset, n) in [
            (0u64, 4096u32),
            (4, 8192),
            (512, 4096 * 33),
            (4096, 600 * 4096),
            (0, 517 * 4096),
        ] {
            let r = TagRange { offset, len: n };
            let mut a = vec![[0u64; 512]; 3];
            let mut b = vec![[0u64; 512]; 3];
            let pa = build_prps_from_tag(&buf, r, &mut PrpLists::new(&mut a, &LIST_DMA).unwrap());
            let pb = build_prps(
                &per_io_segments(&pages, fpo, r),
                &mut PrpLists::new(&mut b, &LIST_DMA).unwrap(),
            );
            assert_eq!(pa, pb, "fpo {fpo} offset {offset} len {n}");
            assert_eq!(a, b);
        }
    }
}

#[test]
fn tag_range_checks() {
    let pages = table(4);
    let buf = PremappedPages::new(&pages, 0x100, 4 * 4096 - 0x100).unwrap();
    let mut none = PrpLists::new(&mut [], &[]).unwrap();
    let r = |offset, len| TagRange { offset, len };
    assert!(build_prps_from_tag(&buf, r(4 * 4096 - 0x100 - 8, 8), &mut none).is_ok());
    assert_eq!(
        build_prps_from_tag(&buf, r(4 * 4096 - 0x100 - 8, 9), &mut none),
        Err(DptrError::TagOutOfRange {
            offset: 4 * 4096 - 0x108,
            len: 9,
            buffer_len: 4 * 4096 - 0x100
        })
    );
    assert!(matches!(
        build_prps_from_tag(&buf, r(u64::MAX, 1), &mut none),
        Err(DptrError::TagOutOfRange { .. })
    ));
    assert_eq!(
        build_prps_from_tag(&buf, r(0, 0), &mut none),
        Err(DptrError::NoSegments)
    );
    assert_eq!(
        build_prps_from_tag(&buf, r(2, 4), &mut none),
        Err(DptrError::FirstNotDwordAligned {
            addr: pages[0] + 0x102
        })
    );
    // Three pages need a list.
    assert_eq!(
        build_prps_from_tag(&buf, r(0, 3 * 4096), &mut none),
        Err(DptrError::ListTooSmall {
            needed: 1,
            available: 0
        })
    );
}

/// A faulty kernel-side table: claims more bytes than it has pages, and a misaligned page.
struct Faulty;
impl DmaPageTable for Faulty {
    fn dma_pages(&self) -> &[u64] {
        &[0x1000, 0x2008, 0x3000]
    }
    fn first_page_offset(&self) -> u32 {
        0
    }
    fn len(&self) -> u64 {
        1 << 20
    }
}

#[test]
fn faulty_tables_are_errors() {
    let mut lists = vec![[0u64; 512]; 1];
    let mut lists = PrpLists::new(&mut lists, &LIST_DMA[..1]).unwrap();
    let r = |offset, len| TagRange { offset, len };
    assert!(build_prps_from_tag(&Faulty, r(0, 4096), &mut lists).is_ok());
    assert_eq!(
        build_prps_from_tag(&Faulty, r(0, 8192), &mut lists),
        Err(DptrError::TagTable { index: 1 })
    );
    assert_eq!(
        build_prps_from_tag(&Faulty, r(8192, 8192), &mut lists),
        Err(DptrError::TagTable { index: 4 })
    );
    assert_eq!(
        build_prps_from_tag(&Faulty, r(4096, 10), &mut lists),
        Err(DptrError::TagTable { index: 1 })
    );
    let mut list = [SglDescriptor::default(); 4];
    assert_eq!(
        build_sgl_from_tag(&Faulty, r(0, 8192), &mut list, 0),
        Err(DptrError::TagTable { index: 1 })
    );
    assert_eq!(tag_segments(&Faulty, r(8192, 8192)).count(), 0);
    // Validation at registration catches both problems.
    assert_eq!(
        PremappedPages::new(Faulty.dma_pages(), 0, 3 * 4096),
        Err(DptrError::TagTable { index: 1 })
    );
    assert_eq!(
        PremappedPages::new(&[0x1000], 0, 4097),
        Err(DptrError::TagTable { index: 2 })
    );
    assert_eq!(
        PremappedPages::new(&[0x1000], 4096, 0),
        Err(DptrError::TagTable { index: 0 })
    );
}

#[test]
fn tag_segments_merge_bus_contiguous_pages() {
    let pages = table(6); // pages 1 and 2 are contiguous, 4 and 5 are contiguous
    let buf = PremappedPages::new(&pages, 0, 6 * 4096).unwrap();
    let segs: Vec<_> = tag_segments(
        &buf,
        TagRange {
            offset: 100,
            len: 6 * 4096 - 200,
        },
    )
    .collect();
    assert_eq!(
        segs,
        [
            DmaSegment::new(pages[0] + 100, 4096 - 100),
            DmaSegment::new(pages[1], 8192),
            DmaSegment::new(pages[3], 4096),
            DmaSegment::new(pages[4], 8192 - 100),
        ]
    );
    let mut list = [SglDescriptor::default(); 8];
    let a = build_sgl_from_tag(
        &buf,
        TagRange {
            offset: 100,
            len: 6 * 4096 - 200,
        },
        &mut list,
        0x10,
    )
    .unwrap();
    let mut list2 = [SglDescriptor::default(); 8];
    let b = build_sgl(segs.iter().copied(), &mut list2, 0x10).unwrap();
    assert_eq!((a, list), (b, list2));
    let one: Vec<_> = tag_segments(
        &buf,
        TagRange {
            offset: 4096 + 10,
            len: 20,
        },
    )
    .collect();
    assert_eq!(one, [DmaSegment::new(pages[1] + 10, 20)]);
}

/// The bulk list fill chains exactly like the per-I/O writer around every list-page boundary
/// (511 entries and a link per full page, up to 512 on the last one).
#[test]
fn tag_prps_chain_like_per_io_at_page_boundaries() {
    // k list pages hold 511 * k + 1 entries after PRP1.
    let pages = table(2600);
    let buf = PremappedPages::new(&pages, 0, 2600 * 4096).unwrap();
    let dma = [
        0xA000_0000,
        0xB000_0000,
        0xC000_0000,
        0xD000_0000,
        0xE000_0000,
    ];
    for entries in [
        2u32, 3, 33, 512, 513, 514, 1023, 1024, 1025, 1534, 1535, 1536, 2045, 2046,
    ] {
        for (offset, len) in [(0u64, entries * 4096), (4096 + 8, (entries - 1) * 4096 + 4)] {
            let r = TagRange { offset, len };
            let mut a = vec![[0x5a5a_u64; 512]; 5];
            let mut b = vec![[0x5a5a_u64; 512]; 5];
            let pa = build_prps_from_tag(&buf, r, &mut PrpLists::new(&mut a, &dma).unwrap());
            let pb = build_prps(
                &per_io_segments(&pages, 0, r),
                &mut PrpLists::new(&mut b, &dma).unwrap(),
            );
            assert_eq!(pa, pb, "offset {offset} len {len}");
            assert!(pa.is_ok(), "offset {offset} len {len}");
            assert_eq!(a, b, "offset {offset} len {len}");
        }
    }
    // One entry more than five list pages hold.
    let r = TagRange {
        offset: 0,
        len: 2558 * 4096,
    };
    let mut a = vec![[0u64; 512]; 5];
    assert_eq!(
        build_prps_from_tag(&buf, r, &mut PrpLists::new(&mut a, &dma).unwrap()),
        Err(DptrError::ListTooSmall {
            needed: 6,
            available: 5
        })
    );
}

/// A faulty table with a misaligned page deep in a list: the error names it and the list pages
/// are untouched.
#[test]
fn misaligned_list_entry_is_named_and_lists_untouched() {
    struct Bad(Vec<u64>);
    impl DmaPageTable for Bad {
        fn dma_pages(&self) -> &[u64] {
            &self.0
        }
        fn first_page_offset(&self) -> u32 {
            0
        }
        fn len(&self) -> u64 {
            self.0.len() as u64 * 4096
        }
    }
    let mut t = table(40);
    t[37] += 0x800;
    let bad = Bad(t);
    let mut lists = vec![[7u64; 512]; 1];
    let r = TagRange {
        offset: 2 * 4096,
        len: 38 * 4096,
    };
    assert_eq!(
        build_prps_from_tag(
            &bad,
            r,
            &mut PrpLists::new(&mut lists, &LIST_DMA[..1]).unwrap()
        ),
        Err(DptrError::TagTable { index: 37 })
    );
    assert!(lists[0].iter().all(|&e| e == 7));
    let r = TagRange {
        offset: 2 * 4096,
        len: 35 * 4096,
    };
    assert!(build_prps_from_tag(
        &bad,
        r,
        &mut PrpLists::new(&mut lists, &LIST_DMA[..1]).unwrap()
    )
    .is_ok());
}
