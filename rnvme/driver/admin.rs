// SPDX-License-Identifier: GPL-2.0

//! Synchronous admin commands on the admin queue, completed by polling with bounded sleeps,
//! and the controller disable that ends a timed-out one.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Admin commands are issued while probing and removing, by the timeout handler (Abort) and for
//! user passthrough, always from process context and one at a time: a command uses tag 0 and a
//! concurrent caller gets `EBUSY` from the command id table. The admin completion queue's
//! interrupt is not used.
//!
//! An admin command that does not complete in time may still be executed by the controller,
//! which could then write its data buffer at any time. As `nvme_timeout()` in
//! `drivers/nvme/host/pci.c` does for the admin queue (`nvme_dev_disable()`), the controller is
//! disabled before the timeout is reported, so the caller frees its buffers normally: once CC.EN
//! is clear and CSTS.RDY reads 0 the controller has dropped every queue and command; if it does
//! not get there within CAP.TO, bus mastering is turned off, which stops its DMA at the bus.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{dma::CoherentAllocation, io::Bar, pci, time::msleep};
use nvme::{DataPointer, Disable, Poll, SubmissionEntry};

use crate::{
    queue::{Done, Queue},
    regs::BarRegs,
};

/// Admin queue entries (`NVME_AQ_DEPTH`).
pub(crate) const ADMIN_DEPTH: u32 = 32;
/// How long a driver admin command may take before it fails with `ETIMEDOUT` (`NVME_ADMIN_TIMEOUT`
/// is 60 s; QEMU answers in microseconds).
pub(crate) const ADMIN_TIMEOUT_MS: u32 = 10_000;
/// Sleep between completion polls.
const POLL_MS: u32 = 1;

/// The admin queue, and the controller's liveness.
pub(crate) struct Admin {
    q: Arc<Queue>,
    bar: Arc<Bar>,
    dev: pci::Device,
    /// Set once the controller was disabled (admin or I/O timeout): no command is sent again.
    dead: AtomicBool,
}

impl Admin {
    /// Wraps admin queue pair `q` (queue id 0) of the controller at `bar` of `dev`.
    pub(crate) fn new(q: Arc<Queue>, bar: Arc<Bar>, dev: pci::Device) -> Self {
        Self {
            q,
            bar,
            dev,
            dead: AtomicBool::new(false),
        }
    }

    /// Whether the controller was disabled: every command and request fails.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Disables the controller once (later calls return at once), bounded by CAP.TO: every
    /// command is then dead and its memory no longer accessed by the device. If the controller
    /// does not report not-ready in time, bus mastering is cleared instead.
    pub(crate) fn disable(&self, why: &str) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        pr_err!("{}: {}: disabling the controller\n", self.dev.name(), why);
        let regs = BarRegs(&self.bar);
        let mut d = Disable::new();
        let mut now = 0u64;
        // Bounded: `Disable` fails once its CAP.TO deadline has passed on this clock (and
        // after its poll budget whatever the clock).
        loop {
            match d.poll(&regs, now) {
                Ok(Poll::Wait(ms)) => {
                    msleep(ms);
                    now += u64::from(ms.max(1));
                }
                Ok(Poll::Done) => break,
                Err(e) => {
                    pr_err!(
                        "{}: disable failed: {}; bus mastering off\n",
                        self.dev.name(),
                        e
                    );
                    self.dev.clear_bus_master();
                    break;
                }
            }
        }
    }

    /// Runs `cmd` on tag 0 and waits up to `timeout_ms` for its completion; returns it
    /// whatever its status. On a timeout the controller is disabled (see the module docs)
    /// before `ETIMEDOUT` is returned, so buffers the command points at may be freed.
    ///
    /// # Errors
    ///
    /// `ENODEV` (the controller was disabled), `EBUSY` (tag 0 in use), `ETIMEDOUT`.
    pub(crate) fn exec_done(&self, mut cmd: SubmissionEntry, timeout_ms: u32) -> Result<Done> {
        if self.is_dead() {
            return Err(ENODEV);
        }
        self.q.submit(0, &mut cmd, true).map_err(|_| EBUSY)?;
        let mut waited = 0u32;
        loop {
            let mut done = [Done::EMPTY; 1];
            if self.q.drain(&mut done) == 1 {
                let [d] = done;
                return Ok(d);
            }
            if waited >= timeout_ms {
                pr_err!(
                    "{}: admin command {:#x} timed out after {} ms\n",
                    self.dev.name(),
                    cmd.opcode(),
                    waited
                );
                self.disable("admin command timeout");
                // The controller no longer has the command: free the tag.
                self.q.cancel(0);
                return Err(kernel_glue::error::etimedout());
            }
            msleep(POLL_MS);
            waited += POLL_MS;
        }
    }

    /// Runs `cmd` and waits for its completion (bounded); returns the result dword(s).
    ///
    /// # Errors
    ///
    /// As [`Admin::exec_done`], and `EIO` (the controller reported an error status).
    pub(crate) fn exec(&self, cmd: SubmissionEntry) -> Result<u64> {
        let opcode = cmd.opcode();
        let d = self.exec_done(cmd, ADMIN_TIMEOUT_MS)?;
        if d.status.is_success() {
            return Ok(d.result);
        }
        pr_err!(
            "admin command {:#x} failed: status {:#x}\n",
            opcode,
            d.status.sct_sc()
        );
        Err(EIO)
    }

    /// Runs a command that transfers 4 KiB from the controller (Identify) and returns the
    /// data. (The buffer is freed on every path: after a timeout the controller is disabled.)
    pub(crate) fn exec_read_page(
        &self,
        dev: &pci::Device,
        build: impl FnOnce(DataPointer) -> SubmissionEntry,
    ) -> Result<KVec<u8>> {
        let buf = CoherentAllocation::new(dev, nvme::IDENTIFY_SIZE)?;
        self.exec(build(DataPointer::prp(buf.dma_handle(), 0)))?;
        let mut out = KVec::from_elem(0u8, nvme::IDENTIFY_SIZE, GFP_KERNEL)?;
        buf.read(0, out.as_mut_slice())?;
        Ok(out)
    }
}
