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
    let d = Bio::<Pfn>::range(Op::Discard, 0, 1 << 20).unwrap();
    assert_eq!(
        d.split_point(&lim),
        Ok(SplitPoint::Front {
            bytes: 256 * 512,
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
        assert!(p.size() <= 256 * 512);
        pieces += 1;
    }
    assert_eq!(pieces, 24);
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
