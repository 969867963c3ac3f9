//! `Bio`: windows, advance/trim/split, splitting to limits, segment counts.

use std::vec::Vec;

use super::table;
use crate::{Bio, BioError, LimitsConfig, Op, QueueLimits, SplitPoint};
use bvec::{Bvec, BvecError, BvecIter, Pfn};

fn nvme() -> QueueLimits {
    QueueLimits::nvme(512, 0, 0).unwrap()
}

#[test]
fn constructors_check_the_operation() {
    let t = table(&[(1, 0, 4096)]);
    assert_eq!(
        Bio::from_table(Op::Discard, 0, &t, 4096).unwrap_err(),
        BioError::WrongOp { op: Op::Discard }
    );
    assert_eq!(
        Bio::from_table(Op::Read, 0, &t, 4097).unwrap_err(),
        BioError::Bvec(BvecError::SizeExceedsTable {
            requested: 4097,
            available: 4096
        })
    );
    assert_eq!(
        Bio::<Pfn>::range(Op::Flush, 0, 0).unwrap_err(),
        BioError::WrongOp { op: Op::Flush }
    );
    let f = Bio::<Pfn>::flush();
    assert_eq!(
        (f.op(), f.size(), f.bvec_iter().is_none(), f.table().len()),
        (Op::Flush, 0, true, 0)
    );
}

#[test]
fn advance_and_truncate_move_the_window() {
    let t = table(&[(1, 0, 4096), (3, 512, 1024)]);
    let mut bio = Bio::from_table(Op::Read, 10, &t, 5120).unwrap();
    assert_eq!(
        bio.advance(5121),
        Err(BioError::PastEnd {
            requested: 5121,
            remaining: 5120
        })
    );
    bio.advance(4608).unwrap();
    assert_eq!((bio.sector(), bio.size()), (19, 512));
    assert_eq!(
        bio.segments().collect::<Vec<_>>(),
        [Bvec::new(Pfn(3), 1024, 512).unwrap()]
    );
    assert_eq!(
        bio.truncate(513),
        Err(BioError::PastEnd {
            requested: 513,
            remaining: 512
        })
    );
    bio.truncate(100).unwrap();
    assert_eq!(bio.pages().map(|b| b.len()).sum::<u32>(), 100);
    // The fast path of bio_advance does not move the sector; here it does.
    bio.advance(100).unwrap();
    assert_eq!((bio.size(), bio.sector()), (0, 19));
    let mut d = Bio::<Pfn>::range(Op::WriteZeroes, 0, 4096).unwrap();
    d.advance(1024).unwrap();
    assert_eq!((d.sector(), d.size()), (2, 3072));
    assert!(d.advance(4096).is_err());
    d.truncate(0).unwrap();
    assert!(d.is_empty());
}

#[test]
fn trim_and_split_boundaries() {
    let t = table(&[(1, 0, 8192)]);
    let mut bio = Bio::from_table(Op::Write, 0, &t, 8192).unwrap();
    bio.trim(0, 16).unwrap(); // no-op
    assert_eq!(bio.size(), 8192);
    assert!(bio.trim(15, 2).is_err());
    assert!(bio.trim(u32::MAX, u32::MAX).is_err());
    assert_eq!(
        bio.split(0).err(),
        Some(BioError::BadSplit {
            bytes: 0,
            size: 8192
        })
    );
    assert_eq!(
        bio.split(8192).err(),
        Some(BioError::BadSplit {
            bytes: 8192,
            size: 8192
        })
    );
    assert_eq!(
        bio.split(100).err(),
        Some(BioError::BadSplit {
            bytes: 100,
            size: 8192
        })
    );
    let front = bio.split(512).unwrap();
    assert_eq!(
        (front.sector(), front.size(), bio.sector(), bio.size()),
        (0, 512, 1, 7680)
    );
    // Pieces share the table.
    assert!(core::ptr::eq(front.table(), bio.table()));
}

#[test]
fn split_to_limits_pieces_fit_and_concatenate() {
    // 200 single pages, every fourth one half-filled at the end (gap).
    let spec: Vec<(u64, u32, u32)> = (0..200u64)
        .map(|i| (i * 3, 0, if i % 4 == 3 { 2048 } else { 4096 }))
        .collect();
    let t = table(&spec);
    let total: u32 = t.iter().map(|b| b.len()).sum();
    let lim = nvme();
    let mut bio = Bio::from_table(Op::Read, 0, &t, total).unwrap();
    let mut seen = 0u32;
    let mut next_sector = 0u64;
    while !bio.is_empty() {
        let (piece, nsegs) = bio.split_to_limits(&lim).unwrap();
        assert_eq!(piece.sector(), next_sector);
        assert_eq!(nsegs, piece.nr_phys_segments(&lim));
        assert!(nsegs <= 128);
        assert!(piece.size() % 512 == 0 && piece.size() > 0);
        assert_eq!(piece.split_point(&lim), Ok(SplitPoint::Whole { nsegs }));
        seen += piece.size();
        next_sector += u64::from(piece.size() >> 9);
    }
    assert_eq!(seen, total);
}

#[test]
fn split_point_checks_alignment() {
    let t = table(&[(1, 0, 4096)]);
    let lim = QueueLimits::nvme(4096, 0, 0).unwrap();
    let bio = Bio::from_table(Op::Read, 1, &t, 4096).unwrap();
    assert_eq!(
        bio.split_point(&lim),
        Err(BioError::Unaligned {
            sector: 1,
            size: 4096,
            logical_block_size: 4096
        })
    );
    let bio = Bio::from_table(Op::Read, 8, &t, 2048).unwrap();
    assert!(matches!(
        bio.split_point(&lim),
        Err(BioError::Unaligned { .. })
    ));
    let bio = Bio::from_table(Op::Read, 8, &t, 4096).unwrap();
    assert_eq!(bio.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
}

#[test]
fn range_operations_split_at_their_limits() {
    let lim = QueueLimits::new(&LimitsConfig {
        logical_block_size: 4096,
        max_discard_sectors: 1000,
        chunk_sectors: 256,
        ..LimitsConfig::default()
    })
    .unwrap();
    // Discards ignore chunk_sectors: cut at max_discard_sectors (a multiple of the 8-sector
    // granularity the 4096-byte physical block gives).
    let d = Bio::<Pfn>::range(Op::Discard, 0, 1 << 20).unwrap();
    assert_eq!(
        d.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 1000 * 512,
            nsegs: 1
        })
    );
    let d = Bio::<Pfn>::range(Op::Discard, 248, 4096).unwrap();
    assert_eq!(d.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
    let z = Bio::<Pfn>::range(Op::WriteZeroes, 0, 4096).unwrap();
    assert_eq!(
        z.split_point(&lim),
        Err(BioError::Unsupported {
            op: Op::WriteZeroes
        })
    );
    let z = Bio::<Pfn>::range(Op::WriteZeroes, 0, 1 << 30).unwrap();
    let n = nvme();
    assert_eq!(
        z.split_point(&n),
        Ok(SplitPoint::Front {
            bytes: 8 << 20,
            nsegs: 0
        })
    );
    assert_eq!(z.nr_phys_segments(&n), 0);
    assert_eq!(d.nr_phys_segments(&n), 1);
    assert_eq!(
        Bio::<Pfn>::flush().split_point(&n),
        Ok(SplitPoint::Whole { nsegs: 0 })
    );
    let mut d = Bio::<Pfn>::range(Op::Discard, 0, 3 << 20).unwrap();
    let mut pieces = 0;
    while !d.is_empty() {
        let (p, _) = d.split_to_limits(&lim).unwrap();
        assert!(p.size() <= 1000 * 512);
        pieces += 1;
    }
    assert_eq!(pieces, 7); // 6144 sectors: six of 1000, then 144
}

#[test]
fn windows_from_a_shared_iterator() {
    let t = table(&[(0, 0, 4096), (8, 0, 4096), (16, 0, 4096)]);
    let mut it = BvecIter::new(&t, 0, 12288).unwrap();
    it.advance(6144).unwrap();
    let bio = Bio::new(Op::Write, it).unwrap();
    assert_eq!((bio.sector(), bio.size()), (12, 6144));
    assert_eq!(bio.segments().count(), 2);
    assert_eq!(bio.pages().count(), 2);
    assert_eq!(bio.nr_phys_segments(&nvme()), 2);
    assert!(bio.dma_aligned(&nvme()));
    let odd = table(&[(0, 1, 4094)]);
    assert!(!Bio::from_table(Op::Write, 0, &odd, 4094)
        .unwrap()
        .dma_aligned(&nvme()));
}

// ---------------------------------------------------------------------------------------------
// Issue 11: the kernel's values (Linux 6.12, block/blk-merge.c and block/blk.h).

/// Item 1: write-zeroes splits go through `get_max_io_size`, which ends the piece on a physical
/// block: lbs 512, pbs 4096, max_write_zeroes_sectors 64, 128 sectors at sector 1 -> 63.
#[test]
fn write_zeroes_split_ends_on_a_physical_block() {
    let lim = QueueLimits::new(&LimitsConfig {
        physical_block_size: 4096,
        max_write_zeroes_sectors: 64,
        ..LimitsConfig::default()
    })
    .unwrap();
    let mut z = Bio::<Pfn>::range(Op::WriteZeroes, 1, 128 * 512).unwrap();
    assert_eq!(
        z.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 63 * 512,
            nsegs: 0
        })
    );
    // The remainder starts on a physical block and takes whole 64-sector pieces.
    let (front, nsegs) = z.split_to_limits(&lim).unwrap();
    assert_eq!((front.size(), nsegs, z.sector()), (63 * 512, 0, 64));
    assert_eq!(
        z.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 64 * 512,
            nsegs: 0
        })
    );
    // ... and it stops at chunk boundaries, which the discard path ignores.
    let lim = QueueLimits::new(&LimitsConfig {
        chunk_sectors: 16,
        max_write_zeroes_sectors: 64,
        ..LimitsConfig::default()
    })
    .unwrap();
    let z = Bio::<Pfn>::range(Op::WriteZeroes, 10, 128 * 512).unwrap();
    assert_eq!(
        z.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 6 * 512,
            nsegs: 0
        })
    );
}

/// Item 2: `__bio_split_discard` never looks at `chunk_sectors`: max_discard_sectors 1024,
/// chunk_sectors 256, 2048 sectors at sector 0 -> 1024.
#[test]
fn discard_split_ignores_chunk_sectors() {
    let lim = QueueLimits::new(&LimitsConfig {
        max_discard_sectors: 1024,
        chunk_sectors: 256,
        ..LimitsConfig::default()
    })
    .unwrap();
    let d = Bio::<Pfn>::range(Op::Discard, 0, 2048 * 512).unwrap();
    assert_eq!(
        d.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 1024 * 512,
            nsegs: 1
        })
    );
}

/// The discard cut keeps the next piece on a granule: granularity 8 sectors (4096-byte physical
/// blocks), limit 100 -> 96 sectors, then shortened by the start's misalignment.
#[test]
fn discard_split_follows_the_granularity() {
    let lim = QueueLimits::new(&LimitsConfig {
        physical_block_size: 4096,
        max_discard_sectors: 100,
        ..LimitsConfig::default()
    })
    .unwrap();
    let at = |sector: u64| {
        Bio::<Pfn>::range(Op::Discard, sector, 1000 * 512)
            .unwrap()
            .split_point(&lim)
    };
    assert_eq!(
        at(0),
        Ok(SplitPoint::Front {
            bytes: 96 * 512,
            nsegs: 1
        })
    );
    // sector 3: 3 + 96 = 99, 3 past a granule: 93 sectors, the next piece starts at 96.
    assert_eq!(
        at(3),
        Ok(SplitPoint::Front {
            bytes: 93 * 512,
            nsegs: 1
        })
    );
    // discard_alignment shifts the granules: 1024 bytes = 2 sectors.
    let lim = QueueLimits::new(&LimitsConfig {
        discard_alignment: 1024,
        ..lim.config()
    })
    .unwrap();
    let d = Bio::<Pfn>::range(Op::Discard, 0, 1000 * 512).unwrap();
    assert_eq!(
        d.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 90 * 512,
            nsegs: 1
        })
    );
    // A limit below the granularity: the kernel sends the discard whole; here it is whole when
    // it fits the limit and refused otherwise.
    let lim = QueueLimits::new(&LimitsConfig {
        physical_block_size: 4096,
        max_discard_sectors: 4,
        ..LimitsConfig::default()
    })
    .unwrap();
    let small = Bio::<Pfn>::range(Op::Discard, 0, 4 * 512).unwrap();
    assert_eq!(small.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
    let big = Bio::<Pfn>::range(Op::Discard, 0, 16 * 512).unwrap();
    assert!(matches!(
        big.split_point(&lim),
        Err(BioError::CannotSplit { .. })
    ));
}

/// Item 3: `bio_may_need_split` is false for one in-page bvec without chunk_sectors, so the
/// kernel sends it whole: pbs 8192, max_hw_sectors 8, one 4096-byte bvec at sector 4201.
#[test]
fn single_page_bio_skips_the_split() {
    let lim = QueueLimits::new(&LimitsConfig {
        physical_block_size: 8192,
        max_hw_sectors: 8,
        ..LimitsConfig::default()
    })
    .unwrap();
    // Without the shortcut the limits would cut 3584 bytes (sector 4201 is 9 into a 16-sector
    // physical block).
    assert_eq!(lim.max_io_bytes(4201), 3584);
    let t = table(&[(3, 0, 4096)]);
    let mut bio = Bio::from_table(Op::Write, 4201, &t, 4096).unwrap();
    assert!(!bio.may_need_split(&lim));
    assert_eq!(bio.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
    let (whole, nsegs) = bio.split_to_limits(&lim).unwrap();
    assert_eq!((whole.size(), nsegs), (4096, 1));
    assert!(bio.is_empty());
    // Two entries, an entry crossing a page, chunk_sectors, or a split front (a clone with no
    // entries of its own) all go through bio_split_rw.
    let two = table(&[(3, 0, 2048), (4, 0, 2048)]);
    let bio = Bio::from_table(Op::Write, 4201, &two, 4096).unwrap();
    assert!(bio.may_need_split(&lim));
    let across = table(&[(3, 2048, 4096)]);
    let bio = Bio::from_table(Op::Write, 4201, &across, 4096).unwrap();
    assert_eq!(
        bio.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 3584,
            nsegs: 1
        })
    );
    let chunked = QueueLimits::new(&LimitsConfig {
        chunk_sectors: 1 << 20,
        ..lim.config()
    })
    .unwrap();
    let bio = Bio::from_table(Op::Write, 4201, &t, 4096).unwrap();
    assert!(bio.may_need_split(&chunked));
    let mut whole = Bio::from_table(Op::Write, 4201, &t, 4096).unwrap();
    let front = whole.split(1024).unwrap();
    assert!(front.may_need_split(&lim) && !whole.may_need_split(&lim));
    // The window of a single-entry table may be a sub-range: still one segment, still whole.
    let bio = Bio::from_table(Op::Read, 4201, &t, 1024).unwrap();
    assert_eq!(bio.split_point(&lim), Ok(SplitPoint::Whole { nsegs: 1 }));
}
