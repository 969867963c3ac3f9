//! Hostile completions: entries a broken or malicious controller posts around a real one, each
//! of which the host must refuse without completing any command.

use super::bus::Bus;
use super::ctrl::{PendingCqe, SimController};

/// One kind of hostile completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hostile {
    /// The real completion posted twice.
    Duplicate,
    /// Before the real completion: the same tag with the previous generation.
    StaleGeneration,
    /// A command id whose tag (4095) is beyond any host queue depth.
    CidOutOfRange,
    /// The completion names a submission queue that does not exist.
    WrongSqId,
    /// The completion reports an SQ head beyond the queue.
    SqHeadOutOfRange,
    /// An entry with the stale phase tag at the tail (not a new entry; must not be consumed).
    BadPhase,
}

impl Hostile {
    /// Every kind.
    pub const ALL: [Hostile; 6] = [
        Hostile::Duplicate,
        Hostile::StaleGeneration,
        Hostile::CidOutOfRange,
        Hostile::WrongSqId,
        Hostile::SqHeadOutOfRange,
        Hostile::BadPhase,
    ];

    /// Whether the host sees the entry (all but [`Hostile::BadPhase`]).
    pub fn visible(self) -> bool {
        self != Hostile::BadPhase
    }
}

impl SimController {
    /// Called once per real completion `p` just posted: with probability 1/2 adds one hostile
    /// entry of a kind from the configuration. [`Hostile::StaleGeneration`] is placed before the
    /// real entry by swapping the two slots' contents.
    pub(crate) fn inject(&mut self, bus: &mut Bus, p: &PendingCqe) {
        if self.cfg.hostile.is_empty() || self.next_random() % 2 == 0 {
            return;
        }
        let pick = (self.next_random() % self.cfg.hostile.len() as u64) as usize;
        let kind = self.cfg.hostile[pick];
        let head = self.sqs.get(&p.sqid).map_or(0, |s| s.head as u16);
        let fields = (p.result, head, p.sqid, p.cid, p.status);
        let written = match kind {
            Hostile::Duplicate => self.write_cqe(bus, p.cqid, fields, true),
            Hostile::StaleGeneration => self.inject_stale_before(bus, p, head),
            Hostile::CidOutOfRange => {
                let cid = (p.cid & 0xf000) | 0x0fff;
                self.write_cqe(bus, p.cqid, (0, head, p.sqid, cid, 0), true)
            }
            Hostile::WrongSqId => {
                self.write_cqe(bus, p.cqid, (0, head, p.sqid ^ 0x4000, p.cid, 0), true)
            }
            Hostile::SqHeadOutOfRange => {
                self.write_cqe(bus, p.cqid, (0, 0xffff, p.sqid, p.cid, 0), true)
            }
            Hostile::BadPhase => self.write_cqe(bus, p.cqid, fields, false),
        };
        if written && kind.visible() {
            self.injected += 1;
        } else if written {
            self.injected_hidden += 1;
        }
    }

    /// Writes a stale-generation copy of `p` after it, then swaps the two entries so the stale
    /// one comes first (the phase tags of both slots are the same new phase unless the CQ
    /// wrapped between them, in which case nothing is injected).
    fn inject_stale_before(&mut self, bus: &mut Bus, p: &PendingCqe, head: u16) -> bool {
        let Some(cq) = self.cqs.get(&p.cqid).cloned() else {
            return false;
        };
        // The real entry is at tail - 1; a wrap between it and the next slot changes the phase.
        if cq.tail == 0 || (cq.tail + 1) % cq.size == cq.head {
            return false;
        }
        let real = cq.base + u64::from(cq.tail - 1) * 16;
        let next = cq.base + u64::from(cq.tail) * 16;
        let gen = ((p.cid >> 12).wrapping_sub(1)) & 0xf;
        let stale = (gen << 12) | (p.cid & 0x0fff);
        if !self.write_cqe(bus, p.cqid, (0, head, p.sqid, stale, 0), true) {
            return false;
        }
        let mut a = [0u8; 16];
        let mut b = [0u8; 16];
        bus.read(real, &mut a);
        bus.read(next, &mut b);
        bus.write(real, &b);
        bus.write(next, &a);
        true
    }
}
