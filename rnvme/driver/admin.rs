// SPDX-License-Identifier: GPL-2.0

//! Synchronous admin commands on the admin queue, completed by its interrupt, and what a
//! timed-out one does to the controller.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Admin commands are issued while probing and removing, by the timeout handler (Abort, and a
//! controller reset, `reset.rs`) and for user passthrough, always from process context and one
//! at a time: every command holds the admin lock (a sleeping lock; a waiter in a user's ioctl
//! can be interrupted) while it runs on tag 0, and a reset holds it from the disable to the
//! re-created I/O queues.
//!
//! Completions: as `nvme_pci_enable()`, `nvme_pci_configure_admin_queue()` and
//! `queue_request_irq()` for queue 0 in `drivers/nvme/host/pci.c`, the admin completion queue
//! interrupts on vector 0 ([`AdminIrq`]). `ctrl.rs` allocates one vector and requests the
//! interrupt before it enables the controller, so even the probe's first commands (Identify
//! Controller, Set Features Number of Queues) complete by interrupt; then, as
//! `nvme_setup_irqs()`, it frees both, allocates every vector and requests the admin interrupt
//! again on vector 0 (shared with I/O queue 1 when there is a single vector, and then it reports
//! `IRQ_NONE` when its queue has nothing posted). The handler reaps the queue
//! (`Queue::drain`: every entry validated by `nvme::accept_completion`; a stale or duplicate
//! entry is dropped, so only the command in flight on tag 0 can be completed, once), stores the
//! completion in a slot and signals a completion (`struct completion`), both under the slot's
//! IRQ-safe lock; the waiter clears the slot and re-arms the completion before it submits, then
//! sleeps on it in slices of at most [`WAIT_SLICE_MS`] up to the command's timeout, taking the
//! slot when woken. No lost wake-up: a completion signalled before the waiter sleeps is counted
//! and the wait returns at once; after every slice that ended without a signal the waiter reaps
//! the queue itself (a missed interrupt, as `nvme_timeout()` first polls the queue), so even a
//! lost interrupt only delays it. Without a registered interrupt (between the two
//! registrations at probe, when no command runs, and after it was released at removal) a
//! command is polled with 1 ms sleeps. Debugfs
//! `rnvme/rnvme<C>/admin` counts both kinds of completion, timeouts and resets.
//!
//! An admin command that does not complete in time may still be executed by the controller,
//! which could then write its data buffer at any time. As `nvme_timeout()` in
//! `drivers/nvme/host/pci.c` does for the admin queue (`nvme_dev_disable()`), the controller is
//! disabled before the timeout is reported, so the caller frees its buffers normally: once CC.EN
//! is clear and CSTS.RDY reads 0 the controller has dropped every queue and command; if it does
//! not get there within CAP.TO, bus mastering is turned off, which stops its DMA at the bus.
//! When a reset is owed and the controller still answers, its I/O queues are deleted first, as
//! `nvme_dev_disable()` does (`delete_queues.rs`: the timed-out command's tag was taken back, so
//! the Delete commands run on tag 0 while the controller may still hold the old command). The
//! command then fails with `EINTR`, the C driver's errno for a cancelled command
//! (`nvme_execute_rq()` in `drivers/nvme/host/core.c`). If the controller was live and bound
//! (not probing or removing), a reset is owed (`nvme::CtrlState::ResetPending`, as
//! `nvme_try_sched_reset()`): the caller runs `reset.rs` once it has released the admin queue
//! (the reset takes it itself) in process context: the user passthrough path right after the
//! failed command, the I/O timeout handler after a failed Abort. Until then admin commands fail
//! with `ENODEV` and I/O waits for the reset. A timeout while probing, removing or during a
//! reset disables the controller for good (`nvme::CtrlState::after_admin_timeout`).

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU8, Ordering};

use kernel::{c_str, prelude::*, sync::Arc};
use kernel_glue::{
    completion::Completion,
    debugfs::DebugCounters,
    dma::CoherentAllocation,
    io::Bar,
    irq::{Handler, HardIrq, IrqReturn},
    mutex::{SleepLock, SleepLockGuard},
    pci,
    sync::IrqSpinLock,
    time::msleep,
};
use nvme::{CtrlState, DataPointer, Disable, InitError, Poll, SubmissionEntry};

use crate::{
    queue::{Done, Queue},
    regs::BarRegs,
};

/// Admin queue entries (`NVME_AQ_DEPTH`).
pub(crate) const ADMIN_DEPTH: u32 = 32;
/// How long a driver admin command may take before it fails (`NVME_ADMIN_TIMEOUT` is 60 s;
/// QEMU answers in microseconds).
pub(crate) const ADMIN_TIMEOUT_MS: u32 = 10_000;
/// Sleep between completion polls (while no interrupt is registered).
const POLL_MS: u32 = 1;
/// Longest sleep on the completion before the waiter reaps the queue itself (a missed
/// interrupt) and sleeps again; also keeps every uninterruptible sleep short.
pub(crate) const WAIT_SLICE_MS: u32 = 1000;

/// Counters in debugfs `rnvme/rnvme<C>/admin`.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Admin commands submitted.
    Commands = 0,
    /// Completions reaped by the interrupt handler.
    IrqCompletions,
    /// Completions reaped by the waiter (polled before the interrupt exists, or after a slice
    /// without a wake-up).
    PolledCompletions,
    /// Admin commands that timed out.
    Timeouts,
    /// Controller resets started (any cause).
    Resets,
    /// Of those, resets owed by an admin command timeout.
    ResetsAfterAdminTimeout,
    /// Disables for a reset that found the controller answering and deleted every I/O queue
    /// first (`delete_queues.rs`).
    QueuesDeletedBeforeDisable,
}

const NAMES: [&kernel::str::CStr; 7] = [
    c_str!("commands"),
    c_str!("irq_completions"),
    c_str!("polled_completions"),
    c_str!("timeouts"),
    c_str!("resets"),
    c_str!("resets_after_admin_timeout"),
    c_str!("queues_deleted_before_disable"),
];

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

/// What the admin queue's interrupt handler and the waiting command share: the queue, the
/// completion of the command in flight on tag 0, and the event its waiter sleeps on.
pub(crate) struct AdminReap {
    q: Arc<Queue>,
    /// The completion of tag 0's current command, once reaped (taken by the waiter).
    slot: IrqSpinLock<Option<Done>>,
    /// Signalled (under `slot`'s lock) when `slot` was filled.
    event: Completion,
    counters: Option<DebugCounters<{ NAMES.len() }>>,
}

impl AdminReap {
    /// Reaps the admin completion queue; a valid completion of tag 0 goes to the slot and
    /// wakes the waiter. Returns whether one did. Any context.
    fn reap(&self, by_irq: bool) -> bool {
        // One command is in flight at a time: one batch holds every completion there can be.
        // Only tag 0 is ever submitted; the command id table let its entry through once.
        let mut tag0 = None;
        self.q.drain(None, |d| {
            if d.tag == 0 {
                tag0 = Some(d);
            }
        });
        // (The queue's lock is released before the slot's is taken: both are kernel-glue
        // IRQ-safe locks of one lockdep class, never nested.)
        let got = tag0.is_some();
        if let Some(d) = tag0 {
            let mut slot = self.slot.lock();
            *slot = Some(d);
            // Under the lock: a waiter that finds the slot filled knows the signal was given
            // (it re-arms the event before its next command).
            self.event.complete();
        }
        if got {
            self.count(if by_irq {
                Counter::IrqCompletions
            } else {
                Counter::PolledCompletions
            });
        }
        got
    }

    /// Takes the stored completion, if any.
    fn take(&self) -> Option<Done> {
        self.slot.lock().take()
    }

    fn count(&self, c: Counter) {
        if let Some(k) = &self.counters {
            k.add(c as usize, 1);
        }
    }
}

/// The admin queue's interrupt handler (`nvme_irq()` for queue 0), registered on vector 0.
pub(crate) struct AdminIrq {
    reap: Arc<AdminReap>,
    /// Whether the line may be shared (a single vector or INTx): then report `None` when
    /// nothing was posted on the admin queue.
    shared: bool,
}

impl AdminIrq {
    /// The handler for `admin`'s queue; `shared` as the registration's flag.
    pub(crate) fn new(admin: &Admin, shared: bool) -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                reap: admin.reap.clone(),
                shared,
            },
            GFP_KERNEL,
        )?)
    }
}

impl Handler for AdminIrq {
    fn handle(&self, _irq: &HardIrq<'_>) -> IrqReturn {
        if self.shared && !self.reap.q.pending() {
            return IrqReturn::None;
        }
        self.reap.reap(true);
        IrqReturn::Handled
    }
}

/// The admin queue, and the controller's state.
pub(crate) struct Admin {
    reap: Arc<AdminReap>,
    bar: Arc<Bar>,
    dev: pci::Device,
    /// `nvme::CtrlState` as a byte.
    state: AtomicU8,
    /// Whether an admin timeout may leave a reset owed (bound, not probing or removing).
    recoverable: AtomicBool,
    /// Whether the interrupt handler is registered (else completions are polled).
    irq: AtomicBool,
    /// Held by whoever runs admin commands (one at a time on tag 0).
    lock: SleepLock<()>,
    /// The I/O queue pairs a reset deletes before it disables: queue ids 1 to this (0: none).
    deletable_queues: AtomicU16,
}

/// The admin queue held by one caller: its commands run one after another, nobody else's in
/// between (a reset keeps it from the disable to the re-created queues).
pub(crate) struct Session<'a> {
    admin: &'a Admin,
    _held: SleepLockGuard<'a, ()>,
}

/// Why [`Session::run`] returned no completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunError {
    /// Tag 0 was in use (the command id table refused it).
    Busy,
    /// No completion within the timeout; the command was taken back.
    TimedOut {
        /// How long the command was waited for.
        waited_ms: u32,
    },
}

impl Admin {
    /// Wraps admin queue pair `q` (queue id 0) of the controller at `bar` of `dev`, instance
    /// `instance` (debugfs counters; without debugfs they are left out).
    pub(crate) fn new(
        q: Arc<Queue>,
        bar: Arc<Bar>,
        dev: pci::Device,
        instance: u32,
    ) -> Result<Self> {
        let counters =
            DebugCounters::new(format_args!("rnvme{}", instance), c_str!("admin"), &NAMES).ok();
        let reap = Arc::new(
            AdminReap {
                q,
                slot: IrqSpinLock::new(None)?,
                event: Completion::new()?,
                counters,
            },
            GFP_KERNEL,
        )?;
        Ok(Self {
            reap,
            bar,
            dev,
            state: AtomicU8::new(CtrlState::Live.as_u8()),
            recoverable: AtomicBool::new(false),
            irq: AtomicBool::new(false),
            lock: SleepLock::new(())?,
            deletable_queues: AtomicU16::new(0),
        })
    }

    /// The admin queue pair.
    pub(crate) fn queue(&self) -> &Arc<Queue> {
        &self.reap.q
    }

    /// BAR0 of the controller.
    pub(crate) fn bar(&self) -> &Bar {
        &self.bar
    }

    /// The PCI device.
    pub(crate) fn dev(&self) -> &pci::Device {
        &self.dev
    }

    /// Counts `c` in debugfs.
    pub(crate) fn count(&self, c: Counter) {
        self.reap.count(c);
    }

    /// Completions are signalled by the interrupt handler from now on (`on`, once it is
    /// registered) or polled (before it is freed).
    pub(crate) fn set_irq(&self, on: bool) {
        self.irq.store(on, Ordering::Release);
    }

    /// Whether a timed-out admin command leaves a reset owed (`true` once probe is done,
    /// `false` when removal starts: `NVME_CTRL_LIVE` vs `CONNECTING`/`DELETING`).
    pub(crate) fn set_recoverable(&self, on: bool) {
        self.recoverable.store(on, Ordering::Release);
    }

    /// Records that a reset deletes I/O queue pairs 1 to `n` before it disables (set once they
    /// are created, and a reset creates the same ones again; 0 with the module parameter
    /// `delete_queues_before_disable=0`).
    pub(crate) fn set_deletable_queues(&self, n: u16) {
        self.deletable_queues.store(n, Ordering::Release);
    }

    /// The I/O queue pairs a reset deletes before it disables: queue ids 1 to this (0: none).
    pub(crate) fn deletable_queues(&self) -> u16 {
        self.deletable_queues.load(Ordering::Acquire)
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
        self.disable_hw();
    }

    /// CC.EN=0 and wait for CSTS.RDY=0 (bounded by CAP.TO), else bus mastering off.
    fn disable_hw(&self) {
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
    /// The admin queue this session holds.
    pub(crate) fn admin(&self) -> &Admin {
        self.admin
    }

    /// Runs `cmd` on tag 0 and waits up to `timeout_ms` for its completion (see the module
    /// docs); returns it whatever its status. On a timeout the controller is disabled (see the
    /// module docs) before the error is returned, so buffers the command points at may be
    /// freed; the caller then runs the owed reset, if any, once it released the session.
    ///
    /// # Errors
    ///
    /// `ENODEV` (the controller is disabled, or waits for a reset), `EBUSY` (tag 0 in use),
    /// `EINTR` (timed out: the command was cancelled).
    pub(crate) fn exec_done(&self, cmd: SubmissionEntry, timeout_ms: u32) -> Result<Done> {
        let a = self.admin;
        if !a.state().admin_usable() {
            return Err(ENODEV);
        }
        let opcode = cmd.opcode();
        match self.run(cmd, timeout_ms) {
            Ok(d) => Ok(d),
            Err(RunError::Busy) => Err(EBUSY),
            Err(RunError::TimedOut { waited_ms }) => {
                pr_err!(
                    "{}: admin command {:#x} timed out after {} ms\n",
                    a.dev.name(),
                    opcode,
                    waited_ms
                );
                // The tag is free (`run` took the command back: a late completion of it is
                // refused), and the controller is disabled before the caller frees the
                // command's buffers.
                self.timed_out();
                Err(EINTR)
            }
        }
    }

    /// Runs `cmd` on tag 0 and waits up to `timeout_ms` for its completion, in any controller
    /// state, and returns it whatever its status. A command that does not complete in time is
    /// taken back from the command id table (a late completion of it is refused) and nothing
    /// else is done: the caller decides what the timeout means ([`Session::exec_done`]
    /// disables the controller; deleting queues before a disable gives up).
    pub(crate) fn run(&self, mut cmd: SubmissionEntry, timeout_ms: u32) -> Result<Done, RunError> {
        let a = self.admin;
        let r = &*a.reap;
        // A new round: nothing of an earlier command is left (its completion was taken, or it
        // was cancelled, so the command id table refuses its entry), and no signal either.
        *r.slot.lock() = None;
        r.event.reinit();
        a.count(Counter::Commands);
        r.q.submit(0, &mut cmd, true, &crate::phases::Phases::none())
            .map_err(|_| RunError::Busy)?;
        let mut waited = 0u32;
        while waited < timeout_ms {
            let step = if a.irq.load(Ordering::Acquire) {
                let step = (timeout_ms - waited).min(WAIT_SLICE_MS);
                if r.event.wait_timeout_ms(step) {
                    if let Some(d) = r.take() {
                        return Ok(d);
                    }
                }
                step
            } else {
                msleep(POLL_MS);
                POLL_MS
            };
            // No interrupt (not registered, or missed): reap the queue here.
            r.reap(false);
            if let Some(d) = r.take() {
                return Ok(d);
            }
            waited = waited.saturating_add(step);
        }
        // Take the command back from the command id table; if it is no longer there, a reaper
        // (the interrupt handler, between its drain and its store) accepted its completion just
        // now and is about to store it and signal.
        if !r.q.cancel(0) {
            // Returns at once when the signal was given already; bounded by a slice anyway.
            r.event.wait_timeout_ms(WAIT_SLICE_MS);
            if let Some(d) = r.take() {
                return Ok(d);
            }
        }
        Err(RunError::TimedOut { waited_ms: waited })
    }

    /// An admin command timed out (this session holds the admin queue): disables the
    /// controller and moves the state as `nvme::CtrlState::after_admin_timeout` says. With a
    /// reset owed, the I/O queues of a controller that still answers are deleted first
    /// ([`Session::delete_io_queues`], as `nvme_timeout()` -> `nvme_dev_disable()`); a
    /// controller that is dead for good (probing, removing, or a timeout during a reset) is
    /// disabled at once.
    fn timed_out(&self) {
        let a = self.admin;
        a.count(Counter::Timeouts);
        let from = a.state();
        let to = from.after_admin_timeout(a.recoverable.load(Ordering::Acquire));
        if to == CtrlState::ResetPending && a.change_state(from, to) {
            pr_err!(
                "{}: admin command timeout: disabling the controller, reset follows\n",
                a.dev.name()
            );
            self.delete_io_queues();
            a.disable_hw();
        } else {
            a.disable("admin command timeout");
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
