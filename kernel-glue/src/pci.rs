// SPDX-License-Identifier: GPL-2.0

//! PCI devices and drivers: registration by class code, enable, bus mastering, DMA mask.
//!
//! C header: [`include/linux/pci.h`](srctree/include/linux/pci.h)
//!
//! A [`Registration`] registers a driver matching one PCI class; its [`Driver::probe`] gets a
//! [`Device`] and returns the driver's data, which the registration keeps until
//! [`Driver::remove`] (unbind, unload). Resources a probe acquires are RAII values
//! ([`Enabled`], [`BusMaster`], [`crate::io::Bar`], [`crate::irq::Vectors`]) that the driver
//! data holds and drops in `remove`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    alloc::KBox, bindings, device::Device as KDevice, error::from_result, prelude::*, str::CStr,
    types::ARef,
};

use crate::helpers;

/// A PCI device (`struct pci_dev`), holding a reference on it.
///
/// # Invariants
///
/// `pdev` is a valid `struct pci_dev`, `raw_dev` its embedded `struct device` and `dev` a
/// reference on that device (so the `pci_dev`, which embeds it, stays allocated).
#[derive(Clone)]
pub struct Device {
    pdev: NonNull<bindings::pci_dev>,
    raw_dev: NonNull<bindings::device>,
    dev: ARef<KDevice>,
}

// SAFETY: a `struct pci_dev` may be used from any thread; the reference count is atomic.
unsafe impl Send for Device {}
// SAFETY: the methods taking `&self` call C functions that are safe to call concurrently.
unsafe impl Sync for Device {}

impl core::fmt::Debug for Device {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("pci::Device")
            .field("pdev", &self.pdev)
            .finish()
    }
}

impl Device {
    /// Takes a reference on `pdev`.
    ///
    /// # Safety
    ///
    /// `pdev` must point to a valid `struct pci_dev` (e.g. the argument of a probe callback).
    unsafe fn from_raw(pdev: NonNull<bindings::pci_dev>) -> Result<Self> {
        // SAFETY: `pdev` is valid (function contract); `rnvme_glue_pci_device` returns the
        // address of its embedded `struct device`.
        let raw = unsafe { helpers::rnvme_glue_pci_device(pdev.as_ptr()) };
        // `&pdev->dev` of a valid pointer is never null; checked rather than assumed.
        let raw_dev = NonNull::new(raw).ok_or(EINVAL)?;
        // SAFETY: `raw` is the valid `struct device` of a valid `pci_dev`.
        let dev = unsafe { KDevice::get_device(raw) };
        // INVARIANT: `dev` is `pdev`'s device, referenced by `get_device`.
        Ok(Self { pdev, raw_dev, dev })
    }

    /// The raw `struct pci_dev *`.
    pub fn as_raw(&self) -> *mut bindings::pci_dev {
        self.pdev.as_ptr()
    }

    /// The generic device (`&pdev->dev`), for DMA and logging.
    pub fn device(&self) -> &ARef<KDevice> {
        &self.dev
    }

    /// PCI vendor and device ID (`pdev->vendor`, `pdev->device`).
    pub fn ids(&self) -> (u16, u16) {
        // SAFETY: `pdev` is valid (type invariant); the call reads two fields set at
        // enumeration.
        let v = unsafe { helpers::rnvme_glue_pci_ids(self.pdev.as_ptr()) };
        ((v >> 16) as u16, v as u16)
    }

    /// The raw `struct device *` of this PCI device.
    #[inline]
    pub fn device_raw(&self) -> *mut bindings::device {
        self.raw_dev.as_ptr()
    }

    /// As [`Device::device_raw`], known not to be null.
    #[inline]
    pub(crate) fn device_nonnull(&self) -> NonNull<bindings::device> {
        self.raw_dev
    }

    /// The device's name (`pci_name()`, e.g. `0000:00:04.0`).
    pub fn name(&self) -> &CStr {
        // SAFETY: by the type invariant `pdev` is valid; `pci_name` returns the NUL-terminated
        // name stored in the device, alive as long as the device (we hold a reference).
        unsafe { CStr::from_char_ptr(helpers::rnvme_glue_pci_name(self.pdev.as_ptr())) }
    }

    /// Sets the streaming and coherent DMA masks to `bits` bits
    /// (`dma_set_mask_and_coherent()`).
    pub fn dma_set_mask(&self, bits: u32) -> Result {
        let mask = match bits {
            64 => u64::MAX,
            1..=63 => (1u64 << bits) - 1,
            _ => return Err(EINVAL),
        };
        // SAFETY: `device_raw()` is a valid device (type invariant).
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_dma_set_mask_and_coherent(self.device_raw(), mask)
        })
    }

    /// The largest DMA mapping in bytes that costs no more than smaller ones
    /// (`dma_opt_mapping_size()`: without an IOMMU or bounce buffering, `usize::MAX`). The NVMe
    /// driver caps its transfers at it (`nvme_pci_alloc_dev()`).
    pub fn dma_opt_mapping_size(&self) -> u64 {
        // SAFETY: `device_raw()` is a valid device (type invariant); the call only reads it.
        unsafe { helpers::rnvme_glue_dma_opt_mapping_size(self.device_raw()) }
    }

    /// Whether streaming mappings of the device go through an IOMMU (`use_dma_iommu()`): then
    /// each mapping call costs an IOVA range, and a request's segments are best mapped by one
    /// call ([`crate::dma::SgMapping`]).
    pub fn dma_uses_iommu(&self) -> bool {
        // SAFETY: `device_raw()` is a valid device (type invariant); the call only reads it.
        unsafe { helpers::rnvme_glue_dma_use_iommu(self.device_raw()) }
    }

    /// Sets the longest segment `dma_map_sg()` may merge a scatterlist's entries into
    /// (`dma_set_max_seg_size()`; the PCI core's default is 64 KiB).
    pub fn dma_set_max_seg_size(&self, size: u32) {
        // SAFETY: `device_raw()` is a valid device (type invariant), with the `dma_parms` the
        // PCI core gives every PCI device.
        unsafe { helpers::rnvme_glue_dma_set_max_seg_size(self.device_raw(), size) }
    }

    /// Stops the device from initiating DMA (`pci_clear_master()`), for a controller that did
    /// not stop when told to: memory it might still write can then be freed. Bus mastering
    /// stays off (a [`BusMaster`] drop clears it again, which is harmless).
    pub fn clear_bus_master(&self) {
        // SAFETY: `pdev` is valid (type invariant); clearing bus mastering is always allowed.
        unsafe { helpers::rnvme_glue_pci_set_master(self.pdev.as_ptr(), false) };
    }

    /// Length of memory BAR `bar`, 0 if it is not a memory BAR.
    pub fn mem_bar_len(&self, bar: i32) -> u64 {
        // SAFETY: `pdev` is valid (type invariant); the helper checks `bar`.
        unsafe { helpers::rnvme_glue_pci_mem_resource_len(self.pdev.as_ptr(), bar) }
    }
}

/// The device enabled for memory accesses (`pci_enable_device_mem()`); disabled on drop.
///
/// # Invariants
///
/// `pci_enable_device_mem` succeeded on `dev` and is balanced by the drop.
#[derive(Debug)]
pub struct Enabled {
    dev: Device,
}

impl Enabled {
    /// Enables `dev`'s memory space decoding and wakes it up.
    pub fn new(dev: &Device) -> Result<Self> {
        // SAFETY: `dev` is a valid PCI device (invariant of `Device`).
        crate::error::to_result(unsafe {
            helpers::rnvme_glue_pci_enable_device_mem(dev.as_raw())
        })?;
        // INVARIANT: the enable succeeded.
        Ok(Self { dev: dev.clone() })
    }
}

impl Drop for Enabled {
    fn drop(&mut self) {
        // SAFETY: balances the successful `pci_enable_device_mem` (type invariant).
        unsafe { helpers::rnvme_glue_pci_disable_device(self.dev.as_raw()) };
    }
}

/// Bus mastering turned on (`pci_set_master()`); turned off on drop (`pci_clear_master()`).
///
/// Holds the [`Enabled`] state it needs, so the device cannot be disabled first.
#[derive(Debug)]
pub struct BusMaster {
    enabled: Enabled,
}

impl BusMaster {
    /// Lets the enabled device initiate DMA.
    pub fn new(enabled: Enabled) -> Self {
        // SAFETY: the device is valid and enabled.
        unsafe { helpers::rnvme_glue_pci_set_master(enabled.dev.as_raw(), true) };
        Self { enabled }
    }
}

impl Drop for BusMaster {
    fn drop(&mut self) {
        // SAFETY: the device is valid; clearing bus mastering is always allowed.
        unsafe { helpers::rnvme_glue_pci_set_master(self.enabled.dev.as_raw(), false) };
    }
}

/// A PCI driver bound by class code.
pub trait Driver: Sized + Send + Sync + 'static {
    /// Driver name (`/sys/bus/pci/drivers/<NAME>`).
    const NAME: &'static CStr;
    /// PCI class code matched (24 bits: class, subclass, programming interface).
    const CLASS: u32;
    /// Bits of [`Driver::CLASS`] that must match.
    const CLASS_MASK: u32;

    /// Sets up a newly bound device; the returned data lives until [`Driver::remove`].
    fn probe(dev: &Device) -> Result<KBox<Self>>;

    /// Tears the device down; `this` is dropped when this returns.
    fn remove(this: KBox<Self>, dev: &Device);

    /// Quiesces the device at system shutdown (the data stays until `remove`).
    fn shutdown(_this: &Self, _dev: &Device) {}
}

/// A registered PCI driver; unregistered on drop (which unbinds and removes every device).
///
/// # Invariants
///
/// `drv` is the handle `rnvme_glue_pci_register` returned, registered until the drop.
pub struct Registration<T: Driver> {
    drv: NonNull<core::ffi::c_void>,
    _p: PhantomData<T>,
}

// SAFETY: the handle is only used to unregister, which may happen on any thread.
unsafe impl<T: Driver> Send for Registration<T> {}
// SAFETY: `&Registration` allows nothing.
unsafe impl<T: Driver> Sync for Registration<T> {}

impl<T: Driver> core::fmt::Debug for Registration<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("pci::Registration").finish()
    }
}

impl<T: Driver> Registration<T> {
    /// Registers the driver (devices of the class that no driver owns are probed now).
    pub fn new() -> Result<Self> {
        let mut err = 0;
        // SAFETY: `NAME` is a static NUL-terminated string; the callbacks are the trampolines
        // below, which have the C signatures.
        let drv = unsafe {
            helpers::rnvme_glue_pci_register(
                T::NAME.as_char_ptr(),
                T::CLASS,
                T::CLASS_MASK,
                Some(Self::probe_callback),
                Some(Self::remove_callback),
                Some(Self::shutdown_callback),
                &mut err,
            )
        };
        match NonNull::new(drv) {
            // INVARIANT: registered.
            Some(drv) => Ok(Self {
                drv,
                _p: PhantomData,
            }),
            None => Err(Error::from_errno(err)),
        }
    }

    /// The C callback `probe_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn probe_callback(pdev: *mut bindings::pci_dev) -> core::ffi::c_int {
        from_result(|| {
            let pdev = NonNull::new(pdev).ok_or(EINVAL)?;
            // SAFETY: the PCI core passes a valid device to probe.
            let dev = unsafe { Device::from_raw(pdev) }?;
            let data = T::probe(&dev)?;
            let raw = KBox::into_raw(data);
            // SAFETY: valid device; drvdata is ours while bound and taken back in remove.
            unsafe { helpers::rnvme_glue_pci_set_drvdata(pdev.as_ptr(), raw.cast()) };
            Ok(0)
        })
    }

    /// The C callback `remove_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn remove_callback(pdev: *mut bindings::pci_dev) {
        let Some(pdev) = NonNull::new(pdev) else {
            return;
        };
        // SAFETY: the PCI core passes the bound device; its drvdata is what probe stored.
        let raw = unsafe { helpers::rnvme_glue_pci_get_drvdata(pdev.as_ptr()) }.cast::<T>();
        if raw.is_null() {
            return;
        }
        // SAFETY: `raw` came from `KBox::into_raw` in probe and is taken back exactly once
        // (remove runs once per successful probe; drvdata is cleared below).
        let data = unsafe { KBox::from_raw(raw) };
        // SAFETY: valid device.
        unsafe { helpers::rnvme_glue_pci_set_drvdata(pdev.as_ptr(), core::ptr::null_mut()) };
        // SAFETY: valid device (see above).
        match unsafe { Device::from_raw(pdev) } {
            Ok(dev) => T::remove(data, &dev),
            Err(_) => drop(data),
        }
    }

    /// The C callback `shutdown_callback`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn shutdown_callback(pdev: *mut bindings::pci_dev) {
        let Some(pdev) = NonNull::new(pdev) else {
            return;
        };
        // SAFETY: as in `remove_callback`.
        let raw = unsafe { helpers::rnvme_glue_pci_get_drvdata(pdev.as_ptr()) }.cast::<T>();
        if raw.is_null() {
            return;
        }
        // SAFETY: `raw` is the live driver data of the bound device (freed only in remove,
        // which the driver core never runs concurrently with shutdown).
        let data = unsafe { &*raw };
        // SAFETY: valid device.
        if let Ok(dev) = unsafe { Device::from_raw(pdev) } {
            T::shutdown(data, &dev);
        }
    }
}

impl<T: Driver> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); unregistering removes every bound device first.
        unsafe { helpers::rnvme_glue_pci_unregister(self.drv.as_ptr()) };
    }
}
