// SPDX-License-Identifier: GPL-2.0

//! Interrupts: PCI interrupt vectors (MSI-X, MSI, INTx) and handler registrations.
//!
//! C header: [`include/linux/interrupt.h`](srctree/include/linux/interrupt.h)

use core::marker::PhantomData;

use kernel::{bindings, prelude::*, str::CStr, sync::Arc};

use crate::{helpers, pci};

/// What a handler did (`irqreturn_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IrqReturn {
    /// The interrupt was not from this device (`IRQ_NONE`).
    None,
    /// The interrupt was handled (`IRQ_HANDLED`).
    Handled,
}

/// Proof that the code holding it runs in a hard interrupt handler, where local interrupts
/// are off: locks that are otherwise taken with `spin_lock_irqsave()` can then be taken
/// without saving and restoring the interrupt state ([`crate::sync::IrqSpinLock::lock_in_irq`]),
/// as C handlers do with `spin_lock()`.
///
/// # Invariants
///
/// Only [`Registration`]'s trampoline makes one, for the duration of one handler call; it
/// cannot be sent to or kept by another context (`'a` and `!Send`).
pub struct HardIrq<'a> {
    _p: PhantomData<(&'a (), *const ())>,
}

impl core::fmt::Debug for HardIrq<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HardIrq").finish()
    }
}

/// A hard-interrupt handler.
pub trait Handler: Send + Sync + 'static {
    /// Handles one interrupt, in hard-IRQ context (must not sleep); `irq` proves the context.
    fn handle(&self, irq: &HardIrq<'_>) -> IrqReturn;
}

/// Interrupt vectors of a PCI device (`pci_alloc_irq_vectors_affinity()`), freed on drop.
///
/// The vectors after the first `pre_vectors` are spread over the CPUs (`PCI_IRQ_AFFINITY`);
/// MSI-X is tried first, then MSI, then INTx (one vector).
///
/// # Invariants
///
/// `count` vectors were allocated for `dev` and are freed only by the drop.
#[derive(Debug)]
pub struct Vectors {
    dev: pci::Device,
    count: u32,
}

impl Vectors {
    /// Allocates between `min` and `max` vectors, the first `pre_vectors` not spread.
    pub fn new(dev: &pci::Device, min: u32, max: u32, pre_vectors: u32) -> Result<Self> {
        if min == 0 || min > max {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is a valid, enabled PCI device.
        let n = unsafe {
            helpers::rnvme_glue_pci_alloc_irq_vectors(dev.as_raw(), min, max, pre_vectors)
        };
        let count = u32::try_from(n).map_err(|_| Error::from_errno(n))?;
        // INVARIANT: allocated just above.
        Ok(Self {
            dev: dev.clone(),
            count,
        })
    }

    /// Number of vectors allocated.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the vectors are MSI-X (else MSI or INTx).
    pub fn is_msix(&self) -> bool {
        // SAFETY: `dev` is valid.
        unsafe { helpers::rnvme_glue_pci_msix_enabled(self.dev.as_raw()) }
    }

    /// The Linux IRQ number of vector `nr`.
    pub fn irq(&self, nr: u32) -> Result<u32> {
        if nr >= self.count {
            return Err(EINVAL);
        }
        // SAFETY: `dev` is valid and has `count` vectors.
        let irq = unsafe { helpers::rnvme_glue_pci_irq_vector(self.dev.as_raw(), nr) };
        u32::try_from(irq).map_err(|_| Error::from_errno(irq))
    }
}

impl Drop for Vectors {
    fn drop(&mut self) {
        // SAFETY: allocated by `new` (type invariant). Handlers registered on these vectors are
        // `Registration`s, which callers drop first (a `Registration` borrows nothing from this
        // value, so the order is the caller's: freeing vectors with a handler still requested
        // makes the PCI core warn, never corrupts memory).
        unsafe { helpers::rnvme_glue_pci_free_irq_vectors(self.dev.as_raw()) };
    }
}

/// A handler registered on one IRQ (`request_irq()`), freed on drop (`free_irq()`).
///
/// # Invariants
///
/// `handler`'s address is the `dev_id` of a registration of [`Registration::trampoline`] on
/// `irq`, live until the drop; the `Arc` keeps the handler alive at least that long.
pub struct Registration<H: Handler> {
    irq: u32,
    handler: Arc<H>,
}

impl<H: Handler> core::fmt::Debug for Registration<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("irq::Registration")
            .field("irq", &self.irq)
            .finish()
    }
}

impl<H: Handler> Registration<H> {
    /// Registers `handler` on `irq`; `shared` allows other handlers on the line (INTx).
    pub fn new(irq: u32, shared: bool, name: &'static CStr, handler: Arc<H>) -> Result<Self> {
        let flags = if shared { bindings::IRQF_SHARED } else { 0 };
        let data: *const H = &*handler;
        // SAFETY: `trampoline::<H>` has the `irq_handler_t` signature and only uses `dev_id` as
        // an `&H`; `data` stays valid until `free_irq` in the drop (the `Arc` is kept here);
        // `name` is static.
        let ret = unsafe {
            bindings::request_threaded_irq(
                irq,
                Some(Self::trampoline),
                None,
                flags as kernel::ffi::c_ulong,
                name.as_char_ptr(),
                data.cast_mut().cast(),
            )
        };
        crate::error::to_result(ret)?;
        // INVARIANT: registered with `dev_id == data`.
        Ok(Self { irq, handler })
    }

    /// The registered handler.
    pub fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// The C callback `trampoline`.
    ///
    /// # Safety
    ///
    /// Only the kernel calls it, with arguments that satisfy its C contract (see the
    /// comments in the body).
    unsafe extern "C" fn trampoline(
        _irq: core::ffi::c_int,
        dev_id: *mut core::ffi::c_void,
    ) -> bindings::irqreturn_t {
        // SAFETY: `dev_id` is the `&H` registered in `new`, valid until `free_irq` returns
        // (type invariant), and the IRQ core never calls the handler after that.
        let handler = unsafe { &*dev_id.cast::<H>() };
        // INVARIANT: the IRQ core calls a handler registered without a thread function in
        // hard interrupt context, with local interrupts off, or (`threadirqs`) in a forced
        // IRQ thread, which also runs it with interrupts off (`irq_forced_thread_fn()`;
        // except on PREEMPT_RT, where a `spinlock_t` leaves interrupts on in any case). The
        // token lives for this call.
        let irq = HardIrq { _p: PhantomData };
        match handler.handle(&irq) {
            IrqReturn::None => bindings::irqreturn_IRQ_NONE,
            IrqReturn::Handled => bindings::irqreturn_IRQ_HANDLED,
        }
    }
}

impl<H: Handler> Drop for Registration<H> {
    fn drop(&mut self) {
        let data: *const H = &*self.handler;
        // SAFETY: registered with this `dev_id` (type invariant); `free_irq` waits for running
        // handlers, so none runs once it returns and the `Arc` may then be dropped.
        unsafe { bindings::free_irq(self.irq, data.cast_mut().cast()) };
    }
}
