//! Shadow doorbells (`nvme::ShadowDoorbell`, `nvme::dbbuf_need_event`) against independent
//! models: the event index rule against a walk over the doorbell's window, and the driver's
//! update (store, barrier, event index load) interleaved at random with a controller that
//! works like QEMU's `nvme_process_sq()` with Doorbell Buffer Config (reads the shadow tail,
//! consumes, publishes its event index, reads the shadow again): no submission is ever left
//! unseen, and the MMIO doorbell is skipped only while the controller is still working.

use nvme::{dbbuf_need_event, ShadowDoorbell, ShadowMemory};
use proptest::prelude::*;

/// The rule by enumeration: moving the doorbell from `old` to `new` (ring of `depth` entries)
/// passes every index from `old` up to `new - 1`; the controller must be told iff its event
/// index is one of them.
fn passes(event_idx: u16, new: u16, old: u16, depth: u16) -> bool {
    let mut k = old;
    while k != new {
        if k == event_idx {
            return true;
        }
        k = (k + 1) % depth;
    }
    false
}

/// The controller side: QEMU's SQ processing with shadow doorbells, one small step at a time.
#[derive(Debug, Default)]
struct Ctrl {
    /// Shared memory: the shadow tail (driver writes) and the event index (controller writes).
    shadow: u16,
    event_idx: u16,
    /// Entries consumed (ring index).
    head: u16,
    /// Where the controller is in its processing loop (0: idle).
    state: u8,
    /// Tail read from the shadow in step 1.
    seen: u16,
    /// An MMIO doorbell write not yet acted on.
    kicked: bool,
    /// MMIO doorbell writes so far.
    mmio: u32,
}

impl Ctrl {
    /// One step of the processing loop; false when idle with nothing to do.
    fn step(&mut self) -> bool {
        match self.state {
            0 if self.kicked => {
                self.kicked = false;
                self.state = 1;
            }
            0 => return false,
            // nvme_update_sq_tail(): read the shadow tail.
            1 => {
                self.seen = self.shadow;
                self.state = 2;
            }
            // Consume up to it, then nvme_update_sq_eventidx(): publish the position.
            2 => {
                self.head = self.seen;
                self.event_idx = self.head;
                self.state = 3;
            }
            // Read the shadow again: more work, or idle until the next MMIO write.
            _ => {
                self.state = if self.shadow != self.head { 1 } else { 0 };
            }
        }
        true
    }
}

/// The driver's view of the shadow memory; before each access the controller runs the number
/// of steps the schedule says (an arbitrary interleaving of the two sides).
struct Mem<'a> {
    ctrl: &'a mut Ctrl,
    schedule: &'a mut dyn Iterator<Item = u8>,
    /// A broken driver that loads the event index before storing the shadow doorbell.
    broken: bool,
    pending: Option<u16>,
}

impl Mem<'_> {
    fn interleave(&mut self) {
        for _ in 0..self.schedule.next().unwrap_or(0) {
            self.ctrl.step();
        }
    }
}

impl ShadowMemory for Mem<'_> {
    fn write_shadow(&mut self, value: u16) {
        self.interleave();
        if self.broken {
            self.pending = Some(value);
        } else {
            self.ctrl.shadow = value;
        }
    }

    fn full_barrier(&mut self) {
        self.interleave();
    }

    fn read_event_idx(&mut self) -> Option<u16> {
        self.interleave();
        let ei = self.ctrl.event_idx;
        if let Some(v) = self.pending.take() {
            self.interleave();
            self.ctrl.shadow = v;
        }
        Some(ei)
    }
}

/// Runs `batches` (entries per doorbell update) on a ring of `depth` entries under
/// `schedule`; returns (driver tail, controller head after it ran out of work, MMIO writes).
fn run(depth: u16, batches: &[u16], schedule: &[u8], broken: bool) -> (u16, u16, u32) {
    let mut ctrl = Ctrl::default();
    let mut db = ShadowDoorbell::new(0);
    let mut tail = 0u16;
    let mut sched = schedule.iter().copied().cycle();
    for &n in batches {
        // The controller never has more than depth - 1 entries outstanding.
        let used = (tail + depth - ctrl.head) % depth;
        let n = n.min(depth - 1 - used);
        if n == 0 {
            while ctrl.step() {}
            continue;
        }
        tail = (tail + n) % depth;
        let mut mem = Mem {
            ctrl: &mut ctrl,
            schedule: &mut sched,
            broken,
            pending: None,
        };
        if db.update(&mut mem, tail) {
            ctrl.kicked = true;
            ctrl.mmio += 1;
        }
        for _ in 0..sched.next().unwrap_or(0) {
            ctrl.step();
        }
    }
    while ctrl.step() {}
    (tail, ctrl.head, ctrl.mmio)
}

#[test]
fn need_event_examples() {
    assert!(dbbuf_need_event(0, 1, 0));
    assert!(!dbbuf_need_event(1, 1, 0));
    assert!(!dbbuf_need_event(3, 3, 3));
    assert!(dbbuf_need_event(u16::MAX, 1, u16::MAX));
}

#[test]
fn idle_controller_is_always_kicked() {
    // The controller catches up between updates: every update must write MMIO.
    let (tail, head, mmio) = run(64, &[1, 2, 3, 4, 5], &[16], false);
    assert_eq!((tail, head, mmio), (15, 15, 5));
}

/// Every schedule of `len` controller step counts (0..=3 each), in a fixed order.
fn schedules(len: u32) -> impl Iterator<Item = Vec<u8>> {
    (0..4u32.pow(len)).map(move |mut k| {
        (0..len)
            .map(|_| {
                let d = (k % 4) as u8;
                k /= 4;
                d
            })
            .collect()
    })
}

#[test]
fn exhaustive_small_interleavings() {
    // Every interleaving of three single-entry updates with up to 3 controller steps before
    // each driver access: the correct order never loses a doorbell, and the model does find
    // the lost doorbell of a driver that loads the event index before storing the shadow (the
    // test can fail: it is what the barrier prevents).
    let mut lost_broken = 0;
    for s in schedules(7) {
        let (tail, head, _) = run(16, &[1, 1, 1], &s, false);
        assert_eq!(tail, head, "schedule {s:?}");
        let (tail, head, _) = run(16, &[1, 1, 1], &s, true);
        lost_broken += usize::from(tail != head);
    }
    assert!(
        lost_broken > 0,
        "the model should expose the broken ordering"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn need_event_matches_window(depth in 2u16..=1024, a in any::<u16>(), b in any::<u16>(), e in any::<u16>()) {
        let (old, new, ei) = (a % depth, b % depth, e % depth);
        // Ring indexes below the depth: the 16-bit wrapping rule is exact, across the ring's
        // own wrap too.
        prop_assert_eq!(dbbuf_need_event(ei, new, old), passes(ei, new, old, depth),
            "event {} window [{}, {}) depth {}", ei, old, new, depth);
    }

    #[test]
    fn no_lost_doorbell(depth in 2u16..=64,
                        batches in proptest::collection::vec(1u16..=40, 1..60),
                        schedule in proptest::collection::vec(0u8..=3, 1..40)) {
        let (tail, head, mmio) = run(depth, &batches, &schedule, false);
        prop_assert_eq!(head, tail, "controller stopped at {} with the tail at {}", head, tail);
        prop_assert!(mmio as usize <= batches.len());
    }
}
