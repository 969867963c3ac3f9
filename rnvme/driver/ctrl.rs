// SPDX-License-Identifier: GPL-2.0

//! One NVMe controller: probe (bring-up, queues, disks) and remove (teardown), the rnvme
//! counterparts of `nvme_probe()`/`nvme_reset_work()`/`nvme_remove()` in
//! `drivers/nvme/host/pci.c`.
//!
//! C header: [`include/linux/pci.h`](srctree/include/linux/pci.h)

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::{c_str, prelude::*, sync::Arc};
use kernel_glue::{
    block::mq::{GenDisk, NsAttrs, QueueLimits, QueueMap, TagSet},
    dma::DmaPool,
    io::Bar,
    irq::{self, Vectors},
    pci::{self, BusMaster, Enabled},
    time::{msleep, num_online_cpus},
};
use nvme::{
    active_namespaces, AdminQueue, Cap, Cns, CtrlState, DbbufLayout, Disable, Doorbells, Enable,
    IdentifyController, IdentifyControllerNvm, IdentifyNamespace, NsIds, Poll, QueueGrant,
    QueuePlan, ShutdownSeq, SubmissionEntry, Wwid, NS_DESC_MIN_VERSION, NVM_IDENTIFY_MIN_VERSION,
    REG_CAP, REG_VS,
};

use crate::{
    admin::{Admin, AdminIrq, ADMIN_DEPTH},
    io::{IoData, IoOps, Namespace, QueueIrq, MAX_SEGS},
    queue::{DbbufPages, Queue},
    regs::BarRegs,
    Params,
};

/// Controller instances in use (bit `i`: `rnvme<i>`), so names are reused after removal.
static INSTANCES: AtomicU64 = AtomicU64::new(0);
/// Most controllers bound at once.
const MAX_INSTANCES: u32 = 64;
/// I/O request timeout (`NVME_IO_TIMEOUT`).
const IO_TIMEOUT_MS: u32 = 30_000;

/// An instance number, released on drop.
struct Instance(u32);

impl Instance {
    fn get() -> Result<Self> {
        let mut cur = INSTANCES.load(Ordering::Relaxed);
        loop {
            let free = (!cur).trailing_zeros();
            if free >= MAX_INSTANCES {
                return Err(EBUSY);
            }
            match INSTANCES.compare_exchange(
                cur,
                cur | (1 << free),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Self(free)),
                Err(now) => cur = now,
            }
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        INSTANCES.fetch_and(!(1u64 << self.0), Ordering::AcqRel);
    }
}

/// Runs a bounded register state machine (`Enable`, `Disable`, `ShutdownSeq`) to its end,
/// sleeping as it asks; its own deadline (on this sleep-counting clock) bounds the loop.
pub(crate) fn run_sm<E: core::fmt::Display>(
    mut poll: impl FnMut(u64) -> core::result::Result<Poll, E>,
) -> core::result::Result<(), E> {
    let mut now = 0u64;
    loop {
        match poll(now)? {
            Poll::Wait(ms) => {
                msleep(ms);
                now += u64::from(ms.max(1));
            }
            Poll::Done => return Ok(()),
        }
    }
}

/// A bound controller. Fields drop in declaration order, which is the teardown order after
/// `remove` has deleted the disks and the I/O queues and shut the controller down.
pub(crate) struct Controller {
    /// The passthrough character devices (removed first).
    passthru: Option<crate::passthru::Devices>,
    /// One disk per active namespace.
    disks: KVec<GenDisk<IoOps>>,
    /// I/O queue interrupt handlers (hold the tag set).
    irqs: KVec<irq::Registration<QueueIrq>>,
    /// The admin queue's interrupt handler on vector 0 (freed after the I/O queues' handlers,
    /// before the vectors).
    admin_irq: Option<irq::Registration<AdminIrq>>,
    /// Interrupt vectors, freed once no handler is registered.
    _vectors: Vectors,
    /// Bus mastering and the enabled device: turned off before any memory the controller could
    /// write (queues, PRP pages) is freed, as `nvme_remove()` disables the device first.
    _master: BusMaster,
    /// The I/O tag set.
    set: Arc<TagSet<IoOps>>,
    /// I/O queues, pool, device (also inside the tag set).
    io: Arc<IoData>,
    rtd3e: u32,
    /// Whether there are poll queues (the disks then support polled I/O).
    poll: bool,
    bar: Arc<Bar>,
    dev: pci::Device,
    instance: Instance,
}

/// Shadow doorbells for every I/O queue (`nvme_dbbuf_dma_alloc()`, `nvme_dbbuf_init()`,
/// `nvme_dbbuf_set()` in `drivers/nvme/host/pci.c`): the pages are attached to the queues
/// (which keep them until they are freed, after the controller is shut down), then the
/// controller is given their addresses. Optional, as in the C driver: on any failure every queue
/// goes on with MMIO doorbells only. Returns whether they are in use.
fn setup_shadow_doorbells(
    dev: &pci::Device,
    admin: &Admin,
    dbs: &Doorbells,
    queues: &KVec<Arc<Queue>>,
) -> bool {
    let Ok(pages) = DbbufPages::new(dev) else {
        return false;
    };
    let layout = DbbufLayout::new(dbs);
    let detach = || queues.iter().for_each(|q| q.detach_shadow());
    if queues
        .iter()
        .any(|q| q.attach_shadow(&pages, &layout).is_err())
    {
        detach();
        return false;
    }
    let (db_addr, ei_addr) = pages.addrs();
    if let Err(e) = admin.exec(SubmissionEntry::dbbuf_config(db_addr, ei_addr)) {
        pr_warn!("{}: Doorbell Buffer Config failed ({:?})\n", dev.name(), e);
        detach();
        return false;
    }
    true
}

/// Requests the admin queue's interrupt on vector 0 of `vectors` (`queue_request_irq()` for
/// queue 0): shared with I/O queue 1 when it is the only vector (or INTx), as the I/O queues'
/// handlers are. The admin queue's completions come by interrupt from then on.
fn request_admin_irq(admin: &Admin, vectors: &Vectors) -> Result<irq::Registration<AdminIrq>> {
    let shared = !vectors.is_msix() || vectors.count() == 1;
    let reg = irq::Registration::new(
        vectors.irq(0)?,
        shared,
        c_str!("rnvme"),
        AdminIrq::new(admin, shared)?,
    )?;
    admin.set_irq(true);
    Ok(reg)
}

/// Reads the Identify data of `cns`/`nsid`.
fn identify(admin: &Admin, dev: &pci::Device, cns: Cns, nsid: u32) -> Result<KVec<u8>> {
    admin.exec_read_page(dev, |d| SubmissionEntry::identify(cns, nsid, d))
}

/// The NVM Command Set's Identify Controller data (its discard and write-zeroes limits), read
/// as `nvme_init_non_mdts_limits()` reads it: only from a controller of version `vs` 1.2 or
/// later (`nvme_id_cns_ok()`); a controller that fails the command with an NVMe status has
/// none (the C driver then sets `NVME_CTRL_SKIP_ID_CNS_CS`), any other error fails the probe.
fn identify_nvm(admin: &Admin, dev: &pci::Device, vs: u32) -> Result<Option<IdentifyControllerNvm>> {
    if vs < NVM_IDENTIFY_MIN_VERSION {
        return Ok(None);
    }
    match identify(admin, dev, Cns::NvmController, 0) {
        Ok(b) => Ok(IdentifyControllerNvm::parse(&b).ok()),
        // `Session::exec`: EIO is the command's own failure (an NVMe status).
        Err(e) if e == EIO => Ok(None),
        Err(e) => Err(e),
    }
}

impl Controller {
    /// Brings up the controller on `dev` and adds its disks.
    pub(crate) fn probe(dev: &pci::Device, params: &Params) -> Result<KBox<Self>> {
        let instance = Instance::get()?;
        let enabled = Enabled::new(dev)?;
        let bar = Arc::new(Bar::new(dev, 0, 0, c_str!("rnvme"))?, GFP_KERNEL)?;
        dev.dma_set_mask(64)?;
        // One DMA segment per request where an IOMMU maps a scatterlist into one IOVA range
        // (the PCI core's default caps segments at 64 KiB), as `nvme_pci_alloc_dev()` sets.
        dev.dma_set_max_seg_size(u32::MAX);
        let master = BusMaster::new(enabled);
        let regs = BarRegs(&bar);
        let cap = Cap::from_raw(nvme::Registers::read64(&regs, REG_CAP));
        let dbs = Doorbells::new(cap, bar.len() as u64);

        // Reset, admin queue, enable (bounded by CAP.TO inside `Enable`).
        let aq = Queue::new(dev, &bar, &dbs, 0, ADMIN_DEPTH, ADMIN_DEPTH, None)?;
        let mut en = Enable::new(AdminQueue {
            sq_addr: aq.sq_addr(),
            cq_addr: aq.cq_addr(),
            entries: ADMIN_DEPTH as u16,
        });
        let admin = Admin::new(aq, bar.clone(), dev.clone(), instance.0)?;
        // One vector for the admin queue, its interrupt requested before the controller is
        // enabled, as `nvme_pci_enable()` allocates it before `nvme_pci_configure_admin_queue()`
        // (a controller may bind the admin completion queue to its vector when it is enabled:
        // QEMU's signals vector 0 only if MSI-X was on then). Replaced below by the full set.
        let first_vectors = Vectors::new(dev, 1, 1, 1)?;
        let first_irq = request_admin_irq(&admin, &first_vectors)?;
        run_sm(|now| en.poll(&regs, now)).map_err(|e| {
            pr_err!("{}: enable failed: {}\n", dev.name(), e);
            ENODEV
        })?;

        let idc = IdentifyController::parse(&identify(&admin, dev, Cns::Controller, 0)?)
            .map_err(|_| EIO)?;
        let vs = nvme::Registers::read32(&regs, REG_VS);
        let nvm = identify_nvm(&admin, dev, vs)?;

        // Queues: ask for one per CPU (or the io_queues parameter), use what is granted.
        let cpus = num_online_cpus().max(1);
        let wanted = if params.io_queues == 0 {
            cpus
        } else {
            params.io_queues.min(cpus)
        };
        let wanted_poll = u16::try_from(params.poll_queues.min(64)).unwrap_or(0);
        let request = QueuePlan::request(wanted, wanted_poll);
        let res = admin.exec(SubmissionEntry::set_num_queues(request).map_err(|_| EINVAL)?)?;
        let grant = QueueGrant::from_result(res as u32);
        // Interrupt vectors: the admin queue's plus one per interrupt-driven I/O queue (poll
        // queues need none). As `nvme_setup_irqs()`: the admin interrupt and the first vector
        // are freed, all are allocated, and the admin interrupt is requested again on vector 0.
        admin.set_irq(false);
        drop(first_irq);
        drop(first_vectors);
        let vectors = Vectors::new(dev, 1, wanted.min(u32::from(grant.pairs())).max(1) + 1, 1)?;
        let admin_irq = request_admin_irq(&admin, &vectors)?;
        let io_vectors = vectors.count().saturating_sub(1).max(1);
        let plan = QueuePlan::new(wanted, wanted_poll, grant, io_vectors).map_err(|_| EINVAL)?;
        let depth = (params.queue_depth.clamp(2, crate::queue::MAX_DEPTH as u32))
            .min(cap.max_queue_entries());
        let msix_spread = vectors.is_msix() && vectors.count() > 1;
        // Completion queues twice as deep as their submission queues, so their head doorbells
        // can be deferred (`Queue::new`): for message interrupts (MSI-X) and polled queues
        // only; the C driver sizes both alike and reports the head after every interrupt.
        let deep_cq = (depth.saturating_mul(2))
            .min(crate::queue::MAX_CQ_DEPTH)
            .min(cap.max_queue_entries());
        let cq_depth_poll = if params.defer_cq_doorbell {
            deep_cq
        } else {
            depth
        };
        let cq_depth_irq = if vectors.is_msix() {
            cq_depth_poll
        } else {
            depth
        };

        let mut queues = KVec::new();
        for i in 0..plan.default {
            let qid = i + 1;
            // Vector 0 is the admin queue's; with a single vector everything shares it.
            let vector = if vectors.count() > 1 {
                u32::from(qid).min(vectors.count() - 1)
            } else {
                0
            };
            let q = Queue::new(dev, &bar, &dbs, qid, depth, cq_depth_irq, Some(vector as u16))?;
            for cmd in q.create_cmds()? {
                admin.exec(cmd)?;
            }
            queues.push(q, GFP_KERNEL)?;
        }
        // Poll queues: after the interrupt-driven ones (hardware queue index = queue id - 1),
        // completion queues created without interrupts.
        for j in 0..plan.poll {
            let qid = plan.default + 1 + j;
            let q = Queue::new(dev, &bar, &dbs, qid, depth, cq_depth_poll, None)?;
            for cmd in q.create_cmds()? {
                admin.exec(cmd)?;
            }
            queues.push(q, GFP_KERNEL)?;
        }

        // Every queue pair exists now (ids 1 to n): a reset deletes them before it disables,
        // unless the parameter says not to.
        let deletable = if params.delete_queues_before_disable {
            queues.len() as u16
        } else {
            0
        };
        admin.set_deletable_queues(deletable);

        let shadow = if params.shadow_doorbells && idc.supports_dbbuf() {
            setup_shadow_doorbells(dev, &admin, &dbs, &queues)
        } else {
            false
        };

        let pool = DmaPool::new(dev, c_str!("rnvme-prp"), 4096, 4096, 0)?;
        let io = Arc::new(
            IoData {
                queues,
                pool,
                prp_stats: crate::dptr::PrpStats::new(instance.0)?,
                dev: Arc::new(dev.clone(), GFP_KERNEL)?,
                admin,
                queue_request: request,
                resets: AtomicU32::new(0),
                sgls: idc.supports_sgls(),
                meta_sgls: idc.supports_metadata_sgls(),
                one_iova: dev.dma_uses_iommu(),
                sgl_threshold: params.sgl_threshold,
                batch_stats: crate::batch_stats::BatchStats::new(instance.0)?,
                premap_stats: crate::passthru::PremapStats::new(instance.0)?,
                phases: crate::phases::Phases::new(instance.0)?,
            },
            GFP_KERNEL,
        )?;
        let map = if msix_spread {
            QueueMap::Irq {
                dev: dev.clone(),
                offset: 1,
            }
        } else {
            QueueMap::Spread
        };
        let set = TagSet::<IoOps>::new(
            io.clone(),
            u32::from(plan.default),
            u32::from(plan.poll),
            depth - 1,
            IO_TIMEOUT_MS,
            map,
        )?;

        let mut irqs = KVec::new();
        for i in 0..u32::from(plan.default) {
            let vector = if vectors.count() > 1 {
                (i + 1).min(vectors.count() - 1)
            } else {
                0
            };
            let handler = Arc::new(
                QueueIrq {
                    set: set.clone(),
                    hctx_idx: i,
                    shared: !vectors.is_msix() || vectors.count() == 1,
                },
                GFP_KERNEL,
            )?;
            let shared = !vectors.is_msix() || vectors.count() == 1;
            irqs.push(
                irq::Registration::new(vectors.irq(vector)?, shared, c_str!("rnvme"), handler)?,
                GFP_KERNEL,
            )?;
        }

        pr_info!(
            "{}: rnvme{}: {} I/O + {} poll queues of depth {}, CQ depth {}/{} ({} vectors{}{}), mdts {}, {} namespaces\n",
            dev.name(),
            instance.0,
            plan.default,
            plan.poll,
            depth,
            cq_depth_irq,
            cq_depth_poll,
            vectors.count(),
            if vectors.is_msix() { ", MSI-X" } else { "" },
            if shadow { ", shadow doorbells" } else { "" },
            idc.mdts(),
            idc.nn()
        );

        let mut this = KBox::new(
            Self {
                passthru: None,
                disks: KVec::new(),
                irqs,
                admin_irq: Some(admin_irq),
                set,
                io,
                rtd3e: idc.rtd3e(),
                poll: plan.poll > 0,
                _vectors: vectors,
                bar,
                _master: master,
                dev: dev.clone(),
                instance,
            },
            GFP_KERNEL,
        )?;
        // On failure from here, `remove`'s teardown runs through the drop of `this` (disks,
        // queues, interrupts); the controller is shut down as in remove.
        if let Err(e) = this.add_disks(&idc, nvm.as_ref(), cap, vs) {
            this.teardown();
            return Err(e);
        }
        // Character devices for passthrough: without them the disks still work.
        match crate::passthru::Devices::new(this.instance.0, &this.io, &this.set, &this.disks) {
            Ok(d) => this.passthru = Some(d),
            Err(e) => pr_warn!(
                "rnvme{}: no passthrough devices: {:?}\n",
                this.instance.0,
                e
            ),
        }
        // Bound: an admin timeout from now on resets the controller (`NVME_CTRL_LIVE`).
        this.io.admin.set_recoverable(true);
        Ok(this)
    }

    /// The identifiers of namespace `nsid` (its Identify Namespace data `id`) on a controller of
    /// version `vs`: the descriptor list first (NVMe 1.3 or later), then EUI64 and NGUID from
    /// Identify Namespace where it gave none (`nvme_identify_ns_descs()`,
    /// `nvme_ns_info_from_identify()`); none from a controller whose identifiers are known to
    /// be bogus (`NVME_QUIRK_BOGUS_NID`). A failed or malformed descriptor list is logged and
    /// what it gave kept (the C driver skips such a namespace: `docs/DEVIATIONS.md`).
    fn namespace_ids(&self, nsid: u32, id: &[u8], vs: u32) -> NsIds {
        let (vendor, device) = self.dev.ids();
        let bogus = nvme::bogus_nid(vendor, device);
        let mut ids = NsIds::default();
        if vs >= NS_DESC_MIN_VERSION {
            match identify(&self.io.admin, &self.dev, Cns::NsDescriptors, nsid) {
                Ok(list) => {
                    if let Err(e) = ids.read_descriptors(&list, bogus) {
                        pr_warn!(
                            "rnvme{}: namespace {}: identification descriptors: {:?}\n",
                            self.instance.0,
                            nsid,
                            e
                        );
                    }
                }
                Err(e) => pr_warn!(
                    "rnvme{}: namespace {}: Identify Descriptors failed: {:?}\n",
                    self.instance.0,
                    nsid,
                    e
                ),
            }
        }
        ids.fill_from_identify(id, vs, bogus);
        ids
    }

    /// Identifies the active namespaces and adds one disk for each.
    fn add_disks(
        &mut self,
        idc: &IdentifyController,
        nvm: Option<&IdentifyControllerNvm>,
        cap: Cap,
        vs: u32,
    ) -> Result {
        let list = identify(&self.io.admin, &self.dev, Cns::ActiveNamespaces, 0)?;
        let mut nsids = KVec::from_elem(0u32, nvme::NS_LIST_ENTRIES, GFP_KERNEL)?;
        let n = active_namespaces(&list, idc.nn(), nsids.as_mut_slice()).map_err(|_| EIO)?;
        for &nsid in nsids.as_slice().iter().take(n) {
            let (id, raw) = match identify(&self.io.admin, &self.dev, Cns::Namespace, nsid)
                .and_then(|b| Ok((IdentifyNamespace::parse(&b).map_err(|_| EIO)?, b)))
            {
                Ok(v) => v,
                Err(e) => {
                    pr_warn!(
                        "rnvme{}: namespace {}: identify failed: {:?}\n",
                        self.instance.0,
                        nsid,
                        e
                    );
                    continue;
                }
            };
            if id.ncap() == 0 {
                continue;
            }
            let bs = id.block_size();
            // `nvme_pci_alloc_dev()` caps the transfer at the DMA layer's optimal mapping size,
            // then `nvme_init_ctrl_finish()` at MDTS (`nvme_set_ctrl_limits()` sets both).
            let l = nvme::pci_queue_limits(
                bs,
                idc.mdts(),
                cap.mpsmin(),
                self.dev.dma_opt_mapping_size(),
            )
            .map_err(|_| EINVAL)?;
            let mut lim = QueueLimits::default()
                .block_size(bs)?
                .max_hw_sectors(l.max_hw_sectors())
                .max_segments(l.max_segments().min(MAX_SEGS as u16))
                .virt_boundary_mask(u64::from(l.virt_boundary_mask()))
                .dma_alignment(l.dma_alignment());
            if idc.volatile_write_cache() {
                lim = lim.write_cache(true);
            }
            if self.poll {
                lim = lim.poll();
            }
            // DMRSL and DMRL (`nvme_config_discard()`), WZSL (`nvme_init_non_mdts_limits()`):
            // a controller may skip a range longer than DMRSL and still report success.
            let z = nvme::zeroing_limits(idc, nvm, bs, cap.mpsmin(), l.max_hw_sectors());
            if z.max_discard_sectors != 0 {
                lim = lim.discard(z.max_discard_sectors, z.max_discard_ranges, bs);
            }
            if z.max_write_zeroes_sectors != 0 {
                lim = lim.write_zeroes(z.max_write_zeroes_sectors);
            }
            // Write granularity, optimal sizes, I/O boundary and atomic writes
            // (`nvme_update_disk_info()`, `nvme_configure_atomic_write()`,
            // `nvme_set_chunk_sectors()`).
            if let Some(h) = nvme::NsIoHints::parse(&raw) {
                let g = nvme::ns_geometry(&h, bs, idc.awupf());
                lim = lim
                    .io_hints(g.physical_block_size, g.io_min, g.io_opt, g.chunk_sectors)
                    .atomic_writes(
                        g.atomic_write_hw_max,
                        g.atomic_write_hw_boundary,
                        g.atomic_write_hw_unit_min,
                        g.atomic_write_hw_unit_max,
                    );
            }
            let wwid = self.namespace_ids(nsid, &raw, vs);
            let attrs = NsAttrs::new(
                nsid,
                format_args!(
                    "{}",
                    Wwid {
                        ids: &wwid,
                        vid: idc.vid(),
                        serial: idc.serial(),
                        model: idc.model(),
                        nsid,
                    }
                ),
            )?;
            let ns = Arc::new(
                Namespace {
                    nsid,
                    lba_shift: bs.trailing_zeros(),
                },
                GFP_KERNEL,
            )?;
            let disk = GenDisk::new(
                &self.set,
                lim,
                format_args!("rnvme{}n{}", self.instance.0, nsid),
                id.capacity_sectors(),
                &self.dev,
                ns,
                Some(attrs),
            )?;
            pr_info!(
                "rnvme{}n{}: {} sectors of 512 B, block size {}\n",
                self.instance.0,
                nsid,
                id.capacity_sectors(),
                bs
            );
            self.disks.push(disk, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Deletes the disks, deletes the I/O queues, frees their interrupts and shuts the
    /// controller down (`nvme_remove()` order). What remains is freed by the drop.
    fn teardown(&mut self) {
        // Removing (`NVME_CTRL_DELETING`): an admin timeout disables the controller for good.
        self.io.admin.set_recoverable(false);
        // Passthrough devices first: waits for user commands in progress (and a reset one of
        // them runs).
        self.passthru = None;
        // del_gendisk: waits for and drains outstanding I/O of each disk.
        self.disks = KVec::new();
        if self.io.admin.state() == CtrlState::Live {
            for q in self.io.queues.iter().rev() {
                let qid = q.qid();
                let cmds = [
                    SubmissionEntry::delete_sq(qid),
                    SubmissionEntry::delete_cq(qid),
                ];
                for cmd in cmds.into_iter().flatten() {
                    if let Err(e) = self.io.admin.exec(cmd) {
                        pr_warn!(
                            "rnvme{}: deleting queue {}: {:?}\n",
                            self.instance.0,
                            qid,
                            e
                        );
                    }
                }
            }
        }
        self.irqs = KVec::new();
        // Completions polled from here (the handler goes with the vectors).
        self.io.admin.set_irq(false);
        self.admin_irq = None;
        // Not if a queue deletion timed out (the controller is disabled then).
        if self.io.admin.state() == CtrlState::Live {
            let regs = BarRegs(&self.bar);
            let mut sd = ShutdownSeq::new(self.rtd3e);
            if let Err(e) = run_sm(|now| sd.poll(&regs, now)) {
                pr_warn!("rnvme{}: shutdown: {}\n", self.instance.0, e);
            }
        }
        // Then disabled (CC.EN = 0, bounded by CAP.TO): the controller forgets its queues, so
        // nothing it does can reach the queue memory freed after this.
        let regs = BarRegs(&self.bar);
        let mut d = Disable::new();
        if let Err(e) = run_sm(|now| d.poll(&regs, now)) {
            pr_warn!("rnvme{}: disable: {}\n", self.instance.0, e);
        }
    }

    /// Removes the controller: teardown, then every resource is freed by the drop.
    pub(crate) fn remove(mut this: KBox<Self>) {
        this.teardown();
        pr_info!("rnvme{}: removed\n", this.instance.0);
    }
}
