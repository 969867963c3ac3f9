//! Controller recovery after a timeout: the controller state machine and the fate of the
//! commands a reset cancels (`nvme_change_ctrl_state()`, `nvme_cancel_request()` and
//! `nvme_decide_disposition()` in `drivers/nvme/host/core.c`; `nvme_timeout()`,
//! `nvme_dev_disable()` and `nvme_reset_work()` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The driver's reset is: [`CtrlState::Live`] -> [`CtrlState::Resetting`] (only one reset at a
//! time; a timeout during it waits), quiesce the queues, disable the controller (bounded by
//! CAP.TO, [`crate::Disable`]), cancel every command in flight with
//! [`Status::HOST_ABORTED`], reset the rings, enable ([`crate::Enable`]), create the I/O queues
//! again, then [`CtrlState::Live`] and unquiesce; if any step fails, [`CtrlState::Dead`]: the
//! controller stays disabled and every request fails. A cancelled request is retried
//! ([`decide_disposition`]) up to [`MAX_RETRIES`] times.
//!
//! An admin command that times out (`nvme_timeout()` for queue 0: `nvme_dev_disable()`, then
//! `nvme_try_sched_reset()`) disables the controller at once, in the context that waited for it
//! while it holds the admin queue; [`CtrlState::after_admin_timeout`] says what follows: from
//! [`CtrlState::Live`], when a reset can run later ([`CtrlState::ResetPending`]: the controller
//! is disabled, a reset is owed, and the first context that may sleep without the admin queue
//! claims it, [`CtrlState::can_start_reset`]); otherwise (while probing or removing, or during a
//! reset) [`CtrlState::Dead`].

use crate::{Csts, Status};

/// How often a request is retried after a failure that allows it (`nvme_max_retries`, 5).
pub const MAX_RETRIES: u8 = 5;

impl Status {
    /// Command Aborted By Host (path related status, `NVME_SC_HOST_ABORTED_CMD`): what a
    /// cancelled command completes with (`nvme_cancel_request()`); not DNR, so it is retried.
    pub const HOST_ABORTED: Self = Self::from_code(0x371);

    /// Command Aborted due to SQ Deletion (generic status 0x08, `NVME_SC_ABORT_QUEUE`): how a
    /// controller completes the commands of a submission queue that a reset deletes before it
    /// disables the controller (`delete_queues_before_disable`).
    pub const SQ_DELETION_ABORTED: Self = Self::from_code(0x008);

    /// Whether the command was aborted because its submission queue was deleted, and may be
    /// retried (not DNR): a command of a reset, sent again as one the host cancelled
    /// ([`Status::HOST_ABORTED`]) is.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::Status;
    /// assert!(Status::SQ_DELETION_ABORTED.aborted_by_sq_deletion());
    /// assert!(Status::from_code(0x1008).aborted_by_sq_deletion());  // CRD set
    /// assert!(!Status::from_code(0x4008).aborted_by_sq_deletion()); // DNR
    /// assert!(!Status::from_code(0x108).aborted_by_sq_deletion());  // command specific 0x08
    /// assert!(!Status::HOST_ABORTED.aborted_by_sq_deletion());
    /// ```
    pub const fn aborted_by_sq_deletion(self) -> bool {
        self.sct_sc() == Self::SQ_DELETION_ABORTED.sct_sc() && !self.dnr()
    }
}

/// The state of a controller (the subset of `enum nvme_ctrl_state` rnvme uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CtrlState {
    /// Enabled with its I/O queues: requests are submitted.
    Live = 0,
    /// A reset is in progress: the queues are quiesced, commands are cancelled.
    Resetting = 1,
    /// Disabled for good (a reset failed, or a timeout outside a reset's reach): every request
    /// fails until the controller is bound again.
    Dead = 2,
    /// Disabled after an admin command timed out; a reset is owed and not yet started (the
    /// C driver's `NVME_CTRL_RESETTING` with `reset_work` queued). Admin commands fail at once;
    /// I/O waits for the reset, which cancels and requeues it.
    ResetPending = 3,
}

impl CtrlState {
    /// The state stored as `v` by [`CtrlState::as_u8`] (anything else is [`CtrlState::Dead`]).
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Live,
            1 => Self::Resetting,
            3 => Self::ResetPending,
            _ => Self::Dead,
        }
    }

    /// The state as a byte (for an atomic).
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// Whether `self -> next` is allowed (`nvme_change_ctrl_state()`): a reset starts only
    /// from [`CtrlState::Live`] or an owed one ([`CtrlState::ResetPending`], entered only from
    /// [`CtrlState::Live`]), ends in [`CtrlState::Live`] or [`CtrlState::Dead`]; anything may
    /// die; nothing leaves [`CtrlState::Dead`].
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::CtrlState::*;
    /// assert!(Live.can_become(Resetting) && Resetting.can_become(Live));
    /// assert!(!Resetting.can_become(Resetting));    // one reset at a time
    /// assert!(Live.can_become(ResetPending) && ResetPending.can_become(Resetting));
    /// assert!(!Resetting.can_become(ResetPending)); // a timeout during a reset kills
    /// assert!(!Dead.can_become(Live) && !Dead.can_become(Resetting));
    /// ```
    pub const fn can_become(self, next: Self) -> bool {
        matches!(
            (self, next),
            (Self::Live | Self::ResetPending, Self::Resetting)
                | (Self::Live, Self::ResetPending)
                | (Self::Resetting, Self::Live)
                | (
                    Self::Live | Self::Resetting | Self::ResetPending,
                    Self::Dead
                )
        )
    }

    /// Whether a reset may start from this state (then to [`CtrlState::Resetting`]).
    pub const fn can_start_reset(self) -> bool {
        self.can_become(Self::Resetting)
    }

    /// Whether admin commands may be sent: the controller is enabled ([`CtrlState::Live`], or
    /// [`CtrlState::Resetting`] once the reset has enabled it again: only the reset, which
    /// holds the admin queue, sends them then).
    pub const fn admin_usable(self) -> bool {
        matches!(self, Self::Live | Self::Resetting)
    }

    /// The state after an admin command timed out in state `self` and the controller was
    /// disabled (`nvme_timeout()` for queue 0): [`CtrlState::ResetPending`] if it was
    /// [`CtrlState::Live`] and `recoverable` (a reset can run later: the controller is bound
    /// and not being removed); [`CtrlState::Dead`] otherwise (probe, removal, or a timeout
    /// during a reset, which then fails: `NVME_CTRL_CONNECTING`/`DELETING`/`RESETTING` in the C
    /// driver disable without a new reset).
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::CtrlState::*;
    /// assert_eq!(Live.after_admin_timeout(true), ResetPending);
    /// assert_eq!(Live.after_admin_timeout(false), Dead);
    /// assert_eq!(Resetting.after_admin_timeout(true), Dead);
    /// assert_eq!(ResetPending.after_admin_timeout(true), Dead);
    /// ```
    pub const fn after_admin_timeout(self, recoverable: bool) -> Self {
        match self {
            Self::Live if recoverable => Self::ResetPending,
            _ => Self::Dead,
        }
    }
}

/// What an I/O command's timeout does once the command is found still in flight on a
/// controller that is not being reset (`nvme_timeout()` in `drivers/nvme/host/pci.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutStep {
    /// Ask the controller to abort the command (the Abort admin command); its completion ends
    /// the request.
    Abort,
    /// Reset the controller at once (the reset cancels every command in flight).
    Reset,
}

impl TimeoutStep {
    /// The step for a command's timeout in controller state `state`, with CSTS read as `csts`,
    /// `aborted_before` if an Abort was already sent for this submission: abort the first time
    /// on a [`CtrlState::Live`] controller, reset otherwise, and reset at once when the
    /// controller reports a fatal status (CSTS.CFS; a device that no longer answers reads all
    /// ones, CFS included), which will not abort anything (`nvme_should_reset()`).
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{Csts, CtrlState, TimeoutStep};
    /// let ready = Csts::from_raw(1);
    /// assert_eq!(TimeoutStep::decide(CtrlState::Live, ready, false), TimeoutStep::Abort);
    /// assert_eq!(TimeoutStep::decide(CtrlState::Live, ready, true), TimeoutStep::Reset);
    /// assert_eq!(TimeoutStep::decide(CtrlState::Live, Csts::from_raw(3), false), TimeoutStep::Reset);
    /// assert_eq!(TimeoutStep::decide(CtrlState::Live, Csts::from_raw(u32::MAX), false), TimeoutStep::Reset);
    /// assert_eq!(TimeoutStep::decide(CtrlState::ResetPending, ready, false), TimeoutStep::Reset);
    /// ```
    pub const fn decide(state: CtrlState, csts: Csts, aborted_before: bool) -> Self {
        if matches!(state, CtrlState::Live) && !csts.cfs() && !aborted_before {
            Self::Abort
        } else {
            Self::Reset
        }
    }
}

/// Whether a controller about to be disabled for a reset still answers, so that its I/O queues
/// are deleted (Delete I/O Submission Queue, then Delete I/O Completion Queue) before CC.EN is
/// cleared, as `nvme_dev_disable()` does unless `nvme_pci_ctrl_is_dead()`
/// (`drivers/nvme/host/pci.c`): CSTS reads ready, without a fatal status, and not all ones (a
/// device that is gone). A controller that was already disabled (not ready) has no queues left.
///
/// # Examples
///
/// ```
/// use nvme::{delete_queues_before_disable, Csts};
/// assert!(delete_queues_before_disable(Csts::from_raw(1)));
/// assert!(!delete_queues_before_disable(Csts::from_raw(0)));        // disabled already
/// assert!(!delete_queues_before_disable(Csts::from_raw(3)));        // fatal status
/// assert!(!delete_queues_before_disable(Csts::from_raw(u32::MAX))); // gone
/// ```
pub const fn delete_queues_before_disable(csts: Csts) -> bool {
    !csts.is_all_ones() && csts.rdy() && !csts.cfs()
}

/// What to do with a finished command (`enum nvme_disposition`, without the multipath and
/// authentication cases rnvme does not have).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// End the request with its status.
    Complete,
    /// Send the request again (`nvme_retry_req()`: requeue), its retry count incremented.
    Retry,
}

/// The disposition of a command that ended with `status` after `retries` earlier retries
/// (`nvme_decide_disposition()`): success completes; a failure is retried unless it is DNR,
/// the request may not be retried (`noretry`: `blk_noretry_request()`, e.g. passthrough), or
/// [`MAX_RETRIES`] retries were made.
///
/// # Examples
///
/// ```
/// use nvme::{decide_disposition, Disposition, Status, MAX_RETRIES};
/// assert_eq!(decide_disposition(Status::HOST_ABORTED, 0, false), Disposition::Retry);
/// assert_eq!(decide_disposition(Status::HOST_ABORTED, MAX_RETRIES, false), Disposition::Complete);
/// assert_eq!(decide_disposition(Status::HOST_ABORTED, 0, true), Disposition::Complete);
/// assert_eq!(decide_disposition(Status::SUCCESS, 0, false), Disposition::Complete);
/// assert_eq!(decide_disposition(Status::from_code(0x4002), 0, false), Disposition::Complete); // DNR
/// ```
pub const fn decide_disposition(status: Status, retries: u8, noretry: bool) -> Disposition {
    if status.is_success() || !status.retryable() || noretry || retries >= MAX_RETRIES {
        Disposition::Complete
    } else {
        Disposition::Retry
    }
}
