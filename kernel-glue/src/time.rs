// SPDX-License-Identifier: GPL-2.0

//! Sleeping waits, CPU counts, the scheduler clock and the time-stamp counter.
//!
//! C header: [`include/linux/delay.h`](srctree/include/linux/delay.h)

use kernel::bindings;

use crate::helpers;

/// Sleeps for at least `ms` milliseconds (`msleep()`; process context only).
pub fn msleep(ms: u32) {
    // SAFETY: `msleep` may be called from any sleepable context, which every caller of this
    // function is (probe, remove, work items).
    unsafe { bindings::msleep(ms) };
}

/// Number of online CPUs (`num_online_cpus()`).
pub fn num_online_cpus() -> u32 {
    // SAFETY: reads a global counter.
    unsafe { helpers::rnvme_glue_num_online_cpus() }
}

/// Nanoseconds of this CPU's scheduler clock (`local_clock()`: the TSC on x86, no clocksource
/// read), for timing short code paths. Monotonic on one CPU; across CPUs only roughly aligned.
#[inline]
pub fn local_clock_ns() -> u64 {
    // SAFETY: reads the scheduler clock; callable from any context.
    unsafe { helpers::rnvme_glue_local_clock() }
}

/// The time-stamp counter (`rdtsc`, as `rdtsc()` in `arch/x86/include/asm/msr.h`), for timing
/// code paths too short for [`local_clock_ns`]'s calls: one instruction, no call. Not ordered
/// with the instructions around it; convert differences with [`TscScale`].
#[inline(always)]
pub fn tsc() -> u64 {
    // SAFETY: `rdtsc` only reads the counter; the kernel leaves it readable (x86_64 only).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Converts [`tsc`] differences to nanoseconds with the kernel's calibrated TSC frequency
/// (`tsc_khz`), read once when made.
#[derive(Clone, Copy, Debug)]
pub struct TscScale {
    /// Nanoseconds per cycle in 32.32 fixed point (0: frequency unknown).
    ns_per_cycle_q32: u64,
}

impl TscScale {
    /// The scale of the current `tsc_khz`.
    pub fn new() -> Self {
        // SAFETY: reads a global set once at boot.
        let khz = u64::from(unsafe { helpers::rnvme_glue_tsc_khz() });
        Self {
            ns_per_cycle_q32: (1_000_000u64 << 32).checked_div(khz).unwrap_or(0),
        }
    }

    /// Nanoseconds in `cycles` TSC cycles (saturating; 0 when the frequency is unknown).
    #[inline]
    pub fn ns(&self, cycles: u64) -> u64 {
        let ns = (u128::from(cycles) * u128::from(self.ns_per_cycle_q32)) >> 32;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

impl Default for TscScale {
    fn default() -> Self {
        Self::new()
    }
}
