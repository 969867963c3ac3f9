// SPDX-License-Identifier: GPL-2.0

//! Synchronous admin commands on the admin queue, completed by polling with bounded sleeps.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Admin commands are issued while probing and removing, and by the timeout handler (Abort),
//! always from process context and one at a time: a command uses tag 0 and a concurrent caller
//! gets `EBUSY` from the command id table. The admin completion queue's interrupt is not used.

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{dma::CoherentAllocation, pci, time::msleep};
use nvme::{DataPointer, SubmissionEntry};

use crate::queue::{Done, Queue};

/// Admin queue entries (`NVME_AQ_DEPTH`).
pub(crate) const ADMIN_DEPTH: u32 = 32;
/// How long an admin command may take before it fails with `ETIMEDOUT` (`NVME_ADMIN_TIMEOUT`
/// is 60 s; QEMU answers in microseconds).
const ADMIN_TIMEOUT_MS: u32 = 10_000;
/// Sleep between completion polls.
const POLL_MS: u32 = 1;

/// The admin queue.
pub(crate) struct Admin {
    q: Arc<Queue>,
}

impl Admin {
    /// Wraps admin queue pair `q` (queue id 0).
    pub(crate) fn new(q: Arc<Queue>) -> Self {
        Self { q }
    }

    /// The admin queue pair (user passthrough commands run on it, `passthru`).
    pub(crate) fn queue(&self) -> &Arc<Queue> {
        &self.q
    }

    /// Runs `cmd` and waits for its completion (bounded); returns the result dword(s).
    ///
    /// # Errors
    ///
    /// `EBUSY` (another command running), `ETIMEDOUT`, `EIO` (the controller reported an
    /// error status).
    pub(crate) fn exec(&self, mut cmd: SubmissionEntry) -> Result<u64> {
        self.q.submit(0, &mut cmd, true).map_err(|_| EBUSY)?;
        let mut waited = 0u32;
        loop {
            let mut done = [Done::EMPTY; 1];
            if self.q.drain(&mut done) == 1 {
                let [d] = done;
                if d.status.is_success() {
                    return Ok(d.result);
                }
                pr_err!(
                    "admin command {:#x} failed: status {:#x}\n",
                    cmd.opcode(),
                    d.status.sct_sc()
                );
                return Err(EIO);
            }
            if waited >= ADMIN_TIMEOUT_MS {
                // The command may still complete; forget it so the tag can be reused (its
                // late completion is then dropped as not in flight).
                self.q.cancel(0);
                pr_err!("admin command {:#x} timed out\n", cmd.opcode());
                return Err(kernel_glue::error::etimedout());
            }
            msleep(POLL_MS);
            waited += POLL_MS;
        }
    }

    /// Runs a command that transfers 4 KiB from the controller (Identify) and returns the
    /// data.
    pub(crate) fn exec_read_page(
        &self,
        dev: &pci::Device,
        build: impl FnOnce(DataPointer) -> SubmissionEntry,
    ) -> Result<KVec<u8>> {
        let buf = CoherentAllocation::new(dev, nvme::IDENTIFY_SIZE)?;
        self.exec(build(DataPointer::prp(buf.dma_handle(), 0)))?;
        let mut out = KVec::from_elem(0u8, nvme::IDENTIFY_SIZE, GFP_KERNEL)?;
        buf.read(0, out.as_mut_slice())?;
        Ok(out)
    }
}
