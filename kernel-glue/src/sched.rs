// SPDX-License-Identifier: GPL-2.0

//! Voluntary preemption for long loops.
//!
//! C header: [`include/linux/sched.h`](srctree/include/linux/sched.h)

use crate::helpers;

/// Gives the scheduler a chance to run something else (`cond_resched`).
///
/// Long loops in process context (a self-test in module init, say) must call this now and
/// then: without kernel preemption they would otherwise trigger RCU stall and soft-lockup
/// reports. Must not be called in atomic context (the kernel reports "sleeping function called
/// from invalid context"); that is a bug report, not undefined behaviour.
pub fn cond_resched() {
    // SAFETY: `cond_resched` has no memory-safety preconditions; calling it in atomic context
    // is diagnosed by the kernel.
    unsafe { helpers::rnvme_glue_cond_resched() };
}
