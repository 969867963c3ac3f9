// SPDX-License-Identifier: GPL-2.0

//! Premapped DMA tags for io_uring registered buffers (issue #8): the first I/O on a registered
//! buffer references and DMA-maps all of its pages once and builds the PRP list of the whole
//! buffer once in DMA-pool pages; later I/Os inside it map nothing, pin nothing and allocate no
//! PRP list (PRP1/PRP2 point into the premapped data, `nvme::premap_prps`).
//!
//! C header: [`include/linux/io_uring/cmd.h`](srctree/include/linux/io_uring/cmd.h)
//!
//! A [`Tag`] is owned by the open file's [`FileTags`] cache (bounded in number and bytes per
//! file, least recently used evicted) and by every request that uses it (a reference in the
//! request's PDU from submission until the request ended; a last reference is dropped in the
//! submitter's task, never in interrupt context), so it is released on close, eviction or
//! controller removal but never under an I/O in flight. The cache
//! key (the registration's identity, address and length) only finds a candidate: before an I/O
//! uses a tag, the pages the I/O covers are compared with the tag's
//! (`kernel_glue::premap::PremappedBuffer::covers`); a mismatch (buffer unregistered and another
//! registered at the same place) drops the stale tag and makes a new one, unless a cached tag of
//! another registration of the same range holds the I/O's pages: that one is taken over (a
//! buffer registered again is not mapped again), whether it is in this file's cache or in
//! another open file's of the controller (then shared). A file's cache holds at most one tag per
//! user address range, so no page is mapped by one tag per registration made of it. The counters
//! (`/sys/kernel/debug/rnvme/rnvme<C>/premap`) say which path each passthrough data I/O took.

use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use crate::io::IoData;
use kernel::{c_str, prelude::*, str::CStr, sync::Arc, ThisModule};
use kernel_glue::{
    chardev::UringCmd,
    debugfs::DebugCounters,
    dma::{DmaPool, PoolBlock},
    params::param_uint,
    pci,
    premap::PremappedBuffer,
    sync::{IrqSpinLock, SpinLock},
    time::{local_clock_ns, TscScale},
};
use nvme::{premap_list_entries, premap_list_pages, DmaPageTable, PremappedPages};

/// `premap`: premapped tags on (1, the default) or off (0: every I/O mapped per I/O).
static ENABLED: AtomicU32 = AtomicU32::new(1);
/// `premap_max_tags`: tags per open file.
static MAX_TAGS: AtomicU32 = AtomicU32::new(64);
/// `premap_max_mb`: MiB of registered buffers premapped per open file.
static MAX_MB: AtomicU32 = AtomicU32::new(1024);

/// Reads the `premap*` module parameters (at load, before any device).
pub(crate) fn load_params(module: &ThisModule) {
    for (name, v) in [
        (c_str!("premap"), &ENABLED),
        (c_str!("premap_max_tags"), &MAX_TAGS),
        (c_str!("premap_max_mb"), &MAX_MB),
    ] {
        if let Some(x) = param_uint(module, name) {
            v.store(x, Ordering::Relaxed);
        }
    }
}

/// The counters, in the order of [`NAMES`].
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Passthrough data I/Os on a premapped tag.
    IoPremapped,
    /// Passthrough data I/Os mapped per I/O.
    IoMapped,
    /// Tags created.
    TagsCreated,
    /// Tags evicted from a file's cache by its bounds.
    TagsEvicted,
    /// Tags released (their pages unmapped and unreferenced).
    TagsReleased,
    /// Tags alive.
    TagsLive,
    /// Premapped I/Os whose PRP list was written per I/O (the list chain boundary).
    IoPremappedListPerIo,
    /// Cached tags found stale (their pages are not the I/O's) and dropped.
    TagsStale,
    /// I/Os on a registered buffer that took the per-I/O path (premap off, limits, errors).
    IoFixedMapped,
    /// Bytes of registered buffers held mapped by live tags.
    TagBytesLive,
    /// Passthrough I/O commands on a poll queue (an io_uring IOPOLL ring's; those queues have
    /// no interrupt, so these completed by polling).
    IoPolled,
    /// Nanoseconds spent preparing io_uring I/O commands on a premapped tag (submit path, see
    /// [`Stats::submit_time`]).
    SubmitNsPremapped,
    /// io_uring I/O commands on a premapped tag whose submit path was timed.
    SubmitIosPremapped,
    /// Nanoseconds spent preparing io_uring I/O commands mapped per I/O.
    SubmitNsMapped,
    /// io_uring I/O commands mapped per I/O whose submit path was timed.
    SubmitIosMapped,
    /// Nanoseconds spent making tags (part of the submit time of the I/O that made each).
    TagCreateNs,
    /// Plain data I/Os (no registered buffer named) whose pinned pages a live tag maps, sent on
    /// that tag instead of mapping the same pages a second time (also in `io_premapped`).
    IoPlainOnTag,
    /// Cached tags taken over by another registration of the same pages (a buffer unregistered
    /// and registered again, or registered in another ring) instead of mapping them again.
    TagsTakenOver,
    /// Cached tags dropped because a plain I/O covered some of their pages but not in a way the
    /// tag could carry (e.g. an I/O across the end of a registered buffer).
    TagsDroppedOverlap,
    /// Tags cached by another open file of the controller that a registered buffer's I/O used
    /// (and this file cached) instead of mapping the same pages again.
    TagsShared,
}

/// The counter names, one per [`Counter`].
const NAMES: [&CStr; 20] = [
    c_str!("io_premapped"),
    c_str!("io_mapped"),
    c_str!("tags_created"),
    c_str!("tags_evicted"),
    c_str!("tags_released"),
    c_str!("tags_live"),
    c_str!("io_premapped_list_per_io"),
    c_str!("tags_stale"),
    c_str!("io_fixed_mapped"),
    c_str!("tag_bytes_live"),
    c_str!("io_polled"),
    c_str!("submit_ns_premapped"),
    c_str!("submit_ios_premapped"),
    c_str!("submit_ns_mapped"),
    c_str!("submit_ios_mapped"),
    c_str!("tag_create_ns"),
    c_str!("io_plain_on_tag"),
    c_str!("tags_taken_over"),
    c_str!("tags_dropped_overlap"),
    c_str!("tags_shared"),
];

/// The premap counters of one controller (debugfs `rnvme/rnvme<C>/premap`).
pub(crate) struct Stats {
    counters: DebugCounters<{ NAMES.len() }>,
    /// Converts the submit path's TSC cycles to nanoseconds.
    tsc: TscScale,
    /// Tags alive, as `tags_live` counts them: one shared atomic, so a plain I/O asks whether
    /// any tag exists with one load (the per-CPU counter is summed over every CPU).
    live: AtomicI64,
}

impl Stats {
    /// Creates the counters of controller `instance`.
    pub(crate) fn new(instance: u32) -> Result<Arc<Self>> {
        let counters =
            DebugCounters::new(format_args!("rnvme{}", instance), c_str!("premap"), &NAMES)?;
        Ok(Arc::new(
            Self {
                counters,
                tsc: TscScale::new(),
                live: AtomicI64::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// Adds `v` to counter `c`.
    pub(crate) fn add(&self, c: Counter, v: i64) {
        self.counters.add(c as usize, v);
    }

    /// Counts a tag made (`n = 1`) or released (`n = -1`) in `tags_live`.
    fn tags_live_add(&self, n: i64) {
        self.live.fetch_add(n, Ordering::Relaxed);
        self.add(Counter::TagsLive, n);
    }

    /// Whether any tag of the controller is alive (a plain I/O's pages can only be on one
    /// then).
    fn any_tag_live(&self) -> bool {
        self.live.load(Ordering::Relaxed) > 0
    }

    /// Records the submit-path time of one io_uring I/O command with data: `cycles` TSC
    /// cycles (`kernel_glue::time::tsc`, recorded in nanoseconds) of preparing it in the driver
    /// (from entering the I/O command's issue to its request being handed to the block layer,
    /// plus building its NVMe command in `queue_rq`: request allocation, the tag lookup and
    /// page check or the block layer's user mapping, DMA mapping, PRP list), on a premapped
    /// tag or mapped per I/O.
    pub(crate) fn submit_time(&self, premapped: bool, cycles: u64) {
        let ns = self.tsc.ns(cycles);
        let (sum, n) = if premapped {
            (Counter::SubmitNsPremapped, Counter::SubmitIosPremapped)
        } else {
            (Counter::SubmitNsMapped, Counter::SubmitIosMapped)
        };
        // The nanoseconds and the I/O count are consecutive counters: one call adds both.
        debug_assert_eq!(n as usize, sum as usize + 1);
        self.counters
            .add_range(sum as usize, &[i64::try_from(ns).unwrap_or(i64::MAX), 1]);
    }
}

/// A premapped registered buffer: its pages referenced and mapped, and its PRP list.
pub(crate) struct Tag {
    /// The pages, references and mappings.
    buf: PremappedBuffer,
    /// Bus address of each PRP list page.
    list_dma: KVec<u64>,
    /// The PRP list pages (freed on drop, after the device no longer uses them: every request
    /// using the tag holds a reference until it ended).
    _lists: KVec<PoolBlock>,
    /// Least-recently-used stamp in the owning cache.
    last_use: AtomicU64,
    /// The registration identity the cache finds this tag by: the one it was made from, or the
    /// last one that took it over (a cache key only; never trusted for safety).
    key: AtomicU64,
    /// Counters (release is counted on drop).
    stats: Arc<Stats>,
}

impl DmaPageTable for Tag {
    fn dma_pages(&self) -> &[u64] {
        self.buf.dma_pages()
    }
    fn first_page_offset(&self) -> u32 {
        self.buf.buf().first_page_offset
    }
    fn len(&self) -> u64 {
        self.buf.buf().len
    }
}

impl Tag {
    /// Premaps the registered buffer `u` names for `dev`, with its PRP list from `pool`.
    fn new(
        u: &UringCmd<'_>,
        dev: &pci::Device,
        pool: &Arc<DmaPool>,
        stats: &Arc<Stats>,
    ) -> Result<Arc<Self>> {
        let start = local_clock_ns();
        let buf = PremappedBuffer::new(u, dev)?;
        let b = *buf.buf();
        // Checked once here: every page 4 KiB aligned, the table long enough.
        let table =
            PremappedPages::new(buf.dma_pages(), b.first_page_offset, b.len).map_err(|_| EIO)?;
        let n = premap_list_pages(buf.dma_pages().len());
        let mut lists = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut list_dma = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            let p = DmaPool::alloc(pool)?;
            list_dma.push(p.dma_handle(), GFP_KERNEL)?;
            lists.push(p, GFP_KERNEL)?;
        }
        for (page, slot, v) in premap_list_entries(&table, &list_dma).map_err(|_| EINVAL)? {
            lists
                .get(page)
                .ok_or(EINVAL)?
                .write(slot * 8, &v.to_le_bytes())?;
        }
        stats.add(Counter::TagsCreated, 1);
        stats.tags_live_add(1);
        stats.add(Counter::TagBytesLive, buf.mapped_bytes() as i64);
        let ns = local_clock_ns().saturating_sub(start);
        stats.add(Counter::TagCreateNs, i64::try_from(ns).unwrap_or(i64::MAX));
        Ok(Arc::new(
            Self {
                buf,
                list_dma,
                _lists: lists,
                last_use: AtomicU64::new(0),
                key: AtomicU64::new(b.id),
                stats: stats.clone(),
            },
            GFP_KERNEL,
        )?)
    }

    /// The premapped pages.
    pub(crate) fn buf(&self) -> &PremappedBuffer {
        &self.buf
    }

    /// Bus addresses of the PRP list pages.
    pub(crate) fn list_dma(&self) -> &[u64] {
        &self.list_dma
    }

    /// Counts an I/O on this tag.
    pub(crate) fn count(&self, c: Counter) {
        self.stats.add(c, 1);
    }
}

impl Drop for Tag {
    fn drop(&mut self) {
        self.stats.add(Counter::TagsReleased, 1);
        self.stats.tags_live_add(-1);
        self.stats
            .add(Counter::TagBytesLive, -(self.buf.mapped_bytes() as i64));
    }
}

/// Entries of [`Cache::hints`]: registrations at table indexes below this never share one.
const HINTS: usize = 128;

/// Slots of a file's cache.
///
/// # Invariants
///
/// At most one slot holds a tag of a given user address range (`same_range`): a tag made or
/// shared for a registration replaces the cached one of the same range, whose pages were not the
/// I/O's. Otherwise every registration of the same memory that found more than one candidate
/// could add a tag, and a page would be mapped once per tag (`kernel/dma/debug.c` warns past
/// eight mappings of a cacheline, "exceeded 7 overlapping mappings").
struct Cache {
    slots: KVec<Option<Arc<Tag>>>,
    /// Where the last lookup of a registration found its tag: 1 + slot index, by
    /// [`hint_of`] the registration (0: none). Only a hint: the slot is checked like any
    /// other, and a miss falls back to the scan, so a stale entry costs one comparison. With
    /// one registered buffer per I/O in flight (fio's `fixedbufs=1`), the scan of every slot
    /// per I/O was the tag lookup's main cost.
    hints: [u16; HINTS],
    bytes: u64,
    clock: u64,
    closed: bool,
}

/// The [`Cache::hints`] entry of registration `b`: its index in the ring's buffer table, so
/// the buffers an application registers together (fio's one per I/O in flight) each have
/// their own entry. (A hash of the registration's address, used before, put fio's 32 buffers
/// into 64 entries with collisions: 12-31% of the lookups, by boot, missed the hint and
/// scanned.)
#[inline]
fn hint_of(b: &kernel_glue::premap::FixedBuf) -> usize {
    b.index as usize % HINTS
}

/// The tags of one open file.
pub(crate) struct FileTags {
    /// Taken only in process context (I/O issue, file release, controller removal), so a
    /// plain spinlock: every I/O on a registered buffer looks its tag up here, and keeping
    /// interrupts enabled meanwhile costs nothing (lockdep checks no interrupt handler takes
    /// it).
    cache: SpinLock<Cache>,
}

/// How much of a plain I/O's bytes a tag maps (see [`overlap`]).
enum Overlap {
    /// Every byte, at the same offsets: the I/O can go on the tag.
    Whole,
    /// Some pages but not all: a second mapping of the I/O's pages would overlap the tag's.
    Part,
    /// None of its pages.
    None,
}

/// What [`FileTags::holding`] found.
enum Held {
    /// A cached tag holding all of the I/O's bytes.
    Whole(Arc<Tag>),
    /// A tag mapping some of them, taken out of the cache.
    Part(Arc<Tag>),
    /// Neither.
    None,
}

/// How much of the plain I/O at user addresses `[addr, end)`, whose segments `for_each` hands
/// out in order, `t` maps at the same place: the I/O's bytes inside the tag's address range
/// are compared, 4 KiB piece by piece, with the tag's pages (physical addresses).
fn overlap(
    t: &Tag,
    addr: u64,
    end: u64,
    for_each: &impl Fn(&mut dyn FnMut(&bvec::Bvec<kernel_glue::KPage>) -> Result) -> Result,
) -> Overlap {
    let b = t.buf.buf();
    let lo = b.ubuf;
    let Some(hi) = lo.checked_add(b.len) else {
        return Overlap::None;
    };
    if hi <= addr || lo >= end {
        return Overlap::None;
    }
    let mut va = addr;
    let mut matched = 0u64;
    let walked = for_each(&mut |seg| {
        let seg_end = va + u64::from(seg.len());
        let mut s = va.max(lo);
        let e = seg_end.min(hi);
        while s < e {
            // Up to the next 4 KiB boundary of the tag's buffer.
            let pos = s - lo + u64::from(b.first_page_offset);
            let n = (e - s).min(4096 - pos % 4096);
            let piece = u32::try_from(s - va)
                .ok()
                .and_then(|d| seg.offset().checked_add(d))
                .and_then(|o| bvec::Bvec::new(seg.page(), o, n as u32).ok());
            if piece.is_some_and(|p| t.buf.holds(s - lo, &p)) {
                matched += n;
            }
            s += n;
        }
        va = seg_end;
        Ok(())
    });
    if walked.is_err() || matched == 0 {
        Overlap::None
    } else if lo <= addr && end <= hi && matched == end - addr && va == end {
        Overlap::Whole
    } else {
        Overlap::Part
    }
}

/// Whether `t` is cached for registration `b`.
fn same_key(t: &Tag, b: &kernel_glue::premap::FixedBuf) -> bool {
    t.key.load(Ordering::Relaxed) == b.id && same_range(t, b)
}

/// Whether `t` was made from a registration of the same user address range as `b`.
fn same_range(t: &Tag, b: &kernel_glue::premap::FixedBuf) -> bool {
    let k = t.buf.buf();
    k.ubuf == b.ubuf && k.len == b.len
}

impl FileTags {
    /// An empty cache with the bounds of the module parameters.
    pub(crate) fn new() -> Result<Arc<Self>> {
        let max = MAX_TAGS.load(Ordering::Relaxed).clamp(1, 4096) as usize;
        let slots = KVec::from_elem(None, max, GFP_KERNEL)?;
        Ok(Arc::new(
            Self {
                cache: SpinLock::new(Cache {
                    slots,
                    hints: [0; HINTS],
                    bytes: 0,
                    clock: 0,
                    closed: false,
                })?,
            },
            GFP_KERNEL,
        )?)
    }

    /// Drops every tag and refuses new ones (file closed or controller removed). Tags are
    /// dropped outside the lock (releasing one unmaps and unreferences its pages).
    pub(crate) fn close(&self) {
        self.cache.lock().closed = true;
        while let Some(t) = self.take_one(|_| true) {
            drop(t);
        }
    }

    /// Takes the first tag `pick` chooses out of the cache.
    fn take_one(&self, pick: impl Fn(&Arc<Tag>) -> bool) -> Option<Arc<Tag>> {
        let mut c = self.cache.lock();
        let slot = c.slots.iter_mut().find(|s| s.as_ref().is_some_and(&pick))?;
        let t = slot.take()?;
        c.bytes = c.bytes.saturating_sub(t.buf.mapped_bytes());
        Some(t)
    }

    /// The cached tag for registration `b`, marked used.
    fn lookup(&self, b: &kernel_glue::premap::FixedBuf) -> Option<Arc<Tag>> {
        let mut c = self.cache.lock();
        c.clock += 1;
        let now = c.clock;
        let h = hint_of(b);
        let hinted = c
            .hints
            .get(h)
            .and_then(|&i| usize::from(i).checked_sub(1))
            .filter(|&i| matches!(c.slots.get(i), Some(Some(t)) if same_key(t, b)));
        let i = match hinted {
            Some(i) => i,
            None => {
                let i = c
                    .slots
                    .iter()
                    .position(|s| s.as_ref().is_some_and(|t| same_key(t, b)))?;
                if let (Some(e), Ok(v)) = (c.hints.get_mut(h), u16::try_from(i + 1)) {
                    *e = v;
                }
                i
            }
        };
        let t = c.slots.get(i)?.as_ref()?.clone();
        t.last_use.store(now, Ordering::Relaxed);
        Some(t)
    }

    /// The cached tag of the same user address range as `b` (at most one, [`Cache`]'s
    /// invariant), whichever registration it was made from.
    fn same_range_tag(&self, b: &kernel_glue::premap::FixedBuf) -> Option<Arc<Tag>> {
        let c = self.cache.lock();
        c.slots.iter().flatten().find(|t| same_range(t, b)).cloned()
    }

    /// Looks through the cache for the `len` bytes at user address `addr` of a plain I/O whose
    /// data segments `for_each` hands out: a tag whose buffer holds exactly those bytes
    /// ([`Held::Whole`]), else one that maps some of their pages but not all, taken out of the
    /// cache ([`Held::Part`]: the caller drops it outside the lock and asks again), else
    /// [`Held::None`]. Checked under the lock (page addresses only; nothing sleeps).
    fn holding(
        &self,
        addr: u64,
        len: u32,
        for_each: &impl Fn(&mut dyn FnMut(&bvec::Bvec<kernel_glue::KPage>) -> Result) -> Result,
    ) -> Held {
        let Some(end) = addr.checked_add(u64::from(len)) else {
            return Held::None;
        };
        let mut c = self.cache.lock();
        let mut part = None;
        for (i, t) in c.slots.iter().enumerate() {
            let Some(t) = t else { continue };
            match overlap(t, addr, end, for_each) {
                Overlap::Whole => return Held::Whole(t.clone()),
                Overlap::Part => {
                    part = Some(i);
                    break;
                }
                Overlap::None => {}
            }
        }
        let Some(t) = part.and_then(|i| c.slots.get_mut(i)).and_then(Option::take) else {
            return Held::None;
        };
        c.bytes = c.bytes.saturating_sub(t.buf.mapped_bytes());
        Held::Part(t)
    }

    /// [`FileTags::holding`] until it finds no tag mapping part of the I/O's pages: the cached
    /// tag holding all of them, if any. Tags holding part of them are dropped from the cache
    /// (counted in `tags_dropped_overlap`; outside the lock), so that the per-I/O mapping the
    /// I/O then gets does not overlap a cached tag's; a request in flight on such a tag keeps
    /// it mapped until it ends, as two I/Os in flight on the same pages would be mapped twice
    /// by any driver.
    fn holding_dropping(
        &self,
        addr: u64,
        len: u32,
        for_each: &impl Fn(&mut dyn FnMut(&bvec::Bvec<kernel_glue::KPage>) -> Result) -> Result,
        stats: &Stats,
    ) -> Option<Arc<Tag>> {
        loop {
            match self.holding(addr, len, for_each) {
                Held::Whole(t) => return Some(t),
                Held::Part(t) => {
                    stats.add(Counter::TagsDroppedOverlap, 1);
                    drop(t);
                }
                Held::None => return None,
            }
        }
    }

    /// Removes `t` from the cache if it is there.
    fn remove(&self, t: &Arc<Tag>) -> Option<Arc<Tag>> {
        self.take_one(|x| Arc::ptr_eq(x, t))
    }

    /// Inserts `t` in place of the cached tag of the same range, if any (dropped as stale: the
    /// caller found its pages are not the I/O's), evicting least recently used tags while the
    /// bounds are exceeded; `false` (not inserted) when the cache is closed or `t` alone exceeds
    /// the byte bound.
    fn insert(&self, t: &Arc<Tag>, stats: &Stats) -> bool {
        let max_bytes = u64::from(MAX_MB.load(Ordering::Relaxed)) << 20;
        let bytes = t.buf.mapped_bytes();
        if bytes > max_bytes {
            return false;
        }
        let k = t.buf.buf();
        loop {
            let (victim, counter) = {
                let mut c = self.cache.lock();
                if c.closed {
                    return false;
                }
                // The cached tag of the same range goes first (the invariant is checked and
                // kept under the same lock as the insertion).
                let same = c
                    .slots
                    .iter()
                    .position(|s| s.as_ref().is_some_and(|x| same_range(x, k)));
                // Already cached (another thread of the process inserted it first).
                if same
                    .is_some_and(|i| matches!(c.slots.get(i), Some(Some(x)) if Arc::ptr_eq(x, t)))
                {
                    return true;
                }
                let free = c.slots.iter().position(|s| s.is_none());
                if let Some(v) = same.and_then(|i| c.slots.get_mut(i)).and_then(Option::take) {
                    c.bytes = c.bytes.saturating_sub(v.buf.mapped_bytes());
                    (v, Counter::TagsStale)
                } else {
                    match free {
                        Some(i) if c.bytes + bytes <= max_bytes => {
                            c.clock += 1;
                            t.last_use.store(c.clock, Ordering::Relaxed);
                            c.bytes += bytes;
                            if let Some(s) = c.slots.get_mut(i) {
                                *s = Some(t.clone());
                            }
                            return true;
                        }
                        _ => {
                            // Evict the least recently used tag.
                            let lru = c.slots.iter_mut().filter(|s| s.is_some()).min_by_key(|s| {
                                s.as_ref()
                                    .map_or(u64::MAX, |t| t.last_use.load(Ordering::Relaxed))
                            });
                            let Some(v) = lru.and_then(Option::take) else {
                                return false;
                            };
                            c.bytes = c.bytes.saturating_sub(v.buf.mapped_bytes());
                            (v, Counter::TagsEvicted)
                        }
                    }
                }
            };
            stats.add(counter, 1);
            // Dropped outside the lock; in-flight requests keep their own references.
            drop(victim);
        }
    }

    /// The tag for an I/O of `len` bytes at user address `addr` of the registered buffer `u`
    /// names, found (in this file's cache, else in another open file's of `files`) or made;
    /// `None` when the I/O must take the per-I/O path (premap off, the buffer over the bounds,
    /// or any error making the tag).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tag_for(
        &self,
        files: &Registry,
        u: &UringCmd<'_>,
        addr: u64,
        len: u32,
        write: bool,
        io: &IoData,
        stats: &Arc<Stats>,
    ) -> Option<Arc<Tag>> {
        if ENABLED.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let b = u.fixed_buf()?;
        if b.nr_pages.saturating_mul(4096) > u64::from(MAX_MB.load(Ordering::Relaxed)) << 20 {
            return None;
        }
        if let Some(t) = self.lookup(&b) {
            match t.buf.covers(u, addr, len, write) {
                Ok(true) => return Some(t),
                Ok(false) => {
                    // Same key, other memory: a new registration where the old one was.
                    stats.add(Counter::TagsStale, 1);
                    drop(self.remove(&t));
                }
                Err(_) => return None,
            }
        }
        // Another registration of the same range (the buffer unregistered and registered
        // again, or registered in another ring) whose tag maps the very pages this I/O covers:
        // taken over, so the same pages are never mapped twice.
        if let Some(t) = self.same_range_tag(&b) {
            if matches!(t.buf.covers(u, addr, len, write), Ok(true)) {
                t.key.store(b.id, Ordering::Relaxed);
                stats.add(Counter::TagsTakenOver, 1);
                return Some(t);
            }
        }
        // The same pages used through another open file of the controller (the device opened
        // twice, or by another process with the same memory registered): its tag, shared.
        if let Some(t) = files.tag_covering(self, u, &b, addr, len, write) {
            t.key.store(b.id, Ordering::Relaxed);
            stats.add(Counter::TagsShared, 1);
            self.insert(&t, stats);
            return Some(t);
        }
        let t = Tag::new(u, &io.dev, &io.pool, stats).ok()?;
        // The new tag was made from this very registration; check it like any other.
        if !matches!(t.buf.covers(u, addr, len, write), Ok(true)) {
            return None;
        }
        // Used even when the cache refuses it: the request's reference keeps it for this I/O.
        self.insert(&t, stats);
        Some(t)
    }
}

/// Open files' tag caches of one controller, so its removal can release them all.
pub(crate) struct Registry {
    files: IrqSpinLock<KVec<Option<Arc<FileTags>>>>,
}

impl Registry {
    /// An empty registry.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            files: IrqSpinLock::new(KVec::new())?,
        })
    }

    /// Registers `f`.
    pub(crate) fn add(&self, f: &Arc<FileTags>) -> Result {
        let mut g = self.files.lock();
        if let Some(s) = g.iter_mut().find(|s| s.is_none()) {
            *s = Some(f.clone());
            return Ok(());
        }
        // GFP_ATOMIC: under a spinlock.
        g.push(Some(f.clone()), GFP_ATOMIC)?;
        Ok(())
    }

    /// Removes `f`.
    pub(crate) fn remove(&self, f: &Arc<FileTags>) {
        let t = {
            let mut g = self.files.lock();
            g.iter_mut()
                .find(|s| s.as_ref().is_some_and(|x| Arc::ptr_eq(x, f)))
                .and_then(Option::take)
        };
        drop(t);
    }

    /// A live cached tag that maps the `len` bytes at user address `addr` of a plain I/O,
    /// whose data segments (the pinned user pages, in order) `for_each` hands out: one of
    /// `own`'s (the caller's open file), else of any open file of the controller; `None` when
    /// no tag holds exactly those pages.
    ///
    /// A tag keeps its pages mapped while it is cached; mapping them again for a plain I/O would
    /// make two live mappings of the same memory for one device, which the DMA API does not
    /// support (`kernel/dma/debug.c` reports it as "cacheline tracking EEXIST", and a later sync
    /// of a range two mappings contain finds neither). The address only picks candidates (every
    /// process forked from one parent has buffers at the same addresses, and a buffer replaced
    /// and registered again leaves several tags at one address): a tag is used only if every
    /// segment is the tag's bytes at the same offset (same physical pages).
    pub(crate) fn tag_holding(
        &self,
        own: Option<&FileTags>,
        stats: &Stats,
        addr: u64,
        len: u32,
        for_each: impl Fn(&mut dyn FnMut(&bvec::Bvec<kernel_glue::KPage>) -> Result) -> Result,
    ) -> Option<Arc<Tag>> {
        if !stats.any_tag_live() || len == 0 {
            return None;
        }
        if let Some(t) = own.and_then(|f| f.holding_dropping(addr, len, &for_each, stats)) {
            return Some(t);
        }
        self.find_in_others(own, |f| f.holding_dropping(addr, len, &for_each, stats))
    }

    /// A tag cached by an open file other than `own` for the user address range of registration
    /// `b` that maps the pages the I/O of `len` bytes at `addr` covers (checked like a tag of
    /// `own`'s, `PremappedBuffer::covers`).
    fn tag_covering(
        &self,
        own: &FileTags,
        u: &UringCmd<'_>,
        b: &kernel_glue::premap::FixedBuf,
        addr: u64,
        len: u32,
        write: bool,
    ) -> Option<Arc<Tag>> {
        self.find_in_others(Some(own), |f| {
            f.same_range_tag(b)
                .filter(|t| matches!(t.buf.covers(u, addr, len, write), Ok(true)))
        })
    }

    /// The first `Some` that `f` returns for an open file other than `own`, one file at a time
    /// (never two file locks at once, no file lock under the registry's). A file opened or
    /// closed meanwhile may be missed; callers then map per I/O, which is always correct.
    fn find_in_others<T>(
        &self,
        own: Option<&FileTags>,
        mut f: impl FnMut(&FileTags) -> Option<T>,
    ) -> Option<T> {
        for i in 0.. {
            let file = {
                let files = self.files.lock();
                match files.get(i) {
                    Some(Some(x)) => x.clone(),
                    Some(None) => continue,
                    None => return None,
                }
            };
            if own.is_some_and(|o| core::ptr::eq(o, &*file)) {
                continue;
            }
            if let Some(t) = f(&file) {
                return Some(t);
            }
        }
        None
    }

    /// Closes every registered file's cache (controller removal, after the last call left).
    pub(crate) fn close_all(&self) {
        loop {
            let f = {
                let mut g = self.files.lock();
                g.iter_mut().find(|s| s.is_some()).and_then(Option::take)
            };
            match f {
                Some(f) => f.close(),
                None => return,
            }
        }
    }
}
