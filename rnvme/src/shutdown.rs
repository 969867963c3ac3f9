//! Orderly shutdown: CC.SHN=normal, then wait for CSTS.SHST=complete, bounded by the
//! controller's RTD3 entry latency (`nvme_disable_ctrl(ctrl, true)` and the `shutdown_timeout`
//! computation in `nvme_init_identify`, `drivers/nvme/host/core.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use crate::init::{OneWait, Wait};
use crate::{Cc, InitError, Phase, Poll, Registers, Shutdown, REG_CC};

/// Default shutdown bound when RTD3E is 0 or smaller (the `shutdown_timeout` module parameter
/// of the Linux driver, 5 s).
pub const SHUTDOWN_TIMEOUT_DEFAULT_MS: u32 = 5_000;
/// Largest shutdown bound, whatever RTD3E says (60 s, as the Linux driver clamps it).
pub const SHUTDOWN_TIMEOUT_MAX_MS: u32 = 60_000;

/// The shutdown bound for RTD3 Entry Latency `rtd3e_us` (Identify Controller, microseconds):
/// whole seconds of it, clamped to `5 s..=60 s`.
///
/// # Examples
///
/// ```
/// use nvme::shutdown_timeout_ms;
/// assert_eq!(shutdown_timeout_ms(0), 5_000);
/// assert_eq!(shutdown_timeout_ms(8_500_000), 8_000);
/// assert_eq!(shutdown_timeout_ms(u32::MAX), 60_000);
/// ```
pub const fn shutdown_timeout_ms(rtd3e_us: u32) -> u32 {
    let secs = rtd3e_us / 1_000_000;
    let ms = secs * 1000;
    if ms < SHUTDOWN_TIMEOUT_DEFAULT_MS {
        SHUTDOWN_TIMEOUT_DEFAULT_MS
    } else if ms > SHUTDOWN_TIMEOUT_MAX_MS {
        SHUTDOWN_TIMEOUT_MAX_MS
    } else {
        ms
    }
}

/// The shutdown sequence. Delete the I/O queues first; the admin queue may stay.
///
/// CSTS.CFS fails it at once with [`InitError::Fatal`] (the caller then disables the device
/// without waiting further).
///
/// # Examples
///
/// ```no_run
/// # fn sleep_ms(_: u32) {}
/// # fn now_ms() -> u64 { 0 }
/// # fn demo(regs: &impl nvme::Registers, rtd3e: u32) -> Result<(), nvme::InitError> {
/// use nvme::{Poll, ShutdownSeq};
/// let mut s = ShutdownSeq::new(rtd3e);
/// while let Poll::Wait(ms) = s.poll(regs, now_ms())? {
///     sleep_ms(ms);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownSeq {
    limit_ms: u32,
    seq: OneWait,
}

impl ShutdownSeq {
    /// A shutdown bounded by [`shutdown_timeout_ms`]`(rtd3e_us)`.
    pub const fn new(rtd3e_us: u32) -> Self {
        Self {
            limit_ms: shutdown_timeout_ms(rtd3e_us),
            seq: OneWait::new(),
        }
    }

    /// The bound in milliseconds.
    pub const fn limit_ms(&self) -> u32 {
        self.limit_ms
    }

    /// Runs the sequence as far as it can without waiting; `now_ms` is a monotonic clock.
    ///
    /// # Errors
    ///
    /// [`InitError::DeviceGone`], or [`InitError::Fatal`]/[`InitError::Timeout`] in phase
    /// [`Phase::Shutdown`]; the sequence then returns the same error again.
    pub fn poll<R: Registers + ?Sized>(
        &mut self,
        regs: &R,
        now_ms: u64,
    ) -> Result<Poll, InitError> {
        let limit = self.limit_ms;
        self.seq.poll(regs, now_ms, |regs| {
            let cc = Cc::from_raw(regs.read32(REG_CC));
            regs.write32(REG_CC, cc.with_shutdown(Shutdown::Normal).raw());
            // SHST is bits 3:2; complete is 10b.
            Wait::new(Phase::Shutdown, 0b1100, 0b1000, limit, true)
        })
    }
}
