//! Submission and completion queue entries in NVMe wire layout (`struct nvme_common_command`,
//! `struct nvme_completion`) and the command's data pointer.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! Both structures are `#[repr(C)]` and hold every field in little-endian byte order, so their
//! memory is exactly what the device reads and writes on any host; the accessors convert. The
//! safe memory traits of [`the queue memory traits move them as
//! bytes ([`SubmissionEntry::to_bytes`], [`CompletionEntry::from_bytes`]).

use crate::{Prps, SglDescriptor};

/// Size of a submission queue entry in bytes (`IOSQES` = 6).
pub const SQE_SIZE: usize = 64;
/// Size of a completion queue entry in bytes (`IOCQES` = 4).
pub const CQE_SIZE: usize = 16;

/// PSDT value 01b in the command's flags byte: data (and metadata, as one buffer) use SGLs
/// (`NVME_CMD_SGL_METABUF`).
const FLAGS_PSDT_SGL: u8 = 1 << 6;
/// Mask of the PSDT bits in the flags byte.
const FLAGS_PSDT_MASK: u8 = 3 << 6;

/// How a command points at its data (the DPTR field, command bytes 24..40, and PSDT).
///
/// # Examples
///
/// ```
/// use nvme::{DataPointer, SglDescriptor, SubmissionEntry};
/// let mut c = SubmissionEntry::default();
/// c.set_data_pointer(DataPointer::Sgl(SglDescriptor::data_block(0x1000, 512)));
/// assert!(c.uses_sgl());
/// c.set_data_pointer(DataPointer::prp(0x2000, 0));
/// assert!(!c.uses_sgl());
/// assert_eq!(c.data_pointer(), DataPointer::prp(0x2000, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataPointer {
    /// PRP entry 1 and PRP entry 2 (PSDT 00b).
    Prp {
        /// PRP entry 1: the first data byte (dword aligned).
        prp1: u64,
        /// PRP entry 2: 0, the second page, or the PRP list.
        prp2: u64,
    },
    /// One SGL descriptor (PSDT 01b).
    Sgl(SglDescriptor),
}

impl DataPointer {
    /// A PRP data pointer.
    pub const fn prp(prp1: u64, prp2: u64) -> Self {
        Self::Prp { prp1, prp2 }
    }

    /// No data (both PRP entries zero).
    pub const NONE: Self = Self::Prp { prp1: 0, prp2: 0 };
}

impl From<Prps> for DataPointer {
    fn from(p: Prps) -> Self {
        Self::prp(p.prp1, p.prp2)
    }
}

impl From<SglDescriptor> for DataPointer {
    fn from(d: SglDescriptor) -> Self {
        Self::Sgl(d)
    }
}

/// One 64-byte submission queue entry (`struct nvme_common_command`), little-endian fields.
///
/// Build one with the command builders ([`SubmissionEntry::identify`],
/// [`SubmissionEntry::read`], ...); the submission ring sets the command identifier.
///
/// # Examples
///
/// ```
/// use nvme::SubmissionEntry;
/// let mut c = SubmissionEntry::default();
/// c.set_cid(0x1234);
/// c.set_cdw(10, 0xdead_beef);
/// let b = c.to_bytes();
/// assert_eq!((b[2], b[3]), (0x34, 0x12));
/// assert_eq!(b[40..44], 0xdead_beefu32.to_le_bytes());
/// assert_eq!(SubmissionEntry::from_bytes(&b), c);
/// assert_eq!(c.cdw(16), None);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct SubmissionEntry {
    /// The 64 wire bytes as eight little-endian quadwords: quadword `n` is bytes `8n..8n + 8`
    /// (dwords `2n` and `2n + 1`). Kept whole rather than field by field, so moving an entry
    /// between the driver's buffers and the ring is eight loads and eight stores, not a store
    /// per field.
    q: [u64; SQE_SIZE / 8],
}

const _: () = assert!(core::mem::size_of::<SubmissionEntry>() == SQE_SIZE);
const _: () = assert!(core::mem::align_of::<SubmissionEntry>() == 8);

/// Quadword of dwords `lo` (bits 0..32) and `hi` (bits 32..64), as a native value.
#[inline(always)]
const fn pair(lo: u32, hi: u32) -> u64 {
    lo as u64 | ((hi as u64) << 32)
}

/// Mask of the command identifier in quadword 0 (dword 0 bits 16..32).
const CID_MASK: u64 = 0xffff << 16;
/// Shift of the flags byte in quadword 0.
const FLAGS_SHIFT: u32 = 8;

impl SubmissionEntry {
    /// An entry with `opcode` and namespace `nsid`, everything else zero.
    #[inline]
    pub const fn new(opcode: u8, nsid: u32) -> Self {
        Self::with_cdws(opcode, nsid, [0; 2], [0; 6])
    }

    /// An entry with `opcode`, namespace `nsid` and the command-specific dwords 2, 3 and
    /// 10..=15, everything else zero: one literal, no per-dword `match` (a user passthrough
    /// command is built so for every I/O).
    #[inline(always)]
    pub(crate) const fn with_cdws(
        opcode: u8,
        nsid: u32,
        cdw2_3: [u32; 2],
        cdw10_15: [u32; 6],
    ) -> Self {
        let [cdw10, cdw11, cdw12, cdw13, cdw14, cdw15] = cdw10_15;
        Self::from_qwords([
            pair(opcode as u32, nsid),
            pair(cdw2_3[0], cdw2_3[1]),
            0,
            0,
            0,
            pair(cdw10, cdw11),
            pair(cdw12, cdw13),
            pair(cdw14, cdw15),
        ])
    }

    /// Quadword `n` as a native value (0 past the eighth; callers pass constants below 8).
    #[inline(always)]
    const fn qword(&self, n: usize) -> u64 {
        if n < SQE_SIZE / 8 {
            u64::from_le(self.q[n])
        } else {
            0
        }
    }

    /// Sets quadword `n` (0..8) from a native value.
    #[inline(always)]
    fn set_qword(&mut self, n: usize, v: u64) {
        if let Some(d) = self.q.get_mut(n) {
            *d = v.to_le();
        }
    }

    /// The opcode (command byte 0).
    #[inline]
    pub const fn opcode(&self) -> u8 {
        self.qword(0) as u8
    }

    /// The flags byte (FUSE bits 1:0, PSDT bits 7:6).
    #[inline]
    pub const fn flags(&self) -> u8 {
        (self.qword(0) >> FLAGS_SHIFT) as u8
    }

    /// Sets the flags byte.
    #[inline(always)]
    fn set_flags(&mut self, flags: u8) {
        let q0 = self.qword(0) & !(0xff << FLAGS_SHIFT);
        self.set_qword(0, q0 | (u64::from(flags) << FLAGS_SHIFT));
    }

    /// The command identifier.
    #[inline]
    pub const fn cid(&self) -> u16 {
        (self.qword(0) >> 16) as u16
    }

    /// Sets the command identifier.
    #[inline]
    pub fn set_cid(&mut self, cid: u16) {
        let q0 = self.qword(0) & !CID_MASK;
        self.set_qword(0, q0 | (u64::from(cid) << 16));
    }

    /// The namespace identifier.
    #[inline]
    pub const fn nsid(&self) -> u32 {
        (self.qword(0) >> 32) as u32
    }

    /// Command dword `n` (0..=15), `None` for another index. Dwords 6..=9 are the data pointer
    /// and 4..=5 the metadata pointer, split in 32-bit halves.
    pub const fn cdw(&self, n: usize) -> Option<u32> {
        if n >= SQE_SIZE / 4 {
            return None;
        }
        let q = self.qword(n / 2);
        Some(if n % 2 == 0 {
            q as u32
        } else {
            (q >> 32) as u32
        })
    }

    /// Sets command dword `n` for `n` in 2, 3 and 10..=15 (the command-specific dwords); returns
    /// whether `n` was one of them.
    #[inline]
    pub fn set_cdw(&mut self, n: usize, value: u32) -> bool {
        if !matches!(n, 2 | 3 | 10..=15) {
            return false;
        }
        let q = self.qword(n / 2);
        let v = u64::from(value);
        let q = if n % 2 == 0 {
            (q & !0xffff_ffff) | v
        } else {
            (q & 0xffff_ffff) | (v << 32)
        };
        self.set_qword(n / 2, q);
        true
    }

    /// Sets the data pointer and the matching PSDT bits.
    #[inline]
    pub fn set_data_pointer(&mut self, dptr: DataPointer) {
        let psdt = self.flags() & !FLAGS_PSDT_MASK;
        let (flags, prp1, prp2) = match dptr {
            DataPointer::Prp { prp1, prp2 } => (psdt, prp1, prp2),
            DataPointer::Sgl(d) => {
                let b = d.to_bytes();
                let mut lo = [0u8; 8];
                let mut hi = [0u8; 8];
                let (l, h) = b.split_at(8);
                lo.copy_from_slice(l);
                hi.copy_from_slice(h);
                (
                    psdt | FLAGS_PSDT_SGL,
                    u64::from_le_bytes(lo),
                    u64::from_le_bytes(hi),
                )
            }
        };
        self.set_flags(flags);
        self.set_qword(3, prp1);
        self.set_qword(4, prp2);
    }

    /// The data pointer, interpreted by the PSDT bits.
    pub fn data_pointer(&self) -> DataPointer {
        let prp1 = self.qword(3);
        let prp2 = self.qword(4);
        if self.uses_sgl() {
            let mut b = [0u8; 16];
            let (l, h) = b.split_at_mut(8);
            l.copy_from_slice(&prp1.to_le_bytes());
            h.copy_from_slice(&prp2.to_le_bytes());
            DataPointer::Sgl(SglDescriptor::from_bytes(b))
        } else {
            DataPointer::prp(prp1, prp2)
        }
    }

    /// Whether the PSDT bits select SGLs.
    #[inline]
    pub const fn uses_sgl(&self) -> bool {
        self.flags() & FLAGS_PSDT_MASK != 0
    }

    /// The 64 wire bytes.
    pub fn to_bytes(&self) -> [u8; SQE_SIZE] {
        let mut out = [0u8; SQE_SIZE];
        // Indexed by quadword rather than `chunks_exact_mut(8)`, whose out-of-line length
        // division is a divide-by-zero panic path objtool rejects in the kernel module.
        for n in 0..SQE_SIZE / 8 {
            if let Some(dst) = out.get_mut(n * 8..n * 8 + 8) {
                dst.copy_from_slice(&self.qword(n).to_le_bytes());
            }
        }
        out
    }

    /// The 64 wire bytes as eight quadwords, for queue memory written a quadword at a time:
    /// quadword `n` holds dwords `2n` (low half) and `2n + 1`, so its little-endian bytes are
    /// wire bytes `8n..8n + 8`.
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let q = SubmissionEntry::flush(7).to_qwords();
    /// // Dword 0: opcode 0x00 (flush), flags 0, command id 0; dword 1: the namespace id.
    /// assert_eq!(q[0], 7 << 32);
    /// ```
    #[inline]
    pub const fn to_qwords(&self) -> [u64; SQE_SIZE / 8] {
        let mut q = self.q;
        let mut n = 0;
        while n < q.len() {
            q[n] = u64::from_le(q[n]);
            n += 1;
        }
        q
    }

    /// An entry from the eight quadwords of [`to_qwords`](Self::to_qwords): quadword `n` holds
    /// wire bytes `8n..8n + 8` in little-endian order.
    ///
    /// ```
    /// use nvme::SubmissionEntry;
    /// let mut c = SubmissionEntry::flush(1);
    /// c.set_cid(9);
    /// c.set_cdw(15, 0x0102_0304);
    /// assert_eq!(SubmissionEntry::from_qwords(c.to_qwords()), c);
    /// ```
    #[inline]
    pub const fn from_qwords(q: [u64; SQE_SIZE / 8]) -> Self {
        let mut q = q;
        let mut n = 0;
        while n < q.len() {
            q[n] = q[n].to_le();
            n += 1;
        }
        Self { q }
    }

    /// An entry from its 64 wire bytes.
    pub fn from_bytes(b: &[u8; SQE_SIZE]) -> Self {
        let mut q = [0u64; SQE_SIZE / 8];
        // Indexed by quadword, see `to_bytes`.
        for (n, v) in q.iter_mut().enumerate() {
            if let Some(chunk) = b.get(n * 8..n * 8 + 8) {
                let mut w = [0u8; 8];
                w.copy_from_slice(chunk);
                *v = u64::from_le_bytes(w);
            }
        }
        Self::from_qwords(q)
    }
}

impl core::fmt::Debug for SubmissionEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("SubmissionEntry");
        d.field("opcode", &self.opcode())
            .field("flags", &self.flags())
            .field("command_id", &self.cid())
            .field("nsid", &self.nsid());
        for (name, n) in [("cdw2", 2), ("cdw3", 3)] {
            d.field(name, &self.cdw(n).unwrap_or(0));
        }
        d.field("metadata", &self.qword(2))
            .field("prp1", &self.qword(3))
            .field("prp2", &self.qword(4));
        for (name, n) in [
            ("cdw10", 10),
            ("cdw11", 11),
            ("cdw12", 12),
            ("cdw13", 13),
            ("cdw14", 14),
            ("cdw15", 15),
        ] {
            d.field(name, &self.cdw(n).unwrap_or(0));
        }
        d.finish()
    }
}

/// One 16-byte completion queue entry (`struct nvme_completion`), little-endian fields.
///
/// Every field comes from the device and is untrusted: the completion ring
/// ([`crate::CompletionQueue`]) and the command-id table ([`crate::CidTable`]) validate it.
///
/// # Examples
///
/// ```
/// use nvme::CompletionEntry;
/// let mut b = [0u8; 16];
/// b[0] = 7;          // result dword 0
/// b[8] = 3;          // SQ head
/// b[10] = 1;         // SQ id
/// b[12] = 0x42;      // command id
/// b[14] = 1;         // phase bit set, status success
/// let e = CompletionEntry::from_bytes(&b);
/// assert_eq!((e.result(), e.sq_head(), e.sq_id(), e.cid(), e.phase()), (7, 3, 1, 0x42, true));
/// assert_eq!(e.to_bytes(), b);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompletionEntry {
    result: u64,
    sq_head: u16,
    sq_id: u16,
    command_id: u16,
    status: u16,
}

const _: () = assert!(core::mem::size_of::<CompletionEntry>() == CQE_SIZE);

impl CompletionEntry {
    /// An entry from its fields (native values; the device-side builder used by simulators).
    pub const fn new(result: u64, sq_head: u16, sq_id: u16, cid: u16, status: u16) -> Self {
        Self {
            result: result.to_le(),
            sq_head: sq_head.to_le(),
            sq_id: sq_id.to_le(),
            command_id: cid.to_le(),
            status: status.to_le(),
        }
    }

    /// Command-specific result, dword 0 (for example the Set Features result).
    pub const fn result(&self) -> u32 {
        u64::from_le(self.result) as u32
    }

    /// Command-specific result, dwords 0 and 1.
    pub const fn result64(&self) -> u64 {
        u64::from_le(self.result)
    }

    /// Submission queue head pointer as the device reports it.
    pub const fn sq_head(&self) -> u16 {
        u16::from_le(self.sq_head)
    }

    /// Submission queue the command came from.
    pub const fn sq_id(&self) -> u16 {
        u16::from_le(self.sq_id)
    }

    /// Command identifier.
    #[inline]
    pub const fn cid(&self) -> u16 {
        u16::from_le(self.command_id)
    }

    /// The raw status field including the phase bit (bit 0).
    pub const fn raw_status(&self) -> u16 {
        u16::from_le(self.status)
    }

    /// The phase tag (status bit 0).
    pub const fn phase(&self) -> bool {
        self.raw_status() & 1 != 0
    }

    /// The status, decoded ([`crate::Status`]).
    pub const fn status(&self) -> crate::Status {
        crate::Status::from_raw(self.raw_status())
    }

    /// The 16 wire bytes.
    pub fn to_bytes(&self) -> [u8; CQE_SIZE] {
        let mut out = [0u8; CQE_SIZE];
        let (r, rest) = out.split_at_mut(8);
        r.copy_from_slice(&self.result64().to_le_bytes());
        // Indexed, not `chunks_exact_mut(2)` (see `SubmissionEntry::to_bytes`).
        let words = [self.sq_head(), self.sq_id(), self.cid(), self.raw_status()];
        for (n, v) in words.iter().enumerate() {
            if let Some(dst) = rest.get_mut(n * 2..n * 2 + 2) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// An entry from its 16 wire bytes read as two quadwords (whose little-endian bytes are wire
    /// bytes 0..8 and 8..16), for queue memory read a quadword at a time.
    ///
    /// ```
    /// use nvme::CompletionEntry;
    /// // Result 5; SQ head 3, SQ id 1, command id 9, status 0 with the phase bit set.
    /// let e = CompletionEntry::from_qwords([5, 3 | 1 << 16 | 9 << 32 | 1 << 48]);
    /// assert_eq!((e.result64(), e.sq_head(), e.sq_id(), e.cid()), (5, 3, 1, 9));
    /// assert!(e.phase());
    /// ```
    pub const fn from_qwords(q: [u64; CQE_SIZE / 8]) -> Self {
        let [result, w] = q;
        Self::new(
            result,
            w as u16,
            (w >> 16) as u16,
            (w >> 32) as u16,
            (w >> 48) as u16,
        )
    }

    /// An entry from its 16 wire bytes.
    pub fn from_bytes(b: &[u8; CQE_SIZE]) -> Self {
        let [r0, r1, r2, r3, r4, r5, r6, r7, h0, h1, q0, q1, c0, c1, s0, s1] = *b;
        Self::new(
            u64::from_le_bytes([r0, r1, r2, r3, r4, r5, r6, r7]),
            u16::from_le_bytes([h0, h1]),
            u16::from_le_bytes([q0, q1]),
            u16::from_le_bytes([c0, c1]),
            u16::from_le_bytes([s0, s1]),
        )
    }
}
