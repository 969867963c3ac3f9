//! `ns_geometry` against `nvme_update_disk_info()`, `nvme_configure_atomic_write()` and
//! `nvme_set_chunk_sectors()` (`drivers/nvme/host/core.c`), each case worked out by hand.

use crate::{ns_geometry, NsIoHints};

const ATOMICS: u8 = 1 << 1;
const IO_OPT: u8 = 1 << 4;

fn hints() -> NsIoHints {
    NsIoHints::default()
}

#[test]
fn controller_awupf_in_this_namespaces_blocks() {
    // AWUPF 7: 8 blocks, of 512 B or of 4 KiB.
    let g = ns_geometry(&hints(), 512, 7);
    assert_eq!(
        (
            g.atomic_write_hw_max,
            g.atomic_write_hw_unit_min,
            g.atomic_write_hw_unit_max
        ),
        (4096, 512, 4096)
    );
    let g = ns_geometry(&hints(), 4096, 7);
    assert_eq!(
        (g.atomic_write_hw_max, g.atomic_write_hw_unit_max),
        (32768, 32768)
    );
    // AWUPF 2: 3 blocks; the unit maximum is the power of two below, 2 blocks.
    let g = ns_geometry(&hints(), 512, 2);
    assert_eq!(
        (g.atomic_write_hw_max, g.atomic_write_hw_unit_max),
        (1536, 1024)
    );
    // The physical block is capped at the atomic unit: one block here.
    let h = NsIoHints {
        nsfeat: IO_OPT,
        npwg: 7,
        ..hints()
    };
    let g = ns_geometry(&h, 512, 0);
    assert_eq!((g.physical_block_size, g.io_min), (512, 4096));
}

#[test]
fn namespace_atomics_when_nsfeat_says_so() {
    // NAWUPF 15 with the NSFEAT bit: 16 blocks, boundary NABSPF 31 + 1 = 32 blocks.
    let h = NsIoHints {
        nsfeat: ATOMICS,
        nawupf: 15,
        nabspf: 31,
        ..hints()
    };
    let g = ns_geometry(&h, 512, 3);
    assert_eq!(
        (g.atomic_write_hw_max, g.atomic_write_hw_boundary),
        (8192, 16384)
    );
    // Without the bit, or with NAWUPF 0: the controller's AWUPF, no boundary.
    let h = NsIoHints {
        nsfeat: 0,
        nawupf: 15,
        nabspf: 31,
        ..hints()
    };
    assert_eq!(ns_geometry(&h, 512, 3).atomic_write_hw_max, 2048);
    let h = NsIoHints {
        nsfeat: ATOMICS,
        nawupf: 0,
        nabspf: 31,
        ..hints()
    };
    let g = ns_geometry(&h, 512, 3);
    assert_eq!(
        (g.atomic_write_hw_max, g.atomic_write_hw_boundary),
        (2048, 0)
    );
}

#[test]
fn an_atomic_boundary_offset_means_no_atomic_writes() {
    let h = NsIoHints {
        nsfeat: ATOMICS | IO_OPT,
        nawupf: 15,
        nabo: 1,
        npwg: 7,
        ..hints()
    };
    let g = ns_geometry(&h, 512, 3);
    assert_eq!(
        (
            g.atomic_write_hw_max,
            g.atomic_write_hw_unit_min,
            g.atomic_write_hw_unit_max
        ),
        (0, 0, 0)
    );
    // The physical block is then capped at one block.
    assert_eq!((g.physical_block_size, g.io_min), (512, 4096));
}

#[test]
fn write_hints_only_with_nsfeat() {
    let h = NsIoHints {
        nsfeat: IO_OPT,
        nawupf: 0,
        npwg: 1,
        nows: 15,
        ..hints()
    };
    let g = ns_geometry(&h, 4096, 1);
    assert_eq!(
        (g.physical_block_size, g.io_min, g.io_opt),
        (8192, 8192, 65536)
    );
    let h = NsIoHints {
        nsfeat: IO_OPT,
        npwg: 1,
        nows: 0,
        ..hints()
    };
    assert_eq!(ns_geometry(&h, 4096, 1).io_opt, 0);
    let h = NsIoHints {
        nsfeat: 0,
        npwg: 1,
        nows: 15,
        ..hints()
    };
    let g = ns_geometry(&h, 4096, 1);
    assert_eq!((g.physical_block_size, g.io_min, g.io_opt), (4096, 4096, 0));
}

#[test]
fn io_boundary_in_sectors_if_a_power_of_two() {
    for (noiob, bs, want) in [
        (256u16, 512u32, 256u32),
        (32, 4096, 256),
        (24, 512, 0),
        (1, 512, 1),
        (0, 512, 0),
    ] {
        let h = NsIoHints { noiob, ..hints() };
        assert_eq!(
            ns_geometry(&h, bs, 0).chunk_sectors,
            want,
            "noiob {noiob} bs {bs}"
        );
    }
}

#[test]
fn the_largest_fields_do_not_overflow() {
    let h = NsIoHints {
        nsfeat: ATOMICS | IO_OPT,
        nawupf: u16::MAX,
        nabspf: u16::MAX,
        npwg: u16::MAX,
        nows: u16::MAX,
        noiob: u16::MAX,
        nabo: 0,
    };
    let g = ns_geometry(&h, 4096, u16::MAX);
    assert_eq!(g.atomic_write_hw_max, 1 << 28);
    assert_eq!(
        (g.io_min, g.io_opt, g.physical_block_size),
        (1 << 28, 1 << 28, 1 << 28)
    );
    assert_eq!(g.chunk_sectors, 0); // 65535 * 8 is not a power of two
}
