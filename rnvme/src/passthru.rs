//! The user ABI of the NVMe passthrough interface (`struct nvme_passthru_cmd`,
//! `nvme_passthru_cmd64`, `nvme_uring_cmd`, the ioctl numbers) and its permission rules
//! (`nvme_cmd_allowed()` in `drivers/nvme/host/ioctl.c` of Linux 6.12).
//!
//! C header: [`include/uapi/linux/nvme_ioctl.h`](srctree/include/uapi/linux/nvme_ioctl.h)
//!
//! Everything here works on bytes the caller copied from user space: nothing is trusted, every
//! field is read at its fixed offset, and the command built from it carries no data pointer
//! (the driver sets that from memory it mapped itself).

use crate::SubmissionEntry;

/// `_IOWR('N', nr, size)` of `include/uapi/asm-generic/ioctl.h`.
const fn iowr(nr: u32, size: u32) -> u32 {
    (3 << 30) | (size << 16) | ((b'N' as u32) << 8) | nr
}

/// Size of `struct nvme_passthru_cmd` (and `nvme_admin_cmd`).
pub const PASSTHRU_CMD_SIZE: usize = 72;
/// Size of `struct nvme_passthru_cmd64`.
pub const PASSTHRU_CMD64_SIZE: usize = 80;
/// Size of `struct nvme_uring_cmd`.
pub const URING_CMD_SIZE: usize = 72;

/// `NVME_IOCTL_ID`: the namespace id of a namespace device.
pub const IOCTL_ID: u32 = ((b'N' as u32) << 8) | 0x40;
/// `NVME_IOCTL_ADMIN_CMD`.
pub const IOCTL_ADMIN_CMD: u32 = iowr(0x41, PASSTHRU_CMD_SIZE as u32);
/// `NVME_IOCTL_IO_CMD`.
pub const IOCTL_IO_CMD: u32 = iowr(0x43, PASSTHRU_CMD_SIZE as u32);
/// `NVME_IOCTL_ADMIN64_CMD`.
pub const IOCTL_ADMIN64_CMD: u32 = iowr(0x47, PASSTHRU_CMD64_SIZE as u32);
/// `NVME_IOCTL_IO64_CMD`.
pub const IOCTL_IO64_CMD: u32 = iowr(0x48, PASSTHRU_CMD64_SIZE as u32);
/// `NVME_URING_CMD_IO`.
pub const URING_CMD_IO: u32 = iowr(0x80, URING_CMD_SIZE as u32);
/// `NVME_URING_CMD_ADMIN`.
pub const URING_CMD_ADMIN: u32 = iowr(0x82, URING_CMD_SIZE as u32);

/// Why a user command was refused before it reached the device (the C driver's errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassthruError {
    /// `flags` set, nsid not the device's, metadata on a namespace without it (`EINVAL`).
    Invalid,
    /// The caller may not send this command (`EACCES`).
    Denied,
}

impl core::fmt::Display for PassthruError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Invalid => f.write_str("invalid passthrough command"),
            Self::Denied => f.write_str("passthrough command not allowed"),
        }
    }
}

/// A user passthrough command, decoded from any of the three layouts (they share the first 68
/// bytes).
///
/// # Examples
///
/// ```
/// use nvme::{UserCmd, PASSTHRU_CMD_SIZE};
/// let mut b = [0u8; PASSTHRU_CMD_SIZE];
/// b[0] = 0x06; // Identify
/// b[24..32].copy_from_slice(&0x7000u64.to_le_bytes());
/// b[36..40].copy_from_slice(&4096u32.to_le_bytes());
/// b[40] = 1; // CNS 1
/// let c = UserCmd::parse(&b).unwrap();
/// assert_eq!((c.opcode(), c.addr(), c.data_len()), (0x06, 0x7000, 4096));
/// assert_eq!(c.to_entry(None).unwrap().cdw(10), Some(1));
/// assert!(UserCmd::parse(&b[..67]).is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserCmd {
    /// The 68 common bytes as quadwords (native values of little-endian bytes `8n..8n + 8`;
    /// the last holds bytes 64..68, the timeout, zero-extended). Kept as the user wrote them
    /// (read with nine loads), so the submission entry is built by masking, not field by
    /// field:
    ///
    /// | quadword | low 32 bits | high 32 bits |
    /// |---|---|---|
    /// | 0 | opcode, flags, reserved | nsid |
    /// | 1 | cdw2 | cdw3 |
    /// | 2 | metadata address | |
    /// | 3 | data address | |
    /// | 4 | metadata length | data length |
    /// | 5..=7 | cdw10, 12, 14 | cdw11, 13, 15 |
    /// | 8 | timeout (ms) | 0 |
    q: [u64; URING_CMD_SIZE / 8],
}

// Always inlined: called with constant offsets into a slice of known length (`UserCmd::parse`),
// every check folds away.
#[inline(always)]
fn le32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

#[inline(always)]
fn le64(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// Offset of `result` in `struct nvme_passthru_cmd` (32 bits).
pub const RESULT_OFFSET: usize = 68;
/// Offset of `result` in `struct nvme_passthru_cmd64` (64 bits).
pub const RESULT64_OFFSET: usize = 72;

/// Quadword 0 without the flags and reserved bytes: opcode and nsid, as the entry's dword 0
/// (command id 0) and dword 1.
const Q0_ENTRY_MASK: u64 = 0xffff_ffff_0000_00ff;

impl UserCmd {
    /// Decodes the common part of `nvme_passthru_cmd`/`nvme_passthru_cmd64`/`nvme_uring_cmd`;
    /// `None` when `b` is shorter than 68 bytes.
    #[inline]
    pub fn parse(b: &[u8]) -> Option<Self> {
        // One length check; the reads below are at constant offsets inside these 68 bytes.
        let b: &[u8; 68] = b.first_chunk()?;
        let mut q = [0u64; URING_CMD_SIZE / 8];
        for (i, v) in q.iter_mut().take(8).enumerate() {
            *v = le64(b, 8 * i)?;
        }
        *q.last_mut()? = u64::from(le32(b, 64)?);
        Some(Self { q })
    }

    /// Decodes an io_uring command (`struct nvme_uring_cmd`, [`URING_CMD_SIZE`] bytes) from
    /// its nine quadwords: quadword `n` is the native value of bytes `8n..8n + 8` read as
    /// little-endian, as a ring's SQE payload is read with single loads. The same command as
    /// [`UserCmd::parse`] of those bytes (the reserved last four bytes are dropped).
    #[inline]
    pub const fn from_uring_qwords(q: &[u64; URING_CMD_SIZE / 8]) -> Self {
        let mut q = *q;
        q[8] &= 0xffff_ffff;
        Self { q }
    }

    /// A command from its fields (tests and tools; the driver decodes user memory).
    #[allow(clippy::too_many_arguments)]
    pub const fn from_fields(
        opcode: u8,
        flags: u8,
        nsid: u32,
        cdw2_3: [u32; 2],
        addr: u64,
        data_len: u32,
        cdw10_15: [u32; 6],
        timeout_ms: u32,
    ) -> Self {
        const fn pair(lo: u32, hi: u32) -> u64 {
            lo as u64 | ((hi as u64) << 32)
        }
        let [c10, c11, c12, c13, c14, c15] = cdw10_15;
        Self {
            q: [
                opcode as u64 | ((flags as u64) << 8) | ((nsid as u64) << 32),
                pair(cdw2_3[0], cdw2_3[1]),
                0,
                addr,
                (data_len as u64) << 32,
                pair(c10, c11),
                pair(c12, c13),
                pair(c14, c15),
                timeout_ms as u64,
            ],
        }
    }

    /// Opcode.
    #[inline]
    pub const fn opcode(&self) -> u8 {
        self.q[0] as u8
    }

    /// Command flags (must be 0: no fused commands, no SGL chosen by the user).
    #[inline]
    pub const fn flags(&self) -> u8 {
        (self.q[0] >> 8) as u8
    }

    /// Namespace id.
    #[inline]
    pub const fn nsid(&self) -> u32 {
        (self.q[0] >> 32) as u32
    }

    /// User address of the metadata buffer.
    #[inline]
    pub const fn metadata(&self) -> u64 {
        self.q[2]
    }

    /// User address of the data buffer.
    #[inline]
    pub const fn addr(&self) -> u64 {
        self.q[3]
    }

    /// Metadata length in bytes.
    #[inline]
    pub const fn metadata_len(&self) -> u32 {
        self.q[4] as u32
    }

    /// Data length in bytes.
    #[inline]
    pub const fn data_len(&self) -> u32 {
        (self.q[4] >> 32) as u32
    }

    /// Timeout in milliseconds (0: the driver's default).
    #[inline]
    pub const fn timeout_ms(&self) -> u32 {
        self.q[8] as u32
    }

    /// Whether the command moves data (`addr` and `data_len` both non-zero), as the C driver
    /// decides whether to map a buffer.
    #[inline]
    pub const fn has_data(&self) -> bool {
        self.addr() != 0 && self.data_len() != 0
    }

    /// Whether data flows to the controller (`nvme_is_write()`: opcode bit 0).
    #[inline]
    pub const fn is_write(&self) -> bool {
        self.opcode() & 1 != 0
    }

    /// The submission entry, without data pointer or command id, after the C driver's checks
    /// (`nvme_user_cmd()`): no flags, and on a namespace device (`ns_nsid` is `Some`) the nsid
    /// must be that namespace's. Opcode, nsid, dwords 2, 3 and 10..=15 are the user's (at
    /// the same offsets in both layouts); metadata and data pointer are the driver's to set.
    ///
    /// # Errors
    ///
    /// [`PassthruError::Invalid`].
    #[inline(always)]
    pub fn to_entry(&self, ns_nsid: Option<u32>) -> Result<SubmissionEntry, PassthruError> {
        if self.flags() != 0 {
            return Err(PassthruError::Invalid);
        }
        if ns_nsid.is_some_and(|n| n != self.nsid()) {
            return Err(PassthruError::Invalid);
        }
        let q = &self.q;
        Ok(SubmissionEntry::from_qwords([
            q[0] & Q0_ENTRY_MASK,
            q[1],
            0,
            0,
            0,
            q[5],
            q[6],
            q[7],
        ]))
    }
}

/// Command Supported (`NVME_CMD_EFFECTS_CSUPP`).
pub const EFFECTS_CSUPP: u32 = 1 << 0;
/// Logical Block Content Change (`NVME_CMD_EFFECTS_LBCC`).
pub const EFFECTS_LBCC: u32 = 1 << 1;
/// UUID selection supported (`NVME_CMD_EFFECTS_UUID_SEL`).
const EFFECTS_UUID_SEL: u32 = 1 << 19;
/// Scope (`NVME_CMD_EFFECTS_SCOPE_MASK`, bits 20..=31).
const EFFECTS_SCOPE_MASK: u32 = 0xfff0_0000;
/// Command Submission and Execution (`NVME_CMD_EFFECTS_CSE_MASK`, bits 16..=18).
const EFFECTS_CSE_MASK: u32 = 7 << 16;
/// Get Log Page identifier of the Commands Supported and Effects log.
pub const LOG_CMD_EFFECTS: u8 = 0x05;
/// First vendor specific opcode (`nvme_cmd_vendor_start`).
const VENDOR_START: u8 = 0x80;
/// The fabrics command opcode.
const FABRICS: u8 = 0x7f;

/// The I/O command effects the permission check uses: the controller's Commands Supported and
/// Effects log (I/O part), read in place, with the known NVM effects added
/// (`nvme_init_known_nvm_effects()`). A view, so the kernel keeps the 4 KiB log on the heap and
/// nothing large on its stack.
#[derive(Clone, Copy, Debug)]
pub struct IoEffects<'a>(Option<&'a [u8]>);

impl<'a> IoEffects<'a> {
    /// From a Commands Supported and Effects log page (4096 bytes: 256 admin then 256 I/O
    /// dwords), or none (`None`: the controller has no such log); missing bytes read as 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{IoEffects, EFFECTS_CSUPP, EFFECTS_LBCC};
    /// let e = IoEffects::from_log(None);
    /// assert_eq!(e.get(0x01), EFFECTS_LBCC);
    /// assert_eq!(e.get(0x02), 0);
    /// let mut log = [0u8; 4096];
    /// log[1024 + 8..1024 + 12].copy_from_slice(&EFFECTS_CSUPP.to_le_bytes()); // Read
    /// assert_eq!(IoEffects::from_log(Some(&log)).get(0x02), EFFECTS_CSUPP);
    /// assert_eq!(IoEffects::from_log(Some(&log[..100])).get(0x02), 0);
    /// ```
    #[inline]
    pub fn from_log(log: Option<&'a [u8]>) -> Self {
        Self(log)
    }

    /// The effects of I/O opcode `op`.
    #[inline]
    pub fn get(&self, op: u8) -> u32 {
        let mut e = self
            .0
            .and_then(|l| le32(l, 1024 + 4 * usize::from(op)))
            .unwrap_or(0);
        if matches!(op, 0x01 | 0x08 | 0x04) {
            e |= EFFECTS_LBCC;
        }
        // An I/O command never freezes the queues (`nvme_command_effects()`).
        e & !EFFECTS_CSE_MASK
    }
}

/// Who sends a command and where: the inputs of `nvme_cmd_allowed()`.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    /// The caller has `CAP_SYS_ADMIN`.
    pub sys_admin: bool,
    /// The file was opened for writing.
    pub open_for_write: bool,
}

/// What `nvme_cmd_allowed()` of Linux 6.12 decides about a command before it looks at the
/// caller's capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Allowed to anyone who could open the file.
    Allowed,
    /// Allowed only with `CAP_SYS_ADMIN` (the C function's `goto admin`): the one case in
    /// which the kernel asks `capable()`, which also records the capability's use (and may
    /// write an audit record when it is missing), so callers ask it only here.
    NeedsSysAdmin,
    /// Refused to everyone (Set Features the driver manages).
    Denied,
}

/// The [`Permission`] of `cmd` on the admin queue (`io` is `None`) or on a namespace with the
/// given I/O effects, for a file opened for writing or not (`nvme_cmd_allowed()` of Linux
/// 6.12 up to its `capable(CAP_SYS_ADMIN)`).
///
/// # Examples
///
/// ```
/// use nvme::{cmd_permission, IoEffects, Permission, SubmissionEntry};
/// let fx = IoEffects::from_log(None);
/// // Without a Commands Supported and Effects log, I/O commands need CAP_SYS_ADMIN.
/// assert_eq!(cmd_permission(&SubmissionEntry::new(0x02, 1), Some(&fx), true), Permission::NeedsSysAdmin);
/// let mut id = SubmissionEntry::new(0x06, 0);
/// id.set_cdw(10, 1);
/// assert_eq!(cmd_permission(&id, None, false), Permission::Allowed);
/// let mut sf = SubmissionEntry::new(0x09, 0);
/// sf.set_cdw(10, 0x07);                                   // Number of Queues
/// assert_eq!(cmd_permission(&sf, None, true), Permission::Denied);
/// ```
#[inline(always)]
pub fn cmd_permission(
    cmd: &SubmissionEntry,
    io: Option<&IoEffects<'_>>,
    open_for_write: bool,
) -> Permission {
    let op = cmd.opcode();
    if op >= VENDOR_START || op == FABRICS {
        return Permission::NeedsSysAdmin;
    }
    let Some(fx) = io else {
        return admin_permission(cmd);
    };
    let effects = fx.get(op);
    if effects & EFFECTS_CSUPP == 0 {
        return Permission::NeedsSysAdmin;
    }
    if effects & !(EFFECTS_CSUPP | EFFECTS_LBCC | EFFECTS_UUID_SEL | EFFECTS_SCOPE_MASK) != 0 {
        return Permission::NeedsSysAdmin;
    }
    if (op & 1 != 0 || effects & EFFECTS_LBCC != 0) && !open_for_write {
        return Permission::NeedsSysAdmin;
    }
    Permission::Allowed
}

/// Whether `caller` may send `cmd`: on the admin queue (`io` is `None`) or on a namespace
/// with the given I/O effects, following `nvme_cmd_allowed()` of Linux 6.12 ([`cmd_permission`]
/// with the capability already known).
///
/// # Examples
///
/// ```
/// use nvme::{cmd_allowed, Caller, IoEffects, SubmissionEntry};
/// let user = Caller { sys_admin: false, open_for_write: false };
/// let fx = IoEffects::from_log(None);
/// // Identify Controller (CNS 1) is allowed to anyone, Get Log Page is not.
/// let mut id = SubmissionEntry::new(0x06, 0);
/// id.set_cdw(10, 1);
/// assert!(cmd_allowed(&id, None, user));
/// assert!(!cmd_allowed(&SubmissionEntry::new(0x02, 0), None, user));
/// // A write needs the file open for writing.
/// assert!(!cmd_allowed(&SubmissionEntry::new(0x01, 1), Some(&fx), user));
/// ```
#[inline]
pub fn cmd_allowed(cmd: &SubmissionEntry, io: Option<&IoEffects<'_>>, caller: Caller) -> bool {
    match cmd_permission(cmd, io, caller.open_for_write) {
        Permission::Allowed => true,
        Permission::NeedsSysAdmin => caller.sys_admin,
        Permission::Denied => false,
    }
}

/// `nvme_admin_cmd_allowed()`: a few Identify CNS values for anyone, a few Set Features never
/// (the driver manages them), everything else with `CAP_SYS_ADMIN`.
fn admin_permission(cmd: &SubmissionEntry) -> Permission {
    let cdw10 = cmd.cdw(10).unwrap_or(0);
    match cmd.opcode() {
        // Identify: Namespace, I/O command set specific namespace/controller, Controller,
        // command set independent namespace.
        0x06 => {
            if matches!(cdw10 & 0xff, 0x00 | 0x05 | 0x08 | 0x06 | 0x01) {
                return Permission::Allowed;
            }
        }
        // Set Features: Keep Alive (not fabrics), Host Behavior, Host Memory Buffer,
        // Number of Queues, Autonomous Power State Transition.
        0x09 => {
            if matches!(cdw10 & 0xff, 0x0f | 0x16 | 0x0d | 0x07 | 0x0c) {
                return Permission::Denied;
            }
        }
        _ => {}
    }
    Permission::NeedsSysAdmin
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Caller = Caller {
        sys_admin: true,
        open_for_write: false,
    };
    const USER_RW: Caller = Caller {
        sys_admin: false,
        open_for_write: true,
    };

    #[test]
    fn ioctl_numbers_match_the_uapi_header() {
        assert_eq!(IOCTL_ID, 0x4e40);
        assert_eq!(IOCTL_ADMIN_CMD, 0xc048_4e41);
        assert_eq!(IOCTL_IO_CMD, 0xc048_4e43);
        assert_eq!(IOCTL_ADMIN64_CMD, 0xc050_4e47);
        assert_eq!(IOCTL_IO64_CMD, 0xc050_4e48);
        assert_eq!(URING_CMD_IO, 0xc048_4e80);
        assert_eq!(URING_CMD_ADMIN, 0xc048_4e82);
    }

    #[test]
    fn uring_qwords_decode_as_the_bytes_do() {
        // Reference: each field read from the bytes at its `struct nvme_uring_cmd` offset
        // (include/uapi/linux/nvme_ioctl.h); the decoder gets the same bytes as the nine
        // little-endian quadwords a ring's SQE payload is read as. Reserved bytes (2..4,
        // 68..72) must not show anywhere, so the entry is compared too.
        let le32 = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let le64 = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..1000 {
            let mut b = [0u8; URING_CMD_SIZE];
            for x in b.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x = seed as u8;
            }
            if round % 2 == 0 {
                b[1] = 0; // flags: valid half the time
            }
            let mut q = [0u64; URING_CMD_SIZE / 8];
            for (i, v) in q.iter_mut().enumerate() {
                *v = le64(&b, 8 * i);
            }
            let c = UserCmd::from_uring_qwords(&q);
            assert_eq!(c.opcode(), b[0]);
            assert_eq!(c.flags(), b[1]);
            assert_eq!(c.nsid(), le32(&b, 4));
            assert_eq!(c.metadata(), le64(&b, 16));
            assert_eq!(c.addr(), le64(&b, 24));
            assert_eq!(c.metadata_len(), le32(&b, 32));
            assert_eq!(c.data_len(), le32(&b, 36));
            assert_eq!(c.timeout_ms(), le32(&b, 64));
            assert_eq!(c, UserCmd::parse(&b).unwrap());
            match c.to_entry(None) {
                Ok(e) => {
                    assert_eq!(b[1], 0);
                    let w = e.to_bytes();
                    assert_eq!(w[0], b[0]);
                    assert_eq!(w[1..4], [0; 3]);
                    assert_eq!(w[4..16], b[4..16]);
                    assert_eq!(w[16..40], [0; 24]);
                    assert_eq!(w[40..64], b[40..64]);
                }
                Err(e) => {
                    assert_ne!(b[1], 0);
                    assert_eq!(e, PassthruError::Invalid);
                }
            }
        }
    }

    #[test]
    fn parse_reads_every_field_at_its_offset() {
        let mut b = [0u8; PASSTHRU_CMD64_SIZE];
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as u8;
        }
        let c = UserCmd::parse(&b).unwrap();
        assert_eq!(c.opcode(), 0);
        assert_eq!(c.flags(), 1);
        assert_eq!(c.nsid(), u32::from_le_bytes([4, 5, 6, 7]));
        assert_eq!(
            c.addr(),
            u64::from_le_bytes([24, 25, 26, 27, 28, 29, 30, 31])
        );
        assert_eq!(c.data_len(), u32::from_le_bytes([36, 37, 38, 39]));
        assert_eq!(c.to_entry(None), Err(PassthruError::Invalid)); // flags byte 1
        let e = UserCmd::parse(&{
            let mut z = b;
            z[1] = 0;
            z
        })
        .unwrap()
        .to_entry(None)
        .unwrap();
        assert_eq!(e.cdw(15), Some(u32::from_le_bytes([60, 61, 62, 63])));
        assert_eq!(c.timeout_ms(), u32::from_le_bytes([64, 65, 66, 67]));
        assert!(UserCmd::parse(&b[..67]).is_none());
        assert_eq!(UserCmd::parse(&b[..68]), Some(c));
    }

    #[test]
    fn entry_checks_flags_and_nsid() {
        let c = UserCmd::from_fields(0x02, 0, 1, [0; 2], 0, 0, [0; 6], 0);
        assert!(c.to_entry(Some(1)).is_ok());
        assert_eq!(c.to_entry(Some(2)), Err(PassthruError::Invalid));
        assert!(c.to_entry(None).is_ok());
        let c = UserCmd::from_fields(0x02, 0x40, 1, [0; 2], 0, 0, [0; 6], 0);
        assert_eq!(c.to_entry(None), Err(PassthruError::Invalid));
        let c = UserCmd::from_fields(0x02, 0, 1, [7, 8], 0, 0, [10, 11, 12, 13, 14, 15], 0);
        let e = c.to_entry(None).unwrap();
        assert_eq!((e.cdw(2), e.cdw(3)), (Some(7), Some(8)));
        assert_eq!((e.cdw(10), e.cdw(15)), (Some(10), Some(15)));
        assert_eq!(e.cid(), 0);
    }

    /// The entry's wire bytes against the user command's own: the uapi structure puts opcode,
    /// nsid, cdw2-3 and cdw10-15 at their SQE offsets, and nothing else may reach the entry
    /// (flags are refused, the command id, metadata and data pointer are the driver's).
    #[test]
    fn entry_bytes_are_the_commands_at_the_sqe_offsets() {
        let mut b = [0u8; PASSTHRU_CMD_SIZE];
        for (i, x) in b.iter_mut().enumerate() {
            *x = 0x80 | i as u8;
        }
        b[1] = 0; // flags
        let e = UserCmd::parse(&b).unwrap().to_entry(None).unwrap();
        let w = e.to_bytes();
        for (i, &x) in w.iter().enumerate() {
            let want = match i {
                0 | 4..=15 | 40..=63 => b[i],
                _ => 0,
            };
            assert_eq!(x, want, "SQE byte {i}");
        }
    }

    #[test]
    fn vendor_and_fabrics_need_sys_admin() {
        let fx = IoEffects::from_log(Some(&[0xffu8; 4096]));
        for op in [0x7f, 0x80, 0xff] {
            let e = SubmissionEntry::new(op, 1);
            assert!(!cmd_allowed(&e, None, USER_RW));
            assert!(!cmd_allowed(&e, Some(&fx), USER_RW));
            assert!(cmd_allowed(&e, None, ROOT));
        }
    }

    #[test]
    fn admin_rules() {
        for (cns, ok) in [
            (0, true),
            (1, true),
            (2, false),
            (5, true),
            (6, true),
            (8, true),
        ] {
            let mut e = SubmissionEntry::new(0x06, 0);
            e.set_cdw(10, cns);
            assert_eq!(cmd_allowed(&e, None, USER_RW), ok, "cns {cns}");
        }
        for fid in [0x07, 0x0c, 0x0d, 0x0f, 0x16] {
            let mut e = SubmissionEntry::new(0x09, 0);
            e.set_cdw(10, fid);
            assert!(!cmd_allowed(&e, None, ROOT), "fid {fid}");
        }
        let mut e = SubmissionEntry::new(0x09, 0);
        e.set_cdw(10, 0x06);
        assert!(cmd_allowed(&e, None, ROOT));
        assert!(!cmd_allowed(&e, None, USER_RW));
    }

    #[test]
    fn io_rules_follow_the_effects() {
        let mut log = [0u8; 4096];
        let put = |log: &mut [u8; 4096], op: usize, v: u32| {
            log[1024 + 4 * op..1028 + 4 * op].copy_from_slice(&v.to_le_bytes());
        };
        put(&mut log, 0x02, EFFECTS_CSUPP);
        put(&mut log, 0x01, EFFECTS_CSUPP);
        put(&mut log, 0x05, EFFECTS_CSUPP | (1 << 2)); // NCC: intrusive
        let fx = IoEffects::from_log(Some(&log));
        let ro = Caller {
            sys_admin: false,
            open_for_write: false,
        };
        assert!(cmd_allowed(&SubmissionEntry::new(0x02, 1), Some(&fx), ro));
        assert!(!cmd_allowed(&SubmissionEntry::new(0x01, 1), Some(&fx), ro));
        assert!(cmd_allowed(
            &SubmissionEntry::new(0x01, 1),
            Some(&fx),
            USER_RW
        ));
        assert!(!cmd_allowed(
            &SubmissionEntry::new(0x05, 1),
            Some(&fx),
            USER_RW
        ));
        assert!(!cmd_allowed(
            &SubmissionEntry::new(0x09, 1),
            Some(&fx),
            USER_RW
        ));
        assert!(cmd_allowed(&SubmissionEntry::new(0x09, 1), Some(&fx), ROOT));
    }
}
