//! Identify parsing of the `nvme` crate against an independent reading of the NVMe layout:
//! Identify Namespace (NSZE, NLBAF, FLBAS including the high index bits, the LBA format list),
//! Identify Controller (entry sizes, limits, feature bits, padded strings) and the active
//! namespace list. Buffers are built field by field from the specification's byte offsets.

use nvme::{active_namespaces, Cap, IdentifyController, IdentifyError, IdentifyNamespace};
use proptest::prelude::*;

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn namespace_geometry_follows_the_formatted_lba_format(
        nsze in prop_oneof![Just(0u64), 1u64..1 << 40, any::<u64>()],
        nlbaf in 0u8..64,
        flbas in any::<u8>(),
        formats in prop::collection::vec((prop_oneof![4 => Just(0u16), 1 => any::<u16>()], prop_oneof![4 => 9u8..=12, 1 => any::<u8>()]), 64),
    ) {
        let mut b = vec![0u8; 4096];
        put(&mut b, 0, &nsze.to_le_bytes());
        put(&mut b, 8, &nsze.to_le_bytes());
        b[25] = nlbaf;
        b[26] = flbas;
        for (i, &(ms, lbads)) in formats.iter().enumerate() {
            put(&mut b, 128 + 4 * i, &ms.to_le_bytes());
            b[128 + 4 * i + 2] = lbads;
        }
        // Index: FLBAS bits 3:0, plus bits 6:5 as index bits 5:4 when NLBAF > 16 formats.
        let index = (flbas & 0x0f) | if nlbaf >= 16 { ((flbas >> 5) & 3) << 4 } else { 0 };
        let want = if index > nlbaf {
            Err(IdentifyError::LbaFormatIndex { index, nlbaf })
        } else {
            let (ms, lbads) = formats[usize::from(index)];
            if !(9..=12).contains(&lbads) {
                Err(IdentifyError::BlockSize { lbads })
            } else if ms != 0 {
                Err(IdentifyError::Metadata { ms })
            } else if nsze == 0 || nsze.checked_mul(1 << (lbads - 9)).is_none() {
                Err(IdentifyError::Capacity { nsze })
            } else {
                Ok((1u32 << lbads, nsze * (1 << (lbads - 9))))
            }
        };
        let got = IdentifyNamespace::parse(&b).map(|ns| (ns.block_size(), ns.capacity_sectors()));
        prop_assert_eq!(got, want);
        if let Ok(ns) = IdentifyNamespace::parse(&b) {
            prop_assert_eq!(ns.format(), index);
            prop_assert_eq!(ns.lba_to_sector(nsze), None);
            prop_assert_eq!(ns.lba_to_sector(0), Some(0));
            prop_assert_eq!(ns.sector_to_lba(ns.capacity_sectors() - 1), nsze - 1);
        }
    }

    #[test]
    fn controller_fields_and_entry_sizes(
        sqes in any::<u8>(),
        cqes in any::<u8>(),
        mdts in any::<u8>(),
        mpsmin in 0u8..16,
        nn in any::<u32>(),
        oncs in any::<u16>(),
        vwc in any::<u8>(),
        sgls in any::<u32>(),
        rtd3e in any::<u32>(),
        serial in "[A-Z0-9]{0,20}",
    ) {
        let mut b = vec![0u8; 4096];
        let mut sn = [b' '; 20];
        sn[..serial.len()].copy_from_slice(serial.as_bytes());
        put(&mut b, 4, &sn);
        b[77] = mdts;
        put(&mut b, 88, &rtd3e.to_le_bytes());
        b[512] = sqes;
        b[513] = cqes;
        put(&mut b, 516, &nn.to_le_bytes());
        put(&mut b, 520, &oncs.to_le_bytes());
        b[525] = vwc;
        put(&mut b, 536, &sgls.to_le_bytes());
        // Required (bits 3:0) <= wanted <= maximum (bits 7:4), or the field not reported.
        let ok = |v: u8, want: u8| v == 0 || (v & 15 <= want && want <= v >> 4);
        let r = IdentifyController::parse(&b);
        prop_assert_eq!(r.is_ok(), ok(sqes, 6) && ok(cqes, 4));
        let Ok(id) = r else { return Ok(()) };
        prop_assert_eq!(id.serial(), serial.as_bytes());
        prop_assert_eq!((id.mdts(), id.nn(), id.rtd3e()), (mdts, nn, rtd3e));
        prop_assert_eq!(id.supports_dsm(), oncs & 4 != 0);
        prop_assert_eq!(id.supports_write_zeroes(), oncs & 8 != 0);
        prop_assert_eq!(id.volatile_write_cache(), vwc & 1 != 0);
        prop_assert_eq!(id.supports_sgls(), sgls & 3 != 0);
        // MDTS in units of the minimum page, capped at 8 MiB (16384 sectors); 0 = no limit.
        let bytes = if mdts == 0 { u128::MAX } else { 1u128 << (u32::from(mdts) + u32::from(mpsmin) + 12).min(100) };
        let want = (bytes / 512).min(16384) as u32;
        prop_assert_eq!(id.max_hw_sectors(Cap::from_raw(u64::from(mpsmin) << 48)), want);
    }

    #[test]
    fn active_namespace_list_is_strictly_increasing(
        ids in prop::collection::vec(any::<u32>(), 0..1100),
        nn in any::<u32>(),
    ) {
        let mut b = vec![0u8; 4096];
        for (i, id) in ids.iter().take(1024).enumerate() {
            put(&mut b, 4 * i, &id.to_le_bytes());
        }
        // The list ends at the first zero or after 1024 entries.
        let list: Vec<u32> = ids.iter().take(1024).copied().take_while(|&id| id != 0).collect();
        let bad = list.windows(2).position(|w| w[1] <= w[0]);
        let mut out = vec![0u32; 1024];
        let r = active_namespaces(&b, nn, &mut out);
        match bad {
            Some(i) => prop_assert_eq!(r, Err(IdentifyError::NamespaceOrder { index: i + 1, nsid: list[i + 1] })),
            None => {
                let want: Vec<u32> = list.iter().copied().filter(|&id| id <= nn).collect();
                prop_assert_eq!(r, Ok(want.len()));
                prop_assert_eq!(&out[..want.len()], want.as_slice());
            }
        }
    }
}

#[test]
fn short_buffers_are_refused() {
    for len in [0, 100, 4095, 4097] {
        let b = vec![0u8; len];
        assert_eq!(
            IdentifyController::parse(&b),
            Err(IdentifyError::Length { len })
        );
        assert_eq!(
            IdentifyNamespace::parse(&b),
            Err(IdentifyError::Length { len })
        );
        assert_eq!(
            active_namespaces(&b, 1, &mut [0; 4]),
            Err(IdentifyError::Length { len })
        );
    }
}
