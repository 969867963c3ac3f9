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
    // blk_validate_limits has no upper bound on either sector limit.
    let l = with(|c| {
        c.max_hw_sectors = u32::MAX;
        c.max_user_sectors = u32::MAX;
    })
    .unwrap();
    assert_eq!((l.max_hw_sectors(), l.max_sectors()), (u32::MAX, u32::MAX));
    assert_eq!(l.max_io_bytes(0), u32::MAX & !511);
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
    // A physical block smaller than the logical one is raised to it, not refused.
    let l = with(|c| {
        c.logical_block_size = 4096;
        c.physical_block_size = 512;
    })
    .unwrap();
    assert_eq!(l.physical_block_size(), 4096);
    // Even one that is not a power of two (the kernel's `<` test comes first).
    assert_eq!(
        with(|c| {
            c.logical_block_size = 4096;
            c.physical_block_size = 3000;
        })
        .unwrap()
        .physical_block_size(),
        4096
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
    // blk_validate_limits keeps a driver's max_segment_size next to a virtual boundary.
    let l = with(|c| {
        c.virt_boundary_mask = 4095;
        c.max_segment_size = 65536;
    })
    .unwrap();
    assert_eq!(l.max_segment_size(), 65536);
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
    // Any value up to PAGE_SIZE (the kernel's `dma_alignment > PAGE_SIZE` test), nothing above.
    for ok in [6, 7, 4095, 4096] {
        assert_eq!(with(|c| c.dma_alignment = ok).unwrap().dma_alignment(), ok);
    }
    for bad in [4097, 0xffff, u32::MAX] {
        assert_eq!(
            with(|c| c.dma_alignment = bad),
            Err(LimitsError::DmaAlignment(bad))
        );
    }
}

#[test]
fn chunk_and_special_limits() {
    // chunk_sectors is not validated by the kernel (only zoned devices check it).
    let l = with(|c| {
        c.logical_block_size = 4096;
        c.chunk_sectors = 12;
    })
    .unwrap();
    assert_eq!((l.chunk_sectors(), l.chunk_sectors_left(16)), (12, 8));
    // The special limits are kept as given; the split paths clamp and round them.
    let l = with(|c| {
        c.logical_block_size = 4096;
        c.max_discard_sectors = u32::MAX;
        c.max_write_zeroes_sectors = 15;
    })
    .unwrap();
    assert_eq!(l.max_discard_sectors(), u32::MAX);
    assert_eq!(l.max_write_zeroes_sectors(), 15);
    assert_eq!(l.discard_granularity(), 4096);
    assert_eq!(l.max_write_zeroes_io_sectors(0), 8);
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

/// Issue 11 item 4: every field `blk_validate_limits` (block/blk-settings.c) looks at, with the
/// kernel's verdict and defaults.
#[test]
fn validation_matches_blk_validate_limits() {
    // io_min defaults to (and is raised to) the physical block size; io_opt is rounded down to it.
    let l = with(|c| {
        c.physical_block_size = 4096;
        c.io_min = 512;
        c.io_opt = 10000;
    })
    .unwrap();
    assert_eq!((l.io_min(), l.io_opt()), (4096, 8192));
    // Without a user limit, a large io_opt (else io_min) replaces the 2560-sector cap.
    let l = with(|c| {
        c.max_hw_sectors = 100_000;
        c.io_opt = 4 << 20;
    })
    .unwrap();
    assert_eq!(l.max_sectors(), 8192);
    let l = with(|c| {
        c.max_hw_sectors = 100_000;
        c.io_min = 2 << 20;
    })
    .unwrap();
    assert_eq!(l.max_sectors(), 4096);
    let l = with(|c| {
        c.max_hw_sectors = 100_000;
        c.io_min = 1 << 20; // not above the cap: ignored
    })
    .unwrap();
    assert_eq!(l.max_sectors(), 2560);
    // A user limit wins over io_opt and io_min.
    let l = with(|c| {
        c.max_hw_sectors = 100_000;
        c.max_user_sectors = 64;
        c.io_opt = 4 << 20;
    })
    .unwrap();
    assert_eq!(l.max_sectors(), 64);
    // Discard granularity: raised to the physical block size, 0 without discard.
    let l = with(|c| {
        c.physical_block_size = 4096;
        c.discard_granularity = 512;
        c.max_discard_sectors = 1024;
    })
    .unwrap();
    assert_eq!(l.discard_granularity(), 4096);
    let l = with(|c| c.discard_granularity = 65536).unwrap();
    assert_eq!(l.discard_granularity(), 0);
    // The masks the kernel checks.
    assert_eq!(
        with(|c| c.seg_boundary_mask = 0xffe),
        Err(LimitsError::SegBoundaryMask(0xffe))
    );
    assert_eq!(
        with(|c| c.max_segment_size = 4095),
        Err(LimitsError::MaxSegmentSize(4095))
    );
    // Validating the limits' own config gives them back.
    let l = with(|c| {
        c.physical_block_size = 8192;
        c.io_opt = 3 << 20;
        c.max_hw_sectors = 100_000;
        c.max_discard_sectors = 77;
        c.discard_alignment = 1024;
        c.chunk_sectors = 24;
    })
    .unwrap();
    assert_eq!(QueueLimits::new(&l.config()), Ok(l));
}
