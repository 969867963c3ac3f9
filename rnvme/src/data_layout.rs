//! How a request's data is described to the controller: the choice `nvme_map_data()` makes in
//! `drivers/nvme/host/pci.c` (Linux 6.12) between PRPs and SGLs, with or without a list.
//!
//! A request of one physical segment first tries the two forms that need no list
//! (`nvme_setup_prp_simple()`, `nvme_setup_sgl_simple()`); any other request is mapped whole and
//! then described by a PRP list or an SGL as [`SglPolicy::use_sgls`] says
//! (`nvme_pci_use_sgls()`).

use crate::{dptr::CTRL_PAGE_MASK, SglPolicy, NVME_CTRL_PAGE_SIZE};

/// The form of a request's data pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataLayout {
    /// One segment within two controller pages: PRP1, and PRP2 for its second page
    /// (`nvme_setup_prp_simple()`).
    PrpSimple,
    /// One segment, one SGL Data Block descriptor in the command (`nvme_setup_sgl_simple()`).
    SglSimple,
    /// The mapped segments as PRP entries, with a list when they need one
    /// (`nvme_pci_setup_prps()`).
    Prps,
    /// The mapped segments as an SGL (`nvme_pci_setup_sgls()`).
    Sgls,
}

impl SglPolicy {
    /// The layout of a request's data (`nvme_map_data()`): `single` is its one physical
    /// segment's offset in memory (only the offset in its controller page matters) and length
    /// when it has exactly one (`blk_rq_nr_phys_segments() == 1`), `None` otherwise; `payload`
    /// and `nseg` are its bytes and its mapped segments, for [`SglPolicy::use_sgls`].
    ///
    /// A single segment within two controller pages uses PRPs unless metadata goes by SGL;
    /// otherwise, outside the admin queue, with `sgl_threshold` not 0 and SGL support, one SGL
    /// descriptor; otherwise the segment takes the general path, as every other request does.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DataLayout, SglPolicy, SGL_THRESHOLD_DEFAULT};
    /// let p = SglPolicy { ctrl_supports_sgls: true, admin_queue: false, metadata_sgls: false,
    ///                     passthrough: false, sgl_threshold: SGL_THRESHOLD_DEFAULT };
    /// assert_eq!(p.layout(Some((0x1200, 4096)), 4096, 1), DataLayout::PrpSimple);
    /// // 16 KiB in one segment: one descriptor, though the average is below the threshold.
    /// assert_eq!(p.layout(Some((0, 16384)), 16384, 1), DataLayout::SglSimple);
    /// assert_eq!(p.layout(None, 65536, 16), DataLayout::Prps);
    /// assert_eq!(p.layout(None, 65536, 2), DataLayout::Sgls);
    /// let user = SglPolicy { passthrough: true, ..p };
    /// assert_eq!(user.layout(None, 8192, 2), DataLayout::Sgls);
    /// ```
    #[inline]
    pub fn layout(&self, single: Option<(u64, u32)>, payload: u64, nseg: u32) -> DataLayout {
        if let Some((offset, len)) = single {
            let page = u64::from(NVME_CTRL_PAGE_SIZE);
            if !self.metadata_sgls && (offset & CTRL_PAGE_MASK) + u64::from(len) <= 2 * page {
                return DataLayout::PrpSimple;
            }
            if !self.admin_queue && self.sgl_threshold != 0 && self.ctrl_supports_sgls {
                return DataLayout::SglSimple;
            }
        }
        if self.use_sgls(payload, nseg) {
            DataLayout::Sgls
        } else {
            DataLayout::Prps
        }
    }
}
