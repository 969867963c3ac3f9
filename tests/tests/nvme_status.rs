//! The NVMe status decoding and block-status mapping of the `nvme` crate, checked against
//! tables written from the Linux 6.12 sources: `nvme_error_status()` in
//! drivers/nvme/host/core.c with the status values of `include/linux/nvme.h`, and the
//! `blk_status_t` numbers of `include/linux/blk_types.h`.

use nvme::{BlkStatus, Status, StatusCodeType};

/// `BLK_STS_*` numbers (include/linux/blk_types.h).
const BLK: [(&str, u8); 19] = [
    ("OK", 0),
    ("NOTSUPP", 1),
    ("TIMEOUT", 2),
    ("NOSPC", 3),
    ("TRANSPORT", 4),
    ("TARGET", 5),
    ("RESV_CONFLICT", 6),
    ("MEDIUM", 7),
    ("PROTECTION", 8),
    ("RESOURCE", 9),
    ("IOERR", 10),
    ("DM_REQUEUE", 11),
    ("AGAIN", 12),
    ("DEV_RESOURCE", 13),
    ("ZONE_OPEN_RESOURCE", 14),
    ("ZONE_ACTIVE_RESOURCE", 15),
    ("OFFLINE", 16),
    ("DURATION_LIMIT", 17),
    ("INVAL", 19),
];

/// The cases of `nvme_error_status()`: (NVMe status name, SCT|SC value, BLK_STS name).
const MAPPED: [(&str, u16, &str); 22] = [
    ("SUCCESS", 0x000, "OK"),
    ("CAP_EXCEEDED", 0x081, "NOSPC"),
    ("LBA_RANGE", 0x080, "TARGET"),
    ("CMD_INTERRUPTED", 0x021, "TARGET"),
    ("NS_NOT_READY", 0x082, "TARGET"),
    ("BAD_ATTRIBUTES", 0x180, "NOTSUPP"),
    ("INVALID_OPCODE", 0x001, "NOTSUPP"),
    ("INVALID_FIELD", 0x002, "NOTSUPP"),
    ("INVALID_NS", 0x00b, "NOTSUPP"),
    ("WRITE_FAULT", 0x280, "MEDIUM"),
    ("READ_ERROR", 0x281, "MEDIUM"),
    ("UNWRITTEN_BLOCK", 0x287, "MEDIUM"),
    ("ACCESS_DENIED", 0x286, "MEDIUM"),
    ("READ_ONLY", 0x182, "MEDIUM"),
    ("COMPARE_FAILED", 0x285, "MEDIUM"),
    ("GUARD_CHECK", 0x282, "PROTECTION"),
    ("APPTAG_CHECK", 0x283, "PROTECTION"),
    ("REFTAG_CHECK", 0x284, "PROTECTION"),
    ("INVALID_PI", 0x181, "PROTECTION"),
    ("RESERVATION_CONFLICT", 0x083, "RESV_CONFLICT"),
    ("HOST_PATH_ERROR", 0x370, "TRANSPORT"),
    ("ZONE_TOO_MANY_ACTIVE", 0x1bd, "ZONE_ACTIVE_RESOURCE"),
];

/// The one case of the switch that does not fit the array above.
const MAPPED_EXTRA: (&str, u16, &str) = ("ZONE_TOO_MANY_OPEN", 0x1be, "ZONE_OPEN_RESOURCE");

fn blk(name: &str) -> u8 {
    BLK.iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .expect("known BLK_STS name")
}

#[test]
fn blk_status_values_match_blk_types_h() {
    for (name, v) in BLK {
        let s = BlkStatus::from_value(v).unwrap_or_else(|| panic!("BLK_STS_{name} ({v}) missing"));
        assert_eq!(s.value(), v, "BLK_STS_{name}");
    }
    assert_eq!(BlkStatus::from_value(18), None);
    assert_eq!(BlkStatus::from_value(20), None);
}

#[test]
fn every_status_code_maps_as_nvme_error_status() {
    // Every SCT|SC value, with every combination of CRD, More, DNR and the phase tag.
    for sct_sc in 0u16..0x800 {
        let want = MAPPED
            .iter()
            .chain([&MAPPED_EXTRA])
            .find(|(_, v, _)| *v == sct_sc)
            .map_or(blk("IOERR"), |(_, _, b)| blk(b));
        for high in [0u16, 0x0800, 0x1000, 0x1800, 0x2000, 0x4000, 0x7800] {
            let code = sct_sc | high;
            for phase in [0u16, 1] {
                let s = Status::from_raw((code << 1) | phase);
                assert_eq!(s.code(), code);
                assert_eq!(s.phase(), phase == 1);
                assert_eq!(BlkStatus::from_nvme(s).value(), want, "status {code:#x}");
            }
        }
    }
}

#[test]
fn fields_decode_as_nvme_h_defines_them() {
    // NVME_SCT_MASK 0x0700, NVME_SC_MASK 0x00ff, NVME_STATUS_CRD 0x1800, MORE 0x2000, DNR 0x4000.
    for code in (0u16..0x8000).step_by(7) {
        let s = Status::from_code(code);
        assert_eq!(u16::from(s.sc()), code & 0xff);
        let sct = (code >> 8) & 7;
        let want = match sct {
            0 => StatusCodeType::Generic,
            1 => StatusCodeType::CommandSpecific,
            2 => StatusCodeType::MediaError,
            3 => StatusCodeType::Path,
            7 => StatusCodeType::VendorSpecific,
            r => StatusCodeType::Reserved(r as u8),
        };
        assert_eq!(s.sct(), want);
        assert_eq!(u16::from(s.crd()), (code & 0x1800) >> 11);
        assert_eq!(s.more(), code & 0x2000 != 0);
        assert_eq!(s.dnr(), code & 0x4000 != 0);
        assert_eq!(s.is_success(), code & 0x7ff == 0);
        assert_eq!(s.retryable(), code & 0x7ff != 0 && code & 0x4000 == 0);
    }
}
