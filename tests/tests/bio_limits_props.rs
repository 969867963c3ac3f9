//! Property tests of queue-limit validation and of the split decisions of Linux 6.12 that the
//! first property tests did not reach (issue 11): discard and write-zeroes splits, physical block
//! sizes above the logical one, `io_min`/`io_opt`, any `chunk_sectors`, and single-page bios that
//! `bio_may_need_split` lets through whole. The reference is `iovstack_tests::bio_model` and its
//! `limits_model`, written from block/blk-settings.c, block/blk-merge.c and block/blk.h.

use bio::{Bio, BioError, LimitsConfig, Op, QueueLimits, SplitPoint};
use bvec::{Bvec, BvecIter, Pfn, PAGE_SIZE};
use iovstack_tests::bio_model::limits_model::{self, RangeSplit};
use iovstack_tests::bio_model::{self, ModelLimits};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Generators

/// Any configuration, valid or not, with the values the kernel treats specially.
fn config_strategy() -> impl Strategy<Value = LimitsConfig> {
    let sectors = || {
        prop_oneof![
            Just(0u32),
            1u32..16,
            Just(255),
            8u32..3000,
            Just(100_000),
            Just(u32::MAX >> 9),
            Just((u32::MAX >> 9) + 1),
            Just(u32::MAX),
        ]
    };
    (
        (
            prop::sample::select(vec![0u32, 256, 512, 1024, 2048, 4096, 8192, 3000]),
            prop::sample::select(vec![0u32, 512, 1024, 4096, 8192, 65536, 3000, 6144]),
            prop::sample::select(vec![0u32, 512, 4096, 1 << 20, 2 << 20, 3_000_000]),
            prop::sample::select(vec![0u32, 4096, 10_000, 2 << 20, 4 << 20]),
            sectors(),
            sectors(),
            any::<u16>(),
        ),
        (
            prop::sample::select(vec![0u32, 512, 4095, 4096, 6000, 65536, u32::MAX]),
            prop::sample::select(vec![
                0u64,
                0x7ff,
                0xffe,
                0xfff,
                0x1fff,
                0x2000,
                0xffff,
                0xffff_ffff,
                u64::MAX,
            ]),
            prop::sample::select(vec![0u32, 511, 4095, 0x300, 0x1fff, 4096]),
            prop::sample::select(vec![0u32, 1, 3, 6, 511, 4095, 4096, 4097, 0xffff]),
        ),
        (
            prop_oneof![
                Just(0u32),
                Just(8),
                Just(12),
                Just(24),
                Just(256),
                any::<u32>()
            ],
            prop_oneof![Just(0u32), Just(4), Just(100), Just(1024), Just(u32::MAX)],
            prop::sample::select(vec![0u32, 512, 4096, 6144, 65536]),
            prop::sample::select(vec![0u32, 512, 1024, 4096]),
            prop_oneof![Just(0u32), Just(15), Just(64), Just(u32::MAX)],
        ),
    )
        .prop_map(
            |(
                (lbs, pbs, io_min, io_opt, hw, user, segs),
                (mss, sbm, vbm, dma),
                (chunk, disc, dg, da, wz),
            )| {
                LimitsConfig {
                    logical_block_size: lbs,
                    physical_block_size: pbs,
                    io_min,
                    io_opt,
                    max_hw_sectors: hw,
                    max_user_sectors: user,
                    max_segments: segs,
                    max_segment_size: mss,
                    seg_boundary_mask: sbm,
                    virt_boundary_mask: vbm,
                    dma_alignment: dma,
                    chunk_sectors: chunk,
                    max_discard_sectors: disc,
                    discard_granularity: dg,
                    discard_alignment: da,
                    max_write_zeroes_sectors: wz,
                }
            },
        )
}

/// Valid limits with small sector limits (so that splits happen), physical blocks up to 16
/// logical ones, `io_min`/`io_opt`, any chunk size, discard granularity and alignment.
fn limits_strategy() -> impl Strategy<Value = QueueLimits> {
    (
        (
            0u32..4,
            0u32..5,
            prop_oneof![8u32..64, 8u32..600],
            prop_oneof![Just(0u32), 1u32..4096],
            any::<bool>(),
        ),
        (
            prop_oneof![Just(0u32), 1u32..300, Just(256), Just(1024)],
            prop_oneof![Just(0u32), 1u32..3000, Just(u32::MAX)],
            prop::sample::select(vec![0u32, 512, 4096, 6144, 65536]),
            prop_oneof![Just(0u32), (0u32..64).prop_map(|s| s * 512)],
            prop_oneof![Just(0u32), 1u32..3000, Just(u32::MAX)],
            prop_oneof![Just(0u32), Just(3 << 20), Just(4 << 20)],
        ),
        (
            prop_oneof![Just(0u16), 1u16..10, Just(128u16)],
            any::<bool>(),
        ),
    )
        .prop_filter_map(
            "invalid limit combination",
            |((lbs, pbs, hw, io_min, user), (chunk, disc, dg, da, wz, io_opt), (segs, vb))| {
                let lbs = 512u32 << lbs;
                QueueLimits::new(&LimitsConfig {
                    logical_block_size: lbs,
                    physical_block_size: lbs << pbs,
                    io_min: io_min * 512,
                    io_opt,
                    max_hw_sectors: hw,
                    max_user_sectors: if user { hw } else { 0 },
                    max_segments: segs,
                    virt_boundary_mask: if vb { 4095 } else { 0 },
                    chunk_sectors: chunk,
                    max_discard_sectors: disc,
                    discard_granularity: dg,
                    discard_alignment: da,
                    max_write_zeroes_sectors: wz,
                    ..LimitsConfig::default()
                })
                .ok()
            },
        )
}

/// Whether `bio_unaligned` refuses a bio at `sector` of `size` bytes.
fn kernel_unaligned(m: &ModelLimits, sector: u64, size: u32) -> bool {
    let mask = m.lbs - 1;
    u64::from(size) & mask != 0 || (sector << 9) & mask != 0
}

/// Splits a discard or write-zeroes of `size` bytes at `sector` until it is empty or refused,
/// comparing every step with the kernel model.
fn check_range(op: Op, lim: &QueueLimits, sector: u64, size: u32) -> Result<(), TestCaseError> {
    let m = ModelLimits::from(lim);
    let nsegs = u32::from(op == Op::Discard);
    let mut bio = Bio::<Pfn>::range(op, sector, size).unwrap();
    for _ in 0..64 {
        let (sector, size) = (bio.sector(), bio.size());
        let got = bio.split_point(lim);
        if kernel_unaligned(&m, sector, size) {
            prop_assert!(matches!(got, Err(BioError::Unaligned { .. })), "{got:?}");
            return Ok(());
        }
        let want = match op {
            Op::Discard => limits_model::discard_split(&m, sector, size >> 9),
            _ => limits_model::write_zeroes_split(&m, sector, size >> 9),
        };
        match want {
            RangeSplit::NotSupported => {
                prop_assert_eq!(got, Err(BioError::Unsupported { op }));
                return Ok(());
            }
            RangeSplit::Whole => {
                prop_assert_eq!(got, Ok(SplitPoint::Whole { nsegs }));
                return Ok(());
            }
            RangeSplit::WholeOverLimit => {
                prop_assert!(matches!(got, Err(BioError::CannotSplit { .. })), "{got:?}");
                return Ok(());
            }
            RangeSplit::Front(front) => {
                prop_assert_eq!(
                    got,
                    Ok(SplitPoint::Front {
                        bytes: front << 9,
                        nsegs
                    })
                );
                let (piece, n) = bio.split_to_limits(lim).unwrap();
                prop_assert_eq!(
                    (piece.sector(), piece.size(), n),
                    (sector, front << 9, nsegs)
                );
                prop_assert_eq!(piece.nr_phys_segments(lim), nsegs);
                prop_assert_eq!(
                    (bio.sector(), bio.size()),
                    (sector + u64::from(front), size - (front << 9))
                );
            }
        }
    }
    Ok(())
}

/// A window of `table` as a read bio of whole logical blocks at `sector_blocks` blocks.
fn read_bio<'a>(table: &'a [Bvec<Pfn>], lim: &QueueLimits, sector_blocks: u64) -> Bio<'a, Pfn> {
    let lbs = lim.logical_block_size();
    let total: u32 = table.iter().map(|b| b.len()).sum();
    let sector = sector_blocks * u64::from(lbs >> 9);
    let it = BvecIter::new(table, sector, total / lbs * lbs).unwrap();
    Bio::new(Op::Read, it).unwrap()
}

/// Splits a read until it is empty, each step against `bio_model::split_point_rw`. Pieces cut by
/// the limits satisfy them; a piece the `bio_may_need_split` shortcut let through is whole.
fn check_rw(mut bio: Bio<'_, Pfn>, lim: &QueueLimits) -> Result<(), TestCaseError> {
    let m = ModelLimits::from(lim);
    while !bio.is_empty() {
        let segs: Vec<_> = bio.segments().collect();
        let flat = bio_model::flatten(&segs);
        let first = bio.table().first().map(|b| (b.offset(), b.len()));
        let shortcut = !limits_model::may_need_split(&m, bio.vcnt(), first);
        prop_assert_eq!(shortcut, !bio.may_need_split(lim));
        let want = bio_model::split_point_rw(&flat, bio.sector(), &m, bio.vcnt(), first);
        let start = bio.sector();
        match bio.split_to_limits(lim) {
            Ok((piece, nsegs)) => {
                match want {
                    Ok(None) => prop_assert!(bio.is_empty()),
                    Ok(Some(front)) => prop_assert_eq!(u64::from(piece.size()), front),
                    Err(fitted) => prop_assert!(false, "model cannot split ({fitted}), crate did"),
                }
                let pflat = bio_model::flatten(&piece.segments().collect::<Vec<_>>());
                if shortcut {
                    prop_assert_eq!(nsegs, 1);
                } else if let Err(e) = bio_model::check_piece(&pflat, start, &m) {
                    prop_assert!(false, "piece violates limits: {e}");
                }
                prop_assert_eq!(u64::from(nsegs), bio_model::count_segments(&pflat, &m));
            }
            Err(BioError::CannotSplit { fitted, .. }) => {
                prop_assert_eq!(want, Err(u64::from(fitted)));
                return Ok(());
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `QueueLimits::new` accepts what `blk_validate_limits` accepts, with the same values, and
    /// refuses what it refuses; the only other refusals are the documented deviations.
    #[test]
    fn validation_matches_blk_validate_limits(cfg in config_strategy()) {
        let got = QueueLimits::new(&cfg);
        match limits_model::validate(&cfg) {
            Err(why) => prop_assert!(got.is_err(), "kernel refuses ({why:?}), crate accepted"),
            Ok(m) if limits_model::crate_refuses(&m) => prop_assert!(got.is_err()),
            Ok(m) => {
                let l = got.map_err(|e| TestCaseError::fail(format!("kernel accepts, crate: {e}")))?;
                prop_assert_eq!(ModelLimits::from(&l), m);
                prop_assert_eq!(QueueLimits::new(&l.config()), Ok(l));
            }
        }
    }

    /// The largest read/write and write-zeroes at any sector equal `get_max_io_size`, for any
    /// accepted sector limits (up to `u32::MAX`) and chunk sizes.
    #[test]
    fn max_io_matches_get_max_io_size(cfg in config_strategy(), sector in any::<u64>()) {
        if let Ok(lim) = QueueLimits::new(&cfg) {
            let m = ModelLimits::from(&lim);
            prop_assert_eq!(lim.max_io_sectors(sector), limits_model::get_max_io_size(&m, m.max_sectors, sector));
            prop_assert_eq!(
                lim.max_write_zeroes_io_sectors(sector),
                limits_model::get_max_io_size(&m, m.max_write_zeroes_sectors, sector)
            );
            prop_assert_eq!(u64::from(lim.max_io_bytes(sector)), bio_model::max_io_bytes(sector, &m));
        }
    }

    /// Discards split like `__bio_split_discard` (granularity, alignment, never chunk_sectors).
    #[test]
    fn discard_splits_match_the_kernel(
        lim in limits_strategy(),
        sector in prop_oneof![0u64..100_000, any::<u64>()],
        size in prop_oneof![1u32..(1 << 22), any::<u32>()],
        aligned in any::<bool>(),
    ) {
        let lbs = lim.logical_block_size();
        let (sector, size) = if aligned {
            (sector & !u64::from((lbs >> 9) - 1), size & !(lbs - 1))
        } else {
            (sector, size & !511)
        };
        check_range(Op::Discard, &lim, sector, size)?;
    }

    /// Write-zeroes split like `bio_split_write_zeroes` (`get_max_io_size`: chunk boundary,
    /// physical-block end).
    #[test]
    fn write_zeroes_splits_match_the_kernel(
        lim in limits_strategy(),
        sector in prop_oneof![0u64..100_000, any::<u64>()],
        size in prop_oneof![1u32..(1 << 22), any::<u32>()],
    ) {
        let lbs = lim.logical_block_size();
        let sector = sector & !u64::from((lbs >> 9) - 1);
        check_range(Op::WriteZeroes, &lim, sector, size & !(lbs - 1))?;
    }

    /// A bio of one in-page entry (sub-page and sub-block windows included) is sent whole when
    /// `bio_may_need_split` says so, and split like the model otherwise.
    #[test]
    fn single_page_bios_follow_bio_may_need_split(
        lim in limits_strategy(),
        pfn in 0u64..1 << 20,
        off in 0u32..4096,
        len in 1u32..=4096,
        sector_blocks in 0u64..100_000,
        chunked in prop::bool::weighted(0.2),
    ) {
        let lim = if chunked {
            lim
        } else {
            QueueLimits::new(&LimitsConfig { chunk_sectors: 0, ..lim.config() }).unwrap()
        };
        let lbs = lim.logical_block_size();
        let off = off.min(PAGE_SIZE as u32 - lbs) & !(lbs - 1);
        let len = len.min(PAGE_SIZE as u32 - off).max(lbs) / lbs * lbs;
        let table = [Bvec::new(Pfn(pfn), off, len).unwrap()];
        check_rw(read_bio(&table, &lim, sector_blocks), &lim)?;
    }

    /// Reads over tables of any shape (sub-sector lengths, multipage entries) split like the
    /// model under physical blocks, io_min/io_opt and any chunk size.
    #[test]
    fn reads_split_like_the_model(
        raw in prop::collection::vec((0u64..1 << 20, 0u32..2 * 4096, 1u32..9000), 1..8),
        lim in limits_strategy(),
        sector_blocks in 0u64..100_000,
    ) {
        let table: Vec<Bvec<Pfn>> = raw
            .iter()
            .map(|&(pfn, off, len)| Bvec::new(Pfn(pfn), off, len).unwrap())
            .collect();
        check_rw(read_bio(&table, &lim, sector_blocks), &lim)?;
    }
}
