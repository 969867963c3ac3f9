// SPDX-License-Identifier: GPL-2.0

//! Rate limiting of warnings about device misbehaviour (Linux 6.12's Rust printing has no
//! `pr_warn_ratelimited`).
//!
//! C header: [`include/linux/ratelimit.h`](srctree/include/linux/ratelimit.h)

use core::sync::atomic::{AtomicU32, Ordering};

/// Warnings printed in full before thinning out.
const BURST: u32 = 10;
/// After the burst, one warning in this many is printed.
const EVERY: u32 = 1000;

static COUNT: AtomicU32 = AtomicU32::new(0);

/// Whether the next warning should be printed: the first `BURST`, then one in `EVERY`.
pub(crate) fn allow() -> bool {
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    n < BURST || n % EVERY == 0
}

/// `pr_warn!` for device-caused events, rate-limited by [`allow`].
macro_rules! warn_limited {
    ($($arg:tt)*) => {
        if $crate::ratelimit::allow() {
            kernel::pr_warn!($($arg)*);
        }
    };
}
pub(crate) use warn_limited;
