// SPDX-License-Identifier: GPL-2.0

//! Phase timers of the passthrough submit path and the I/O interrupt handler, for comparing
//! rnvme's per-I/O time with the C driver's phase by phase (`scripts/profile-fio.sh
//! --phases`, which also builds the C driver with the same timers).
//!
//! Built in only with `RNVME_PHASES=1` (`scripts/build-module.sh ... RNVME_PHASES=1`, which
//! passes `--cfg rnvme_phases`): then each phase's time-stamp counter cycles are summed per CPU
//! in debugfs `rnvme/rnvme<C>/phases`, in cycles (the guest's TSC is the host's under TCG).
//! Otherwise [`Phases`] and [`Stamp`] are empty and every call compiles to nothing, so the
//! driver that is measured and shipped has no timer on its I/O path.
//!
//! The phases, for an io_uring I/O command with data, and where the C driver's timers sit
//! (`nvme_ns_uring_cmd()` / `nvme_uring_cmd_io()` in `drivers/nvme/host/ioctl.c`, `nvme_irq()`
//! in `drivers/nvme/host/pci.c`):
//!
//! | phase | rnvme | C driver |
//! |---|---|---|
//! | `entry` | `uring_cmd` to its command checked | `nvme_ns_uring_cmd()` to before the request allocation |
//! | `alloc` | request allocated, command stored in the PDU | `nvme_alloc_user_request()` |
//! | `data` | premapped tag found and checked, or the user buffer mapped | `nvme_map_user_request()` |
//! | `exec` | `blk_execute_rq_nowait()`: blk-mq, `queue_rq`, the doorbell | the same call |
//! | `irq` | the I/O queue's interrupt handler, per call | `nvme_irq()` |
//! | `queue_rq` | `queue_rq`, per call (part of `exec` for these commands) | `nvme_queue_rq()` |
//! | `sq` | writing the command into the ring and ringing the doorbell, per call | `nvme_queue_rq()`'s `sq_lock` section |
//! | `doorbell` | one MMIO SQ tail doorbell write of `queue_rq` or `queue_rqs`, per write, timed with interrupts off ([`IrqsOff`]) | the `writel()` of `nvme_write_sq_db()` |

use kernel::{c_str, str::CStr};

/// One phase (the counters of debugfs `phases`, in this order).
#[derive(Clone, Copy)]
#[cfg_attr(not(rnvme_phases), allow(dead_code))]
pub(crate) enum Phase {
    /// Entry to the checked command.
    Entry,
    /// Request allocation.
    Alloc,
    /// Data: tag lookup or user mapping.
    Data,
    /// Execution through `queue_rq` and the doorbell.
    Exec,
    /// Interrupt handler calls, summed.
    Irq,
    /// `queue_rq` calls, summed.
    QueueRq,
    /// The ring write and doorbell of `queue_rq`, summed.
    Sq,
    /// The MMIO SQ tail doorbell writes of `queue_rq` and `queue_rqs`, summed.
    Doorbell,
}

/// What [`Phases::count`] counts (after the cycle sums, in this order).
#[derive(Clone, Copy)]
#[cfg_attr(not(rnvme_phases), allow(dead_code))]
pub(crate) enum Count {
    /// A timed I/O command.
    Io,
    /// An interrupt handler call.
    IrqCall,
    /// A `queue_rq` call.
    QueueRqCall,
    /// An MMIO doorbell write.
    DoorbellWrite,
}

/// The counter names: one per [`Phase`] (cycles), then one per [`Count`].
#[cfg_attr(not(rnvme_phases), allow(dead_code))]
const NAMES: [&CStr; 12] = [
    c_str!("entry_cycles"),
    c_str!("alloc_cycles"),
    c_str!("data_cycles"),
    c_str!("exec_cycles"),
    c_str!("irq_cycles"),
    c_str!("queue_rq_cycles"),
    c_str!("sq_cycles"),
    c_str!("doorbell_cycles"),
    c_str!("ios"),
    c_str!("irq_calls"),
    c_str!("queue_rq_calls"),
    c_str!("doorbell_writes"),
];

#[cfg(rnvme_phases)]
mod imp {
    use super::{Count, Phase, NAMES};
    use kernel::prelude::*;
    use kernel_glue::{debugfs::DebugCounters, time::tsc};

    /// A point in time (the time-stamp counter).
    pub(crate) struct Stamp(u64);

    impl Stamp {
        /// Now.
        #[inline(always)]
        pub(crate) fn now() -> Self {
            Self(tsc())
        }
    }

    /// Interrupts off on this CPU until dropped (`local_irq_save()`/`local_irq_restore()`),
    /// around a timed MMIO write: under TCG a pending interrupt is taken at the next
    /// translated-block boundary, and the return from the write's C helper is one, so without
    /// this the handler of an interrupt that arrives during the write would be timed as the
    /// write (the C driver's inlined `writel()` and its timer end share a block).
    pub(crate) struct IrqsOff(u64);

    impl IrqsOff {
        /// Saves the flags and disables interrupts.
        #[inline(always)]
        pub(crate) fn new() -> Self {
            let flags: u64;
            // SAFETY: `arch_local_irq_save()`: the flags are saved and restored by the drop,
            // on this CPU (the value is not sent anywhere), with the stack balanced.
            unsafe { core::arch::asm!("pushfq", "pop {f}", "cli", f = out(reg) flags) };
            Self(flags)
        }
    }

    impl Drop for IrqsOff {
        #[inline(always)]
        fn drop(&mut self) {
            // SAFETY: `arch_local_irq_restore()` of the flags `new` saved on this CPU.
            unsafe { core::arch::asm!("push {f}", "popfq", f = in(reg) self.0) };
        }
    }

    /// The phase counters of one controller (none: nothing counted, e.g. the admin queue's).
    pub(crate) struct Phases(Option<DebugCounters<{ NAMES.len() }>>);

    impl Phases {
        /// Creates debugfs `rnvme/rnvme<instance>/phases`.
        pub(crate) fn new(instance: u32) -> Result<Self> {
            Ok(Self(Some(DebugCounters::new(
                format_args!("rnvme{}", instance),
                kernel::c_str!("phases"),
                &NAMES,
            )?)))
        }

        /// Counters that count nothing.
        pub(crate) const fn none() -> Self {
            Self(None)
        }

        /// Adds `v` to counter `i`.
        #[inline(always)]
        fn add(&self, i: usize, v: i64) {
            if let Some(c) = &self.0 {
                c.add(i, v);
            }
        }

        /// Adds the cycles since `s` to `p`; returns now, the start of the next phase.
        #[inline(always)]
        pub(crate) fn end(&self, p: Phase, s: Stamp) -> Stamp {
            let now = Stamp::now();
            self.add(p as usize, now.0.wrapping_sub(s.0) as i64);
            now
        }

        /// Counts one `c`.
        #[inline(always)]
        pub(crate) fn count(&self, c: Count) {
            self.add(Phase::Doorbell as usize + 1 + c as usize, 1);
        }
    }
}

#[cfg(not(rnvme_phases))]
mod imp {
    use super::{Count, Phase};
    use kernel::prelude::*;

    /// Nothing: phase timers are not built in.
    pub(crate) struct Stamp;

    impl Stamp {
        /// Nothing.
        #[inline(always)]
        pub(crate) fn now() -> Self {
            Self
        }
    }

    /// Nothing: phase timers are not built in.
    pub(crate) struct IrqsOff;

    impl IrqsOff {
        /// Nothing.
        #[inline(always)]
        pub(crate) fn new() -> Self {
            Self
        }
    }

    /// Nothing: phase timers are not built in.
    pub(crate) struct Phases;

    impl Phases {
        /// Nothing to create.
        pub(crate) fn new(_instance: u32) -> Result<Self> {
            Ok(Self)
        }

        /// Nothing.
        pub(crate) const fn none() -> Self {
            Self
        }

        /// Nothing.
        #[inline(always)]
        pub(crate) fn end(&self, _p: Phase, _s: Stamp) -> Stamp {
            Stamp
        }

        /// Nothing.
        #[inline(always)]
        pub(crate) fn count(&self, _c: Count) {}
    }
}

pub(crate) use imp::{IrqsOff, Phases, Stamp};
