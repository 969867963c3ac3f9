//! The simulated register file: CAP, VS, CC, CSTS, AQA, ASQ, ACQ and the doorbells, with the
//! CC/CSTS behaviour of a controller (ready after a delay, never ready, fatal status, shutdown),
//! on a simulated clock the test advances.

use std::cell::{Cell, RefCell};

use nvme::Registers;

/// How the simulated controller's status register behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegBehaviour {
    /// CAP.TO in 500 ms units.
    pub cap_to: u8,
    /// CAP.MQES (0-based).
    pub mqes: u16,
    /// CAP.DSTRD.
    pub dstrd: u8,
    /// CAP.MPSMIN.
    pub mpsmin: u8,
    /// Milliseconds after CC.EN 0 -> 1 until CSTS.RDY = 1; `None`: never.
    pub ready_after_ms: Option<u64>,
    /// Milliseconds after CC.EN 1 -> 0 until CSTS.RDY = 0; `None`: never.
    pub unready_after_ms: Option<u64>,
    /// CSTS.CFS is set this many ms after enable instead of becoming ready.
    pub fatal_after_ms: Option<u64>,
    /// Milliseconds after CC.SHN = normal until CSTS.SHST = complete; `None`: never.
    pub shutdown_after_ms: Option<u64>,
    /// Every register reads all ones (surprise removal).
    pub gone: bool,
    /// The controller starts enabled and ready (left so by firmware or a previous driver).
    pub start_enabled: bool,
}

impl Default for RegBehaviour {
    fn default() -> Self {
        Self {
            cap_to: 20,
            mqes: 1023,
            dstrd: 0,
            mpsmin: 0,
            ready_after_ms: Some(3),
            unready_after_ms: Some(1),
            fatal_after_ms: None,
            shutdown_after_ms: Some(5),
            gone: false,
            start_enabled: false,
        }
    }
}

/// Offsets of the registers the simulation implements.
const CAP: u32 = 0x00;
const VS: u32 = 0x08;
const CC: u32 = 0x14;
const CSTS: u32 = 0x1c;
const AQA: u32 = 0x24;
const ASQ: u32 = 0x28;
const ACQ: u32 = 0x30;
/// Doorbell base.
const DBS: u32 = 0x1000;

/// The register file. Interior mutability: [`Registers`] takes `&self`.
#[derive(Debug)]
pub struct SimRegs {
    /// Behaviour.
    pub behaviour: RegBehaviour,
    /// BAR length in bytes.
    pub bar_len: u32,
    now: Cell<u64>,
    cc: Cell<u32>,
    /// Time of the last EN or SHN change, and what changed.
    en_change: Cell<Option<(u64, bool)>>,
    shn_at: Cell<Option<u64>>,
    aqa: Cell<u32>,
    asq: Cell<u64>,
    acq: Cell<u64>,
    /// Doorbell writes not yet seen by the controller: (offset, value).
    doorbells: RefCell<Vec<(u32, u32)>>,
    /// Every register access outside the BAR or the defined registers.
    pub bad_accesses: Cell<u32>,
    /// Reads of CSTS so far.
    pub csts_reads: Cell<u32>,
}

impl SimRegs {
    /// A register file behaving as `behaviour`, with a BAR of `bar_len` bytes.
    pub fn new(behaviour: RegBehaviour, bar_len: u32) -> Self {
        let start = behaviour.start_enabled;
        Self {
            behaviour,
            bar_len,
            now: Cell::new(0),
            cc: Cell::new(if start { 0x0046_0001 } else { 0 }),
            en_change: Cell::new(if start { Some((0, true)) } else { None }),
            shn_at: Cell::new(None),
            aqa: Cell::new(0),
            asq: Cell::new(0),
            acq: Cell::new(0),
            doorbells: RefCell::new(Vec::new()),
            bad_accesses: Cell::new(0),
            csts_reads: Cell::new(0),
        }
    }

    /// Current simulated time in ms.
    pub fn now(&self) -> u64 {
        self.now.get()
    }

    /// Advances the simulated clock.
    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get() + ms);
    }

    /// The raw CAP value.
    pub fn cap(&self) -> u64 {
        let b = &self.behaviour;
        u64::from(b.mqes)
            | (1 << 16)
            | (u64::from(b.cap_to) << 24)
            | (u64::from(b.dstrd & 0xf) << 32)
            | (1 << 37)
            | (u64::from(b.mpsmin & 0xf) << 48)
    }

    /// Whether the controller is enabled and ready (CSTS.RDY, no CFS).
    pub fn ready(&self) -> bool {
        let c = self.csts();
        c & 1 != 0 && c & 2 == 0
    }

    /// CC as last written.
    pub fn cc(&self) -> u32 {
        self.cc.get()
    }

    /// AQA, ASQ and ACQ as programmed.
    pub fn admin_queue(&self) -> (u32, u64, u64) {
        (self.aqa.get(), self.asq.get(), self.acq.get())
    }

    /// Takes the doorbell writes since the last call.
    pub fn take_doorbells(&self) -> Vec<(u32, u32)> {
        std::mem::take(&mut *self.doorbells.borrow_mut())
    }

    /// The CSTS value at the current time.
    pub fn csts(&self) -> u32 {
        let b = &self.behaviour;
        let now = self.now.get();
        let mut v = 0;
        if let Some((at, en)) = self.en_change.get() {
            let dt = now - at;
            if en {
                if b.fatal_after_ms.is_some_and(|f| dt >= f) {
                    v |= 2;
                } else if b.ready_after_ms.is_some_and(|r| dt >= r) {
                    v |= 1;
                }
            } else if b.unready_after_ms.is_none_or(|r| dt < r) {
                // Not yet (or never) seen the disable: still ready.
                v |= 1;
            }
        }
        if let Some(at) = self.shn_at.get() {
            v |= if b.shutdown_after_ms.is_some_and(|s| now - at >= s) {
                0b1000
            } else {
                0b0100
            };
        }
        v
    }

    fn write_cc(&self, value: u32) {
        let old = self.cc.get();
        let now = self.now.get();
        if (old ^ value) & 1 != 0 {
            // A disable while never enabled still counts as a change (RDY was 0 anyway).
            let was_ready = self.csts() & 1 != 0;
            if value & 1 == 0 && !was_ready {
                self.en_change.set(None);
            } else {
                self.en_change.set(Some((now, value & 1 != 0)));
            }
            if value & 1 == 0 {
                self.shn_at.set(None);
            }
        }
        if (old >> 14) & 3 == 0 && (value >> 14) & 3 != 0 {
            self.shn_at.set(Some(now));
        }
        self.cc.set(value);
    }
}

impl Registers for SimRegs {
    fn read32(&self, offset: u32) -> u32 {
        if self.behaviour.gone || offset.checked_add(4).is_none_or(|e| e > self.bar_len) {
            return u32::MAX;
        }
        match offset {
            CAP => self.cap() as u32,
            0x04 => (self.cap() >> 32) as u32,
            VS => 0x0001_0400,
            CC => self.cc.get(),
            CSTS => {
                self.csts_reads.set(self.csts_reads.get() + 1);
                self.csts()
            }
            AQA => self.aqa.get(),
            _ => {
                self.bad_accesses.set(self.bad_accesses.get() + 1);
                0
            }
        }
    }

    fn read64(&self, offset: u32) -> u64 {
        if offset == CAP && !self.behaviour.gone {
            return self.cap();
        }
        u64::from(self.read32(offset)) | (u64::from(self.read32(offset + 4)) << 32)
    }

    fn write32(&self, offset: u32, value: u32) {
        if self.behaviour.gone || offset.checked_add(4).is_none_or(|e| e > self.bar_len) {
            self.bad_accesses.set(self.bad_accesses.get() + 1);
            return;
        }
        match offset {
            CC => self.write_cc(value),
            AQA => self.aqa.set(value),
            o if o >= DBS => self.doorbells.borrow_mut().push((o, value)),
            _ => self.bad_accesses.set(self.bad_accesses.get() + 1),
        }
    }

    fn write64(&self, offset: u32, value: u64) {
        if self.behaviour.gone {
            return;
        }
        match offset {
            ASQ => self.asq.set(value),
            ACQ => self.acq.set(value),
            _ => self.bad_accesses.set(self.bad_accesses.get() + 1),
        }
    }
}
