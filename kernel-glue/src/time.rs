// SPDX-License-Identifier: GPL-2.0

//! Sleeping waits, CPU counts and the scheduler clock.
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
