//! `QueueLimits` validation, defaults and `max_io_sectors`.

use crate::{nvme_max_hw_sectors, LimitsConfig, LimitsError, QueueLimits};

fn with(f: impl FnOnce(&mut LimitsConfig)) -> Result<QueueLimits, LimitsError> {
    let mut c = LimitsConfig::default();
    f(&mut c);
    QueueLimits::new(&c)
}

#[test]
fn defaults_match_blk_validate_limits() {
    let l = with(|_| {}).unwrap();
    assert_eq!(l.logical_block_size(), 512);
    assert_eq!(l.physical_block_size(), 512);
    assert_eq!(l.max_hw_sectors(), 255);
    assert_eq!(l.max_sectors(), 255);
    assert_eq!(l.max_segments(), 128);
    assert_eq!(l.max_segment_size(), 65536);
    assert_eq!(l.seg_boundary_mask(), 0xFFFF_FFFF);
    assert_eq!(l.virt_boundary_mask(), 0);
    assert_eq!(l.dma_alignment(), 511);
    assert_eq!(l.chunk_sectors(), 0);
    assert_eq!(l.max_discard_sectors(), 0);
}

#[test]
fn max_sectors_capped_and_rounded() {
    let l = with(|c| c.max_hw_sectors = 100_000).unwrap();
    assert_eq!((l.max_hw_sectors(), l.max_sectors()), (100_000, 2560));
    let l = with(|c| {
        c.max_hw_sectors = 100_000;
        c.max_user_sectors = 4099;
        c.logical_block_size = 4096;
    })
    .unwrap();
    assert_eq!((l.max_hw_sectors(), l.max_sectors()), (100_000, 4096));
    assert_eq!(
        with(|c| c.max_hw_sectors = 7),
        Err(LimitsError::MaxSectors(7))
    );
    assert_eq!(
        with(|c| c.max_user_sectors = 1),
        Err(LimitsError::MaxSectors(1))
    );
    let too_big = (u32::MAX >> 9) + 1;
    assert_eq!(
        with(|c| c.max_hw_sectors = too_big),
        Err(LimitsError::MaxSectors(too_big))
    );
    assert!(with(|c| c.max_hw_sectors = u32::MAX >> 9).is_ok());
}

#[test]
fn block_sizes_are_checked() {
    for bad in [256, 513, 8192, 3000] {
        assert_eq!(
            with(|c| c.logical_block_size = bad),
            Err(LimitsError::LogicalBlockSize(bad))
        );
    }
    for good in [512, 1024, 2048, 4096] {
        assert!(with(|c| c.logical_block_size = good).is_ok());
    }
    assert_eq!(
        with(|c| {
            c.logical_block_size = 4096;
            c.physical_block_size = 512;
        }),
        Err(LimitsError::PhysicalBlockSize(512))
    );
    assert_eq!(
        with(|c| c.physical_block_size = 3 << 10),
        Err(LimitsError::PhysicalBlockSize(3072))
    );
    assert_eq!(
        with(|c| c.physical_block_size = 1 << 16)
            .unwrap()
            .physical_block_size(),
        65536
    );
}

#[test]
fn masks_are_checked() {
    assert_eq!(
        with(|c| c.seg_boundary_mask = 0x7ff),
        Err(LimitsError::SegBoundaryMask(0x7ff))
    );
    assert_eq!(
        with(|c| c.seg_boundary_mask = 0x1_0fff),
        Err(LimitsError::SegBoundaryMask(0x1_0fff))
    );
    assert_eq!(
        with(|c| c.seg_boundary_mask = 0xfff)
            .unwrap()
            .seg_boundary_mask(),
        0xfff
    );
    assert_eq!(
        with(|c| c.virt_boundary_mask = 0x1fff),
        Err(LimitsError::VirtBoundaryMask(0x1fff))
    );
    assert_eq!(
        with(|c| c.virt_boundary_mask = 0x300),
        Err(LimitsError::VirtBoundaryMask(0x300))
    );
    let l = with(|c| c.virt_boundary_mask = 511).unwrap();
    assert_eq!(l.max_segment_size(), u32::MAX);
    assert_eq!(
        with(|c| c.max_segment_size = 4095),
        Err(LimitsError::MaxSegmentSize(4095))
    );
    assert_eq!(
        with(|c| c.max_segment_size = 4096)
            .unwrap()
            .max_segment_size(),
        4096
    );
    assert_eq!(
        with(|c| c.dma_alignment = 6),
        Err(LimitsError::DmaAlignment(6))
    );
    assert_eq!(with(|c| c.dma_alignment = 7).unwrap().dma_alignment(), 7);
}

#[test]
fn chunk_and_special_limits() {
    assert_eq!(
        with(|c| {
            c.logical_block_size = 4096;
            c.chunk_sectors = 12;
        }),
        Err(LimitsError::ChunkSectors(12))
    );
    let l = with(|c| {
        c.logical_block_size = 4096;
        c.max_discard_sectors = u32::MAX;
        c.max_write_zeroes_sectors = 15;
    })
    .unwrap();
    assert_eq!(l.max_discard_sectors(), (u32::MAX >> 9) & !7);
    assert_eq!(l.max_write_zeroes_sectors(), 8);
    assert_eq!(l.chunk_sectors_left(5), u32::MAX);
}

#[test]
fn nvme_defaults_follow_mdts() {
    assert_eq!(nvme_max_hw_sectors(0, 0), 16384);
    assert_eq!(nvme_max_hw_sectors(1, 0), 16);
    assert_eq!(nvme_max_hw_sectors(1, 1), 32);
    assert_eq!(nvme_max_hw_sectors(11, 0), 16384);
    assert_eq!(nvme_max_hw_sectors(28, 0), 16384);
    let l = QueueLimits::nvme(512, 0, 0).unwrap();
    assert_eq!(
        (
            l.max_hw_sectors(),
            l.max_sectors(),
            l.max_segments(),
            l.virt_boundary_mask()
        ),
        (16384, 2560, 128, 4095)
    );
    assert_eq!(
        (
            l.max_segment_size(),
            l.dma_alignment(),
            l.seg_boundary_mask()
        ),
        (u32::MAX, 3, 0xFFFF_FFFF)
    );
    assert_eq!(QueueLimits::nvme(4096, 2, 0).unwrap().max_segments(), 5);
    assert_eq!(
        QueueLimits::nvme(100, 0, 0),
        Err(LimitsError::LogicalBlockSize(100))
    );
    let l = QueueLimits::nvme(4096, 0, 0).unwrap();
    assert_eq!(QueueLimits::new(&l.config()), Ok(l));
}

#[test]
fn max_io_aligns_to_physical_blocks() {
    // pbs 64 KiB = 128 sectors; max_sectors 255.
    let l = with(|c| c.physical_block_size = 65536).unwrap();
    assert_eq!(l.max_io_sectors(0), 128);
    assert_eq!(l.max_io_sectors(1), 255); // ends at sector 256
    assert_eq!(l.max_io_sectors(127), 129); // 127 + 129 = 256
                                            // No pbs boundary reachable: fall back to max_sectors rounded to lbs.
    let l = with(|c| {
        c.physical_block_size = 1 << 20;
        c.max_hw_sectors = 64;
    })
    .unwrap();
    assert_eq!(l.max_io_sectors(1), 64);
    assert_eq!(l.max_io_sectors(2047), 1);
    assert_eq!(l.max_io_bytes(2047), 512);
    // Chunk boundaries clamp.
    let l = with(|c| {
        c.chunk_sectors = 256;
        c.max_hw_sectors = 2048;
        c.max_user_sectors = 2048;
    })
    .unwrap();
    assert_eq!(l.max_io_sectors(0), 256);
    assert_eq!(l.max_io_sectors(255), 1);
    assert_eq!(l.max_io_sectors(u64::MAX), 256 - (u64::MAX % 256) as u32);
}
