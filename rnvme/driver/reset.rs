// SPDX-License-Identifier: GPL-2.0

//! Controller reset after an I/O timeout whose Abort did not help, or after an admin command
//! timeout, the rnvme counterpart of `nvme_timeout()` -> `nvme_dev_disable()` +
//! `nvme_reset_ctrl()`/`nvme_try_sched_reset()` -> `nvme_reset_work()` in
//! `drivers/nvme/host/pci.c`, run synchronously in process context: from the I/O timeout handler,
//! or, for an admin command timeout, by whoever waited for the command once it released the
//! admin queue (the user passthrough path; the I/O timeout handler when its Abort timed out).
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! The sequence and its states are `nvme::recovery`'s: Live (or ResetPending: the controller was
//! disabled by a timed-out admin command, which left the reset owed) -> Resetting, quiesce every
//! queue of the tag set, delete the I/O queues if the controller still answers
//! (`delete_queues.rs`, as `nvme_dev_disable()`; the commands it aborts for that are sent again
//! as cancelled ones), disable the controller (bounded by CAP.TO), cancel every command in flight
//! (each request completes as host-aborted and is requeued, `nvme::decide_disposition`, at most
//! `nvme::MAX_RETRIES` times), empty the rings, enable the controller on the same admin queue,
//! ask for the same number of queues, create the I/O queues again (and give the controller the
//! zeroed shadow doorbell pages again, if it uses them), Live, unquiesce: the
//! requeued requests then run again on the same disks. If any step fails the controller is
//! disabled for good (Dead): the requeued requests and every later one fail with an I/O error,
//! nothing waits.

use core::sync::atomic::Ordering;

use kernel::prelude::*;
use kernel_glue::block::mq::TagSetRef;
use nvme::{AdminQueue, CtrlState, Enable, QueueGrant, SubmissionEntry};

use crate::{
    admin::{disable_ctrl, Counter, Session, ADMIN_DEPTH},
    ctrl::run_sm,
    io::{IoData, IoOps, RqShared},
    regs::BarRegs,
};

/// Resets the controller of `data` whose tag set is `set`, if it is live or a reset is owed
/// (`CtrlState::ResetPending`) and no reset is in progress; returns whether it is live
/// afterwards. Process context, without the admin queue (the reset takes it).
pub(crate) fn reset(data: &IoData, set: &TagSetRef<'_, IoOps>) -> bool {
    let admin = &data.admin;
    // The admin queue for the whole sequence (this only waits for a command in progress,
    // bounded by its timeout; a signal while waiting, possible when a user's command runs the
    // owed reset, leaves it owed: the next I/O timeout runs it).
    let Ok(session) = admin.session() else {
        return false;
    };
    let from = admin.state();
    if !from.can_start_reset() || !admin.change_state(from, CtrlState::Resetting) {
        return admin.state() == CtrlState::Live;
    }
    let name = admin.dev().name();
    let n = data.resets.fetch_add(1, Ordering::AcqRel) + 1;
    admin.count(Counter::Resets);
    if from == CtrlState::ResetPending {
        admin.count(Counter::ResetsAfterAdminTimeout);
        pr_warn!(
            "{}: resetting the controller after an admin command timeout (reset {})\n",
            name,
            n
        );
    } else {
        pr_warn!("{}: resetting the controller (reset {})\n", name, n);
    }
    set.quiesce();
    // A controller that still answers gets its I/O queues deleted first (`delete_queues.rs`);
    // one that a timed-out admin command disabled has none left.
    session.delete_io_queues();
    let ok = match disable_ctrl(admin.bar()) {
        Ok(()) => {
            cancel_all(data, set);
            restart(data, &session)
        }
        Err(e) => {
            pr_err!("{}: reset: disable failed: {}\n", name, e);
            // Stop its DMA at the bus before anything is cancelled (and unmapped).
            admin.dev().clear_bus_master();
            cancel_all(data, set);
            Err(EIO)
        }
    };
    let live = match ok {
        Ok(()) => {
            pr_info!("{}: controller reset {} done\n", name, n);
            admin.change_state(CtrlState::Resetting, CtrlState::Live)
        }
        Err(e) => {
            pr_err!(
                "{}: reset {} failed ({:?}): controller removed from service\n",
                name,
                n,
                e
            );
            admin.disable("reset failed");
            false
        }
    };
    drop(session);
    set.unquiesce();
    live
}

/// Completes every command in flight on an I/O queue as cancelled (`nvme_cancel_tagset()`);
/// the controller is disabled, so none of them is touched by it any more.
fn cancel_all(data: &IoData, set: &TagSetRef<'_, IoOps>) {
    for (i, q) in data.queues.iter().enumerate() {
        let hctx = i as u32;
        while let Some(tag) = q.take_in_flight() {
            if let Some(rq) = set.tag_to_rq(hctx, u32::from(tag)) {
                RqShared::cancel(rq);
            }
        }
    }
}

/// Brings the disabled controller back: empty rings, enable, Number of Queues, I/O queues.
fn restart(data: &IoData, session: &Session<'_>) -> Result {
    let admin = &data.admin;
    let aq = admin.queue();
    // Shadow doorbells, if in use: zeroed with the rings, configured again after the queues.
    let shadow = data.queues.first().and_then(|q| q.shadow_pages());
    if let Some(p) = &shadow {
        p.zero();
    }
    aq.reset_rings();
    for q in data.queues.iter() {
        q.reset_rings();
    }
    let regs = BarRegs(admin.bar());
    let mut en = Enable::new(AdminQueue {
        sq_addr: aq.sq_addr(),
        cq_addr: aq.cq_addr(),
        entries: ADMIN_DEPTH as u16,
    });
    run_sm(|now| en.poll(&regs, now)).map_err(|e| {
        pr_err!("{}: reset: enable failed: {}\n", admin.dev().name(), e);
        ENODEV
    })?;
    let res =
        session.exec(SubmissionEntry::set_num_queues(data.queue_request).map_err(|_| EINVAL)?)?;
    let grant = QueueGrant::from_result(res as u32);
    if usize::from(grant.pairs()) < data.queues.len() {
        pr_err!(
            "{}: reset: {} queue pairs granted, {} needed\n",
            admin.dev().name(),
            grant.pairs(),
            data.queues.len()
        );
        return Err(ENODEV);
    }
    for q in data.queues.iter() {
        for cmd in q.create_cmds()? {
            session.exec(cmd)?;
        }
    }
    if let Some(p) = shadow {
        let (db_addr, ei_addr) = p.addrs();
        if let Err(e) = session.exec(SubmissionEntry::dbbuf_config(db_addr, ei_addr)) {
            // As at probe: MMIO doorbells only from now on.
            pr_warn!(
                "{}: reset: Doorbell Buffer Config failed ({:?})\n",
                admin.dev().name(),
                e
            );
            data.queues.iter().for_each(|q| q.detach_shadow());
        }
    }
    Ok(())
}
