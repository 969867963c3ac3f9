//! `zeroing_limits` against the rules of `nvme_init_non_mdts_limits()` and
//! `nvme_config_discard()` (`drivers/nvme/host/core.c`), each case worked out by hand.

use crate::{zeroing_limits, IdentifyController, IdentifyControllerNvm, IDENTIFY_SIZE};

/// Identify Controller data with ONCS `oncs`.
fn ctrl(oncs: u16) -> IdentifyController {
    let mut b = [0u8; IDENTIFY_SIZE];
    b[520..522].copy_from_slice(&oncs.to_le_bytes());
    IdentifyController::parse(&b).unwrap()
}

/// NVM Identify Controller data with the three limits.
fn nvm(wzsl: u8, dmrl: u8, dmrsl: u32) -> IdentifyControllerNvm {
    let mut b = [0xa5u8; IDENTIFY_SIZE];
    b[0] = 0;
    b[1] = wzsl;
    b[2] = 0;
    b[3] = dmrl;
    b[4..8].copy_from_slice(&dmrsl.to_le_bytes());
    IdentifyControllerNvm::parse(&b).unwrap()
}

const DSM: u16 = 1 << 2;
const WZ: u16 = 1 << 3;

#[test]
fn no_dsm_no_write_zeroes() {
    // Even with DMRSL and WZSL reported, no ONCS bits: neither (deviation for DMRSL, see the
    // function's docs; the C driver also reports no write zeroes).
    let l = zeroing_limits(&ctrl(0), Some(&nvm(2, 4, 100)), 512, 0, 1024);
    assert_eq!((l.max_discard_sectors, l.max_write_zeroes_sectors), (0, 0));
}

#[test]
fn dmrsl_in_sectors_per_block_size() {
    let n = nvm(0, 0, 1000);
    for (bs, want) in [(512, 1000), (1024, 2000), (2048, 4000), (4096, 8000)] {
        assert_eq!(
            zeroing_limits(&ctrl(DSM), Some(&n), bs, 0, 64).max_discard_sectors,
            want
        );
    }
}

#[test]
fn dmrsl_beyond_32_bits_of_sectors_is_unlimited() {
    // 4 KiB blocks: 8 sectors each; DMRSL must be at most u32::MAX / 8 = 0x1fff_ffff.
    let at = zeroing_limits(&ctrl(DSM), Some(&nvm(0, 0, 0x1fff_ffff)), 4096, 0, 64);
    assert_eq!(at.max_discard_sectors, 0xffff_fff8);
    let over = zeroing_limits(&ctrl(DSM), Some(&nvm(0, 0, 0x2000_0000)), 4096, 0, 64);
    assert_eq!(over.max_discard_sectors, u32::MAX);
    // 512-byte blocks: any DMRSL fits.
    let big = zeroing_limits(&ctrl(DSM), Some(&nvm(0, 0, u32::MAX)), 512, 0, 64);
    assert_eq!(big.max_discard_sectors, u32::MAX);
    let zero = zeroing_limits(&ctrl(DSM), Some(&nvm(0, 0, 0)), 512, 0, 64);
    assert_eq!(zero.max_discard_sectors, u32::MAX);
}

#[test]
fn dmrl_sets_the_ranges_per_command() {
    assert_eq!(
        zeroing_limits(&ctrl(DSM), Some(&nvm(0, 1, 0)), 512, 0, 64).max_discard_ranges,
        1
    );
    assert_eq!(
        zeroing_limits(&ctrl(DSM), Some(&nvm(0, 255, 0)), 512, 0, 64).max_discard_ranges,
        255
    );
    assert_eq!(
        zeroing_limits(&ctrl(DSM), Some(&nvm(0, 0, 0)), 512, 0, 64).max_discard_ranges,
        256
    );
    assert_eq!(
        zeroing_limits(&ctrl(DSM), None, 512, 0, 64).max_discard_ranges,
        256
    );
}

#[test]
fn wzsl_in_controller_pages() {
    // WZSL 1 with 4 KiB pages: 8 KiB = 16 sectors; with MPSMIN 1 (8 KiB pages): 32 sectors.
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(1, 0, 0)), 512, 0, 64).max_write_zeroes_sectors,
        16
    );
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(1, 0, 0)), 512, 1, 64).max_write_zeroes_sectors,
        32
    );
    // Larger than the transfer limit: taken as is, as the C driver does.
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(8, 0, 0)), 512, 0, 64).max_write_zeroes_sectors,
        2048
    );
    // 2^(28 + 3) = 2^31 fits; 2^32 saturates.
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(28, 0, 0)), 512, 0, 64).max_write_zeroes_sectors,
        1 << 31
    );
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(29, 0, 0)), 512, 0, 64).max_write_zeroes_sectors,
        u32::MAX
    );
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(255, 0, 0)), 512, 15, 64).max_write_zeroes_sectors,
        u32::MAX
    );
    // No WZSL: the transfer limit.
    assert_eq!(
        zeroing_limits(&ctrl(WZ), Some(&nvm(0, 0, 0)), 512, 0, 64).max_write_zeroes_sectors,
        64
    );
    assert_eq!(
        zeroing_limits(&ctrl(WZ), None, 512, 0, 64).max_write_zeroes_sectors,
        64
    );
}

#[test]
fn parse_refuses_short_buffers() {
    assert!(IdentifyControllerNvm::parse(&[0u8; IDENTIFY_SIZE - 1]).is_err());
    assert!(IdentifyControllerNvm::parse(&[]).is_err());
}
