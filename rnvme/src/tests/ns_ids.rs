//! `NsIds` and `Wwid` against `nvme_identify_ns_descs()`, `nvme_process_ns_desc()`,
//! `nvme_ns_info_from_identify()` (`drivers/nvme/host/core.c`) and `wwid_show()`
//! (`drivers/nvme/host/sysfs.c`), each expected value written out by hand.

use std::{
    format,
    string::{String, ToString},
};

use crate::{bogus_nid, NsDescError, NsIds, Wwid};

/// A descriptor list of `(nidt, nid)` entries.
fn list(entries: &[(u8, &[u8])]) -> [u8; 4096] {
    let mut b = [0u8; 4096];
    let mut pos = 0;
    for (t, nid) in entries {
        b[pos] = *t;
        b[pos + 1] = nid.len() as u8;
        b[pos + 4..pos + 4 + nid.len()].copy_from_slice(nid);
        pos += 4 + nid.len();
    }
    b
}

fn wwid(ids: &NsIds, serial: &[u8], model: &[u8], nsid: u32) -> String {
    Wwid {
        ids,
        vid: 0x8086,
        serial,
        model,
        nsid,
    }
    .to_string()
}

#[test]
fn every_known_type_and_skips() {
    let l = list(&[
        (4, &[0]),        // CSI: skipped
        (9, &[1, 2, 3]),  // unknown: skipped
        (2, &[0xab; 16]), // NGUID
        (1, &[0xcd; 8]),  // EUI64
        (3, &[0xef; 16]), // UUID
    ]);
    let mut ids = NsIds::default();
    ids.read_descriptors(&l, false).unwrap();
    assert_eq!(
        ids,
        NsIds {
            eui64: [0xcd; 8],
            nguid: [0xab; 16],
            uuid: [0xef; 16]
        }
    );
    // The QEMU quirk: lengths checked, nothing taken.
    let mut ids = NsIds::default();
    ids.read_descriptors(&l, true).unwrap();
    assert_eq!(ids, NsIds::default());
}

#[test]
fn bogus_lengths_stop_the_walk() {
    for (t, len) in [(1u8, 16usize), (2, 8), (3, 15), (4, 2)] {
        let nid = [7u8; 16];
        let l = list(&[(1, &[0x55; 8]), (t, &nid[..len]), (3, &[0x66; 16])]);
        let mut ids = NsIds::default();
        assert_eq!(
            ids.read_descriptors(&l, false),
            Err(NsDescError::BogusLength {
                nidt: t,
                nidl: len as u8
            })
        );
        // What came before is kept; nothing after it is read.
        assert_eq!((ids.eui64, ids.uuid), ([0x55; 8], [0; 16]));
    }
}

#[test]
fn the_walk_ends_at_the_buffer() {
    // A descriptor whose data would run past 4096 bytes ends the walk, as does NIDL 0.
    let mut l = [0u8; 4096];
    l[4088..4092].copy_from_slice(&[3, 16, 0, 0]);
    let mut pad = 0;
    while pad + 4 + 200 <= 4088 {
        l[pad] = 9;
        l[pad + 1] = 200;
        pad += 204;
    }
    // Pad the gap up to 4088 with one unknown descriptor of the right length.
    let gap = 4088 - pad - 4;
    l[pad] = 9;
    l[pad + 1] = gap as u8;
    let mut ids = NsIds::default();
    assert_eq!(ids.read_descriptors(&l, false), Ok(()));
    assert_eq!(ids.uuid, [0; 16]);
    let mut ids = NsIds::default();
    assert_eq!(ids.read_descriptors(&[3, 16, 0, 0], false), Ok(()));
    assert_eq!(ids.read_descriptors(&[], false), Ok(()));
}

#[test]
fn identify_fills_only_what_is_missing() {
    let mut id = [0u8; 4096];
    id[104..120].copy_from_slice(&[0x33; 16]);
    id[120..128].copy_from_slice(&[0x44; 8]);
    let mut ids = NsIds {
        eui64: [0x99; 8],
        ..NsIds::default()
    };
    ids.fill_from_identify(&id, 0x0001_0300, false);
    assert_eq!((ids.eui64, ids.nguid), ([0x99; 8], [0x33; 16]));
    let mut ids = NsIds::default();
    ids.fill_from_identify(&id, 0x0001_0000, false); // NVMe 1.0: neither
    assert_eq!(ids, NsIds::default());
    ids.fill_from_identify(&id, 0x0002_0000, true); // the quirk: neither
    assert_eq!(ids, NsIds::default());
}

#[test]
fn wwid_order_and_formats() {
    let sn = *b"S123  \0\0            ";
    let mn = [b'M'; 40];
    let none = NsIds::default();
    assert_eq!(
        wwid(&none, &sn, &mn, 0x1_0002),
        format!("nvme.8086-53313233-{}-00010002", "4d".repeat(40))
    );
    // An all-padding serial prints as nothing.
    assert_eq!(wwid(&none, &[b' '; 20], b"A", 1), "nvme.8086--41-00000001");
    let eui = NsIds {
        eui64: [0, 1, 2, 3, 4, 5, 6, 0xff],
        ..none
    };
    assert_eq!(wwid(&eui, &sn, &mn, 1), "eui.00010203040506ff");
    let nguid = NsIds {
        nguid: [0xa0; 16],
        ..eui
    };
    assert_eq!(
        wwid(&nguid, &sn, &mn, 1),
        format!("eui.{}", "a0".repeat(16))
    );
    let mut uuid = nguid;
    uuid.uuid = [
        0xde, 0xad, 0xbe, 0xef, 0, 1, 0x40, 2, 0x80, 3, 0, 0, 0, 0, 0, 0x0a,
    ];
    assert_eq!(
        wwid(&uuid, &sn, &mn, 1),
        "uuid.deadbeef-0001-4002-8003-00000000000a"
    );
}

#[test]
fn only_qemu_is_quirked() {
    assert!(bogus_nid(0x1b36, 0x0010));
    assert!(!bogus_nid(0x1b36, 0x0011));
    assert!(!bogus_nid(0x8086, 0x0010));
}
