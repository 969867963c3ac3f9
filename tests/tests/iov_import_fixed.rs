//! `BvecTable` and `IovIter::import_fixed` against an independent model of io_uring/rsrc.c
//! `io_import_fixed()`'s arithmetic (whole entries after the first skipped by
//! `offset >> folio_shift`), and `BvecTable::position` against a plain walk.

use bvec::{Bvec, Pfn};
use iov::{BvecTable, IovError, IovIter, Source};
use proptest::prelude::*;

/// The iterator state `io_import_fixed()` leaves: (first entry index, `nr_segs`, `iov_offset`,
/// `count`), written from the kernel's arithmetic for a table whose entries after the first are
/// `1 << shift` bytes (the last at most that).
fn kernel_import(
    lens: &[u32],
    shift: u32,
    offset: usize,
    len: usize,
) -> (usize, usize, usize, usize) {
    let (mut idx, mut nr_segs, mut iov_offset, mut count) = (0, lens.len(), 0, offset + len);
    if offset != 0 {
        let first = lens[0] as usize;
        if offset < first {
            count -= offset;
            iov_offset = offset;
        } else {
            let rest = offset - first;
            let seg_skip = 1 + (rest >> shift);
            idx = seg_skip;
            nr_segs -= seg_skip;
            count -= first + rest;
            iov_offset = rest & ((1 << shift) - 1);
        }
    }
    (idx, nr_segs, iov_offset, count)
}

/// A registration as io_uring builds it: the first entry from the buffer's in-page offset to the
/// end of its folio (or shorter, for a one-entry buffer), full folios, a last partial folio.
fn registration() -> impl Strategy<Value = (Vec<Bvec<Pfn>>, u32)> {
    (
        12u32..15,
        0u32..4096,
        0usize..40,
        1u32..=1 << 14,
        any::<bool>(),
    )
        .prop_map(|(shift, first_off, middle, last, single)| {
            let stride = 1u32 << shift;
            let bv = |p: u64, o: u32, l: u32| Bvec::new(Pfn(p), o, l).expect("valid entry");
            if single {
                return (
                    vec![bv(1, first_off, 1 + last % (stride - first_off))],
                    shift,
                );
            }
            let mut v = vec![bv(1, first_off, stride - first_off)];
            v.extend((0..middle).map(|i| bv(10 + 4 * i as u64, 0, stride)));
            v.push(bv(7, 0, 1 + (last - 1) % stride));
            (v, shift)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn import_matches_io_import_fixed((table, shift) in registration(), a in any::<usize>(), b in any::<usize>()) {
        let lens: Vec<u32> = table.iter().map(|b| b.len()).collect();
        let total: usize = lens.iter().map(|&l| l as usize).sum();
        let reg = BvecTable::new(&table).unwrap();
        prop_assert_eq!(reg.total(), total);
        prop_assert!(reg.stride_shift().is_some());
        // Often the table end or an entry boundary, else anywhere.
        let offset = match a % 4 {
            0 => total,
            1 => (lens[0] as usize + (a >> 8 << shift)).min(total),
            _ => a % (total + 1),
        };
        let len = b % (total - offset + 1);
        let it = IovIter::<Pfn, Source>::import_fixed(&reg, offset, len).unwrap();
        let got = (it.segment_index(), it.nr_segs(), it.iov_offset(), it.count());
        let want = kernel_import(&lens, shift, offset, len);
        if offset == total && want.2 != 0 {
            // An import at the very end of a table whose last folio is partial: the kernel's
            // arithmetic stops at (last entry, its length), an unnormalised position with
            // nothing left; ours is normalised to (entries, 0), as an advance lands there
            // (docs/DEVIATIONS.md). Nothing can be copied from either.
            prop_assert_eq!(got, (lens.len(), 0, 0, 0));
            prop_assert_eq!((want.0, want.1, want.2 as u32, want.3), (lens.len() - 1, 1, lens[lens.len() - 1], 0));
        } else {
            prop_assert_eq!(got, want);
        }
        prop_assert_eq!(it.consumed(), offset);
        // Out of range, as the kernel's -EFAULT: typed errors.
        prop_assert_eq!(
            IovIter::<Pfn, Source>::import_fixed(&reg, offset, total - offset + 1).unwrap_err(),
            IovError::CountExceedsSegments { count: total - offset + 1, available: total - offset }
        );
        prop_assert!(IovIter::<Pfn, Source>::import_fixed(&reg, total + 1, 0).is_err());
    }

    #[test]
    fn position_matches_walk(lens in prop::collection::vec(prop_oneof![3 => Just(4096u32), 1 => 1u32..9000], 0..8), first in 1u32..9000) {
        let mut table = vec![Bvec::new(Pfn(1), 0, first).unwrap()];
        table.extend(lens.iter().map(|&l| Bvec::new(Pfn(2), 0, l).unwrap()));
        let reg = BvecTable::new(&table).unwrap();
        let total: usize = table.iter().map(|b| b.len() as usize).sum();
        // Independent: where a plain advance from the start lands.
        for byte in (0..=total).step_by(97).chain([total]) {
            let mut it = IovIter::<Pfn, Source>::bvec(&table, total).unwrap();
            it.advance(byte);
            prop_assert_eq!(reg.position(byte), Some((it.segment_index(), it.iov_offset())));
        }
        prop_assert_eq!(reg.position(total + 1), None);
        let n = table.len();
        let strided = n < 3
            || (table[1].len().is_power_of_two()
                && table[1..n - 1].iter().all(|b| b.len() == table[1].len())
                && table[n - 1].len() <= table[1].len());
        prop_assert_eq!(reg.stride_shift().is_some(), strided);
    }
}
