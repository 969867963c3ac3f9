// SPDX-License-Identifier: GPL-2.0

//! Differential test of `kernel_glue`'s copy of `blk_mq_add_to_batch()`
//! ([`kernel_glue::block::mq::CompBatch::add`], run by `rnvme.ko` for every completion it
//! batches) against the kernel's own inline function (`include/linux/blk-mq.h`).
//!
//! Every combination of what that function reads is run through both: the request flags it
//! tests (`RQF_SCHED_TAGS`, and `RQF_IO_STAT`, `RQF_STATS`, `RQF_USE_SCHED` of
//! `blk_mq_need_time_stamp()`) with an unrelated flag, block and passthrough operations (with a
//! request flag in the upper bits of `cmd_flags`), with and without `end_io`, `is_error`, a
//! batch without a callback, with the same one or another one, empty or already holding a
//! request. The return value, the batch's callback, `need_ts`, the list's head and tail and the
//! request's link must be equal.

use kernel::{bindings, prelude::*};
use kernel_glue_testing::c_batch::{self, BatchCase};

/// Mismatches printed in full.
const MAX_REPORTED: usize = 5;

/// Totals of a run.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    /// Cases run.
    pub(crate) cases: usize,
    /// Cases where the two sides disagreed.
    pub(crate) mismatches: usize,
    /// Cases both added to the batch.
    pub(crate) added: usize,
}

/// Runs every case. With `inject`, our outcome of the first case is altered, which must be
/// reported as a mismatch.
pub(crate) fn run(inject: bool) -> Result<Summary> {
    let bit = |b: u32| 1u32 << b;
    let flag_bits = [
        bit(bindings::__RQF_SCHED_TAGS),
        bit(bindings::__RQF_IO_STAT),
        bit(bindings::__RQF_STATS),
        bit(bindings::__RQF_USE_SCHED),
        bit(bindings::__RQF_STARTED),
    ];
    let ops = [
        bindings::req_op_REQ_OP_READ,
        bindings::req_op_REQ_OP_WRITE,
        bindings::req_op_REQ_OP_FLUSH,
        bindings::req_op_REQ_OP_DRV_IN,
        bindings::req_op_REQ_OP_DRV_OUT,
        bindings::req_op_REQ_OP_DRV_IN | bit(bindings::req_flag_bits___REQ_FUA),
        bindings::req_op_REQ_OP_READ | bit(bindings::req_flag_bits___REQ_POLLED),
    ];
    let mut s = Summary::default();
    for mask in 0u32..(1 << flag_bits.len()) {
        let rq_flags = flag_bits
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .fold(0, |a, (_, b)| a | b);
        for &cmd_flags in &ops {
            for end_io in [false, true] {
                for is_error in [false, true] {
                    for complete in 0u8..3 {
                        for nonempty in [false, true] {
                            let case = BatchCase {
                                rq_flags,
                                cmd_flags,
                                end_io,
                                is_error,
                                complete,
                                nonempty,
                            };
                            let (kernel, mut ours) = c_batch::run(&case)?;
                            if inject && s.cases == 0 {
                                ours.added = !ours.added;
                                pr_info!(
                                    "inject_fault: altered our add-to-batch result in case 0\n"
                                );
                            }
                            s.cases += 1;
                            if kernel.added {
                                s.added += 1;
                            }
                            if kernel != ours {
                                s.mismatches += 1;
                                if s.mismatches <= MAX_REPORTED {
                                    pr_err!(
                                        "batch-differential mismatch: {:?}: kernel {:?}, ours {:?}\n",
                                        case,
                                        kernel,
                                        ours
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(s)
}
