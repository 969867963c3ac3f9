//! Controller bring-up as explicit, bounded steps: disable, wait for CSTS.RDY=0, program the
//! admin queue, configure and enable, wait for CSTS.RDY=1 (`nvme_disable_ctrl`,
//! `nvme_wait_ready`, `nvme_enable_ctrl` in `drivers/nvme/host/core.c`,
//! `nvme_pci_configure_admin_queue` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The caller owns time: each [`Enable::poll`] gets the current monotonic time in milliseconds
//! and returns [`Poll::Wait`] with how long to sleep before the next call, or [`Poll::Done`].
//! Every wait has a deadline from CAP.TO, and additionally a poll budget, so the sequence ends
//! even if the caller's clock does not advance.

use core::fmt;

use crate::{Aqa, Cap, Cc, Csts, Registers, REG_ACQ, REG_AQA, REG_ASQ, REG_CAP, REG_CC, REG_CSTS};

/// Delay between two polls of CSTS (the Linux driver sleeps 1-2 ms).
pub const POLL_INTERVAL_MS: u32 = 2;

/// What the caller does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Poll {
    /// Sleep this many milliseconds, then call `poll` again.
    Wait(u32),
    /// The sequence finished successfully.
    Done,
}

/// Which wait of a sequence failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for CSTS.RDY=0 after clearing CC.EN.
    Disable,
    /// Waiting for CSTS.RDY=1 after setting CC.EN.
    Enable,
    /// Waiting for CSTS.SHST=complete after CC.SHN=normal.
    Shutdown,
}

/// Why bring-up, disable or shutdown failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitError {
    /// CSTS read as all ones: the device is gone.
    DeviceGone,
    /// CSTS.CFS: the controller reported a fatal error.
    Fatal {
        /// Sequence phase.
        phase: Phase,
        /// CSTS value.
        csts: u32,
    },
    /// The expected CSTS state did not arrive in time.
    Timeout {
        /// Sequence phase.
        phase: Phase,
        /// Last CSTS value.
        csts: u32,
        /// The bound that expired, in milliseconds.
        limit_ms: u32,
    },
    /// CAP.MPSMIN is larger than the driver's 4 KiB controller page.
    PageSize {
        /// CAP.MPSMIN.
        mpsmin: u8,
    },
    /// CAP.CSS does not include the NVM command set.
    CommandSet {
        /// CAP.CSS.
        css: u8,
    },
    /// The admin queue does not fit CAP.MQES or the AQA fields (2..=4096 entries).
    AdminQueueSize {
        /// Entries asked for.
        entries: u16,
        /// CAP.MQES + 1.
        max: u32,
    },
    /// An admin queue base address is not 4 KiB aligned.
    AdminQueueAlign {
        /// The address.
        addr: u64,
    },
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::DeviceGone => f.write_str("controller registers read all ones (device gone)"),
            Self::Fatal { phase, csts } => {
                write!(
                    f,
                    "controller fatal status during {phase:?}, CSTS={csts:#x}"
                )
            }
            Self::Timeout {
                phase,
                csts,
                limit_ms,
            } => write!(
                f,
                "device not ready; aborting {phase:?} after {limit_ms} ms, CSTS={csts:#x}"
            ),
            Self::PageSize { mpsmin } => write!(
                f,
                "minimum device page size {} too large for host (4096)",
                1u64 << (12 + u32::from(mpsmin))
            ),
            Self::CommandSet { css } => write!(f, "NVM command set not supported (CSS {css:#x})"),
            Self::AdminQueueSize { entries, max } => {
                write!(
                    f,
                    "admin queue of {entries} entries unsupported (max {max})"
                )
            }
            Self::AdminQueueAlign { addr } => write!(f, "admin queue at {addr:#x} not 4K aligned"),
        }
    }
}

impl core::error::Error for InitError {}

/// A bounded wait for `CSTS & mask == value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    phase: Phase,
    mask: u32,
    value: u32,
    limit_ms: u32,
    started_ms: Option<u64>,
    polls: u32,
    /// Fail at once on CSTS.CFS (otherwise only report it if the wait times out).
    cfs_fatal: bool,
}

impl Wait {
    pub(crate) const fn new(
        phase: Phase,
        mask: u32,
        value: u32,
        limit_ms: u32,
        cfs_fatal: bool,
    ) -> Self {
        Self {
            phase,
            mask,
            value,
            limit_ms,
            started_ms: None,
            polls: 0,
            cfs_fatal,
        }
    }

    /// One check of CSTS: `Ok(true)` when reached, `Ok(false)` to wait more.
    pub(crate) fn check<R: Registers + ?Sized>(
        &mut self,
        regs: &R,
        now_ms: u64,
    ) -> Result<bool, InitError> {
        let csts = Csts::from_raw(regs.read32(REG_CSTS));
        if csts.is_all_ones() {
            return Err(InitError::DeviceGone);
        }
        if csts.cfs() && self.cfs_fatal {
            return Err(InitError::Fatal {
                phase: self.phase,
                csts: csts.raw(),
            });
        }
        if csts.raw() & self.mask == self.value {
            return Ok(true);
        }
        let start = *self.started_ms.get_or_insert(now_ms);
        self.polls = self.polls.saturating_add(1);
        let elapsed = now_ms.saturating_sub(start);
        // Each wait is at least one millisecond, so a faithful clock reaches the deadline first;
        // the poll budget bounds the loop even if the clock stands still.
        let budget = self.limit_ms / POLL_INTERVAL_MS + 2;
        if elapsed >= u64::from(self.limit_ms) || self.polls > budget {
            if csts.cfs() {
                return Err(InitError::Fatal {
                    phase: self.phase,
                    csts: csts.raw(),
                });
            }
            return Err(InitError::Timeout {
                phase: self.phase,
                csts: csts.raw(),
                limit_ms: self.limit_ms,
            });
        }
        Ok(false)
    }
}

/// A sequence of one register write and one bounded wait ([`Disable`], `ShutdownSeq`): the
/// first poll writes (`start`, which returns the wait), every poll checks the wait, and a
/// failure is sticky (later polls return the same error without touching the registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OneWait {
    wait: Option<Wait>,
    failed: Option<InitError>,
}

impl OneWait {
    /// Nothing written yet.
    pub(crate) const fn new() -> Self {
        Self {
            wait: None,
            failed: None,
        }
    }

    /// One step: `start` on the first call, then one check of the wait.
    pub(crate) fn poll<R: Registers + ?Sized>(
        &mut self,
        regs: &R,
        now_ms: u64,
        start: impl FnOnce(&R) -> Wait,
    ) -> Result<Poll, InitError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut w = match self.wait {
            Some(w) => w,
            None => start(regs),
        };
        let r = w.check(regs, now_ms);
        self.wait = Some(w);
        match r {
            Ok(true) => Ok(Poll::Done),
            Ok(false) => Ok(Poll::Wait(POLL_INTERVAL_MS)),
            Err(e) => {
                self.failed = Some(e);
                Err(e)
            }
        }
    }
}

/// The admin queue the controller is enabled with: bus addresses (4 KiB aligned, physically
/// contiguous) and sizes of the admin submission and completion queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdminQueue {
    /// Bus address of the admin submission queue (ASQ).
    pub sq_addr: u64,
    /// Bus address of the admin completion queue (ACQ).
    pub cq_addr: u64,
    /// Entries of each queue (the Linux driver uses 32, `NVME_AQ_DEPTH`).
    pub entries: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Start,
    WaitNotReady(Wait),
    WaitReady(Wait),
    Done,
    Failed(InitError),
}

/// The bring-up sequence: reset (CC.EN=0), wait for CSTS.RDY=0, program AQA/ASQ/ACQ, write CC
/// (NVM command set, 4 KiB pages, IOSQES 6, IOCQES 4), set CC.EN, wait for CSTS.RDY=1.
///
/// CSTS.CFS fails the enable wait at once. While waiting for RDY=0 it is tolerated until the
/// deadline, because clearing CC.EN is how a controller in fatal state is reset; if it is still
/// set when the wait ends the error is [`InitError::Fatal`].
///
/// # Examples
///
/// ```no_run
/// # fn sleep_ms(_: u32) {}
/// # fn now_ms() -> u64 { 0 }
/// # fn demo(regs: &impl nvme::Registers) -> Result<(), nvme::InitError> {
/// use nvme::{AdminQueue, Enable, Poll};
/// let mut en = Enable::new(AdminQueue { sq_addr: 0x10_0000, cq_addr: 0x10_1000, entries: 32 });
/// loop {
///     match en.poll(regs, now_ms())? {
///         Poll::Wait(ms) => sleep_ms(ms),
///         Poll::Done => break,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enable {
    aq: AdminQueue,
    state: State,
    cap: Cap,
}

impl Enable {
    /// A sequence that will enable the controller with admin queue `aq`.
    pub const fn new(aq: AdminQueue) -> Self {
        Self {
            aq,
            state: State::Start,
            cap: Cap::from_raw(0),
        }
    }

    /// CAP as read at the start (zero before the first poll).
    pub const fn cap(&self) -> Cap {
        self.cap
    }

    /// Runs the sequence as far as it can without waiting; `now_ms` is a monotonic clock.
    ///
    /// # Errors
    ///
    /// An [`InitError`]; the sequence then stays failed and returns the same error again.
    pub fn poll<R: Registers + ?Sized>(
        &mut self,
        regs: &R,
        now_ms: u64,
    ) -> Result<Poll, InitError> {
        let r = self.step(regs, now_ms);
        if let Err(e) = r {
            self.state = State::Failed(e);
        }
        r
    }

    fn step<R: Registers + ?Sized>(&mut self, regs: &R, now_ms: u64) -> Result<Poll, InitError> {
        loop {
            match self.state {
                State::Start => {
                    let cap = Cap::from_raw(regs.read64(REG_CAP));
                    if Csts::from_raw(regs.read32(REG_CSTS)).is_all_ones() {
                        return Err(InitError::DeviceGone);
                    }
                    self.cap = cap;
                    if !cap.supports_ctrl_page() {
                        return Err(InitError::PageSize {
                            mpsmin: cap.mpsmin(),
                        });
                    }
                    if cap.css() & 1 == 0 {
                        return Err(InitError::CommandSet { css: cap.css() });
                    }
                    let max = cap.max_queue_entries();
                    if u32::from(self.aq.entries) > max
                        || Aqa::new(self.aq.entries, self.aq.entries).is_none()
                    {
                        return Err(InitError::AdminQueueSize {
                            entries: self.aq.entries,
                            max,
                        });
                    }
                    for addr in [self.aq.sq_addr, self.aq.cq_addr] {
                        if addr & 0xfff != 0 {
                            return Err(InitError::AdminQueueAlign { addr });
                        }
                    }
                    // Clear EN (and any shutdown request) whatever the current state: a device
                    // handed over enabled must not keep using memory we do not know.
                    let cc = Cc::from_raw(regs.read32(REG_CC));
                    regs.write32(
                        REG_CC,
                        cc.with_enable(false)
                            .with_shutdown(crate::Shutdown::None)
                            .raw(),
                    );
                    self.state = State::WaitNotReady(Wait::new(
                        Phase::Disable,
                        1,
                        0,
                        cap.ready_timeout_ms(),
                        false,
                    ));
                }
                State::WaitNotReady(mut w) => {
                    if !w.check(regs, now_ms)? {
                        self.state = State::WaitNotReady(w);
                        return Ok(Poll::Wait(POLL_INTERVAL_MS));
                    }
                    if let Some(aqa) = Aqa::new(self.aq.entries, self.aq.entries) {
                        regs.write32(REG_AQA, aqa.raw());
                    }
                    regs.write64(REG_ASQ, self.aq.sq_addr);
                    regs.write64(REG_ACQ, self.aq.cq_addr);
                    let cc = Cc::nvm_default();
                    regs.write32(REG_CC, cc.raw());
                    regs.write32(REG_CC, cc.with_enable(true).raw());
                    let limit = self.cap.ready_timeout_ms();
                    self.state = State::WaitReady(Wait::new(Phase::Enable, 1, 1, limit, true));
                }
                State::WaitReady(mut w) => {
                    if !w.check(regs, now_ms)? {
                        self.state = State::WaitReady(w);
                        return Ok(Poll::Wait(POLL_INTERVAL_MS));
                    }
                    self.state = State::Done;
                }
                State::Done => return Ok(Poll::Done),
                State::Failed(e) => return Err(e),
            }
        }
    }
}

/// Disabling without shutdown notification (`nvme_disable_ctrl(ctrl, false)`): clear CC.EN and
/// wait for CSTS.RDY=0, bounded by CAP.TO. Used before a reset or when the device is removed
/// while broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disable(OneWait);

impl Disable {
    /// A disable sequence; nothing is written before the first poll.
    pub const fn new() -> Self {
        Self(OneWait::new())
    }

    /// Runs the sequence as far as it can without waiting.
    ///
    /// # Errors
    ///
    /// [`InitError::DeviceGone`], or [`InitError::Timeout`]/[`InitError::Fatal`] in phase
    /// [`Phase::Disable`].
    pub fn poll<R: Registers + ?Sized>(
        &mut self,
        regs: &R,
        now_ms: u64,
    ) -> Result<Poll, InitError> {
        self.0.poll(regs, now_ms, |regs| {
            let cap = Cap::from_raw(regs.read64(REG_CAP));
            let cc = Cc::from_raw(regs.read32(REG_CC));
            regs.write32(
                REG_CC,
                cc.with_enable(false)
                    .with_shutdown(crate::Shutdown::None)
                    .raw(),
            );
            Wait::new(Phase::Disable, 1, 0, cap.ready_timeout_ms(), false)
        })
    }
}

impl Default for Disable {
    fn default() -> Self {
        Self::new()
    }
}
