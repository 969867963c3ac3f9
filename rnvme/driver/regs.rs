// SPDX-License-Identifier: GPL-2.0

//! The controller registers (`nvme::Registers`) on BAR0.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use kernel_glue::io::Bar;

/// BAR0 as the protocol core's register file.
///
/// An access outside the mapping (which the core's offsets never are; doorbells are checked
/// against the BAR by `nvme::Doorbells`) reads as all ones, the value of a device that is gone,
/// and a write there is dropped.
pub(crate) struct BarRegs<'a>(pub(crate) &'a Bar);

impl nvme::Registers for BarRegs<'_> {
    fn read32(&self, offset: u32) -> u32 {
        self.0.read32(offset as usize).unwrap_or(u32::MAX)
    }

    fn read64(&self, offset: u32) -> u64 {
        self.0.read64(offset as usize).unwrap_or(u64::MAX)
    }

    fn write32(&self, offset: u32, value: u32) {
        let _ = self.0.write32(offset as usize, value);
    }

    fn write64(&self, offset: u32, value: u64) {
        let _ = self.0.write64(offset as usize, value);
    }
}
