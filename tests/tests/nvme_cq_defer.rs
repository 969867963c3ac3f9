//! Deferred completion queue head doorbells (`nvme::CompletionQueue::defer_doorbell`) against
//! a model of the controller's side of the ring: the controller posts into the slots the head
//! it was last told leaves free, and must never find the ring full while it holds a completion
//! (it would wait for a head doorbell the host, seeing nothing new, never writes).
//!
//! The host side is the crate's `CompletionQueue`; the controller, its view of the head, the
//! commands in flight and the order of events are this file's. The controller posts whenever
//! it can, and the host's commands are reused in one of two ways:
//! - at once: a command's slot is free for a new command the moment its completion is
//!   consumed, before the host decides on the doorbell (harder than the driver, which ends a
//!   request and frees its tag only after its drain's doorbell decision). The rule is then:
//!   with `depth - sq_depth` spare entries and at most `batch` entries consumed between two
//!   `doorbell()` calls, a deferral of up to `depth - sq_depth - batch` never lets the
//!   controller find the ring full, and one more can;
//! - at the decision (the driver's order): a deferral of up to `depth - sq_depth` is safe,
//!   and with equal depths and no deferral (the C driver's rings) so is every batch size.

use nvme::{CompletionEntry, CompletionMemory, CompletionQueue, CqError};
use proptest::prelude::*;

/// The completion ring in host memory, written by the model controller.
struct Ring(Vec<CompletionEntry>);

impl CompletionMemory for Ring {
    fn read_status(&self, i: u16) -> u16 {
        self.0.get(usize::from(i)).map_or(0, |e| e.raw_status())
    }
    fn read_entry(&self, i: u16) -> CompletionEntry {
        self.0.get(usize::from(i)).copied().unwrap_or_default()
    }
}

/// One event of a run.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The host submits a command, if a slot of the submission queue is free.
    Submit,
    /// The controller posts the completion of its oldest unposted command, if any.
    Post,
    /// The host consumes one new entry, if any and if its batch is not used up.
    Consume,
    /// The host ends its batch: `doorbell()`, and writes the head if it says so.
    Decide,
}

/// The model: controller ring state, its view of the head, commands in flight.
struct Model {
    sq_depth: u32,
    depth: u32,
    batch: u32,
    ring: Ring,
    cq: CompletionQueue,
    /// Controller: next slot to write and its phase.
    tail: u32,
    phase: bool,
    /// Controller: the head as last written to the doorbell.
    dev_head: u32,
    /// Commands submitted and not yet posted (command ids, oldest first).
    unposted: Vec<u16>,
    /// Commands in flight: submitted and their slot not yet free again.
    in_flight: u32,
    /// Slots are freed at the next decision, not when their completion is consumed.
    free_at_decide: bool,
    /// Consumed, slot not yet freed (with `free_at_decide`).
    to_free: u32,
    /// Entries the host consumed since its last `doorbell()` call.
    since_decision: u32,
    next_cid: u16,
    /// Head doorbell writes and entries consumed.
    writes: u32,
    consumed: u32,
    /// Times the controller held a completion and found the ring full.
    stalls: u32,
}

impl Model {
    fn new(sq_depth: u32, depth: u32, batch: u32, defer: u32) -> Result<Self, CqError> {
        Self::with_reuse(sq_depth, depth, batch, defer, false)
    }

    fn with_reuse(
        sq_depth: u32,
        depth: u32,
        batch: u32,
        defer: u32,
        free_at_decide: bool,
    ) -> Result<Self, CqError> {
        let mut cq = CompletionQueue::new(1, depth, 1, sq_depth)?;
        cq.defer_doorbell(defer)?;
        Ok(Self {
            sq_depth,
            depth,
            batch,
            ring: Ring(vec![CompletionEntry::default(); depth as usize]),
            cq,
            tail: 0,
            phase: true,
            dev_head: 0,
            unposted: Vec::new(),
            in_flight: 0,
            free_at_decide,
            to_free: 0,
            since_decision: 0,
            next_cid: 0,
            writes: 0,
            consumed: 0,
            stalls: 0,
        })
    }

    fn step(&mut self, ev: Ev) {
        match ev {
            // At most `sq_depth - 1` commands in flight (the submission ring's own limit).
            Ev::Submit if self.in_flight + 1 < self.sq_depth => {
                self.unposted.push(self.next_cid);
                self.next_cid = self.next_cid.wrapping_add(1);
                self.in_flight += 1;
            }
            Ev::Post if !self.unposted.is_empty() => {
                if (self.tail + 1) % self.depth == self.dev_head {
                    self.stalls += 1;
                    return;
                }
                let cid = self.unposted.remove(0);
                self.ring.0[self.tail as usize] =
                    CompletionEntry::new(0, 0, 1, cid, u16::from(self.phase));
                self.tail += 1;
                if self.tail == self.depth {
                    self.tail = 0;
                    self.phase = !self.phase;
                }
            }
            Ev::Consume if self.since_decision < self.batch => {
                if let Some(r) = self.cq.next(&self.ring) {
                    assert!(r.is_ok(), "valid entry rejected: {r:?}");
                    self.since_decision += 1;
                    self.consumed += 1;
                    if self.free_at_decide {
                        self.to_free += 1;
                    } else {
                        self.in_flight -= 1;
                    }
                }
            }
            Ev::Decide => {
                self.since_decision = 0;
                if let Some(h) = self.cq.doorbell() {
                    assert!(h < self.depth);
                    self.dev_head = h;
                    self.writes += 1;
                }
                self.in_flight -= self.to_free;
                self.to_free = 0;
            }
            _ => {}
        }
    }

    /// Everything posted and consumed, the last batch decided.
    fn finish(&mut self) {
        for _ in 0..4 * self.depth {
            self.step(Ev::Post);
            self.step(Ev::Consume);
            if self.since_decision == self.batch {
                self.step(Ev::Decide);
            }
        }
        self.step(Ev::Decide);
    }
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        3 => Just(Ev::Submit),
        3 => Just(Ev::Post),
        3 => Just(Ev::Consume),
        1 => Just(Ev::Decide),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Within the rule the controller never finds the ring full, every command completes, and
    /// the head is written at most once per `defer + 1` entries consumed.
    #[test]
    fn deferral_within_the_rule_never_fills_the_ring(
        sq_depth in 2u32..40,
        extra in 0u32..40,
        batch in 1u32..17,
        defer_pick in any::<u32>(),
        free_at_decide in any::<bool>(),
        evs in prop::collection::vec(ev(), 0..1500),
    ) {
        // Immediate reuse needs `batch` spare entries besides the deferral.
        let extra = if free_at_decide { extra } else { extra + batch };
        let depth = sq_depth + extra;
        let max = if free_at_decide { extra } else { extra - batch };
        let defer = defer_pick % (max + 1);
        let mut m = Model::with_reuse(sq_depth, depth, batch, defer, free_at_decide).unwrap();
        for e in evs {
            m.step(e);
        }
        m.finish();
        prop_assert_eq!(m.stalls, 0);
        prop_assert!(m.unposted.is_empty());
        prop_assert_eq!(m.in_flight, 0);
        prop_assert!(m.cq.unreported() <= defer);
        prop_assert!(u64::from(m.writes) * u64::from(defer + 1) <= u64::from(m.consumed));
    }

    /// Without a deferral the head is reported by every decision that follows a consumed
    /// entry (`nvme_ring_cq_doorbell()`): nothing stays unreported; with equal depths and
    /// slots freed at the decision the ring never fills.
    #[test]
    fn no_deferral_reports_every_batch(
        sq_depth in 2u32..40,
        batch in 1u32..17,
        evs in prop::collection::vec(ev(), 0..2000),
    ) {
        let mut m = Model::with_reuse(sq_depth, sq_depth, batch, 0, true).unwrap();
        for e in evs {
            m.step(e);
            if matches!(e, Ev::Decide) {
                prop_assert_eq!(m.cq.unreported(), 0);
                prop_assert_eq!(m.dev_head, u32::from(m.cq.head()));
            }
        }
        prop_assert_eq!(m.stalls, 0);
    }
}

/// The rule is tight: one entry of deferral more than `depth - sq_depth - batch` and an
/// adversarial schedule leaves the controller with a completion and a full ring.
#[test]
fn one_more_than_the_rule_can_fill_the_ring() {
    // 4-entry submission queue (3 commands in flight), 6-entry completion queue, batches of
    // 2: the rule allows no deferral.
    let schedule = |m: &mut Model| {
        use Ev::*;
        // One entry left unreported (allowed by a deferral of 1).
        for e in [Submit, Post, Consume, Decide] {
            m.step(e);
        }
        // The submission queue full, everything posted: 4 entries of 5 used.
        for e in [Submit, Submit, Submit, Post, Post, Post] {
            m.step(e);
        }
        // A batch of two consumed, their slots reused at once, before the decision.
        for e in [Consume, Consume, Submit, Submit, Post, Post] {
            m.step(e);
        }
    };
    let mut ok = Model::new(4, 6, 2, 0).unwrap();
    schedule(&mut ok);
    assert_eq!(ok.stalls, 0);
    let mut bad = Model::new(4, 6, 2, 1).unwrap();
    schedule(&mut bad);
    assert_eq!(bad.stalls, 1, "deferral 1 should let the ring fill");
}

/// With slots freed only at the decision (the driver's order), the whole `depth - sq_depth`
/// may be deferred: the ring fills up to its last free entry and no further.
#[test]
fn freeing_at_the_decision_allows_the_whole_spare() {
    use Ev::*;
    // 4-entry submission queue (3 commands in flight), 6-entry completion queue: 2 spare.
    for defer in 0..=2u32 {
        let mut m = Model::with_reuse(4, 6, 16, defer, true).unwrap();
        // `defer` entries left unreported.
        for _ in 0..defer {
            for e in [Submit, Post, Consume, Decide] {
                m.step(e);
            }
        }
        assert_eq!(m.cq.unreported(), defer);
        // The submission queue full, everything posted: the ring holds `defer + 3` of 5.
        for e in [Submit, Submit, Submit, Post, Post, Post] {
            m.step(e);
        }
        // A consumed completion whose slot is freed at the decision, and its successor posted.
        for e in [Consume, Decide, Submit, Post] {
            m.step(e);
        }
        assert_eq!(m.stalls, 0, "deferral {defer}");
        m.finish();
        assert_eq!((m.stalls, m.in_flight), (0, 0));
    }
    // One more than the spare entries is refused.
    assert!(Model::with_reuse(4, 6, 16, 3, true).is_err());
}

#[test]
fn deferral_beyond_the_spare_entries_is_refused() {
    let mut cq = CompletionQueue::new(1, 300, 1, 256).unwrap();
    assert_eq!(
        cq.defer_doorbell(45),
        Err(CqError::Defer { defer: 45, max: 44 })
    );
    assert_eq!(cq.doorbell_deferral(), 0);
    cq.defer_doorbell(44).unwrap();
    assert_eq!(cq.doorbell_deferral(), 44);
    // Equal depths: nothing to defer into.
    let mut eq = CompletionQueue::new(1, 256, 1, 256).unwrap();
    assert!(eq.defer_doorbell(1).is_err());
    assert!(eq.defer_doorbell(0).is_ok());
}

/// A deferral of `d` writes the head once per `d + 1` entries when the host decides after
/// every entry, and the value written is the head at that point.
#[test]
fn deferred_head_is_written_every_defer_plus_one_entries() {
    let mut m = Model::new(8, 64, 1, 9).unwrap();
    let mut heads = Vec::new();
    for _ in 0..100 {
        for e in [Ev::Submit, Ev::Post, Ev::Consume, Ev::Decide] {
            let w = m.writes;
            m.step(e);
            if m.writes != w {
                heads.push(m.dev_head);
            }
        }
    }
    assert_eq!(m.stalls, 0);
    assert_eq!(heads, vec![10, 20, 30, 40, 50, 60, 6, 16, 26, 36]);
}
