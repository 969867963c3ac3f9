// SPDX-License-Identifier: GPL-2.0

//! Deleting the I/O queues before a controller is disabled for a reset, as
//! `nvme_dev_disable()` does with `nvme_delete_io_queues()` (`drivers/nvme/host/pci.c`) when
//! the controller still answers (`nvme::delete_queues_before_disable`, the CSTS part of
//! `nvme_pci_ctrl_is_dead()`): every Delete I/O Submission Queue, then every Delete I/O
//! Completion Queue, highest queue id first, on the admin queue the caller holds.
//!
//! A controller stops fetching from a deleted submission queue and finishes or aborts the
//! commands it holds from it before it completes the Delete command, so the disable that
//! follows meets no queue with work in it. Clearing CC.EN alone also drops every queue, and
//! that is all the specification asks for; but a disable with commands still waiting in the
//! queues is the case emulators handle worst: QEMU 7.2's controller reset
//! (`nvme_ctrl_reset()` in `hw/nvme/ctrl.c`) drains the namespaces first, the drain runs the
//! submission queues' pending bottom halves, which fetch more commands, and the I/O of those
//! is held by the drained block backend, restarted when the drain ends and completed
//! (`nvme_rw_complete_cb()`) after `nvme_free_sq()` freed its request: QEMU segfaults
//! (`tests/qemu/README.md`).
//!
//! Bounded: each deletion may take [`DELETE_TIMEOUT_MS`], and the first one that fails or times
//! out ends them (a controller that does not answer a Delete will not answer the rest), so a
//! controller that has stopped answering costs one such wait. The disable follows either way,
//! as in C, where a failed deletion only makes `nvme_dev_disable()` go on to the disable.

use kernel::prelude::*;
use nvme::{Registers, SubmissionEntry, REG_CSTS};

use crate::{
    admin::{Counter, RunError, Session},
    regs::BarRegs,
};

/// How long one deletion may take (the C driver waits up to `NVME_ADMIN_TIMEOUT`, 60 s, for
/// all of them in `__nvme_delete_io_queues()`; a controller about to be reset gets less).
pub(crate) const DELETE_TIMEOUT_MS: u32 = 2_000;

impl Session<'_> {
    /// Deletes the controller's I/O queues if it still answers (see the module docs); returns
    /// whether every queue was deleted. Process context, before the controller is disabled.
    pub(crate) fn delete_io_queues(&self) -> bool {
        let a = self.admin();
        let n = a.deletable_queues();
        let csts = nvme::Csts::from_raw(BarRegs(a.bar()).read32(REG_CSTS));
        if n == 0 || !nvme::delete_queues_before_disable(csts) {
            return false;
        }
        let sqs = (1..=n)
            .rev()
            .map(|qid| (qid, SubmissionEntry::delete_sq(qid)));
        let cqs = (1..=n)
            .rev()
            .map(|qid| (qid, SubmissionEntry::delete_cq(qid)));
        for (qid, cmd) in Iterator::chain(sqs, cqs) {
            let Ok(cmd) = cmd else {
                return false;
            };
            let opcode = cmd.opcode();
            let why = match self.run(cmd, DELETE_TIMEOUT_MS) {
                Ok(d) if d.status.is_success() => continue,
                Ok(d) => Some(d.status.sct_sc()),
                Err(RunError::Busy | RunError::TimedOut { .. }) => None,
            };
            pr_warn!(
                "{}: deleting queue {} (opcode {:#x}) before the disable failed ({:?}); \
                 disabling with queues left\n",
                a.dev().name(),
                qid,
                opcode,
                why
            );
            return false;
        }
        a.count(Counter::QueuesDeletedBeforeDisable);
        true
    }
}
