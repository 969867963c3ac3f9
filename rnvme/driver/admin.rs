// SPDX-License-Identifier: GPL-2.0

//! Synchronous admin commands on the admin queue, completed by polling with bounded sleeps,
//! and the controller disable that ends a timed-out one.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Admin commands are issued while probing and removing, by the timeout handler (Abort, and a
//! controller reset, `reset.rs`) and for user passthrough, always from process context and one
//! at a time: every command holds the admin lock (a sleeping lock; a waiter in a user's ioctl
//! can be interrupted) while it runs on tag 0, and a reset holds it from the disable to the
//! re-created I/O queues. The admin completion queue's interrupt is not used.
//!
//! An admin command that does not complete in time may still be executed by the controller,
//! which could then write its data buffer at any time. As `nvme_timeout()` in
//! `drivers/nvme/host/pci.c` does for the admin queue (`nvme_dev_disable()`), the controller is
//! disabled before the timeout is reported, so the caller frees its buffers normally: once CC.EN
//! is clear and CSTS.RDY reads 0 the controller has dropped every queue and command; if it does
//! not get there within CAP.TO, bus mastering is turned off, which stops its DMA at the bus.

use core::sync::atomic::{AtomicU8, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{
    dma::CoherentAllocation,
    io::Bar,
    mutex::{SleepLock, SleepLockGuard},
    pci,
    time::msleep,
};
use nvme::{CtrlState, DataPointer, Disable, InitError, Poll, SubmissionEntry};

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

/// Runs the controller disable sequence (CC.EN=0, wait for CSTS.RDY=0) to its end, bounded by
/// CAP.TO (and `Disable`'s poll budget whatever the clock).
pub(crate) fn disable_ctrl(bar: &Bar) -> core::result::Result<(), InitError> {
    let regs = BarRegs(bar);
    let mut d = Disable::new();
    let mut now = 0u64;
    loop {
        match d.poll(&regs, now)? {
            Poll::Wait(ms) => {
                msleep(ms);
                now += u64::from(ms.max(1));
            }
            Poll::Done => return Ok(()),
        }
    }
}

/// The admin queue, and the controller's state.
pub(crate) struct Admin {
    q: Arc<Queue>,
    bar: Arc<Bar>,
    dev: pci::Device,
    /// `nvme::CtrlState` as a byte.
    state: AtomicU8,
    /// Held by whoever runs admin commands (one at a time on tag 0).
    lock: SleepLock<()>,
}

/// The admin queue held by one caller: its commands run one after another, nobody else's in
/// between (a reset keeps it from the disable to the re-created queues).
pub(crate) struct Session<'a> {
    admin: &'a Admin,
    _held: SleepLockGuard<'a, ()>,
}

impl Admin {
    /// Wraps admin queue pair `q` (queue id 0) of the controller at `bar` of `dev`.
    pub(crate) fn new(q: Arc<Queue>, bar: Arc<Bar>, dev: pci::Device) -> Result<Self> {
        Ok(Self {
            q,
            bar,
            dev,
            state: AtomicU8::new(CtrlState::Live.as_u8()),
            lock: SleepLock::new(())?,
        })
    }

    /// The admin queue pair.
    pub(crate) fn queue(&self) -> &Arc<Queue> {
        &self.q
    }

    /// BAR0 of the controller.
    pub(crate) fn bar(&self) -> &Bar {
        &self.bar
    }

    /// The PCI device.
    pub(crate) fn dev(&self) -> &pci::Device {
        &self.dev
    }

    /// The controller state.
    pub(crate) fn state(&self) -> CtrlState {
        CtrlState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Moves the state from `from` to `to` if it is `from` and the move is allowed; returns
    /// whether it moved.
    pub(crate) fn change_state(&self, from: CtrlState, to: CtrlState) -> bool {
        from.can_become(to)
            && self
                .state
                .compare_exchange(
                    from.as_u8(),
                    to.as_u8(),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }

    /// Whether the controller is disabled for good: every command and request fails.
    pub(crate) fn is_dead(&self) -> bool {
        self.state() == CtrlState::Dead
    }

    /// Takes the admin queue (sleeps while another caller has it).
    ///
    /// # Errors
    ///
    /// `EINTR` (a signal while waiting).
    pub(crate) fn session(&self) -> Result<Session<'_>> {
        Ok(Session {
            admin: self,
            _held: self.lock.lock_interruptible()?,
        })
    }

    /// Disables the controller for good (later calls return at once), bounded by CAP.TO:
    /// every command is then dead and its memory no longer accessed by the device. If the
    /// controller does not report not-ready in time, bus mastering is cleared instead.
    pub(crate) fn disable(&self, why: &str) {
        let prev = CtrlState::from_u8(self.state.swap(CtrlState::Dead.as_u8(), Ordering::AcqRel));
        if prev == CtrlState::Dead {
            return;
        }
        pr_err!("{}: {}: disabling the controller\n", self.dev.name(), why);
        if let Err(e) = disable_ctrl(&self.bar) {
            pr_err!(
                "{}: disable failed: {}; bus mastering off\n",
                self.dev.name(),
                e
            );
            self.dev.clear_bus_master();
        }
    }

    /// Runs `cmd` on tag 0 and waits up to `timeout_ms` for its completion; returns it
    /// whatever its status (see [`Session::exec_done`]).
    ///
    /// # Errors
    ///
    /// As [`Session::exec_done`], and `EINTR` (a signal while waiting for the admin queue).
    pub(crate) fn exec_done(&self, cmd: SubmissionEntry, timeout_ms: u32) -> Result<Done> {
        self.session()?.exec_done(cmd, timeout_ms)
    }

    /// Runs `cmd` and waits for its completion (bounded); returns the result dword(s).
    ///
    /// # Errors
    ///
    /// As [`Session::exec`], and `EINTR`.
    pub(crate) fn exec(&self, cmd: SubmissionEntry) -> Result<u64> {
        self.session()?.exec(cmd)
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

impl Session<'_> {
    /// Runs `cmd` on tag 0 and waits up to `timeout_ms` for its completion; returns it
    /// whatever its status. On a timeout the controller is disabled (see the module docs)
    /// before `ETIMEDOUT` is returned, so buffers the command points at may be freed.
    ///
    /// # Errors
    ///
    /// `ENODEV` (the controller was disabled), `EBUSY` (tag 0 in use), `ETIMEDOUT`.
    pub(crate) fn exec_done(&self, mut cmd: SubmissionEntry, timeout_ms: u32) -> Result<Done> {
        let a = self.admin;
        if a.is_dead() {
            return Err(ENODEV);
        }
        a.q.submit(0, &mut cmd, true).map_err(|_| EBUSY)?;
        let mut waited = 0u32;
        loop {
            let mut done = [Done::EMPTY; 1];
            if a.q.drain(&mut done) == 1 {
                let [d] = done;
                return Ok(d);
            }
            if waited >= timeout_ms {
                pr_err!(
                    "{}: admin command {:#x} timed out after {} ms\n",
                    a.dev.name(),
                    cmd.opcode(),
                    waited
                );
                a.disable("admin command timeout");
                // The controller no longer has the command: free the tag.
                a.q.cancel(0);
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
    /// As [`Session::exec_done`], and `EIO` (the controller reported an error status).
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
}
