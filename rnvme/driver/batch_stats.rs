// SPDX-License-Identifier: GPL-2.0

//! Counters of the I/O path's batched submissions (`queue_rqs`), batched completions
//! (`io_comp_batch`) and completion queue head doorbells, in debugfs `rnvme/rnvme<C>/batch`.
//! Each is added to once per batch, not per request, to keep shared atomics off the per-I/O
//! path.

use kernel::{c_str, prelude::*, str::CStr};
use kernel_glue::{debugfs::DebugCounters, time::TscScale};

/// One counter.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Calls of `queue_rqs` (plugged lists handed over at once).
    QueueRqsCalls,
    /// Requests started by `queue_rqs`.
    QueueRqsStarted,
    /// Requests `queue_rqs` gave back to blk-mq for `queue_rq` (not prepared or not submitted).
    QueueRqsRequeued,
    /// Doorbell batches of `queue_rqs`: one lock hold and at most one doorbell write for the
    /// requests of one hardware queue.
    SqBatches,
    /// Requests completed into an `io_comp_batch` (ended by `blk_mq_end_request_batch()`).
    CompletionsBatched,
    /// Requests completed one by one (`blk_mq_complete_request()`: errors, passthrough,
    /// completions on another CPU, or no batch).
    CompletionsSingle,
    /// Completion queue heads reported to the controller (shadow or MMIO doorbell): once per
    /// interrupt or poll that consumed entries, or once per many with `defer_cq_doorbell`.
    CqHeadReports,
    /// Of those, the ones written to the MMIO doorbell (the controller's event index asked
    /// for it, or no shadow doorbells).
    CqHeadMmio,
    /// Calls of the I/O queues' interrupt handler (on a shared INTx line, those that found
    /// completions).
    IrqHandled,
    /// Nanoseconds spent in those calls (time-stamp counter around the whole handler: reaping
    /// the completions and ending their requests, io_uring's completion work included). The
    /// cost a cpu-clock profile cannot see: its sampling interrupt waits until the handler
    /// returns.
    IrqNs,
}

/// The counter names, one per [`Counter`].
const NAMES: [&CStr; 10] = [
    c_str!("queue_rqs_calls"),
    c_str!("queue_rqs_started"),
    c_str!("queue_rqs_requeued"),
    c_str!("sq_batches"),
    c_str!("completions_batched"),
    c_str!("completions_single"),
    c_str!("cq_head_reports"),
    c_str!("cq_head_mmio"),
    c_str!("irq_handled"),
    c_str!("irq_ns"),
];

/// The batching counters of one controller.
pub(crate) struct BatchStats {
    counters: DebugCounters,
    /// Converts the interrupt handler's time-stamp counter cycles.
    scale: TscScale,
}

impl BatchStats {
    /// Creates the counters of controller `instance` (may sleep).
    pub(crate) fn new(instance: u32) -> Result<Self> {
        Ok(Self {
            counters: DebugCounters::new(
                format_args!("rnvme{}", instance),
                c_str!("batch"),
                &NAMES,
            )?,
            scale: TscScale::new(),
        })
    }

    /// Adds `v` to counter `c` (nothing for 0).
    pub(crate) fn add(&self, c: Counter, v: u32) {
        if v != 0 {
            self.counters.add(c as usize, i64::from(v));
        }
    }

    /// Counts one call of the interrupt handler that took `cycles` time-stamp counter cycles.
    pub(crate) fn irq_handled(&self, cycles: u64) {
        let ns = i64::try_from(self.scale.ns(cycles)).unwrap_or(i64::MAX);
        self.counters.add(Counter::IrqHandled as usize, 1);
        self.counters.add(Counter::IrqNs as usize, ns);
    }
}
