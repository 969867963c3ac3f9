//! Shadow doorbells (Doorbell Buffer Config, NVMe 1.3; Identify Controller OACS bit 8): the
//! driver writes every I/O queue's SQ tail and CQ head to a page in host memory and writes the
//! MMIO doorbell only when the controller asked for it through its event index page
//! (`nvme_dbbuf_dma_alloc()`, `nvme_dbbuf_init()`, `nvme_dbbuf_set()`,
//! `nvme_dbbuf_update_and_check_event()` in `drivers/nvme/host/pci.c`; `nvme_dbbuf_need_event()`
//! follows the virtio event index rule).
//!
//! The admin queue (queue id 0) always uses its MMIO doorbells. The two pages are laid out like
//! the doorbell registers: queue `q`'s SQ tail at dword `2 * q * stride`, its CQ head at dword
//! `(2 * q + 1) * stride`, `stride` = 1 << CAP.DSTRD dwords.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

use crate::{opcode, DataPointer, Doorbells, SubmissionEntry};

/// Bytes of each of the two buffers (shadow doorbells, event indexes): one page.
pub const DBBUF_BYTES: usize = 4096;

/// Whether a doorbell moved from `old` to `new` passed the controller's event index `event_idx`
/// (`event_idx` in `[old, new)` modulo 2^16): then the MMIO doorbell must be written, since
/// the controller is not going to look at the shadow value by itself.
///
/// # Examples
///
/// ```
/// use nvme::dbbuf_need_event;
/// assert!(dbbuf_need_event(5, 6, 5));        // controller caught up at 5: notify
/// assert!(!dbbuf_need_event(4, 6, 5));       // still busy before 5: it reads the shadow again
/// assert!(dbbuf_need_event(0xffff, 2, 0xfffe)); // across the wrap
/// assert!(!dbbuf_need_event(7, 7, 7));       // nothing new
/// ```
#[inline]
pub const fn dbbuf_need_event(event_idx: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event_idx).wrapping_sub(1) < new.wrapping_sub(old)
}

/// A queue id without a shadow doorbell (the admin queue, or past the one-page buffers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbbufError {
    /// The queue id.
    pub qid: u16,
}

impl fmt::Display for DbbufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queue {} has no shadow doorbell", self.qid)
    }
}

/// Offsets of the shadow doorbells (and their event indexes, at the same offsets in the other
/// page) for the controller's doorbell stride.
#[derive(Clone, Copy, Debug)]
pub struct DbbufLayout {
    stride: u32,
}

impl DbbufLayout {
    /// The layout for the controller's doorbell stride.
    pub const fn new(dbs: &Doorbells) -> Self {
        Self {
            stride: dbs.stride(),
        }
    }

    fn offset(&self, qid: u16, cq: bool) -> Result<usize, DbbufError> {
        if qid == 0 {
            return Err(DbbufError { qid });
        }
        let index = 2 * u64::from(qid) + u64::from(cq);
        let off = index * u64::from(self.stride);
        if off + 4 > DBBUF_BYTES as u64 {
            return Err(DbbufError { qid });
        }
        Ok(off as usize)
    }

    /// Byte offset of I/O queue `qid`'s SQ tail (and its event index).
    ///
    /// # Errors
    ///
    /// [`DbbufError`] for the admin queue or a queue past the page.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{Cap, DbbufLayout, Doorbells};
    /// let l = DbbufLayout::new(&Doorbells::new(Cap::from_raw(0), 0x2000));
    /// assert_eq!((l.sq_tail(1)?, l.cq_head(1)?, l.sq_tail(2)?), (8, 12, 16));
    /// assert!(l.sq_tail(0).is_err() && l.cq_head(511).is_ok() && l.sq_tail(512).is_err());
    /// # Ok::<(), nvme::DbbufError>(())
    /// ```
    pub fn sq_tail(&self, qid: u16) -> Result<usize, DbbufError> {
        self.offset(qid, false)
    }

    /// Byte offset of I/O queue `qid`'s CQ head (and its event index).
    ///
    /// # Errors
    ///
    /// As [`DbbufLayout::sq_tail`].
    pub fn cq_head(&self, qid: u16) -> Result<usize, DbbufError> {
        self.offset(qid, true)
    }
}

/// The memory of one shadow doorbell and its event index, with the barriers between them.
pub trait ShadowMemory {
    /// Makes the queue's entries (and everything written before) visible to the device, then
    /// stores `value` in the shadow doorbell (`wmb()` + store).
    fn write_shadow(&mut self, value: u16);
    /// Orders the shadow store before the event index load (`mb()`).
    fn full_barrier(&mut self);
    /// Loads the event index the controller last wrote (`None` if it cannot be read: then
    /// the MMIO doorbell is written).
    fn read_event_idx(&mut self) -> Option<u16>;
}

/// Driver-side state of one shadow doorbell: the value last stored.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShadowDoorbell {
    last: u16,
}

impl ShadowDoorbell {
    /// A doorbell whose shadow holds `value` (0 for a new queue: the buffers start zeroed).
    pub const fn new(value: u16) -> Self {
        Self { last: value }
    }

    /// The value last stored.
    pub const fn value(&self) -> u16 {
        self.last
    }

    /// Stores `value` in the shadow doorbell and returns whether the MMIO doorbell must be
    /// written too (the value passed the controller's event index).
    #[inline]
    pub fn update<M: ShadowMemory + ?Sized>(&mut self, mem: &mut M, value: u16) -> bool {
        let old = self.last;
        self.last = value;
        mem.write_shadow(value);
        mem.full_barrier();
        match mem.read_event_idx() {
            Some(ei) => dbbuf_need_event(ei, value, old),
            None => true,
        }
    }
}

impl SubmissionEntry {
    /// Doorbell Buffer Config: `dbs` (shadow doorbells) and `eis` (event indexes), each a
    /// page-aligned page (`nvme_dbbuf_set()`).
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DataPointer, SubmissionEntry};
    /// let c = SubmissionEntry::dbbuf_config(0x1000, 0x2000);
    /// assert_eq!((c.opcode(), c.data_pointer()), (0x7c, DataPointer::prp(0x1000, 0x2000)));
    /// ```
    pub fn dbbuf_config(dbs: u64, eis: u64) -> Self {
        let mut c = Self::new(opcode::DBBUF, 0);
        c.set_data_pointer(DataPointer::prp(dbs, eis));
        c
    }
}
