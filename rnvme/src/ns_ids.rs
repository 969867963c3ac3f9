//! Namespace identifiers (EUI-64, NGUID, UUID) and the `wwid` a namespace's disk shows in
//! sysfs, as the Linux NVMe driver gathers and prints them: `nvme_identify_ns_descs()` and
//! `nvme_process_ns_desc()` (the Namespace Identification Descriptor list, CNS 03h),
//! `nvme_ns_info_from_identify()` (EUI64 and NGUID of Identify Namespace) in
//! `drivers/nvme/host/core.c`, and `wwid_show()` in `drivers/nvme/host/sysfs.c`.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)

use core::fmt;

use crate::{identify_ctrl::trimmed, IDENTIFY_SIZE};

/// The lowest controller version (VS register) whose Namespace Identification Descriptor list
/// is read (`nvme_identify_ns_descs()`: NVMe 1.3).
pub const NS_DESC_MIN_VERSION: u32 = 0x0001_0300;

/// A namespace's identifiers; all-zero fields are absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NsIds {
    /// IEEE Extended Unique Identifier (EUI64).
    pub eui64: [u8; 8],
    /// Namespace Globally Unique Identifier (NGUID).
    pub nguid: [u8; 16],
    /// Namespace UUID, in the order the controller gives it (RFC 4122, big-endian fields).
    pub uuid: [u8; 16],
}

/// Why a descriptor list was cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NsDescError {
    /// A descriptor of a known type (NIDT) had the wrong length (NIDL): the C driver warns
    /// "ctrl returned bogus length" and stops there, keeping what came before.
    BogusLength {
        /// NIDT.
        nidt: u8,
        /// NIDL.
        nidl: u8,
    },
}

impl NsIds {
    /// Reads the Namespace Identification Descriptor list (4096 bytes) into `self` as
    /// `nvme_identify_ns_descs()` does: descriptors until one of length 0 or one past the end;
    /// types 1 (EUI64, 8 bytes), 2 (NGUID, 16) and 3 (UUID, 16) are taken, type 4 (CSI, 1) and
    /// unknown types are skipped. With `bogus_nid` (the controller's identifiers are known to be
    /// wrong, [`bogus_nid`]) the lengths are still checked but nothing is taken.
    ///
    /// # Errors
    ///
    /// [`NsDescError::BogusLength`] at the first known type with the wrong length; what came
    /// before it is kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{NsDescError, NsIds};
    /// let mut list = [0u8; 4096];
    /// list[..4].copy_from_slice(&[3, 16, 0, 0]);               // UUID
    /// list[4..20].copy_from_slice(&[0x11; 16]);
    /// list[20..24].copy_from_slice(&[1, 8, 0, 0]);             // EUI64
    /// list[24..32].copy_from_slice(&[0x22; 8]);
    /// let mut ids = NsIds::default();
    /// ids.read_descriptors(&list, false)?;
    /// assert_eq!((ids.uuid, ids.eui64, ids.nguid), ([0x11; 16], [0x22; 8], [0; 16]));
    /// list[20..24].copy_from_slice(&[1, 9, 0, 0]);             // EUI64 of 9 bytes: bogus
    /// let mut ids = NsIds::default();
    /// assert_eq!(ids.read_descriptors(&list, false), Err(NsDescError::BogusLength { nidt: 1, nidl: 9 }));
    /// assert_eq!(ids.uuid, [0x11; 16]);
    /// # Ok::<(), NsDescError>(())
    /// ```
    pub fn read_descriptors(&mut self, list: &[u8], bogus_nid: bool) -> Result<(), NsDescError> {
        let list = list.get(..IDENTIFY_SIZE).unwrap_or(list);
        let mut pos = 0usize;
        while let Some(&[nidt, nidl, _, _]) = list.get(pos..pos + 4) {
            if nidl == 0 {
                break;
            }
            let Some(nid) = list.get(pos + 4..pos + 4 + usize::from(nidl)) else {
                break;
            };
            let dst: Option<&mut [u8]> = match (nidt, nidl) {
                (1, 8) => Some(&mut self.eui64),
                (2, 16) => Some(&mut self.nguid),
                (3, 16) => Some(&mut self.uuid),
                (4, 1) => None,
                (1..=4, _) => return Err(NsDescError::BogusLength { nidt, nidl }),
                _ => None,
            };
            if let Some(d) = dst {
                if !bogus_nid {
                    d.copy_from_slice(nid);
                }
            }
            pos += 4 + usize::from(nidl);
        }
        Ok(())
    }

    /// Takes EUI64 (controllers of version 1.1 or later) and NGUID (1.2 or later) from the
    /// Identify Namespace data `id` where the descriptor list gave none, as
    /// `nvme_ns_info_from_identify()` does; nothing with `bogus_nid`. A short `id` gives
    /// nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::NsIds;
    /// let mut id = [0u8; 4096];
    /// id[104..120].copy_from_slice(&[0x33; 16]);               // NGUID
    /// id[120..128].copy_from_slice(&[0x44; 8]);                // EUI64
    /// let mut ids = NsIds::default();
    /// ids.fill_from_identify(&id, 0x0001_0100, false);         // NVMe 1.1: EUI64 only
    /// assert_eq!((ids.eui64, ids.nguid), ([0x44; 8], [0; 16]));
    /// ids.fill_from_identify(&id, 0x0001_0400, false);
    /// assert_eq!(ids.nguid, [0x33; 16]);
    /// ```
    pub fn fill_from_identify(&mut self, id: &[u8], vs: u32, bogus_nid: bool) {
        if bogus_nid {
            return;
        }
        if let Some(e) = id.get(120..128) {
            if vs >= 0x0001_0100 && is_zero(&self.eui64) {
                self.eui64.copy_from_slice(e);
            }
        }
        if let Some(g) = id.get(104..120) {
            if vs >= 0x0001_0200 && is_zero(&self.nguid) {
                self.nguid.copy_from_slice(g);
            }
        }
    }
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Whether the controller with PCI ids `vendor`:`device` reports namespace identifiers that
/// must be ignored (`NVME_QUIRK_BOGUS_NID` in `drivers/nvme/host/pci.c`). Only QEMU's emulated
/// controller (1b36:0010) is listed; the C driver's table names many more devices.
pub const fn bogus_nid(vendor: u16, device: u16) -> bool {
    vendor == 0x1b36 && device == 0x0010
}

/// A namespace's world-wide identifier as `wwid_show()` prints it (without the newline):
/// `uuid.<uuid>` when there is a UUID, else `eui.<nguid>`, else `eui.<eui64>`, else
/// `nvme.<vid>-<serial>-<model>-<nsid>` with the serial and model numbers in hex, trailing
/// spaces and NULs removed.
///
/// # Examples
///
/// ```
/// use nvme::{NsIds, Wwid};
/// let mut sn = [b' '; 20];
/// sn[..7].copy_from_slice(b"rnvme-b");
/// let mut mn = [b' '; 40];
/// mn[..14].copy_from_slice(b"QEMU NVMe Ctrl");
/// let w = Wwid { ids: &NsIds::default(), vid: 0x1b36, serial: &sn, model: &mn, nsid: 1 };
/// assert_eq!(w.to_string(), "nvme.1b36-726e766d652d62-51454d55204e564d65204374726c-00000001");
/// let mut ids = NsIds::default();
/// ids.uuid = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8];
/// let w = Wwid { ids: &ids, vid: 0x1b36, serial: &sn, model: &mn, nsid: 1 };
/// assert_eq!(w.to_string(), "uuid.12345678-9abc-def0-0102-030405060708");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Wwid<'a> {
    /// The namespace's identifiers.
    pub ids: &'a NsIds,
    /// PCI Vendor ID of Identify Controller.
    pub vid: u16,
    /// Serial Number of Identify Controller (20 bytes, padded).
    pub serial: &'a [u8],
    /// Model Number of Identify Controller (40 bytes, padded).
    pub model: &'a [u8],
    /// Namespace ID.
    pub nsid: u32,
}

fn hex(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    b.iter().try_for_each(|x| write!(f, "{x:02x}"))
}

impl fmt::Display for Wwid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids = self.ids;
        if !is_zero(&ids.uuid) {
            // `%pU`: big-endian, lower case, 8-4-4-4-12.
            let u = &ids.uuid;
            f.write_str("uuid.")?;
            for (i, r) in [0..4, 4..6, 6..8, 8..10, 10..16].into_iter().enumerate() {
                if i > 0 {
                    f.write_str("-")?;
                }
                hex(f, u.get(r).unwrap_or(&[]))?;
            }
            return Ok(());
        }
        if !is_zero(&ids.nguid) {
            f.write_str("eui.")?;
            return hex(f, &ids.nguid);
        }
        if !is_zero(&ids.eui64) {
            f.write_str("eui.")?;
            return hex(f, &ids.eui64);
        }
        write!(f, "nvme.{:04x}-", self.vid)?;
        hex(f, trimmed(self.serial))?;
        f.write_str("-")?;
        hex(f, trimmed(self.model))?;
        write!(f, "-{:08x}", self.nsid)
    }
}
