// SPDX-License-Identifier: GPL-2.0

//! The monotonic clock the benchmark times with.
//!
//! C header: [`include/linux/timekeeping.h`](srctree/include/linux/timekeeping.h)

use crate::helpers;

/// `ktime_get_ns()`: nanoseconds of `CLOCK_MONOTONIC`.
#[inline]
pub fn now_ns() -> u64 {
    // SAFETY: reads the clock; callable from any context.
    unsafe { helpers::rnvme_glue_bench_now_ns() }
}
