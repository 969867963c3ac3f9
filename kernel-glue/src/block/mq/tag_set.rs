// SPDX-License-Identifier: GPL-2.0

//! Tag sets (`struct blk_mq_tag_set`): hardware queues, depth, the per-request PDU.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use core::{
    marker::PhantomData,
    mem::{align_of, size_of},
    ptr::NonNull,
};

use kernel::{alloc::KBox, bindings, prelude::*, sync::Arc, types::Opaque};

use super::{operations::OperationsVTable, request::Pdu, Operations, Request};
use crate::pci;

/// How hardware queues are mapped to CPUs.
#[derive(Clone, Debug)]
pub enum QueueMap {
    /// Spread evenly over the CPUs (`blk_mq_map_queues()`).
    Spread,
    /// Follow the affinity of the device's interrupt vectors, queue `i` on vector
    /// `offset + i` (`blk_mq_map_hw_queues()`; falls back to `Spread` without affinity).
    Irq {
        /// The device whose vectors' affinity is used.
        dev: pci::Device,
        /// First vector of the queues.
        offset: u32,
    },
}

/// The tag set and what its callbacks reach through `driver_data`.
struct Inner<T: Operations> {
    raw: Opaque<bindings::blk_mq_tag_set>,
    data: Arc<T::Data>,
    map: QueueMap,
    /// Hardware queues of type `HCTX_TYPE_DEFAULT` (the rest are poll queues).
    nr_default: u32,
}

/// A blk-mq tag set of driver `T`, freed (`blk_mq_free_tag_set()`) when the last `Arc` goes;
/// every [`super::GenDisk`] holds one.
///
/// # Invariants
///
/// `inner.raw` was set up by `blk_mq_alloc_tag_set` with [`OperationsVTable<T>`],
/// `cmd_size >= size_of::<Pdu<T>>()` and `driver_data` pointing to `inner` (which never moves:
/// it is boxed); it is freed only by the drop.
pub struct TagSet<T: Operations> {
    inner: KBox<Inner<T>>,
}

// SAFETY: the C tag set is used from any CPU by blk-mq itself; `T::Data` is `Send + Sync`.
unsafe impl<T: Operations> Send for TagSet<T> {}
// SAFETY: `&TagSet` only reads constant fields and the `Sync` driver data.
unsafe impl<T: Operations> Sync for TagSet<T> {}

impl<T: Operations> core::fmt::Debug for TagSet<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TagSet").finish()
    }
}

impl<T: Operations> TagSet<T> {
    /// Allocates a tag set of `nr_hw_queues` queues of `depth` tags, of which the first
    /// `nr_default` are `HCTX_TYPE_DEFAULT` queues and the rest `HCTX_TYPE_POLL` queues,
    /// with a request timeout of `timeout_ms` milliseconds.
    pub fn new(
        data: Arc<T::Data>,
        nr_default: u32,
        nr_poll: u32,
        depth: u32,
        timeout_ms: u32,
        map: QueueMap,
    ) -> Result<Arc<Self>> {
        let pdu = size_of::<Pdu<T>>();
        // blk-mq places the PDU right after `struct request` (8-byte aligned).
        if align_of::<Pdu<T>>() > 8 || nr_default == 0 || depth == 0 {
            return Err(EINVAL);
        }
        let nr_hw_queues = nr_default.checked_add(nr_poll).ok_or(EINVAL)?;
        let inner = KBox::new(
            Inner {
                // SAFETY: `blk_mq_tag_set` is a plain C struct for which all-zero is the
                // expected starting value (C drivers `memset` it).
                raw: Opaque::new(unsafe { core::mem::zeroed() }),
                data,
                map,
                nr_default,
            },
            GFP_KERNEL,
        )?;
        let raw = inner.raw.get();
        let inner_ptr: *const Inner<T> = &*inner;
        // SAFETY: `raw` points to the boxed, not yet registered tag set; nothing else uses it.
        unsafe {
            (*raw).ops = OperationsVTable::<T>::build();
            (*raw).nr_hw_queues = nr_hw_queues;
            (*raw).nr_maps = if nr_poll > 0 {
                bindings::hctx_type_HCTX_TYPE_POLL + 1
            } else {
                1
            };
            (*raw).queue_depth = depth;
            (*raw).cmd_size = u32::try_from(pdu).map_err(|_| EINVAL)?;
            (*raw).numa_node = bindings::NUMA_NO_NODE;
            // `msecs_to_jiffies()`: the kernel's tick rate (CONFIG_HZ), not `bindings::HZ`,
            // which is the user-space ABI's constant 100.
            (*raw).timeout =
                u32::try_from(kernel::time::msecs_to_jiffies(timeout_ms)).unwrap_or(u32::MAX);
            (*raw).flags = bindings::BLK_MQ_F_SHOULD_MERGE;
            (*raw).driver_data = inner_ptr.cast_mut().cast();
        }
        // SAFETY: `raw` is fully set up; the boxed `Inner` outlives the tag set (freed in drop).
        crate::error::to_result(unsafe { bindings::blk_mq_alloc_tag_set(raw) })?;
        // INVARIANT: allocated above with `driver_data == inner`.
        Ok(Arc::new(Self { inner }, GFP_KERNEL)?)
    }

    /// The raw tag set.
    pub(crate) fn raw(&self) -> *mut bindings::blk_mq_tag_set {
        self.inner.raw.get()
    }

    /// The driver data.
    pub fn data(&self) -> &Arc<T::Data> {
        &self.inner.data
    }

    /// The driver data of a raw tag set.
    ///
    /// # Safety
    ///
    /// `set` must be the live raw tag set of a [`TagSet<T>`].
    pub(crate) unsafe fn data_from_raw<'a>(set: *mut bindings::blk_mq_tag_set) -> &'a T::Data {
        // SAFETY: `driver_data` points to the boxed `Inner<T>` (type invariant), live while the
        // tag set is.
        unsafe { &(*(*set).driver_data.cast::<Inner<T>>()).data }
    }

    /// Sets up the CPU to hardware queue maps (the `map_queues` callback).
    ///
    /// # Safety
    ///
    /// `set` must be the live raw tag set of a [`TagSet<T>`], in its `map_queues` callback.
    pub(crate) unsafe fn map_queues_raw(set: *mut bindings::blk_mq_tag_set) {
        // SAFETY: as in `data_from_raw`.
        let inner = unsafe { &*(*set).driver_data.cast::<Inner<T>>() };
        // `blk_mq_alloc_tag_set()` sets every map's `nr_queues` to `nr_hw_queues`; the split
        // between default and poll queues is ours.
        let nr_default = inner.nr_default;
        // SAFETY: blk-mq lets `map_queues` write the maps of `set`.
        unsafe {
            let nr_total = (*set).nr_hw_queues;
            let default = &raw mut (*set).map[bindings::hctx_type_HCTX_TYPE_DEFAULT as usize];
            (*default).nr_queues = nr_default.min(nr_total);
            (*default).queue_offset = 0;
            match &inner.map {
                QueueMap::Irq { dev, offset } => {
                    bindings::blk_mq_map_hw_queues(default, dev.device_raw(), *offset)
                }
                QueueMap::Spread => bindings::blk_mq_map_queues(default),
            }
            if (*set).nr_maps > bindings::hctx_type_HCTX_TYPE_POLL {
                // No separate read queues: the read map is empty.
                (*set).map[bindings::hctx_type_HCTX_TYPE_READ as usize].nr_queues = 0;
                let poll = &raw mut (*set).map[bindings::hctx_type_HCTX_TYPE_POLL as usize];
                (*poll).nr_queues = nr_total.saturating_sub(nr_default);
                (*poll).queue_offset = nr_default;
                if (*poll).nr_queues > 0 {
                    bindings::blk_mq_map_queues(poll);
                }
            }
        }
    }

    /// This tag set as a [`TagSetRef`] (quiesce, unquiesce, requests by tag), e.g. for a
    /// controller reset started outside a blk-mq callback.
    pub fn set_ref(&self) -> TagSetRef<'_, T> {
        // INVARIANT: `self.raw()` is our live tag set (type invariant, never null: it points
        // into the boxed `inner`), alive while `self` is borrowed.
        TagSetRef {
            set: NonNull::from(&self.inner.raw).cast(),
            _p: PhantomData,
        }
    }

    /// The request holding `tag` on hardware queue `hctx_idx`, if any (`blk_mq_tag_to_rq()`).
    ///
    /// The request may be idle or belong to another submission than the caller expects: the
    /// caller checks (e.g. a command id generation in [`Operations::Shared`]).
    pub fn tag_to_rq(&self, hctx_idx: u32, tag: u32) -> Option<&Request<T>> {
        self.set_ref().tag_to_rq(hctx_idx, tag)
    }
}

/// A tag set reached from one of its requests (in a callback such as `timeout`, where the
/// driver data cannot hold its own [`TagSet`]): quiescing all its queues and finding requests
/// by tag, as a controller reset needs (`nvme_quiesce_io_queues()`, `nvme_cancel_tagset()`).
///
/// # Invariants
///
/// `set` is the live raw tag set of a [`TagSet<T>`] for `'a` (a request of it is borrowed for
/// `'a`, and a tag set outlives its requests).
pub struct TagSetRef<'a, T: Operations> {
    set: NonNull<bindings::blk_mq_tag_set>,
    _p: PhantomData<&'a T>,
}

impl<T: Operations> core::fmt::Debug for TagSetRef<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TagSetRef").finish()
    }
}

impl<'a, T: Operations> TagSetRef<'a, T> {
    /// Wraps `set`, `None` if null.
    ///
    /// # Safety
    ///
    /// `set` must be the live raw tag set of a [`TagSet<T>`] for `'a`.
    pub(crate) unsafe fn from_raw(set: *mut bindings::blk_mq_tag_set) -> Option<Self> {
        // INVARIANT: function contract.
        Some(Self {
            set: NonNull::new(set)?,
            _p: PhantomData,
        })
    }

    /// Stops dispatch on every queue of every disk of the set and waits until no
    /// `queue_rq` runs (`blk_mq_quiesce_tagset()`; sleeps). Requests queued meanwhile wait.
    pub fn quiesce(&self) {
        // SAFETY: live tag set (type invariant); process context (the function may sleep,
        // which its callers, timeout work and process context, allow).
        unsafe { bindings::blk_mq_quiesce_tagset(self.set.as_ptr()) };
    }

    /// Undoes [`TagSetRef::quiesce`] and runs the queues (`blk_mq_unquiesce_tagset()`).
    pub fn unquiesce(&self) {
        // SAFETY: live tag set (type invariant), quiesced by the caller before.
        unsafe { bindings::blk_mq_unquiesce_tagset(self.set.as_ptr()) };
    }

    /// The request holding `tag` on hardware queue `hctx_idx`, if any (as
    /// [`TagSet::tag_to_rq`]).
    pub fn tag_to_rq(&self, hctx_idx: u32, tag: u32) -> Option<&'a Request<T>> {
        let raw = self.set.as_ptr();
        // SAFETY: live tag set (type invariant); `tags` has `nr_hw_queues` entries.
        let tags = unsafe {
            if hctx_idx >= (*raw).nr_hw_queues || (*raw).tags.is_null() {
                return None;
            }
            *(*raw).tags.add(hctx_idx as usize)
        };
        // SAFETY: `tags`, when not null, is a live tag map of this set, alive for `'a`.
        unsafe { HwTags::from_raw(tags) }.tag_to_rq(tag)
    }
}

/// The requests of one hardware queue by tag: its tag map's request table (`tags->rqs`),
/// read once for a run of lookups where the C driver reads `set->tags[i]` for each completion
/// (`nvme_queue_tagset()`, `blk_mq_tag_to_rq()`).
///
/// # Invariants
///
/// `rqs` is null (`nr_tags` then 0) or the request table of a live tag map of a
/// [`TagSet<T>`] alive for `'a`, with `nr_tags` entries.
pub struct HwTags<'a, T: Operations> {
    rqs: *mut *mut bindings::request,
    nr_tags: u32,
    _p: PhantomData<&'a T>,
}

impl<T: Operations> core::fmt::Debug for HwTags<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HwTags")
            .field("nr_tags", &self.nr_tags)
            .finish()
    }
}

impl<'a, T: Operations> HwTags<'a, T> {
    /// No requests.
    // INVARIANT: null table, no tags.
    const EMPTY: Self = Self {
        rqs: core::ptr::null_mut(),
        nr_tags: 0,
        _p: PhantomData,
    };

    /// The request table of `tags`; empty if `tags` or its table is null.
    ///
    /// # Safety
    ///
    /// `tags` is null or a live tag map of a [`TagSet<T>`] alive for `'a`.
    #[inline]
    unsafe fn from_raw(tags: *mut bindings::blk_mq_tags) -> Self {
        // SAFETY: `tags` is null or live (the function contract).
        match unsafe { tags.as_ref() } {
            // INVARIANT: a live tag map's table has `nr_tags` entries (`blk_mq_alloc_rq_map()`).
            Some(t) if !t.rqs.is_null() => Self {
                rqs: t.rqs,
                nr_tags: t.nr_tags,
                _p: PhantomData,
            },
            _ => Self::EMPTY,
        }
    }

    /// The request holding `tag`, if any: `blk_mq_tag_to_rq()` (`include/linux/blk-mq.h`), an
    /// inline function in C, written here so the completion path makes no call per
    /// completion. As for [`TagSet::tag_to_rq`], the caller checks that it is the submission
    /// it expects.
    #[inline]
    pub fn tag_to_rq(&self, tag: u32) -> Option<&'a Request<T>> {
        if tag >= self.nr_tags {
            return None;
        }
        // SAFETY: `rqs` has `nr_tags` entries (type invariant; not null since `nr_tags` > 0)
        // and `tag` is below that.
        let rq = NonNull::new(unsafe { *self.rqs.add(tag as usize) })?;
        // SAFETY: requests of a tag map live as long as the tag set, alive for `'a`.
        Some(unsafe { Request::from_raw(rq.as_ptr()) })
    }
}

/// A hardware queue (`struct blk_mq_hw_ctx`) during a callback, for finding its requests.
///
/// # Invariants
///
/// `hctx` is a live hardware context of a queue on a tag set of `T` for `'a`.
pub struct HwQueue<'a, T: Operations> {
    hctx: NonNull<bindings::blk_mq_hw_ctx>,
    _p: PhantomData<&'a T>,
}

impl<T: Operations> core::fmt::Debug for HwQueue<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HwQueue").finish()
    }
}

impl<'a, T: Operations> HwQueue<'a, T> {
    /// Wraps `hctx`, `None` if null.
    ///
    /// # Safety
    ///
    /// `hctx` must be a live hardware context of a queue on a tag set of `T` for `'a`.
    pub(crate) unsafe fn from_raw(hctx: *mut bindings::blk_mq_hw_ctx) -> Option<Self> {
        // INVARIANT: function contract.
        Some(Self {
            hctx: NonNull::new(hctx)?,
            _p: PhantomData,
        })
    }

    /// The request holding driver tag `tag` on this hardware queue, if any (see
    /// [`TagSet::tag_to_rq`] for what the caller must check).
    pub fn tag_to_rq(&self, tag: u32) -> Option<&'a Request<T>> {
        self.hw_tags().tag_to_rq(tag)
    }

    /// The requests of this hardware queue by tag, looked up once for a run of lookups.
    #[inline]
    pub fn hw_tags(&self) -> HwTags<'a, T> {
        // SAFETY: live hctx (type invariant); `tags` is its driver tag map.
        let tags = unsafe { (*self.hctx.as_ptr()).tags };
        // SAFETY: `tags`, when not null, is a live tag map of a tag set of `T` alive for `'a`
        // (its requests live as long as the tag set).
        unsafe { HwTags::from_raw(tags) }
    }
}

impl<T: Operations> Drop for TagSet<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` (type invariant); every disk on it holds an `Arc` to
        // this value, so none is left.
        unsafe { bindings::blk_mq_free_tag_set(self.raw()) };
    }
}
