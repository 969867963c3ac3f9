//! Property tests of the bio crate against the independent models in `iovstack_tests::bio_model`
//! (splitting, segment counting) and `iovstack_tests::dptr_walk` (PRP/SGL decoding).

use std::collections::HashMap;

use bio::{count_phys_segments, Bio, BioBuilder, BioError, LimitsConfig, Op, QueueLimits};
use bvec::{Bvec, BvecIter, Pfn, PAGE_SIZE};
use iovstack_tests::bio_model::limits_model;
use iovstack_tests::bio_model::{self, ModelLimits};
use iovstack_tests::dptr_walk::{
    coalesce, prp_entries, prp_list_pages_needed, prp_rules_ok, walk_prps, walk_sgl, BusMemory,
};
use nvme::{
    build_prps, build_prps_from_tag, build_sgl, DmaSegment, PremappedPages, PrpLists,
    SglDescriptor, TagRange,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Generators

/// A table entry: `(continue_previous, pfn, offset, len)`; a continuing entry starts where the
/// previous one ended (physically contiguous, a merge candidate that the table keeps separate).
fn table_strategy(max_entries: usize, max_len: u32) -> impl Strategy<Value = Vec<Bvec<Pfn>>> {
    prop::collection::vec(
        (any::<bool>(), 0u64..1 << 22, 0u32..3 * 4096, 1u32..=max_len),
        1..=max_entries,
    )
    .prop_map(|raw| {
        let mut out: Vec<Bvec<Pfn>> = Vec::new();
        for (cont, pfn, off, len) in raw {
            let bv = match out.last() {
                Some(prev) if cont => {
                    let end = prev.page().0 * PAGE_SIZE as u64 + u64::from(prev.end());
                    Bvec::new(
                        Pfn(end / PAGE_SIZE as u64),
                        (end % PAGE_SIZE as u64) as u32,
                        len,
                    )
                }
                // Page-aligned starts and ends are common in real I/O: round some.
                _ if off % 4 == 0 => Bvec::new(Pfn(pfn), 0, len.div_ceil(4096) * 4096),
                // Sector-aligned pieces (what most direct I/O looks like).
                _ if off % 4 == 1 => Bvec::new(Pfn(pfn), off & !511, len.div_ceil(512) * 512),
                _ if off % 4 == 2 && cont => Bvec::new(Pfn(pfn), 0, len.div_ceil(4096) * 4096),
                _ => Bvec::new(Pfn(pfn), off, len),
            };
            out.push(bv.unwrap());
        }
        out
    })
}

fn limits_strategy() -> impl Strategy<Value = QueueLimits> {
    (
        0u32..4,
        0u32..4,
        prop_oneof![Just(0u32), 8u32..600],
        prop_oneof![Just(0u16), 1u16..10, Just(128u16)],
        prop_oneof![
            Just(0u32),
            Just(4096u32),
            Just(6000),
            Just(65536),
            Just(u32::MAX)
        ],
        prop_oneof![
            Just(0u64),
            Just(0xfffu64),
            Just(0x1fff),
            Just(0xffff),
            Just(u64::MAX)
        ],
        prop_oneof![Just(0u32), Just(511u32), Just(4095)],
        0u32..4,
        any::<bool>(),
    )
        .prop_filter_map(
            "invalid limit combination",
            |(lbs, pbs, hw, segs, mss, sbm, vbm, chunk, nvme)| {
                if nvme {
                    return QueueLimits::nvme(512 << lbs, (hw % 8) as u8, 0).ok();
                }
                let lbs_bytes = 512u32 << lbs;
                QueueLimits::new(&LimitsConfig {
                    logical_block_size: lbs_bytes,
                    physical_block_size: lbs_bytes << pbs,
                    max_hw_sectors: hw,
                    max_user_sectors: hw,
                    max_segments: segs,
                    max_segment_size: if vbm != 0 { 0 } else { mss },
                    seg_boundary_mask: sbm,
                    virt_boundary_mask: vbm,
                    chunk_sectors: chunk * 64 * (lbs_bytes >> 9),
                    ..LimitsConfig::default()
                })
                .ok()
            },
        )
}

fn phys_bytes(bio: &Bio<'_, Pfn>) -> Vec<u64> {
    let segs: Vec<_> = bio.segments().collect();
    bio_model::flatten(&segs).iter().map(|b| b.phys).collect()
}

/// Splits the window `[skip, end)` of `table` (rounded to blocks, at `sector_blocks` blocks)
/// repeatedly and checks every piece against the model. Returns whether it ended in
/// `CannotSplit` (which the model must agree with).
fn check_splits(
    table: &[Bvec<Pfn>],
    lim: &QueueLimits,
    skip: u32,
    sector_blocks: u64,
) -> Result<bool, TestCaseError> {
    let lbs = lim.logical_block_size();
    let total: u32 = table.iter().map(|b| b.len()).sum();
    let skip = skip.min(total);
    let size = (total - skip) / lbs * lbs;
    let sector = sector_blocks * u64::from(lbs >> 9);
    let mut it = BvecIter::new(table, 0, total).unwrap();
    it.advance(skip).unwrap();
    let st = it.state();
    let it = BvecIter::from_state(
        table,
        bvec::IterState::new(sector, size, st.idx(), st.done()),
    )
    .unwrap();
    let mut bio = Bio::new(Op::Read, it).unwrap();
    let original = phys_bytes(&bio);
    let m = ModelLimits::from(lim);
    let mut seen: Vec<u64> = Vec::new();
    while !bio.is_empty() {
        let segs: Vec<_> = bio.segments().collect();
        let flat = bio_model::flatten(&segs);
        // bio_may_need_split: a bio counting one in-page entry is sent whole, whatever the limits.
        let first = bio.table().first().map(|b| (b.offset(), b.len()));
        let shortcut = !limits_model::may_need_split(&m, bio.vcnt(), first);
        let want = bio_model::split_point_rw(&flat, bio.sector(), &m, bio.vcnt(), first);
        let start_sector = bio.sector();
        match bio.split_to_limits(lim) {
            Ok((piece, nsegs)) => {
                match want {
                    Ok(None) => prop_assert!(bio.is_empty()),
                    Ok(Some(front)) => prop_assert_eq!(u64::from(piece.size()), front),
                    Err(fitted) => prop_assert!(false, "model cannot split ({fitted}), crate did"),
                }
                prop_assert_eq!(piece.sector(), start_sector);
                let psegs: Vec<_> = piece.segments().collect();
                let pflat = bio_model::flatten(&psegs);
                if let Err(e) = bio_model::check_piece(&pflat, piece.sector(), &m) {
                    prop_assert!(shortcut, "piece violates limits: {e}");
                }
                prop_assert_eq!(u64::from(nsegs), bio_model::count_segments(&pflat, &m));
                prop_assert_eq!(nsegs, piece.nr_phys_segments(lim));
                seen.extend(pflat.iter().map(|b| b.phys));
            }
            Err(BioError::CannotSplit { fitted, .. }) => {
                prop_assert_eq!(want, Err(u64::from(fitted)));
                return Ok(true);
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
    }
    prop_assert_eq!(seen, original);
    Ok(false)
}

// ---------------------------------------------------------------------------------------------
// Splitting and counting

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    /// Repeated `split_to_limits` produces the reference's largest valid fronts, each satisfying
    /// every limit with the reference segment count, and the pieces concatenate to the bio.
    #[test]
    fn split_pieces_match_reference(
        table in table_strategy(20, 12 * 1024),
        lim in limits_strategy(),
        skip in 0u32..5000,
        sector_blocks in 0u64..5000,
    ) {
        check_splits(&table, &lim, skip, sector_blocks)?;
    }

    /// Block-aligned bios (every entry a whole number of blocks; interior boundaries on pages
    /// under a virtual boundary) always split into valid pieces, never `CannotSplit`.
    #[test]
    fn aligned_bios_always_split(
        raw in prop::collection::vec((0u64..1 << 22, 0u32..8, 1u32..12), 1..24),
        lim in limits_strategy(),
        sector_blocks in 0u64..5000,
    ) {
        let lbs = lim.logical_block_size();
        let n = raw.len();
        let table: Vec<Bvec<Pfn>> = raw
            .iter()
            .enumerate()
            .map(|(i, &(pfn, off, blocks))| {
                let paged = lim.virt_boundary_mask() != 0;
                let off = if paged && i != 0 { 0 } else { off * lbs % 4096 };
                let mut len = blocks * lbs;
                if paged && i + 1 != n {
                    len = (off + len).div_ceil(4096) * 4096 - off;
                }
                Bvec::new(Pfn(pfn), off, len).unwrap()
            })
            .collect();
        let cannot = check_splits(&table, &lim, 0, sector_blocks)?;
        prop_assert!(!cannot, "a block-aligned bio could not be split");
    }

    /// `count_phys_segments` equals the reference count on any window, and the by-byte and
    /// incremental reference agree with each other.
    #[test]
    fn segment_count_matches_reference(
        table in table_strategy(24, 40 * 1024),
        lim in limits_strategy(),
        skip in 0u32..20000,
        cut in 0u32..20000,
    ) {
        let total: u32 = table.iter().map(|b| b.len()).sum();
        let skip = skip.min(total);
        let size = total - skip - cut.min(total - skip);
        let mut it = BvecIter::new(&table, 0, total).unwrap();
        it.advance(skip).unwrap();
        it.truncate(size).unwrap();
        let segs: Vec<_> = it.segments().collect();
        let flat = bio_model::flatten(&segs);
        let m = ModelLimits::from(&lim);
        prop_assert_eq!(u64::from(count_phys_segments(it.segments(), &lim)), bio_model::count_segments(&flat, &m));
        let small = &flat[..flat.len().min(3000)];
        prop_assert_eq!(
            bio_model::longest_valid_prefix(small, 0, &m),
            bio_model::longest_valid_prefix_fast(small, 0, &m)
        );
    }

    /// The crate's largest I/O at a sector equals the reference formula.
    #[test]
    fn max_io_matches_reference(lim in limits_strategy(), sector in any::<u64>()) {
        prop_assert_eq!(u64::from(lim.max_io_bytes(sector)), bio_model::max_io_bytes(sector, &ModelLimits::from(&lim)));
    }

    /// `add_page` against a run-list reference: a piece extends the last run when it starts where
    /// the run ends, else opens a new run if one is free; the byte sequence is preserved.
    #[test]
    fn add_page_matches_run_reference(
        adds in prop::collection::vec((any::<bool>(), 0u64..64, 0u32..8192, 0u32..6000), 1..60),
        max_vecs in 1usize..12,
    ) {
        let mut storage = vec![Bvec::new(Pfn(0), 0, 1).unwrap(); max_vecs];
        let mut b = BioBuilder::new(Op::Write, 0, &mut storage).unwrap();
        let mut runs: Vec<(u64, u64)> = Vec::new(); // (phys start, len)
        let mut last_end: Option<u64> = None;
        for (cont, pfn, off, len) in adds {
            let (page, off) = match last_end {
                Some(e) if cont => (Pfn(e / 4096), (e % 4096) as u32),
                _ => (Pfn(pfn), off),
            };
            let start = page.0 * 4096 + u64::from(off);
            let want = if len == 0 {
                0
            } else if runs.last().is_some_and(|r| r.0 + r.1 == start) {
                runs.last_mut().unwrap().1 += u64::from(len);
                len
            } else if runs.len() < max_vecs {
                runs.push((start, u64::from(len)));
                len
            } else {
                0
            };
            prop_assert_eq!(b.add_page(page, len, off), want);
            if want != 0 {
                last_end = Some(start + u64::from(len));
            }
        }
        prop_assert_eq!(b.vcnt(), runs.len());
        let got: Vec<(u64, u64)> = b.vecs().iter().map(|v| (v.page().0 * 4096 + u64::from(v.offset()), u64::from(v.len()))).collect();
        prop_assert_eq!(got, runs);
    }
}

// ---------------------------------------------------------------------------------------------
// NVMe data pointers

const LIST_DMA: [u64; 8] = [
    0x7_0000_0000,
    0x7_0001_0000,
    0x7_0002_0000,
    0x7_0003_0000,
    0x7_0004_0000,
    0x7_0005_0000,
    0x7_0006_0000,
    0x7_0007_0000,
];

/// PRP-valid segments: the first may start at any dword and must end on a page unless it is
/// the last; later ones start on a page; only the last may end mid-page.
fn prp_segments() -> impl Strategy<Value = Vec<DmaSegment>> {
    prop::collection::vec(
        (
            0u64..1 << 30,
            0u32..1024,
            1u32..4096,
            prop_oneof![0u32..4, 0u32..700],
        ),
        1..7,
    )
    .prop_map(|raw| {
        let n = raw.len();
        raw.iter()
            .enumerate()
            .map(|(i, &(page, dw, tail, pages))| {
                let off = if i == 0 { dw * 4 } else { 0 };
                let addr = page * 4096 + u64::from(off);
                let len = if i + 1 == n {
                    (4096 - off) * u32::from(pages > 0) + pages.saturating_sub(1) * 4096 + tail
                } else {
                    (4096 - off) + pages * 4096
                };
                DmaSegment::new(addr, len.max(1))
            })
            .collect()
    })
}

/// Builds PRPs into eight list pages and walks them back.
fn build_and_walk(segs: &[DmaSegment]) -> Result<(nvme::Prps, Vec<(u64, u64)>), String> {
    let mut pages = vec![[0u64; 512]; LIST_DMA.len()];
    let p = {
        let mut lists = PrpLists::new(&mut pages, &LIST_DMA).unwrap();
        build_prps(segs, &mut lists).map_err(|e| e.to_string())?
    };
    let mut mem = BusMemory::default();
    for (d, page) in LIST_DMA.iter().zip(&pages).take(p.plan.list_pages) {
        mem.pages.insert(*d, page.to_vec());
    }
    let total: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
    let ranges = walk_prps(p.prp1, p.prp2, total, &mem)?;
    Ok((p, ranges))
}

/// The independent statement of the PRP rules.
fn prp_valid(segs: &[DmaSegment]) -> bool {
    let raw: Vec<(u64, u32)> = segs.iter().map(|s| (s.addr, s.len)).collect();
    prp_rules_ok(&raw)
}

fn ranges_of(segs: &[DmaSegment]) -> Vec<(u64, u64)> {
    segs.iter().map(|s| (s.addr, u64::from(s.len))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Valid segments give PRPs that a controller walks back to exactly the same bytes.
    #[test]
    fn prps_walk_back_to_segments(segs in prp_segments()) {
        let total_pages: u64 = segs.iter().map(|s| (s.addr % 4096 + u64::from(s.len)).div_ceil(4096)).sum();
        let (p, ranges) = match build_and_walk(&segs) {
            Ok(r) => r,
            Err(e) => {
                // Only too many list pages is acceptable, and only for very long transfers.
                prop_assert!(e.contains("list needs"), "{e}");
                prop_assert!(total_pages - 1 > 511 * 7 + 512);
                return Ok(());
            }
        };
        prop_assert_eq!(p.plan.entries as u64, total_pages);
        let raw: Vec<(u64, u32)> = segs.iter().map(|s| (s.addr, s.len)).collect();
        prop_assert_eq!(prp_entries(&raw), total_pages);
        prop_assert_eq!(p.plan.list_pages as u64, prp_list_pages_needed(total_pages));
        prop_assert_eq!(coalesce(&ranges), coalesce(&ranges_of(&segs)));
    }

    /// Arbitrary segments: built iff the independent rule check accepts them, and then correct.
    #[test]
    fn prp_rules_are_enforced(
        raw in prop::collection::vec((0u64..64, prop_oneof![Just(0u64), 0u64..4096], prop_oneof![Just(4096u32), 0u32..9000]), 1..5)
    ) {
        let segs: Vec<DmaSegment> = raw.iter().map(|&(p, o, l)| DmaSegment::new(p * 4096 + o, l)).collect();
        match build_and_walk(&segs) {
            Ok((_, ranges)) => {
                prop_assert!(prp_valid(&segs));
                prop_assert_eq!(coalesce(&ranges), coalesce(&ranges_of(&segs)));
            }
            Err(_) => prop_assert!(!prp_valid(&segs)),
        }
    }

    /// The one-pass fill of a one-page list (`nvme::prp_fill`, the driver's multi-segment
    /// path): accepted exactly when the independent rule check accepts, with the independent
    /// entry count, and the list it wrote walks back to the segments. Arbitrary segments (most
    /// break a rule) and valid ones (long enough to need a list), and lists too short for them.
    #[test]
    fn prp_fill_matches_the_rules_and_walks_back(
        segs in prop_oneof![
            prp_segments(),
            prop::collection::vec(
                (0u64..64, prop_oneof![Just(0u64), 0u64..4096], prop_oneof![Just(4096u32), 0u32..9000]),
                1..5,
            )
            .prop_map(|raw| raw.iter().map(|&(p, o, l)| DmaSegment::new(p * 4096 + o, l)).collect()),
        ],
        cap in prop_oneof![Just(512usize), 0usize..600],
    ) {
        const LIST: u64 = 0x7_7777_0000;
        let raw: Vec<(u64, u32)> = segs.iter().map(|s| (s.addr, s.len)).collect();
        let mut list = vec![0u64; cap];
        match nvme::prp_fill(segs.iter().copied(), &mut list) {
            Err(_) => prop_assert!(!prp_valid(&segs)),
            Ok(f) => {
                prop_assert!(prp_valid(&segs));
                prop_assert_eq!(f.prp1, segs[0].addr);
                prop_assert_eq!(f.list_entries as u64 + 1, prp_entries(&raw));
                // Walk it as a controller would when it fits the page: PRP2 is the entry
                // itself for two entries, else the list's address.
                if f.list_entries <= cap.min(512) && f.list_entries >= 1 {
                    let mut mem = BusMemory::default();
                    let prp2 = if f.list_entries == 1 {
                        u64::from_le(list[0])
                    } else {
                        let mut page = list[..f.list_entries].to_vec();
                        page.resize(512, 0);
                        mem.pages.insert(LIST, page);
                        LIST
                    };
                    let total: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
                    let ranges = walk_prps(f.prp1, prp2, total, &mem).map_err(TestCaseError::fail)?;
                    prop_assert_eq!(coalesce(&ranges), coalesce(&ranges_of(&segs)));
                }
            }
        }
    }

    /// The one-segment fast path (`nvme_setup_prp_simple()`): PRPs exactly when the
    /// independent rule check accepts the segment and it touches at most two controller pages,
    /// and then a controller walks them back to the segment, with PRP2 0 when it is unused.
    #[test]
    fn prp_simple_matches_the_rules_and_walks_back(
        page in prop_oneof![0u64..1 << 40, Just(u64::MAX / 4096)],
        off in prop_oneof![0u64..4096, (0u64..1024).prop_map(|d| d * 4), Just(0u64)],
        len in prop_oneof![0u32..9000, Just(4096u32), Just(8192u32), any::<u32>()],
    ) {
        let addr = page * 4096 + off;
        let seg = DmaSegment::new(addr, len);
        let raw = [(addr, len)];
        let simple = prp_valid(&[seg]) && prp_entries(&raw) <= 2;
        match nvme::prp_simple(seg) {
            Some((prp1, prp2)) => {
                prop_assert!(simple);
                let ranges = walk_prps(prp1, prp2, u64::from(len), &BusMemory::default());
                prop_assert_eq!(coalesce(&ranges.map_err(TestCaseError::fail)?), vec![(addr, u64::from(len))]);
                prop_assert_eq!(prp2 == 0, prp_entries(&raw) == 1);
            }
            None => prop_assert!(!simple),
        }
    }

    /// SGLs decode back to the segments, in order.
    #[test]
    fn sgl_walks_back_to_segments(raw in prop::collection::vec((any::<u32>(), 1u32..1 << 20), 1..40)) {
        let segs: Vec<DmaSegment> = raw.iter().map(|&(a, l)| DmaSegment::new(u64::from(a) << 7, l)).collect();
        let mut list = [SglDescriptor::default(); 64];
        let s = build_sgl(segs.iter().copied(), &mut list, 0x5000).unwrap();
        let mut lists = HashMap::new();
        lists.insert(0x5000u64, list.iter().map(|d| d.to_bytes()).collect::<Vec<_>>());
        let ranges = walk_sgl(s.dptr.to_bytes(), &lists).unwrap();
        prop_assert_eq!(ranges, ranges_of(&segs));
    }

    /// PRPs computed from a premapped page table equal those built by mapping the same bytes
    /// per I/O, and walk back to the right bus addresses.
    #[test]
    fn tag_prps_equal_per_io_mapping(
        table in prop::collection::vec((0u64..1 << 24, any::<bool>()), 1..700),
        fpo_dw in 0u32..1024,
        off_dw in 0u64..1 << 20,
        len in 1u32..3 << 20,
    ) {
        let mut pages: Vec<u64> = Vec::new();
        for (p, cont) in table {
            let addr = match pages.last() {
                Some(&prev) if cont => prev + 4096,
                _ => p * 4096,
            };
            pages.push(addr);
        }
        let fpo = fpo_dw * 4;
        let buf_len = pages.len() as u64 * 4096 - u64::from(fpo);
        let offset = (off_dw * 4) % buf_len;
        let len = len.min((buf_len - offset) as u32);
        let buf = PremappedPages::new(&pages, fpo, buf_len).unwrap();
        let r = TagRange { offset, len };
        // Per-I/O mapping: one segment per page piece.
        let mut segs = Vec::new();
        let mut pos = u64::from(fpo) + offset;
        let end = pos + u64::from(len);
        while pos < end {
            let n = (4096 - pos % 4096).min(end - pos);
            segs.push(DmaSegment::new(pages[(pos / 4096) as usize] + pos % 4096, n as u32));
            pos += n;
        }
        let mut a = vec![[0u64; 512]; 2];
        let mut b = vec![[0u64; 512]; 2];
        let pa = build_prps_from_tag(&buf, r, &mut PrpLists::new(&mut a, &LIST_DMA[..2]).unwrap());
        let pb = build_prps(&segs, &mut PrpLists::new(&mut b, &LIST_DMA[..2]).unwrap());
        prop_assert_eq!(&pa, &pb);
        prop_assert_eq!(&a, &b);
        if let Ok(p) = pa {
            let mut mem = BusMemory::default();
            for (d, page) in LIST_DMA.iter().zip(&a).take(p.plan.list_pages) {
                mem.pages.insert(*d, page.to_vec());
            }
            let ranges = walk_prps(p.prp1, p.prp2, u64::from(len), &mem).unwrap();
            prop_assert_eq!(coalesce(&ranges), coalesce(&ranges_of(&segs)));
        }
    }
}
