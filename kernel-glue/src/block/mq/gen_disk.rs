// SPDX-License-Identifier: GPL-2.0

//! Disks (`struct gendisk`) on a blk-mq tag set, and their queue limits.
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)

use core::{fmt, ptr::NonNull};

use kernel::{bindings, error::from_err_ptr, prelude::*, sync::Arc};

use super::{Operations, TagSet};
use crate::{helpers, pci};

/// `BLK_FEAT_WRITE_CACHE` (value checked against C in helpers.c).
const FEAT_WRITE_CACHE: u32 = 1 << 0;
/// `BLK_FEAT_FUA` (value checked against C in helpers.c).
const FEAT_FUA: u32 = 1 << 1;
/// `BLK_FEAT_POLL` (value checked against C in helpers.c).
const FEAT_POLL: u32 = 1 << 9;

/// Queue limits of a new disk (`struct queue_limits`); unset fields get the block layer's
/// defaults (`blk_validate_limits()`).
pub struct QueueLimits {
    raw: bindings::queue_limits,
}

impl fmt::Debug for QueueLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueLimits")
            .field("logical_block_size", &self.raw.logical_block_size)
            .field("max_hw_sectors", &self.raw.max_hw_sectors)
            .field("max_segments", &self.raw.max_segments)
            .finish()
    }
}

impl Default for QueueLimits {
    fn default() -> Self {
        // SAFETY: `queue_limits` is a plain C struct; all-zero means "use the defaults".
        let raw = unsafe { core::mem::zeroed() };
        Self { raw }
    }
}

impl QueueLimits {
    /// Logical (and physical) block size in bytes: a power of two in 512..=4096.
    pub fn block_size(mut self, bytes: u32) -> Result<Self> {
        if !bytes.is_power_of_two() || !(512..=4096).contains(&bytes) {
            return Err(EINVAL);
        }
        self.raw.logical_block_size = bytes;
        self.raw.physical_block_size = bytes;
        self.raw.io_min = bytes;
        Ok(self)
    }

    /// Largest request in 512-byte sectors.
    pub fn max_hw_sectors(mut self, sectors: u32) -> Self {
        self.raw.max_hw_sectors = sectors;
        self
    }

    /// Most data segments per request.
    pub fn max_segments(mut self, n: u16) -> Self {
        self.raw.max_segments = n;
        self
    }

    /// Segments may only be merged where the gap is aligned to `mask + 1` (NVMe PRPs: the
    /// controller page).
    pub fn virt_boundary_mask(mut self, mask: u64) -> Self {
        self.raw.virt_boundary_mask = mask as _;
        self
    }

    /// Required alignment of data buffers minus one.
    pub fn dma_alignment(mut self, mask: u32) -> Self {
        self.raw.dma_alignment = mask;
        self
    }

    /// The device's write granularity and optimal sizes in bytes (`physical_block_size`,
    /// `io_min`, `io_opt`; 0 leaves a field to the block layer's default) and its I/O boundary
    /// in 512-byte sectors (`chunk_sectors`, 0 for none).
    pub fn io_hints(mut self, physical: u32, io_min: u32, io_opt: u32, chunk_sectors: u32) -> Self {
        if physical != 0 {
            self.raw.physical_block_size = physical;
        }
        if io_min != 0 {
            self.raw.io_min = io_min;
        }
        self.raw.io_opt = io_opt;
        self.raw.chunk_sectors = chunk_sectors;
        self
    }

    /// Atomic writes (`RWF_ATOMIC`) of up to `max` bytes (`atomic_write_hw_max`), in units of
    /// `unit_min..=unit_max` bytes, not crossing a multiple of `boundary` bytes (0: none); all 0
    /// for none. `blk_validate_limits()` checks them against the other limits.
    pub fn atomic_writes(mut self, max: u32, boundary: u32, unit_min: u32, unit_max: u32) -> Self {
        self.raw.atomic_write_hw_max = max;
        self.raw.atomic_write_hw_boundary = boundary;
        self.raw.atomic_write_hw_unit_min = unit_min;
        self.raw.atomic_write_hw_unit_max = unit_max;
        self
    }

    /// Volatile write cache present (flushes needed) and FUA writes supported.
    pub fn write_cache(mut self, fua: bool) -> Self {
        self.raw.features |= FEAT_WRITE_CACHE;
        if fua {
            self.raw.features |= FEAT_FUA;
        }
        self
    }

    /// The queue supports polled completions (poll queues exist).
    pub fn poll(mut self) -> Self {
        self.raw.features |= FEAT_POLL;
        self
    }

    /// Discard support: at most `max_sectors` per range, `max_ranges` ranges per request.
    pub fn discard(mut self, max_sectors: u32, max_ranges: u16, granularity: u32) -> Self {
        self.raw.max_hw_discard_sectors = max_sectors;
        self.raw.max_discard_segments = max_ranges;
        self.raw.discard_granularity = granularity;
        self
    }

    /// Write-zeroes support of at most `max_sectors` per request.
    pub fn write_zeroes(mut self, max_sectors: u32) -> Self {
        self.raw.max_write_zeroes_sectors = max_sectors;
        self
    }
}

/// Writes into a fixed buffer, failing when it is full (one byte is kept for the NUL).
struct NameWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl fmt::Write for NameWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            let next = self.pos.checked_add(1).ok_or(fmt::Error)?;
            if next >= self.buf.len() {
                return Err(fmt::Error);
            }
            *self.buf.get_mut(self.pos).ok_or(fmt::Error)? = b;
            self.pos = next;
        }
        Ok(())
    }
}

/// A namespace disk's identity in sysfs: `/sys/block/<disk>/{nsid,wwid,csi,metadata_bytes}`,
/// the attributes of the C NVMe driver's disks (`nvme_ns_attr_group` in
/// `drivers/nvme/host/sysfs.c`; `csi` and `metadata_bytes` are 0: NVM namespaces without
/// metadata).
pub struct NsAttrs {
    raw: helpers::rnvme_glue_ns_attrs,
}

impl NsAttrs {
    /// Attributes of namespace `nsid` with world-wide identifier `wwid` (at most 159 bytes).
    ///
    /// # Errors
    ///
    /// `EINVAL` if `wwid` does not fit; `ENOMEM`.
    pub fn new(nsid: u32, wwid: fmt::Arguments<'_>) -> Result<KBox<Self>> {
        let mut bytes = [0u8; 160];
        let mut w = NameWriter {
            buf: &mut bytes,
            pos: 0,
        };
        fmt::Write::write_fmt(&mut w, wwid).map_err(|_| EINVAL)?;
        // SAFETY: a plain C struct of an integer and a byte array: all-zero is valid.
        let mut raw: helpers::rnvme_glue_ns_attrs = unsafe { core::mem::zeroed() };
        raw.nsid = nsid;
        for (dst, src) in raw.wwid.iter_mut().zip(bytes.iter()) {
            *dst = *src as _;
        }
        Ok(KBox::new(Self { raw }, GFP_KERNEL)?)
    }
}

/// A disk added to the system (`device_add_disk()`); deleted (`del_gendisk()`) and released
/// (`put_disk()`) on drop.
///
/// While the disk is open its block device holds a reference on the module (the disk's
/// operations name `THIS_MODULE` as owner, see `rnvme_glue_blk_mq_alloc_disk`), so the module
/// cannot be unloaded.
///
/// # Invariants
///
/// `disk` was allocated on `set` with `queuedata` pointing to `queue_data` and added; it is
/// deleted and put only by the drop (and `queue_data` outlives it). With `attrs`, the disk's
/// `private_data` points to it and its sysfs attributes read it until `del_gendisk()`.
pub struct GenDisk<T: Operations> {
    disk: NonNull<bindings::gendisk>,
    set: Arc<TagSet<T>>,
    queue_data: Arc<T::QueueData>,
    // A field: dropped after `drop` deleted the disk (and with it the attributes).
    _attrs: Option<KBox<NsAttrs>>,
}

// SAFETY: a gendisk may be used and deleted from any thread.
unsafe impl<T: Operations> Send for GenDisk<T> {}
// SAFETY: `&GenDisk` only reads.
unsafe impl<T: Operations> Sync for GenDisk<T> {}

impl<T: Operations> fmt::Debug for GenDisk<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenDisk").field("disk", &self.disk).finish()
    }
}

impl<T: Operations> GenDisk<T> {
    /// A counted reference on the disk, for users that may outlive this value (open
    /// passthrough files, see [`crate::user_rq`]).
    pub fn disk_ref(&self) -> crate::user_rq::DiskRef {
        // SAFETY: the disk is allocated while `self` exists (type invariant).
        unsafe { crate::user_rq::DiskRef::get(self.disk) }
    }

    /// Allocates a disk on `set` with `limits`, names it, sets its capacity (512-byte sectors)
    /// and adds it under `parent` (its block device appears in `/dev`), with the namespace
    /// attributes `attrs` in sysfs when given.
    pub fn new(
        set: &Arc<TagSet<T>>,
        limits: QueueLimits,
        name: fmt::Arguments<'_>,
        capacity_sectors: u64,
        parent: &pci::Device,
        queue_data: Arc<T::QueueData>,
        attrs: Option<KBox<NsAttrs>>,
    ) -> Result<Self> {
        let mut lim = limits.raw;
        let qd: *const T::QueueData = &*queue_data;
        // SAFETY: `set` is a live tag set; `lim` is a valid limits struct the call copies;
        // `qd` stays valid as long as the disk (kept in the returned value).
        let disk = from_err_ptr(unsafe {
            helpers::rnvme_glue_blk_mq_alloc_disk(set.raw(), &mut lim, qd.cast_mut().cast())
        })?;
        let disk = NonNull::new(disk).ok_or(ENOMEM)?;
        // Puts the disk if anything below fails.
        let guard = kernel::types::ScopeGuard::new_with_data(disk, |d| {
            // SAFETY: allocated above, not added.
            unsafe { bindings::put_disk(d.as_ptr()) }
        });
        // SAFETY: the disk was just allocated and is not visible to anyone else.
        let name_buf = unsafe { &mut (*disk.as_ptr()).disk_name };
        let mut bytes = [0u8; bindings::DISK_NAME_LEN as usize];
        let mut w = NameWriter {
            buf: &mut bytes,
            pos: 0,
        };
        fmt::Write::write_fmt(&mut w, name).map_err(|_| EINVAL)?;
        for (dst, src) in name_buf.iter_mut().zip(bytes.iter()) {
            *dst = *src as _;
        }
        // SAFETY: valid, not yet added disk (nothing to notify).
        unsafe { bindings::set_capacity_and_notify(disk.as_ptr(), capacity_sectors) };
        let groups = match &attrs {
            Some(a) => {
                let p: *const helpers::rnvme_glue_ns_attrs = &a.raw;
                // SAFETY: valid, not yet added disk; `a` is boxed and kept in the returned
                // value, dropped only after `del_gendisk()` removed the attributes.
                unsafe { (*disk.as_ptr()).private_data = p.cast_mut().cast() };
                // SAFETY: no arguments; returns a static NULL-terminated array.
                unsafe { helpers::rnvme_glue_ns_attr_groups() }
            }
            None => core::ptr::null_mut(),
        };
        // SAFETY: valid disk; `parent` is a live device; `groups` is null or the glue's static
        // array, whose attributes read `private_data` (set above).
        crate::error::to_result(unsafe {
            bindings::device_add_disk(parent.device_raw(), disk.as_ptr(), groups.cast())
        })?;
        let disk = guard.dismiss();
        // INVARIANT: allocated and added.
        Ok(Self {
            disk,
            set: set.clone(),
            queue_data,
            _attrs: attrs,
        })
    }

    /// The tag set the disk's queue uses.
    pub fn tag_set(&self) -> &Arc<TagSet<T>> {
        &self.set
    }

    /// The data of the disk's request queue.
    pub fn queue_data(&self) -> &Arc<T::QueueData> {
        &self.queue_data
    }
}

impl<T: Operations> Drop for GenDisk<T> {
    fn drop(&mut self) {
        // SAFETY: added (type invariant); `del_gendisk` waits for outstanding I/O and removes
        // the block device, `put_disk` drops our reference (freeing the request queue unless
        // someone still holds the disk: no request can be issued on it any more, so
        // `queue_data`, dropped after this, is not used again); each once.
        unsafe {
            bindings::del_gendisk(self.disk.as_ptr());
            bindings::put_disk(self.disk.as_ptr());
        }
    }
}
