//! Command execution of the simulated controller: the admin commands a driver sends at
//! bring-up and the NVM I/O commands on RAM namespaces. Commands are decoded from their raw
//! 64 bytes here, independently of the host-side builders.

use super::bus::Bus;
use super::ctrl::{DevCq, DevSq, SimController};
use super::dptr::{gather, scatter, walk_prp, walk_sgl, WalkError};

/// Generic status codes used (SCT 0).
pub mod sc {
    /// Success.
    pub const SUCCESS: u16 = 0x00;
    /// Invalid command opcode.
    pub const INVALID_OPCODE: u16 = 0x01;
    /// Invalid field in command.
    pub const INVALID_FIELD: u16 = 0x02;
    /// Data transfer error.
    pub const DATA_XFER: u16 = 0x04;
    /// Invalid namespace or format.
    pub const INVALID_NS: u16 = 0x0b;
    /// PRP offset invalid.
    pub const PRP_INVALID: u16 = 0x13;
    /// LBA out of range.
    pub const LBA_RANGE: u16 = 0x80;
    /// Command specific: invalid queue identifier.
    pub const QID_INVALID: u16 = 0x101;
    /// Command specific: invalid queue size.
    pub const QUEUE_SIZE: u16 = 0x102;
    /// Command specific: completion queue invalid.
    pub const CQ_INVALID: u16 = 0x100;
    /// Do Not Retry bit (in the status without the phase tag).
    pub const DNR: u16 = 0x4000;
    /// Command Aborted due to SQ Deletion (generic).
    pub const SQ_DELETION: u16 = 0x08;
}

/// The completion a command produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Status without the phase tag.
    pub status: u16,
    /// Result dword 0.
    pub result: u32,
}

fn ok(result: u32) -> Outcome {
    Outcome {
        status: sc::SUCCESS,
        result,
    }
}

fn fail(status: u16) -> Outcome {
    Outcome {
        status: status | sc::DNR,
        result: 0,
    }
}

/// Dword `n` of a raw command.
pub fn dw(cmd: &[u8; 64], n: usize) -> u32 {
    u32::from_le_bytes(cmd[4 * n..4 * n + 4].try_into().unwrap_or_default())
}

fn qw(cmd: &[u8; 64], n: usize) -> u64 {
    u64::from(dw(cmd, n)) | (u64::from(dw(cmd, n + 1)) << 32)
}

/// The runs of a `len`-byte transfer of `cmd` (PRP or SGL by PSDT).
fn runs(bus: &Bus, cmd: &[u8; 64], len: u64) -> Result<Vec<(u64, u64)>, WalkError> {
    match cmd[1] >> 6 {
        0 => walk_prp(bus, qw(cmd, 6), qw(cmd, 8), len),
        1 | 2 => {
            let mut d = [0u8; 16];
            d.copy_from_slice(&cmd[24..40]);
            walk_sgl(bus, d, len)
        }
        _ => Err(WalkError("PSDT 11b".into())),
    }
}

impl SimController {
    fn to_host(&self, bus: &mut Bus, cmd: &[u8; 64], data: &[u8]) -> Outcome {
        match runs(bus, cmd, data.len() as u64) {
            Ok(r) => {
                scatter(bus, &r, data);
                ok(0)
            }
            Err(_) => fail(sc::PRP_INVALID),
        }
    }

    pub(crate) fn exec_admin(&mut self, bus: &mut Bus, cmd: &[u8; 64]) -> Outcome {
        let nsid = dw(cmd, 1);
        let (d10, d11) = (dw(cmd, 10), dw(cmd, 11));
        let max_q = u32::from(self.regs.behaviour.mqes) + 1;
        match cmd[0] {
            0x06 => match d10 & 0xff {
                0 => {
                    let data = self
                        .namespaces
                        .get(&nsid)
                        .map_or([0; 4096], |n| n.identify());
                    self.to_host(bus, cmd, &data)
                }
                1 => {
                    let nn = self.namespaces.keys().last().copied().unwrap_or(0);
                    let data = self.cfg.identity.identify(nn);
                    self.to_host(bus, cmd, &data)
                }
                2 => {
                    let mut data = [0u8; 4096];
                    for (i, id) in self
                        .namespaces
                        .keys()
                        .filter(|&&id| id > nsid)
                        .take(1024)
                        .enumerate()
                    {
                        data[4 * i..4 * i + 4].copy_from_slice(&id.to_le_bytes());
                    }
                    self.to_host(bus, cmd, &data)
                }
                _ => fail(sc::INVALID_FIELD),
            },
            0x09 | 0x0a if d10 & 0xff == 0x07 => {
                if cmd[0] == 0x09 {
                    let asked = (d11 & 0xffff).max(d11 >> 16) + 1;
                    self.granted = asked.min(u32::from(self.cfg.max_queue_pairs)) as u16;
                }
                let g = u32::from(self.granted.max(1)) - 1;
                ok((g << 16) | g)
            }
            0x09 | 0x0a => ok(0),
            0x05 => {
                let (qid, size) = ((d10 & 0xffff) as u16, (d10 >> 16) + 1);
                if qid == 0 || qid > self.granted || self.cqs.contains_key(&qid) {
                    return fail(sc::QID_INVALID);
                }
                if size < 2 || size > max_q || d11 & 1 == 0 {
                    return fail(sc::QUEUE_SIZE);
                }
                let base = qw(cmd, 6);
                bus.zero(base, u64::from(size) * 16);
                self.cqs.insert(
                    qid,
                    DevCq {
                        base,
                        size,
                        head: 0,
                        tail: 0,
                        phase: true,
                    },
                );
                ok(0)
            }
            0x01 => {
                let (qid, size, cqid) =
                    ((d10 & 0xffff) as u16, (d10 >> 16) + 1, (d11 >> 16) as u16);
                if qid == 0 || qid > self.granted || self.sqs.contains_key(&qid) {
                    return fail(sc::QID_INVALID);
                }
                if cqid == 0 || !self.cqs.contains_key(&cqid) {
                    return fail(sc::CQ_INVALID);
                }
                if size < 2 || size > max_q || d11 & 1 == 0 {
                    return fail(sc::QUEUE_SIZE);
                }
                let base = qw(cmd, 6);
                self.deleted_sq_heads.remove(&qid);
                self.sqs.insert(
                    qid,
                    DevSq {
                        base,
                        size,
                        head: 0,
                        tail: 0,
                        cqid,
                    },
                );
                ok(0)
            }
            0x00 => {
                let qid = (d10 & 0xffff) as u16;
                if qid == 0 {
                    return fail(sc::QID_INVALID);
                }
                let Some(sq) = self.sqs.remove(&qid) else {
                    return fail(sc::QID_INVALID);
                };
                // Every command it still holds completes before the deletion does (NVMe Base
                // Specification, Delete I/O Submission Queue): those executed post their own
                // status (already pending); those not fetched yet are aborted, Command Aborted
                // due to SQ Deletion. Their entries report the queue's last head, its tail.
                let mut head = sq.head;
                while head != sq.tail {
                    let mut c = [0u8; 64];
                    bus.read(sq.base + u64::from(head) * 64, &mut c);
                    self.pending.push(super::ctrl::PendingCqe {
                        cqid: sq.cqid,
                        sqid: qid,
                        cid: u16::from_le_bytes([c[2], c[3]]),
                        status: sc::SQ_DELETION,
                        result: 0,
                    });
                    head = (head + 1) % sq.size;
                }
                self.deleted_sq_heads.insert(qid, sq.tail as u16);
                ok(0)
            }
            0x04 => {
                let qid = (d10 & 0xffff) as u16;
                if qid == 0 || self.sqs.values().any(|s| s.cqid == qid) {
                    return fail(sc::QID_INVALID);
                }
                if self.cqs.remove(&qid).is_none() {
                    return fail(sc::QID_INVALID);
                }
                // Entries it could not take any more are gone with it.
                self.pending.retain(|p| p.cqid != qid);
                ok(0)
            }
            // Abort: "command not aborted" (result bit 0 set), as many controllers answer.
            0x08 => ok(1),
            _ => fail(sc::INVALID_OPCODE),
        }
    }

    pub(crate) fn exec_io(&mut self, bus: &mut Bus, cmd: &[u8; 64]) -> Outcome {
        let nsid = dw(cmd, 1);
        let Some(ns) = self.namespaces.get(&nsid) else {
            return fail(sc::INVALID_NS);
        };
        let bs = ns.cfg.block_size();
        if bs == 0 || ns.data.is_empty() {
            return fail(sc::INVALID_NS);
        }
        let slba = qw(cmd, 10);
        let nlb = u64::from(dw(cmd, 12) & 0xffff) + 1;
        let in_range = |slba: u64, nlb: u64| {
            slba.checked_add(nlb)
                .is_some_and(|e| e <= ns.cfg.blocks && e * bs <= ns.data.len() as u64)
        };
        match cmd[0] {
            0x00 => ok(0),
            0x01 | 0x02 | 0x08 => {
                if !in_range(slba, nlb) {
                    return fail(sc::LBA_RANGE);
                }
                let (start, len) = ((slba * bs) as usize, (nlb * bs) as usize);
                match cmd[0] {
                    0x02 => {
                        let data = ns.data[start..start + len].to_vec();
                        self.to_host(bus, cmd, &data)
                    }
                    0x01 => match runs(bus, cmd, len as u64) {
                        Ok(r) => {
                            let data = gather(bus, &r);
                            if let Some(ns) = self.namespaces.get_mut(&nsid) {
                                ns.data[start..start + len].copy_from_slice(&data);
                            }
                            ok(0)
                        }
                        Err(_) => fail(sc::PRP_INVALID),
                    },
                    _ => {
                        if let Some(ns) = self.namespaces.get_mut(&nsid) {
                            ns.data[start..start + len].fill(0);
                        }
                        ok(0)
                    }
                }
            }
            0x09 => {
                let nr = u64::from(dw(cmd, 10) & 0xff) + 1;
                let Ok(r) = runs(bus, cmd, nr * 16) else {
                    return fail(sc::PRP_INVALID);
                };
                let ranges = gather(bus, &r);
                let mut spans = Vec::new();
                for c in ranges.chunks_exact(16) {
                    let n = u64::from(u32::from_le_bytes(c[4..8].try_into().unwrap_or_default()));
                    let s = u64::from_le_bytes(c[8..16].try_into().unwrap_or_default());
                    if !in_range(s, n) {
                        return fail(sc::LBA_RANGE);
                    }
                    spans.push(((s * bs) as usize, (n * bs) as usize));
                }
                // Deallocate (AD): deallocated blocks read as zeroes on this controller.
                if dw(cmd, 11) & 4 != 0 {
                    if let Some(ns) = self.namespaces.get_mut(&nsid) {
                        for (s, n) in spans {
                            ns.data[s..s + n].fill(0);
                        }
                    }
                }
                ok(0)
            }
            _ => fail(sc::INVALID_OPCODE),
        }
    }
}
