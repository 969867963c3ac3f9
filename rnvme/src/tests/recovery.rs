//! `delete_queues_before_disable` against the C driver's rule, over every CSTS value that
//! matters: `nvme_dev_disable()` deletes the I/O queues unless `nvme_pci_ctrl_is_dead()`, which
//! (for a device that is present and enabled) is `(csts & NVME_CSTS_CFS) || !(csts &
//! NVME_CSTS_RDY)`; a device that is gone reads all ones, which that rule already calls dead.

use crate::{delete_queues_before_disable, Csts};

/// The C rule, written from `drivers/nvme/host/pci.c` `nvme_pci_ctrl_is_dead()`.
fn c_deletes(csts: u32) -> bool {
    const RDY: u32 = 1 << 0;
    const CFS: u32 = 1 << 1;
    let dead = csts & CFS != 0 || csts & RDY == 0;
    !dead
}

#[test]
fn matches_the_c_rule_for_every_low_field_and_high_bits() {
    // Every combination of the defined low bits (RDY, CFS, SHST, NSSRO, PP, ST), with and
    // without reserved high bits, and all ones.
    for low in 0u32..128 {
        for high in [0u32, 1 << 31, 0xffff_ff80] {
            let v = low | high;
            assert_eq!(
                delete_queues_before_disable(Csts::from_raw(v)),
                c_deletes(v),
                "{v:#x}"
            );
        }
    }
    assert!(!delete_queues_before_disable(Csts::from_raw(u32::MAX)));
}
