//! Builders for the admin commands the driver sends: Identify, Set/Get Features, Create/Delete
//! I/O queues, Abort (`struct nvme_identify`, `struct nvme_features`, `struct nvme_create_cq`,
//! `struct nvme_create_sq`, `struct nvme_delete_queue`, `struct nvme_abort_cmd`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

use crate::{DataPointer, SubmissionEntry};

/// Admin opcodes (`enum nvme_admin_opcode`).
pub mod opcode {
    /// Delete I/O Submission Queue.
    pub const DELETE_SQ: u8 = 0x00;
    /// Create I/O Submission Queue.
    pub const CREATE_SQ: u8 = 0x01;
    /// Get Log Page.
    pub const GET_LOG_PAGE: u8 = 0x02;
    /// Delete I/O Completion Queue.
    pub const DELETE_CQ: u8 = 0x04;
    /// Create I/O Completion Queue.
    pub const CREATE_CQ: u8 = 0x05;
    /// Identify.
    pub const IDENTIFY: u8 = 0x06;
    /// Abort.
    pub const ABORT: u8 = 0x08;
    /// Set Features.
    pub const SET_FEATURES: u8 = 0x09;
    /// Get Features.
    pub const GET_FEATURES: u8 = 0x0a;
    /// Doorbell Buffer Config.
    pub const DBBUF: u8 = 0x7c;
}

/// Feature identifier of Number of Queues (`NVME_FEAT_NUM_QUEUES`).
pub const FEAT_NUM_QUEUES: u8 = 0x07;
/// Feature identifier of Volatile Write Cache (`NVME_FEAT_VOLATILE_WC`).
pub const FEAT_VOLATILE_WC: u8 = 0x06;
/// Largest queue size a create command can express (the size field is 0-based 16 bits).
pub const MAX_QUEUE_ENTRIES: u32 = 1 << 16;

/// What an Identify command returns (the CNS field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cns {
    /// Identify Namespace data structure for the namespace in NSID (`NVME_ID_CNS_NS`).
    Namespace,
    /// Identify Controller data structure (`NVME_ID_CNS_CTRL`).
    Controller,
    /// Up to 1024 active namespace IDs greater than NSID (`NVME_ID_CNS_NS_ACTIVE_LIST`).
    ActiveNamespaces,
    /// The Namespace Identification Descriptor list of the namespace in NSID
    /// (`NVME_ID_CNS_NS_DESC_LIST`), parsed by [`crate::NsIds::read_descriptors`].
    NsDescriptors,
    /// The NVM Command Set's Identify Controller data structure (`NVME_ID_CNS_CS_CTRL` with
    /// CSI 00h, `NVME_CSI_NVM`: CDW11 stays 0), parsed by [`crate::IdentifyControllerNvm`].
    NvmController,
}

impl Cns {
    /// The CNS value.
    pub const fn value(self) -> u8 {
        match self {
            Self::Namespace => 0,
            Self::Controller => 1,
            Self::ActiveNamespaces => 2,
            Self::NsDescriptors => 3,
            Self::NvmController => 6,
        }
    }
}

/// Why a command could not be built from the given parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmdError {
    /// An I/O queue id of 0 (the admin queue is not created by command).
    AdminQueueId,
    /// A queue size outside `2..=65536` entries.
    QueueSize {
        /// The size asked for.
        entries: u32,
    },
    /// A block count outside `1..=65536` (the NLB field is 0-based 16 bits).
    BlockCount {
        /// The count asked for.
        blocks: u32,
    },
    /// A Dataset Management range count outside `1..=256`.
    RangeCount {
        /// The count asked for.
        ranges: usize,
    },
    /// A queue count outside `1..=65535` for Number of Queues.
    QueueCount {
        /// The count asked for.
        queues: u32,
    },
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::AdminQueueId => f.write_str("I/O queue id 0"),
            Self::QueueSize { entries } => write!(f, "queue size {entries} not in 2..=65536"),
            Self::BlockCount { blocks } => write!(f, "block count {blocks} not in 1..=65536"),
            Self::RangeCount { ranges } => write!(f, "{ranges} DSM ranges, not in 1..=256"),
            Self::QueueCount { queues } => write!(f, "queue count {queues} not in 1..=65535"),
        }
    }
}

impl core::error::Error for CmdError {}

/// Checks an I/O queue id and size and returns dword 10 (`QSIZE - 1 << 16 | QID`).
fn queue_dw10(qid: u16, entries: u32) -> Result<u32, CmdError> {
    if qid == 0 {
        return Err(CmdError::AdminQueueId);
    }
    if !(2..=MAX_QUEUE_ENTRIES).contains(&entries) {
        return Err(CmdError::QueueSize { entries });
    }
    Ok(((entries - 1) << 16) | u32::from(qid))
}

impl SubmissionEntry {
    /// Identify (`nvme_identify_ctrl`, `nvme_identify_ns`, `nvme_identify_ns_list`): `cns` data
    /// for `nsid` into the 4096-byte buffer at `dptr`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{Cns, DataPointer, SubmissionEntry};
    /// let c = SubmissionEntry::identify(Cns::Controller, 0, DataPointer::prp(0x5000, 0));
    /// assert_eq!((c.opcode(), c.cdw(10), c.data_pointer()), (0x06, Some(1), DataPointer::prp(0x5000, 0)));
    /// let c = SubmissionEntry::identify(Cns::ActiveNamespaces, 0, DataPointer::prp(0x5000, 0));
    /// assert_eq!((c.nsid(), c.cdw(10)), (0, Some(2)));
    /// ```
    pub fn identify(cns: Cns, nsid: u32, dptr: DataPointer) -> Self {
        let mut c = Self::new(opcode::IDENTIFY, nsid);
        c.set_cdw(10, u32::from(cns.value()));
        c.set_data_pointer(dptr);
        c
    }

    /// Set Features `fid` with dword 11 `value` (and a data buffer where the feature has one).
    pub fn set_features(fid: u8, value: u32, dptr: DataPointer) -> Self {
        let mut c = Self::new(opcode::SET_FEATURES, 0);
        c.set_cdw(10, u32::from(fid));
        c.set_cdw(11, value);
        c.set_data_pointer(dptr);
        c
    }

    /// Get Features `fid` (current value, SEL 0).
    pub fn get_features(fid: u8, dptr: DataPointer) -> Self {
        let mut c = Self::new(opcode::GET_FEATURES, 0);
        c.set_cdw(10, u32::from(fid));
        c.set_data_pointer(dptr);
        c
    }

    /// Set Features Number of Queues asking for `count` submission and `count` completion
    /// queues (`nvme_set_queue_count`); the fields are 0-based. Parse the completion with
    /// [`crate::QueueGrant::from_result`].
    ///
    /// # Errors
    ///
    /// [`CmdError::QueueCount`] unless `1 <= count <= 65535`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let c = SubmissionEntry::set_num_queues(4)?;
    /// assert_eq!((c.opcode(), c.cdw(10), c.cdw(11)), (0x09, Some(7), Some(0x0003_0003)));
    /// assert!(SubmissionEntry::set_num_queues(0).is_err());
    /// assert!(SubmissionEntry::set_num_queues(65536).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn set_num_queues(count: u32) -> Result<Self, CmdError> {
        if !(1..=0xffff).contains(&count) {
            return Err(CmdError::QueueCount { queues: count });
        }
        let q = count - 1;
        Ok(Self::set_features(
            FEAT_NUM_QUEUES,
            (q << 16) | q,
            DataPointer::NONE,
        ))
    }

    /// Create I/O Completion Queue `qid` of `entries` entries at bus address `addr`
    /// (physically contiguous), interrupting on MSI-X/INTx `vector`, or polled when `None`
    /// (`adapter_alloc_cq`).
    ///
    /// # Errors
    ///
    /// [`CmdError::AdminQueueId`] for `qid == 0`, [`CmdError::QueueSize`] unless
    /// `2 <= entries <= 65536`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let c = SubmissionEntry::create_cq(3, 1024, 0x10_0000, Some(2))?;
    /// assert_eq!((c.opcode(), c.cdw(10), c.cdw(11)), (0x05, Some(0x03ff_0003), Some(0x0002_0003)));
    /// let c = SubmissionEntry::create_cq(3, 2, 0x10_0000, None)?;          // polled: IEN clear
    /// assert_eq!(c.cdw(11), Some(1));
    /// assert!(SubmissionEntry::create_cq(0, 64, 0, None).is_err());
    /// assert!(SubmissionEntry::create_cq(1, 1, 0, None).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn create_cq(
        qid: u16,
        entries: u32,
        addr: u64,
        vector: Option<u16>,
    ) -> Result<Self, CmdError> {
        let dw10 = queue_dw10(qid, entries)?;
        let mut c = Self::new(opcode::CREATE_CQ, 0);
        c.set_data_pointer(DataPointer::prp(addr, 0));
        c.set_cdw(10, dw10);
        // Bit 0 PC (physically contiguous), bit 1 IEN, bits 31:16 the interrupt vector.
        let dw11 = match vector {
            Some(v) => (u32::from(v) << 16) | 0b11,
            None => 0b01,
        };
        c.set_cdw(11, dw11);
        Ok(c)
    }

    /// Create I/O Submission Queue `qid` of `entries` entries at bus address `addr`
    /// (physically contiguous, medium priority), completing to `cqid` (`adapter_alloc_sq`).
    ///
    /// # Errors
    ///
    /// As [`SubmissionEntry::create_cq`]; `cqid == 0` is [`CmdError::AdminQueueId`] too.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let c = SubmissionEntry::create_sq(1, 64, 0x20_0000, 1)?;
    /// assert_eq!((c.opcode(), c.cdw(10), c.cdw(11)), (0x01, Some(0x003f_0001), Some(0x0001_0001)));
    /// assert!(SubmissionEntry::create_sq(1, 64, 0, 0).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn create_sq(qid: u16, entries: u32, addr: u64, cqid: u16) -> Result<Self, CmdError> {
        let dw10 = queue_dw10(qid, entries)?;
        if cqid == 0 {
            return Err(CmdError::AdminQueueId);
        }
        let mut c = Self::new(opcode::CREATE_SQ, 0);
        c.set_data_pointer(DataPointer::prp(addr, 0));
        c.set_cdw(10, dw10);
        // Bit 0 PC, bits 2:1 QPRIO (0 = urgent .. 3 = low; the Linux driver asks for medium
        // only when WRR arbitration is on, and the field is ignored otherwise), 31:16 CQID.
        c.set_cdw(11, (u32::from(cqid) << 16) | 0b1);
        Ok(c)
    }

    /// Delete I/O Submission Queue `qid`.
    ///
    /// # Errors
    ///
    /// [`CmdError::AdminQueueId`] for `qid == 0`.
    pub fn delete_sq(qid: u16) -> Result<Self, CmdError> {
        Self::delete_queue(opcode::DELETE_SQ, qid)
    }

    /// Delete I/O Completion Queue `qid` (after its submission queues).
    ///
    /// # Errors
    ///
    /// [`CmdError::AdminQueueId`] for `qid == 0`.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// assert_eq!(SubmissionEntry::delete_cq(5)?.cdw(10), Some(5));
    /// assert_eq!(SubmissionEntry::delete_sq(5)?.opcode(), 0x00);
    /// assert!(SubmissionEntry::delete_cq(0).is_err());
    /// # Ok::<(), nvme::CmdError>(())
    /// ```
    pub fn delete_cq(qid: u16) -> Result<Self, CmdError> {
        Self::delete_queue(opcode::DELETE_CQ, qid)
    }

    fn delete_queue(op: u8, qid: u16) -> Result<Self, CmdError> {
        if qid == 0 {
            return Err(CmdError::AdminQueueId);
        }
        let mut c = Self::new(op, 0);
        c.set_cdw(10, u32::from(qid));
        Ok(c)
    }

    /// Abort the command with identifier `cid` on submission queue `sqid` (`nvme_timeout`).
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let c = SubmissionEntry::abort(2, 0x1234);
    /// assert_eq!((c.opcode(), c.cdw(10)), (0x08, Some(0x1234_0002)));
    /// ```
    pub fn abort(sqid: u16, cid: u16) -> Self {
        let mut c = Self::new(opcode::ABORT, 0);
        c.set_cdw(10, (u32::from(cid) << 16) | u32::from(sqid));
        c
    }
}
