// SPDX-License-Identifier: GPL-2.0

//! NVMe generic character devices with the C driver's ABI: a controller device
//! `/dev/rnvme<C>` and one per namespace `/dev/rng<C>n<N>` (names apart from the C driver's
//! `nvme*`/`ng*`), with the passthrough ioctls and io_uring commands of
//! `drivers/nvme/host/ioctl.c` (`nvme_dev_ioctl()`, `nvme_ns_chr_ioctl()`,
//! `nvme_ns_chr_uring_cmd()`).
//!
//! C header: [`include/uapi/linux/nvme_ioctl.h`](srctree/include/uapi/linux/nvme_ioctl.h)
//!
//! Every user value is untrusted: the command is copied once from user space and decoded by
//! `nvme::UserCmd`, permissions follow `nvme::cmd_permission` (the C driver's
//! `nvme_cmd_allowed()`), and data buffers are reached only through the block layer's user
//! mapping (I/O) or checked copies (admin). Open files keep the devices' state; once the
//! controller is removed every call fails with `ENODEV`.

mod admin_cmd;
mod gate;
mod io_cmd;
mod premap;

pub(crate) use io_cmd::{is_user_op, prepare, RqPassthru};
pub(crate) use premap::{load_params as load_premap_params, Stats as PremapStats};

use kernel::{prelude::*, sync::Arc, uaccess::UserSlice};
use kernel_glue::{
    block::mq::{GenDisk, TagSet},
    chardev::{capable_sys_admin, CharDev, FileOps, Issued, UringCmd},
    user_rq::DiskRef,
};
use nvme::{
    cmd_permission, IoEffects, Permission, SubmissionEntry, UserCmd, IOCTL_ADMIN64_CMD,
    IOCTL_ADMIN_CMD, IOCTL_ID, IOCTL_IO64_CMD, IOCTL_IO_CMD, PASSTHRU_CMD64_SIZE,
    PASSTHRU_CMD_SIZE, RESULT64_OFFSET, RESULT_OFFSET, URING_CMD_ADMIN, URING_CMD_IO,
    URING_CMD_SIZE,
};

use crate::{
    io::{IoData, IoOps},
    phases::{Phase, Stamp},
};
use gate::Gate;
use premap::{FileTags, Registry, Stats};

/// `NVME_IOCTL_RESET`, `NVME_IOCTL_SUBSYS_RESET`, `NVME_IOCTL_RESCAN`: privileged, not
/// supported by rnvme.
const IOCTL_PRIVILEGED: [u32; 3] = [0x4e44, 0x4e45, 0x4e46];

/// `EOPNOTSUPP` (not among the kernel crate's error constants).
fn eopnotsupp() -> Error {
    Error::from_errno(-95)
}

/// A namespace as its character device sees it.
pub(crate) struct NsInfo {
    /// Namespace id.
    nsid: u32,
    /// The namespace's disk (its queue carries the I/O commands).
    disk: DiskRef,
}

/// What the character devices of one controller use while it is bound.
pub(crate) struct Inner {
    /// I/O queues, admin queue, DMA pool, device.
    io: Arc<IoData>,
    /// The I/O tag set (a controller reset after an admin command timeout quiesces it).
    set: Arc<TagSet<IoOps>>,
    /// The Commands Supported and Effects log, if the controller has one (permission checks).
    effects_log: Option<KVec<u8>>,
    /// The namespaces with a disk.
    ns: KVec<NsInfo>,
    /// Premapped-tag counters (debugfs `rnvme/rnvme<C>/premap`).
    stats: Arc<Stats>,
    /// The most data bytes one user admin command may carry: the controller's transfer limit
    /// (`nvme_set_ctrl_limits()` gives the admin queue the namespaces' `max_hw_sectors`).
    admin_max_bytes: u32,
}

/// The state of one controller's character devices, shared with their open files.
pub(crate) struct Shared {
    gate: Gate<Inner>,
    /// The open files' premapped tags (released when the controller goes).
    files: Registry,
}

/// The state of one open file: its premapped tags.
pub(crate) struct PtFile {
    shared: Arc<Shared>,
    tags: Arc<FileTags>,
}

impl Drop for PtFile {
    fn drop(&mut self) {
        // Last close (no call on the file runs): release the file's tags (requests in flight
        // keep their own references).
        self.tags.close();
        self.shared.files.remove(&self.tags);
    }
}

/// The operations of one character device: the controller's (`ns` is `None`) or a
/// namespace's (index into `Inner::ns`).
pub(crate) struct DevFile {
    shared: Arc<Shared>,
    ns: Option<usize>,
}

/// The character devices of a controller; removing them closes the gate (waiting for calls in
/// progress), so nothing of the controller is used afterwards.
pub(crate) struct Devices {
    shared: Arc<Shared>,
    _ctrl: CharDev<DevFile>,
    _ns: KVec<CharDev<DevFile>>,
}

impl Drop for Devices {
    fn drop(&mut self) {
        self.shared.gate.close();
        // No call is inside any more, so no tag is made from now on: release every file's.
        self.shared.files.close_all();
    }
}

/// Reads the Commands Supported and Effects log (none if the controller refuses it).
fn read_effects(io: &IoData) -> Option<KVec<u8>> {
    io.admin
        .exec_read_page(&io.dev, |d| {
            let mut e = SubmissionEntry::new(nvme::opcode::GET_LOG_PAGE, 0);
            // NUMDL = 4096 / 4 - 1, log identifier; command set NVM (CSI 0).
            e.set_cdw(10, (1023 << 16) | u32::from(nvme::LOG_CMD_EFFECTS));
            e.set_data_pointer(d);
            e
        })
        .ok()
}

impl Devices {
    /// Creates `/dev/rnvme<instance>` and `/dev/rng<instance>n<nsid>` for each disk, counting
    /// in the premap counters of `io`. (Not inlined: probe's stack frame is already large.)
    #[inline(never)]
    pub(crate) fn new(
        instance: u32,
        io: &Arc<IoData>,
        set: &Arc<TagSet<IoOps>>,
        disks: &[GenDisk<IoOps>],
    ) -> Result<Self> {
        // Every namespace's queue has the controller's limit; without a namespace, the largest
        // transfer the driver ever allows (`MAX_ADMIN_DATA`).
        let admin_max_bytes = disks
            .first()
            .map_or(admin_cmd::MAX_ADMIN_DATA, |d| d.disk_ref().max_hw_bytes())
            .min(admin_cmd::MAX_ADMIN_DATA);
        let mut ns = KVec::new();
        for d in disks {
            ns.push(
                NsInfo {
                    nsid: d.queue_data().nsid,
                    disk: d.disk_ref(),
                },
                GFP_KERNEL,
            )?;
        }
        let nsids: KVec<u32> = {
            let mut v = KVec::new();
            for n in ns.iter() {
                v.push(n.nsid, GFP_KERNEL)?;
            }
            v
        };
        let inner = Arc::new(
            Inner {
                io: io.clone(),
                set: set.clone(),
                effects_log: read_effects(io),
                ns,
                stats: io.premap_stats.clone(),
                admin_max_bytes,
            },
            GFP_KERNEL,
        )?;
        let shared = Arc::new(
            Shared {
                gate: Gate::new(inner)?,
                files: Registry::new()?,
            },
            GFP_KERNEL,
        )?;
        let ctrl = CharDev::new(
            format_args!("rnvme{}", instance),
            Arc::new(
                DevFile {
                    shared: shared.clone(),
                    ns: None,
                },
                GFP_KERNEL,
            )?,
        )?;
        let mut devs = KVec::new();
        for (i, nsid) in nsids.iter().enumerate() {
            devs.push(
                CharDev::new(
                    format_args!("rng{}n{}", instance, nsid),
                    Arc::new(
                        DevFile {
                            shared: shared.clone(),
                            ns: Some(i),
                        },
                        GFP_KERNEL,
                    )?,
                )?,
                GFP_KERNEL,
            )?;
        }
        Ok(Self {
            shared,
            _ctrl: ctrl,
            _ns: devs,
        })
    }
}

/// Which queue a decoded command goes to.
enum Target<'a> {
    Admin,
    Io(&'a NsInfo),
}

impl DevFile {
    /// The namespace of this device, if it is a namespace device.
    fn ns<'a>(&self, inner: &'a Inner) -> Result<Option<&'a NsInfo>> {
        match self.ns {
            None => Ok(None),
            Some(i) => inner.ns.get(i).map(Some).ok_or(ENODEV),
        }
    }

    /// Checks `cmd` for `target` and builds its command (`nvme_user_cmd()` checks). Inlined:
    /// once per I/O command, and a call costs more than its frame under emulation.
    #[inline(always)]
    fn check(
        &self,
        inner: &Inner,
        cmd: &UserCmd,
        target: &Target<'_>,
        write: bool,
    ) -> Result<SubmissionEntry> {
        // I/O commands must name the namespace; admin commands are not checked, even on a
        // namespace device (`nvme_ctrl_ioctl()` passes no namespace).
        let check_nsid = match target {
            Target::Io(n) => Some(n.nsid),
            Target::Admin => None,
        };
        let entry = cmd.to_entry(check_nsid).map_err(|_| EINVAL)?;
        let fx = IoEffects::from_log(inner.effects_log.as_deref());
        let fx = match target {
            Target::Admin => None,
            Target::Io(_) => Some(&fx),
        };
        // `capable()` only where `nvme_cmd_allowed()` asks it: it marks the task as having
        // used the capability and, when the capability is missing, may write an audit record.
        let allowed = match cmd_permission(&entry, fx, write) {
            Permission::Allowed => true,
            Permission::NeedsSysAdmin => capable_sys_admin(),
            Permission::Denied => false,
        };
        if !allowed {
            return Err(EACCES);
        }
        Ok(entry)
    }

    /// `NVME_IOCTL_(ADMIN|IO)(64)_CMD`: reads the command at `arg`, runs it, writes the result
    /// back; returns the NVMe status.
    fn user_cmd(&self, arg: usize, admin: bool, wide: bool, write: bool) -> Result<isize> {
        let inner = self.shared.gate.enter()?;
        let size = if wide {
            PASSTHRU_CMD64_SIZE
        } else {
            PASSTHRU_CMD_SIZE
        };
        let mut b = [0u8; PASSTHRU_CMD64_SIZE];
        let raw = b.get_mut(..size).ok_or(EINVAL)?;
        UserSlice::new(arg, size).reader().read_slice(raw)?;
        let cmd = UserCmd::parse(raw).ok_or(EINVAL)?;
        let target = if admin {
            Target::Admin
        } else {
            match self.ns(&inner)? {
                Some(n) => Target::Io(n),
                // The controller device sends I/O to its only namespace
                // (`nvme_dev_user_cmd()`).
                None => match inner.ns.as_slice() {
                    [] => return Err(ENOTTY),
                    [n] => Target::Io(n),
                    _ => return Err(EINVAL),
                },
            }
        };
        let entry = self.check(&inner, &cmd, &target, write)?;
        let (status, result) = match target {
            Target::Admin => admin_cmd::exec(&inner, &cmd, entry, None)?,
            Target::Io(n) => io_cmd::exec(&inner, &self.shared.files, n, &cmd, &entry)?,
        };
        if status >= 0 {
            let (off, bytes): (usize, KVec<u8>) = if wide {
                (RESULT64_OFFSET, slice_vec(&result.to_le_bytes())?)
            } else {
                (RESULT_OFFSET, slice_vec(&(result as u32).to_le_bytes())?)
            };
            UserSlice::new(arg.checked_add(off).ok_or(EFAULT)?, bytes.len())
                .writer()
                .write_slice(&bytes)?;
        }
        Ok(status as isize)
    }
}

/// `s` as a vector (the result bytes to write back).
fn slice_vec(s: &[u8]) -> Result<KVec<u8>> {
    let mut v = KVec::new();
    v.extend_from_slice(s, GFP_KERNEL)?;
    Ok(v)
}

impl FileOps for DevFile {
    type File = PtFile;

    fn open(&self) -> Result<PtFile> {
        let tags = FileTags::new()?;
        self.shared.files.add(&tags)?;
        Ok(PtFile {
            shared: self.shared.clone(),
            tags,
        })
    }

    fn ioctl(&self, _file: &PtFile, cmd: u32, arg: usize, write: bool) -> Result<isize> {
        match (cmd, self.ns) {
            (IOCTL_ADMIN_CMD, _) => self.user_cmd(arg, true, false, write),
            (IOCTL_ADMIN64_CMD, _) => self.user_cmd(arg, true, true, write),
            (IOCTL_IO_CMD, _) => self.user_cmd(arg, false, false, write),
            (IOCTL_IO64_CMD, Some(_)) => self.user_cmd(arg, false, true, write),
            (IOCTL_ID, Some(_)) => {
                let inner = self.shared.gate.enter()?;
                Ok(self.ns(&inner)?.map_or(0, |n| n.nsid as isize))
            }
            (c, None) if IOCTL_PRIVILEGED.contains(&c) => {
                if capable_sys_admin() {
                    Err(eopnotsupp())
                } else {
                    Err(EACCES)
                }
            }
            _ => Err(ENOTTY),
        }
    }

    fn uring_cmd(&self, file: &PtFile, u: &UringCmd<'_>, write: bool) -> Result<Issued> {
        let stamp = Stamp::now();
        // The controller device's commands cannot be polled; the 72-byte command needs
        // 128-byte SQEs and its result dword 32-byte CQEs (`nvme_dev_uring_cmd()`,
        // `nvme_ns_uring_cmd()`, `nvme_uring_cmd_checks()`).
        if (self.ns.is_none() && u.iopoll()) || !u.sqe128() || !u.cqe32() {
            return Err(eopnotsupp());
        }
        // I/O commands on a namespace's device, admin commands on the controller's.
        let admin = match (u.op(), self.ns) {
            (URING_CMD_IO, Some(_)) => false,
            (URING_CMD_ADMIN, None) => true,
            _ => return Err(ENOTTY),
        };
        // Admin commands are polled synchronously: run them where blocking is allowed.
        if admin && u.nonblock() {
            return Err(EAGAIN);
        }
        let inner = self.shared.gate.enter()?;
        let cmd = UserCmd::from_uring_qwords(&u.read_qwords::<{ URING_CMD_SIZE / 8 }>()?);
        if admin {
            let entry = self.check(&inner, &cmd, &Target::Admin, write)?;
            // Admin data goes through a bounce buffer: from and to the registered buffer's
            // pages when the command names one (`IORING_URING_CMD_FIXED`).
            let (status, result) = admin_cmd::exec(&inner, &cmd, entry, u.fixed().then_some(u))?;
            return Ok(u.done(status, result));
        }
        let ns = self.ns(&inner)?.ok_or(ENOTTY)?;
        let entry = self.check(&inner, &cmd, &Target::Io(ns), write)?;
        let stamp = inner.io.phases.end(Phase::Entry, stamp);
        io_cmd::issue(&inner, file, ns, &cmd, &entry, u, stamp)
    }
}
