//! `Enable`, `Disable` and `ShutdownSeq` against a scripted register file: the checks made
//! before anything is written, and the register writes of a successful bring-up.

use core::cell::{Cell, RefCell};
use std::vec::Vec;

use crate::{
    AdminQueue, Disable, Enable, InitError, Phase, Poll, Registers, ShutdownSeq, REG_ACQ, REG_AQA,
    REG_ASQ, REG_CC,
};

/// CAP with MQES 63, TO 2 (1 s), CSS NVM, MPSMIN 0.
const CAP: u64 = 63 | (2 << 24) | (1 << 37);

/// A register file whose CSTS mirrors CC.EN (ready as soon as enabled) unless `csts` is set.
struct Scripted {
    cap: u64,
    cc: Cell<u32>,
    csts: Option<u32>,
    writes: RefCell<Vec<(u32, u64)>>,
}

impl Scripted {
    fn new(cap: u64, csts: Option<u32>) -> Self {
        Self {
            cap,
            cc: Cell::new(0),
            csts,
            writes: RefCell::new(Vec::new()),
        }
    }
}

impl Registers for Scripted {
    fn read32(&self, offset: u32) -> u32 {
        match offset {
            0x14 => self.cc.get(),
            0x1c => self.csts.unwrap_or_else(|| {
                let cc = self.cc.get();
                // RDY follows EN; SHST complete as soon as SHN is set.
                (cc & 1) | if cc & 0xc000 != 0 { 0b1000 } else { 0 }
            }),
            _ => 0,
        }
    }
    fn read64(&self, offset: u32) -> u64 {
        if offset == 0 {
            self.cap
        } else {
            0
        }
    }
    fn write32(&self, offset: u32, value: u32) {
        if offset == REG_CC {
            self.cc.set(value);
        }
        self.writes.borrow_mut().push((offset, u64::from(value)));
    }
    fn write64(&self, offset: u32, value: u64) {
        self.writes.borrow_mut().push((offset, value));
    }
}

fn run(en: &mut Enable, regs: &Scripted) -> Result<u32, InitError> {
    let mut now = 0;
    for polls in 1..10_000 {
        match en.poll(regs, now)? {
            Poll::Wait(ms) => now += u64::from(ms),
            Poll::Done => return Ok(polls),
        }
    }
    panic!("unbounded");
}

const AQ: AdminQueue = AdminQueue {
    sq_addr: 0x10_0000,
    cq_addr: 0x20_0000,
    entries: 32,
};

#[test]
fn bring_up_programs_the_admin_queue_then_enables() {
    let regs = Scripted::new(CAP, None);
    let mut en = Enable::new(AQ);
    assert!(run(&mut en, &regs).is_ok());
    let w = regs.writes.borrow();
    assert_eq!(
        w.as_slice(),
        &[
            (REG_CC, 0),
            (REG_AQA, 0x001f_001f),
            (REG_ASQ, 0x10_0000),
            (REG_ACQ, 0x20_0000),
            (REG_CC, 0x0046_0000),
            (REG_CC, 0x0046_0001),
        ]
    );
    assert_eq!(en.cap().raw(), CAP);
    // Done stays done.
    assert_eq!(en.poll(&regs, 0), Ok(Poll::Done));
}

#[test]
fn refusals_happen_before_any_write() {
    let cases: [(u64, AdminQueue, InitError); 5] = [
        (CAP | (1 << 48), AQ, InitError::PageSize { mpsmin: 1 }),
        (CAP & !(1 << 37), AQ, InitError::CommandSet { css: 0 }),
        (
            CAP,
            AdminQueue { entries: 65, ..AQ },
            InitError::AdminQueueSize {
                entries: 65,
                max: 64,
            },
        ),
        (
            CAP,
            AdminQueue { entries: 1, ..AQ },
            InitError::AdminQueueSize {
                entries: 1,
                max: 64,
            },
        ),
        (
            CAP,
            AdminQueue {
                cq_addr: 0x20_0800,
                ..AQ
            },
            InitError::AdminQueueAlign { addr: 0x20_0800 },
        ),
    ];
    for (cap, aq, want) in cases {
        let regs = Scripted::new(cap, None);
        let mut en = Enable::new(aq);
        assert_eq!(run(&mut en, &regs), Err(want));
        assert!(regs.writes.borrow().is_empty(), "{want:?}");
        // The error sticks.
        assert_eq!(en.poll(&regs, 1_000_000), Err(want));
    }
}

#[test]
fn fatal_status_and_removal_are_reported() {
    // CFS with RDY clear: tolerated while disabling until the bound, then reported as fatal.
    let regs = Scripted::new(CAP, Some(0b10 | 1));
    assert!(matches!(
        run(&mut Enable::new(AQ), &regs),
        Err(InitError::Fatal {
            phase: Phase::Disable,
            ..
        })
    ));
    let regs = Scripted::new(CAP, Some(u32::MAX));
    assert_eq!(run(&mut Enable::new(AQ), &regs), Err(InitError::DeviceGone));
    let regs = Scripted::new(CAP, Some(0b10));
    let mut sd = ShutdownSeq::new(0);
    assert!(matches!(
        sd.poll(&regs, 0),
        Err(InitError::Fatal {
            phase: Phase::Shutdown,
            ..
        })
    ));
}

#[test]
fn disable_and_shutdown_write_cc_once() {
    let regs = Scripted::new(CAP, None);
    regs.cc.set(0x0046_0001);
    let mut d = Disable::new();
    assert_eq!(d.poll(&regs, 0), Ok(Poll::Done));
    assert_eq!(d.poll(&regs, 1), Ok(Poll::Done));
    assert_eq!(regs.writes.borrow().as_slice(), &[(REG_CC, 0x0046_0000)]);

    let regs = Scripted::new(CAP, None);
    regs.cc.set(0x0046_0001);
    let mut s = ShutdownSeq::new(0);
    assert_eq!(s.limit_ms(), 5_000);
    assert_eq!(s.poll(&regs, 0), Ok(Poll::Done));
    assert_eq!(regs.writes.borrow().as_slice(), &[(REG_CC, 0x0046_4001)]);
}
