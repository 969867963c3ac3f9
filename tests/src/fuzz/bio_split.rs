//! Fuzz target `bio_split`: decode queue limits and a bio, poke it with advance/trim/split, then
//! split it to the limits until it is used up, checking every piece against the limits and
//! (for small bios) against the per-byte reference model of `bio_model`. A bio too large for the
//! model is split at its front and at its tail only (its middle is skipped with an advance).

use bio::{Bio, BioError, LimitsConfig, Op, QueueLimits, SplitPoint};
use bvec::{Bvec, BvecIter, IterState, Pfn};

use super::input::{Amount, Decoder, Encoder, Entry};
use crate::bio_model::limits_model;
use crate::bio_model::{self, ModelLimits};

/// Bios up to this many bytes are also checked against the per-byte model.
const MODEL_LIMIT: u32 = 64 * 1024;
/// Pokes decoded before splitting, at most.
const MAX_POKES: usize = 8;
/// A bio larger than [`MODEL_LIMIT`] is split this many times from its front ...
const FRONT_PIECES: u32 = 64;
/// ... then, if more than this many bytes are left, advanced to its last `TAIL_BYTES` (a whole
/// number of any logical block size), which are split to the end: a bio of several GiB cut into
/// pages would otherwise take a million splits per input, all alike but for the sector.
const TAIL_BYTES: u32 = 256 * 1024;

/// Decodes limits: a mode byte (`% 4 == 0`: NVMe limits from an MDTS byte and a block-size
/// byte), otherwise nine bytes of `LimitsConfig` fields. Invalid configurations fall back to the
/// NVMe defaults after checking that validation refused them without panicking.
fn limits(d: &mut Decoder<'_>) -> QueueLimits {
    let fallback = || QueueLimits::nvme(512, 0, 0).expect("NVMe defaults are valid");
    if d.u8() % 4 == 0 {
        let mdts = d.u8() % 9;
        return QueueLimits::nvme(512 << (d.u8() % 4), mdts, 0).unwrap_or_else(|_| fallback());
    }
    let lbs = 512u32 << (d.u8() % 5); // 8192 is invalid on purpose
    let cfg = LimitsConfig {
        logical_block_size: lbs,
        physical_block_size: lbs << (d.u8() % 4),
        max_hw_sectors: u32::from(d.u16()),
        max_user_sectors: u32::from(d.u8()) * 8,
        max_segments: u16::from(d.u8() % 12),
        max_segment_size: [0, 4096, 6000, 65536, u32::MAX, 100][usize::from(d.u8() % 6)],
        seg_boundary_mask: [0, 0xfff, 0x1fff, 0xffff, u64::MAX, 0x800][usize::from(d.u8() % 6)],
        virt_boundary_mask: [0, 0, 511, 4095, 0x300][usize::from(d.u8() % 5)],
        chunk_sectors: u32::from(d.u8()) * 8,
        ..LimitsConfig::default()
    };
    QueueLimits::new(&cfg).unwrap_or_else(|_| fallback())
}

fn flat(bio: &Bio<'_, Pfn>) -> Vec<bio_model::Byte> {
    let segs: Vec<Bvec<Pfn>> = bio.segments().collect();
    bio_model::flatten(&segs)
}

/// Decodes `data` and checks every split; panics on a broken invariant.
///
/// Input: limits (see `limits` below), a table (see [`Decoder::table`]), then pokes: an op byte
/// (`% 4`: advance, trim, split keeping the back, stop) with an amount.
pub fn run(data: &[u8]) {
    let mut d = Decoder::new(data);
    let lim = limits(&mut d);
    let (table, sector, size) = d.table();
    let it = BvecIter::new(&table, sector, size).expect("decoded size fits the table");
    let mut bio = Bio::new(Op::Write, it).expect("writes carry data");

    for _ in 0..MAX_POKES {
        let op = d.u8() % 4;
        if d.is_empty() || op == 3 {
            break;
        }
        let n = d.amount(u64::from(bio.size()), 4096);
        let before = (bio.sector(), bio.size());
        match op {
            0 => match bio.advance(n) {
                Ok(()) => assert_eq!(bio.size(), before.1 - n),
                Err(_) => {
                    assert!(n > before.1);
                    assert_eq!(
                        (bio.sector(), bio.size()),
                        before,
                        "failed advance changed the bio"
                    );
                }
            },
            1 => {
                let (off, len) = (n & 0xff, (n >> 8) & 0xffff);
                let fits = (u64::from(off) + u64::from(len)) * 512 <= u64::from(before.1);
                assert_eq!(bio.trim(off, len).is_ok(), fits);
                if fits {
                    assert_eq!(bio.size(), len * 512);
                } else {
                    assert_eq!((bio.sector(), bio.size()), before);
                }
            }
            _ => {
                let valid = n > 0 && n < before.1 && n % 512 == 0;
                match bio.split(n) {
                    Ok(front) => {
                        assert!(valid);
                        assert_eq!((front.sector(), front.size()), (before.0, n));
                        assert_eq!(bio.size(), before.1 - n);
                        assert!(std::ptr::eq(front.table(), bio.table()));
                    }
                    Err(e) => {
                        assert!(!valid, "split {n} of {} refused: {e}", before.1);
                        assert_eq!((bio.sector(), bio.size()), before);
                    }
                }
            }
        }
    }

    // Alignment is checked before anything else.
    let lbs = lim.logical_block_size();
    let lbs_sectors = u64::from(lbs >> 9);
    let aligned = bio.sector() % lbs_sectors == 0 && bio.size() % lbs == 0;
    match bio.split_point(&lim) {
        Err(BioError::Unaligned { .. }) => assert!(!aligned),
        _ => assert!(aligned, "unaligned bio accepted"),
    }
    if !aligned {
        let st = bio.bvec_iter().expect("a write has a window").state();
        let state = IterState::new(
            st.sector() / lbs_sectors * lbs_sectors,
            st.size() / lbs * lbs,
            st.idx(),
            st.done(),
        );
        let it = BvecIter::from_state(&table, state).expect("a shrunk window is valid");
        bio = Bio::new(Op::Write, it).expect("writes carry data");
    }

    split_all(bio, &lim);
}

/// Splits `bio` to `lim` until it is empty, checking each piece. A bio of more than
/// [`MODEL_LIMIT`] bytes skips its middle (see [`TAIL_BYTES`]).
fn split_all(mut bio: Bio<'_, Pfn>, lim: &QueueLimits) {
    let m = ModelLimits::from(lim);
    let total = bio.size();
    let small = total <= MODEL_LIMIT;
    // The model works on the bytes of the original bio: what is left after `done` bytes were
    // split off is `original[done..]` (entry numbers only matter for equality, so the slice
    // needs no renumbering), which keeps the whole run linear in the bio size.
    let original = if small { flat(&bio) } else { Vec::new() };
    let mut seen: Vec<u64> = Vec::new();
    let mut done: u64 = 0;
    let mut pieces = 0u32;
    while !bio.is_empty() {
        if !small && pieces == FRONT_PIECES && bio.size() > TAIL_BYTES {
            let skip = bio.size() - TAIL_BYTES;
            let before = bio.sector();
            bio.advance(skip).expect("skip inside the bio");
            assert_eq!(bio.sector(), before.wrapping_add(u64::from(skip >> 9)));
            done += u64::from(skip);
        }
        pieces += 1;
        // bio_may_need_split: a bio counting one in-page entry is sent whole, whatever the limits.
        let first = bio.table().first().map(|b| (b.offset(), b.len()));
        let shortcut = !limits_model::may_need_split(&m, bio.vcnt(), first);
        let want = small.then(|| {
            let rest = &original[done as usize..];
            bio_model::split_point_rw(rest, bio.sector(), &m, bio.vcnt(), first)
        });
        let point = bio.split_point(lim);
        let start = bio.sector();
        match bio.split_to_limits(lim) {
            Ok((piece, nsegs)) => {
                match point {
                    Ok(SplitPoint::Whole { nsegs: n }) => {
                        assert_eq!(n, nsegs);
                        assert!(bio.is_empty());
                    }
                    Ok(SplitPoint::Front { bytes, nsegs: n }) => {
                        assert_eq!((bytes, n), (piece.size(), nsegs));
                    }
                    Err(e) => panic!("split_point failed ({e}) but split_to_limits worked"),
                }
                assert_eq!(piece.sector(), start);
                assert!(piece.size() > 0 && piece.size() % lim.logical_block_size() == 0);
                assert!(shortcut || u64::from(piece.size()) <= bio_model::max_io_bytes(start, &m));
                assert!(nsegs <= u32::from(lim.max_segments()));
                assert_eq!(nsegs, piece.nr_phys_segments(lim));
                if let Some(want) = want {
                    let pf = flat(&piece);
                    match want {
                        Ok(None) => assert_eq!(u64::from(piece.size()), pf.len() as u64),
                        Ok(Some(front)) => assert_eq!(u64::from(piece.size()), front),
                        Err(fitted) => panic!("model cannot split ({fitted}) but the crate did"),
                    }
                    if let Err(e) = bio_model::check_piece(&pf, start, &m) {
                        assert!(shortcut, "piece violates limits: {e}");
                    }
                    assert_eq!(u64::from(nsegs), bio_model::count_segments(&pf, &m));
                    seen.extend(pf.iter().map(|b| b.phys));
                }
                done += u64::from(piece.size());
            }
            Err(BioError::CannotSplit { fitted, .. }) => {
                assert!(matches!(point, Err(BioError::CannotSplit { .. })));
                if let Some(want) = want {
                    assert_eq!(want, Err(u64::from(fitted)));
                }
                return;
            }
            Err(e) => panic!("unexpected split error {e}"),
        }
    }
    assert_eq!(done, u64::from(total));
    if small {
        let want: Vec<u64> = original.iter().map(|b| b.phys).collect();
        assert_eq!(seen, want, "pieces do not concatenate to the bio");
    }
}

/// Seed inputs: NVMe and custom limits over tables with gaps, contiguous runs and huge entries.
pub fn seeds() -> Vec<Vec<u8>> {
    let tables: [&[Entry]; 4] = [
        &[
            Entry::Pages(1, 0, 8),
            Entry::Pages(20, 1, 3),
            Entry::Small(40, 0, 2048),
        ],
        &[
            Entry::Small(1, 512, 3584),
            Entry::Pages(2, 0, 8),
            Entry::Edge(9, 1, 0, 100),
        ],
        &[Entry::Huge(0, 0, 1 << 26), Entry::Pages(7, 0, 1)],
        &[
            Entry::Edge(3, 4, 0, 512),
            Entry::Edge(3, 7, 1, 4096),
            Entry::Small(5, 4000, 9000),
        ],
    ];
    let limit_heads: [&[u8]; 4] = [
        &[0, 0, 0],                          // NVMe, no MDTS, 512
        &[0, 5, 3],                          // NVMe, MDTS 5, 4096
        &[1, 0, 1, 64, 0, 0, 3, 1, 0, 0, 0], // 512, pbs 1024, 64 sectors, 3 segs, 4 KiB segs
        &[2, 1, 0, 0, 1, 0, 0, 0, 3, 2, 4],  // 1024, 256 sectors, 64 KiB window, vbm 511, chunk 32
    ];
    let mut out = vec![Vec::new()];
    for head in limit_heads {
        for table in tables {
            for size in [255u8, 130] {
                let base = || Encoder::new().raw(head).table(table, 16, size);
                out.push(base().op(3).finish());
                out.push(base().op(2).amount(Amount::Raw(4096)).op(3).finish());
                out.push(base().op(0).amount(Amount::Raw(1000)).op(3).finish());
                out.push(base().op(1).amount(Amount::Raw(0x40_04)).op(3).finish());
            }
        }
    }
    out
}
