// SPDX-License-Identifier: GPL-2.0

//! rnvme: an NVMe PCI block driver on the iovstack crates and the `nvme` protocol core.
//!
//! The driver binds PCI class 0x010802 (NVM Express) devices that no other driver owns, or that
//! are bound to it explicitly (`echo rnvme > /sys/bus/pci/devices/<bdf>/driver_override`, then
//! `echo <bdf> > /sys/bus/pci/drivers/rnvme/bind`), and exposes each active namespace as a disk
//! named `rnvme<C>n<N>` (`C`: controller instance, `N`: namespace id).
//!
//! Parameters (declared in `params.c`, read with `kernel_glue::params`): `io_queues` (0: one per
//! online CPU), `poll_queues` (I/O queues without interrupts, for `io_uring` IOPOLL),
//! `sgl_threshold` (average segment size from which SGLs are used, 0: never),
//! `queue_depth` (entries per I/O submission queue), `shadow_doorbells` (Doorbell Buffer Config
//! when the controller has it), `defer_cq_doorbell` (completion queues twice as deep, their head
//! doorbell written once per many completions; MSI-X and poll queues),
//! `delete_queues_before_disable` (a reset deletes the I/O queues of a controller that still
//! answers before it disables it, as the C driver; 0 only to show the QEMU 7.2 crash that this
//! avoids, `scripts/qemu-nvme-reset-race.sh`), and the premap knobs.
//!
//! Structure: [`ctrl`] brings a controller up and down, [`admin`] runs admin commands,
//! [`queue`] is one queue pair, [`io`] the blk-mq operations, [`dptr`] the data pointers. All
//! `unsafe` code is in `kernel-glue`; the protocol logic is the `nvme` crate's.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::{c_str, prelude::*, str::CStr};
use kernel_glue::{
    params::param_uint,
    pci::{self, Driver},
};

mod admin;
mod batch_stats;
mod ctrl;
mod delete_queues;
mod dptr;
mod held;
mod io;
mod passthru;
mod phases;
mod queue;
mod ratelimit;
mod regs;
mod reset;

module! {
    type: RnvmeModule,
    name: "rnvme",
    author: "rnvme",
    description: "NVMe PCI block driver in Rust on the iovstack crates",
    license: "GPL",
}

/// Module parameters.
pub(crate) struct Params {
    /// I/O queues wanted (0: one per online CPU).
    pub(crate) io_queues: u32,
    /// Polled I/O queues wanted.
    pub(crate) poll_queues: u32,
    /// Average segment size from which SGLs are used (0: never).
    pub(crate) sgl_threshold: u32,
    /// Entries per I/O queue.
    pub(crate) queue_depth: u32,
    /// Use shadow doorbells when the controller supports them.
    pub(crate) shadow_doorbells: bool,
    /// Defer completion queue head doorbells (deeper completion queues).
    pub(crate) defer_cq_doorbell: bool,
    /// Delete the I/O queues of a controller that still answers before a reset disables it.
    pub(crate) delete_queues_before_disable: bool,
}

/// `io_queues`, stored at load time before the driver is registered.
static IO_QUEUES: AtomicU32 = AtomicU32::new(0);
/// `poll_queues`, stored at load time before the driver is registered.
static POLL_QUEUES: AtomicU32 = AtomicU32::new(0);
/// `sgl_threshold`, stored at load time before the driver is registered.
static SGL_THRESHOLD: AtomicU32 = AtomicU32::new(nvme::SGL_THRESHOLD_DEFAULT);
/// `queue_depth`, stored at load time before the driver is registered.
static QUEUE_DEPTH: AtomicU32 = AtomicU32::new(256);
/// `shadow_doorbells`, stored at load time before the driver is registered.
static SHADOW_DOORBELLS: AtomicU32 = AtomicU32::new(1);
/// `defer_cq_doorbell`, stored at load time before the driver is registered.
static DEFER_CQ_DOORBELL: AtomicU32 = AtomicU32::new(1);
/// `delete_queues_before_disable`, stored at load time before the driver is registered.
static DELETE_QUEUES_BEFORE_DISABLE: AtomicU32 = AtomicU32::new(1);

/// The parameters as read at load time.
fn params() -> Params {
    Params {
        io_queues: IO_QUEUES.load(Ordering::Relaxed),
        poll_queues: POLL_QUEUES.load(Ordering::Relaxed),
        sgl_threshold: SGL_THRESHOLD.load(Ordering::Relaxed),
        queue_depth: QUEUE_DEPTH.load(Ordering::Relaxed),
        shadow_doorbells: SHADOW_DOORBELLS.load(Ordering::Relaxed) != 0,
        defer_cq_doorbell: DEFER_CQ_DOORBELL.load(Ordering::Relaxed) != 0,
        delete_queues_before_disable: DELETE_QUEUES_BEFORE_DISABLE.load(Ordering::Relaxed) != 0,
    }
}

impl Driver for ctrl::Controller {
    const NAME: &'static CStr = c_str!("rnvme");
    // PCI_CLASS_STORAGE_EXPRESS << 8 | the NVM Express programming interface.
    const CLASS: u32 = 0x010802;
    const CLASS_MASK: u32 = 0xffffff;

    fn probe(dev: &pci::Device) -> Result<KBox<Self>> {
        ctrl::Controller::probe(dev, &params())
    }

    fn remove(this: KBox<Self>, _dev: &pci::Device) {
        ctrl::Controller::remove(this);
    }
}

struct RnvmeModule {
    _reg: pci::Registration<ctrl::Controller>,
}

impl kernel::Module for RnvmeModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        if let Some(v) = param_uint(module, c_str!("io_queues")) {
            IO_QUEUES.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("poll_queues")) {
            POLL_QUEUES.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("sgl_threshold")) {
            SGL_THRESHOLD.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("queue_depth")) {
            QUEUE_DEPTH.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("shadow_doorbells")) {
            SHADOW_DOORBELLS.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("defer_cq_doorbell")) {
            DEFER_CQ_DOORBELL.store(v, Ordering::Relaxed);
        }
        if let Some(v) = param_uint(module, c_str!("delete_queues_before_disable")) {
            DELETE_QUEUES_BEFORE_DISABLE.store(v, Ordering::Relaxed);
        }
        passthru::load_premap_params(module);
        let p = params();
        pr_info!(
            "loaded (io_queues={}, poll_queues={}, sgl_threshold={}, queue_depth={}, shadow_doorbells={}, defer_cq_doorbell={}, delete_queues_before_disable={})\n",
            p.io_queues,
            p.poll_queues,
            p.sgl_threshold,
            p.queue_depth,
            u32::from(p.shadow_doorbells),
            u32::from(p.defer_cq_doorbell),
            u32::from(p.delete_queues_before_disable)
        );
        Ok(Self {
            _reg: pci::Registration::new()?,
        })
    }
}
