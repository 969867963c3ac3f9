//! Number of Queues negotiation: the Set Features result (`nvme_set_queue_count` in
//! `drivers/nvme/host/core.c`) and how many I/O queues of each kind to create
//! (`nvme_setup_io_queues`, `nvme_calc_irq_sets` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

/// What the controller granted in the Number of Queues completion (dword 0).
///
/// # Examples
///
/// ```
/// use nvme::QueueGrant;
/// let g = QueueGrant::from_result(0x0003_0007);       // NCQA 3, NSQA 7 (0-based)
/// assert_eq!((g.sq(), g.cq(), g.pairs()), (8, 4, 4));
/// assert_eq!(QueueGrant::from_result(0).pairs(), 1);
/// assert_eq!(QueueGrant::from_result(u32::MAX).pairs(), 65535); // 65536 capped to a u16 qid range
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGrant {
    sq: u32,
    cq: u32,
}

impl QueueGrant {
    /// Parses the completion's result dword 0: NSQA in bits 15:0, NCQA in 31:16, both 0-based.
    pub const fn from_result(dw0: u32) -> Self {
        Self {
            sq: (dw0 & 0xffff) + 1,
            cq: (dw0 >> 16) + 1,
        }
    }

    /// I/O submission queues granted.
    pub const fn sq(&self) -> u32 {
        self.sq
    }

    /// I/O completion queues granted.
    pub const fn cq(&self) -> u32 {
        self.cq
    }

    /// Usable I/O queue pairs: `min(sq, cq)`, at most 65535 (queue ids are 16 bits and 0 is
    /// the admin queue).
    pub const fn pairs(&self) -> u16 {
        let p = if self.sq < self.cq { self.sq } else { self.cq };
        if p > 0xffff {
            0xffff
        } else {
            p as u16
        }
    }
}

/// Why no I/O queue plan exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueuePlanError {
    /// No CPU or no interrupt vector to serve a queue.
    NoResources {
        /// CPUs given.
        cpus: u32,
        /// Interrupt vectors given.
        vectors: u32,
    },
}

impl fmt::Display for QueuePlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NoResources { cpus, vectors } => {
                write!(f, "no I/O queue possible ({cpus} CPUs, {vectors} vectors)")
            }
        }
    }
}

impl core::error::Error for QueuePlanError {}

/// How many I/O queues of each kind to create: interrupt-driven (default) queues get qids
/// `1..=default`, polled queues the `poll` ids after them.
///
/// # Invariants
///
/// `default >= 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    /// Interrupt-driven queues (one per CPU when enough are granted).
    pub default: u16,
    /// Polled queues (no interrupt, for `HCTX_TYPE_POLL`).
    pub poll: u16,
}

impl QueuePlan {
    /// The plan for `cpus` CPUs, `wanted_poll` poll queues (module parameter), the controller's
    /// `grant`, and `vectors` interrupt vectors for I/O queues (after MSI-X allocation; 1 for
    /// INTx or a single MSI).
    ///
    /// As the Linux driver does: ask for one queue per CPU plus the poll queues; keep at least
    /// one interrupt-driven queue, so poll queues are cut first when fewer are granted; default
    /// queues are limited by vectors (several queues share a vector otherwise) and CPUs.
    ///
    /// # Errors
    ///
    /// [`QueuePlanError::NoResources`] if `cpus` or `vectors` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{QueueGrant, QueuePlan};
    /// let all = QueueGrant::from_result(0x003f_003f);              // 64 pairs
    /// assert_eq!(QueuePlan::new(4, 0, all, 4)?, QueuePlan { default: 4, poll: 0 });
    /// assert_eq!(QueuePlan::new(4, 2, all, 4)?, QueuePlan { default: 4, poll: 2 });
    /// let one = QueueGrant::from_result(0);                        // max_ioqpairs=1
    /// assert_eq!(QueuePlan::new(4, 2, one, 4)?, QueuePlan { default: 1, poll: 0 });
    /// let three = QueueGrant::from_result(0x0002_0002);
    /// assert_eq!(QueuePlan::new(4, 2, three, 4)?, QueuePlan { default: 1, poll: 2 });
    /// assert_eq!(QueuePlan::new(4, 0, all, 2)?, QueuePlan { default: 2, poll: 0 }); // 2 vectors
    /// assert!(QueuePlan::new(0, 0, all, 1).is_err());
    /// # Ok::<(), nvme::QueuePlanError>(())
    /// ```
    pub fn new(
        cpus: u32,
        wanted_poll: u16,
        grant: QueueGrant,
        vectors: u32,
    ) -> Result<Self, QueuePlanError> {
        if cpus == 0 || vectors == 0 {
            return Err(QueuePlanError::NoResources { cpus, vectors });
        }
        let granted = u32::from(grant.pairs());
        // One default queue is always kept; the rest of the grant goes to poll queues first
        // (as many as wanted), then to default queues up to one per CPU and vector.
        let poll = u32::from(wanted_poll).min(granted.saturating_sub(1));
        let default = (granted - poll).min(cpus).min(vectors).max(1);
        // INVARIANT: default >= 1; both fit u16 because granted <= 65535.
        Ok(Self {
            default: default as u16,
            poll: poll as u16,
        })
    }

    /// Total I/O queues (pairs) to create.
    pub const fn total(&self) -> u32 {
        self.default as u32 + self.poll as u32
    }

    /// The Number of Queues count to ask for: `cpus + wanted_poll`, at least 1, at most 65535.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(nvme::QueuePlan::request(4, 2), 6);
    /// assert_eq!(nvme::QueuePlan::request(0, 0), 1);
    /// assert_eq!(nvme::QueuePlan::request(u32::MAX, 9), 65535);
    /// ```
    pub const fn request(cpus: u32, wanted_poll: u16) -> u32 {
        let n = cpus.saturating_add(wanted_poll as u32);
        if n == 0 {
            1
        } else if n > 0xffff {
            0xffff
        } else {
            n
        }
    }
}
