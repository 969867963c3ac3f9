// SPDX-License-Identifier: GPL-2.0

//! Counters of the I/O path's batched submissions (`queue_rqs`), batched completions
//! (`io_comp_batch`) and completion queue head doorbells, in debugfs `rnvme/rnvme<C>/batch`.
//! Each is added to once per batch, not per request, to keep shared atomics off the per-I/O
//! path.

use kernel::{c_str, prelude::*, str::CStr};
use kernel_glue::{debugfs::DebugCounters, time::TscScale};

/// The counter names. The counters a path updates together are consecutive, added by one
/// [`DebugCounters::add_range`] call: [`QUEUE_RQS`], [`DRAIN`] and [`IRQ`] start the groups.
const NAMES: [&CStr; 10] = [
    // QUEUE_RQS: calls of `queue_rqs` (plugged lists handed over at once), requests it
    // started, requests it gave back to blk-mq for `queue_rq` (not prepared or not
    // submitted), and its doorbell batches (one lock hold and at most one doorbell write for
    // the requests of one hardware queue).
    c_str!("queue_rqs_calls"),
    c_str!("queue_rqs_started"),
    c_str!("queue_rqs_requeued"),
    c_str!("sq_batches"),
    // DRAIN: requests completed into an `io_comp_batch` (ended by
    // `blk_mq_end_request_batch()`); requests completed one by one (`blk_mq_complete_request()`:
    // errors, passthrough, completions on another CPU, or no batch); completion queue heads
    // reported to the controller (shadow or MMIO doorbell: once per interrupt or poll that
    // consumed entries, or once per many with `defer_cq_doorbell`); of those, the ones written
    // to the MMIO doorbell (the controller's event index asked for it, or no shadow doorbells).
    c_str!("completions_batched"),
    c_str!("completions_single"),
    c_str!("cq_head_reports"),
    c_str!("cq_head_mmio"),
    // IRQ: calls of the I/O queues' interrupt handler (on a shared INTx line, those that found
    // completions), and nanoseconds spent in them (time-stamp counter around the whole
    // handler: reaping the completions and ending their requests, io_uring's completion work
    // included; the cost a cpu-clock profile cannot see, as its sampling interrupt waits until
    // the handler returns).
    c_str!("irq_handled"),
    c_str!("irq_ns"),
];

/// Index of the first of the four `queue_rqs` counters in [`NAMES`].
const QUEUE_RQS: usize = 0;
/// Index of the first of the four completion queue drain counters in [`NAMES`].
const DRAIN: usize = 4;
/// Index of the first of the two interrupt handler counters in [`NAMES`].
const IRQ: usize = 8;

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

    /// Counts one call of `queue_rqs`: requests it `started`, gave back (`requeued`) and the
    /// doorbell `batches` it made (one call into the counters for the four).
    pub(crate) fn queue_rqs(&self, started: u32, requeued: u32, batches: u32) {
        let v = [
            1,
            i64::from(started),
            i64::from(requeued),
            i64::from(batches),
        ];
        self.counters.add_range(QUEUE_RQS, &v);
    }

    /// Counts one drain of a completion queue: requests completed into the batch and one by
    /// one, and the CQ head reports and MMIO writes among them (one call for the four).
    pub(crate) fn drained(&self, batched: u32, single: u32, reports: u32, mmio: u32) {
        if batched | single | reports | mmio != 0 {
            let v = [batched, single, reports, mmio].map(i64::from);
            self.counters.add_range(DRAIN, &v);
        }
    }

    /// Counts one call of the interrupt handler that took `cycles` time-stamp counter cycles.
    pub(crate) fn irq_handled(&self, cycles: u64) {
        let ns = i64::try_from(self.scale.ns(cycles)).unwrap_or(i64::MAX);
        self.counters.add_range(IRQ, &[1, ns]);
    }
}
