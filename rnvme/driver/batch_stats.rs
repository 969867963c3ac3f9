// SPDX-License-Identifier: GPL-2.0

//! Counters of the I/O path's batched submissions (`queue_rqs`), batched completions
//! (`io_comp_batch`) and completion queue head doorbells, in debugfs `rnvme/rnvme<C>/batch`.
//! Each is added to once per batch, not per request, to keep shared atomics off the per-I/O
//! path.

use kernel::{c_str, prelude::*, str::CStr};
use kernel_glue::debugfs::DebugCounters;

/// The counter names. The counters a path updates together are consecutive, added together by
/// [`DebugCounters::add_range`] (inline, one instruction each on x86-64): [`QUEUE_RQS`],
/// [`DRAIN`] start the groups.
const NAMES: [&CStr; 9] = [
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
    // completions). Their time is measured by the phase timers of a `RNVME_PHASES=1` build
    // (`irq_cycles`, `crate::phases`), not here: two time-stamp counter reads per interrupt
    // were on the shipped driver's interrupt path.
    c_str!("irq_handled"),
];

/// Index of the first of the four `queue_rqs` counters in [`NAMES`].
const QUEUE_RQS: usize = 0;
/// Index of the first of the four completion queue drain counters in [`NAMES`]; the
/// interrupt handler's counter is the one right after them, so an interrupt's drain adds the
/// five together (the last name, checked at compile time below).
const DRAIN: usize = 4;
const _: () = assert!(DRAIN + 5 == NAMES.len());

/// The batching counters of one controller.
pub(crate) struct BatchStats {
    counters: DebugCounters<{ NAMES.len() }>,
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
        })
    }

    /// Counts one call of `queue_rqs`: requests it `started`, gave back (`requeued`) and the
    /// doorbell `batches` it made.
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
    /// one, and the CQ head reports and MMIO writes among them; with `irq`, also the interrupt
    /// handler call that drained it.
    pub(crate) fn drained(&self, batched: u32, single: u32, reports: u32, mmio: u32, irq: bool) {
        // The four drain counters, and the interrupt's right after them: five adds in the
        // interrupt handler, where `irq` is a constant.
        if irq {
            let v = [batched, single, reports, mmio, 1].map(i64::from);
            self.counters.add_range(DRAIN, &v);
        } else if batched | single | reports | mmio != 0 {
            let v = [batched, single, reports, mmio].map(i64::from);
            self.counters.add_range(DRAIN, &v);
        }
    }
}
