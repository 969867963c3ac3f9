// SPDX-License-Identifier: GPL-2.0

//! A spinlock taken with interrupts disabled (`spin_lock_irqsave()`), for data shared between
//! process context and a hard-IRQ handler, and a plain one (`spin_lock()`) for data no
//! interrupt handler touches.
//!
//! C header: [`include/linux/spinlock.h`](srctree/include/linux/spinlock.h)
//!
//! Linux 6.12's `kernel::sync::SpinLock` never disables interrupts, so it cannot protect data
//! an interrupt handler also locks (the handler would spin on the CPU that holds the lock).

use core::{
    cell::UnsafeCell,
    ffi::c_void,
    ops::{Deref, DerefMut},
};

use kernel::{alloc::KBox, bindings, prelude::*, types::Opaque};

use crate::helpers;

/// `spin_lock(lock)`: `raw_spin_lock(&lock->rlock)` (`include/linux/spinlock.h`), which is the
/// kernel's out-of-line `_raw_spin_lock()` unless the architecture inlines it
/// (`include/linux/spinlock_api_smp.h`); called directly, not through a helper of the glue.
///
/// # Safety
///
/// `lock` is an initialised `spinlock_t`.
#[inline(always)]
unsafe fn spin_lock(lock: *mut bindings::spinlock_t) {
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK)))]
    // SAFETY: `rlock`, the `raw_spinlock_t` that `spin_lock()` takes, is the first member of an
    // initialised `spinlock_t` (function contract) when it is not an RT mutex.
    unsafe {
        bindings::_raw_spin_lock(lock.cast())
    };
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK))]
    // SAFETY: an initialised `spinlock_t` (function contract).
    unsafe {
        helpers::rnvme_glue_spin_lock(lock)
    };
}

/// `spin_unlock(lock)`. Where C inlines it to a single release store (x86-64 queued spinlocks
/// without lock debugging, lockdep, a preemption count or paravirtual spinlocks:
/// `queued_spin_unlock()` in `include/asm-generic/qspinlock.h`, which clears the lock byte,
/// byte 0 of the lock), so is it here; in any other configuration the glue's helper calls
/// `spin_unlock()` itself.
///
/// # Safety
///
/// `lock` is an initialised `spinlock_t` held by the caller, taken with [`spin_lock`].
#[inline(always)]
unsafe fn spin_unlock(lock: *mut bindings::spinlock_t) {
    if INLINE_SPIN_UNLOCK {
        // SAFETY: the lock is live and aligned (function contract); its byte 0 is the
        // `locked` byte, which the holder clears with release ordering, as
        // `smp_store_release(&lock->locked, 0)` does (`AtomicU8` has `u8`'s size and
        // alignment). Nothing else needs undoing: no lockdep, debug owner or preemption count
        // was touched by `spin_lock()` here. A cast, not `AtomicU8::from_ptr()`, which the
        // kernel's `core` does not inline: a call into vmlinux per unlock.
        unsafe { &*lock.cast::<core::sync::atomic::AtomicU8>() }
            .store(0, core::sync::atomic::Ordering::Release);
    } else {
        // SAFETY: an initialised `spinlock_t` held by the caller (function contract).
        unsafe { helpers::rnvme_glue_spin_unlock(lock) };
    }
}

/// Whether [`spin_unlock`] is the release store C inlines: the configuration named there, in
/// which a `spinlock_t` is the bare 4-byte `qspinlock` (checked too; any other layout takes
/// the glue's `spin_unlock()`).
const INLINE_SPIN_UNLOCK: bool = cfg!(all(
    target_arch = "x86_64",
    CONFIG_QUEUED_SPINLOCKS,
    not(any(
        CONFIG_PARAVIRT_SPINLOCKS,
        CONFIG_DEBUG_SPINLOCK,
        CONFIG_DEBUG_LOCK_ALLOC,
        CONFIG_PREEMPT_COUNT,
        CONFIG_UNINLINE_SPIN_UNLOCK,
        CONFIG_PREEMPT_RT
    ))
)) && core::mem::size_of::<bindings::spinlock_t>() == 4;

/// Data of type `T` behind an IRQ-safe spinlock.
///
/// # Invariants
///
/// `lock` is an initialised `spinlock_t` that never moves (boxed); `data` is only reached
/// through an [`IrqSpinLockGuard`], which holds the lock.
pub struct IrqSpinLock<T> {
    lock: KBox<Opaque<bindings::spinlock_t>>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `T` to one thread at a time; `T: Send` may move between threads.
unsafe impl<T: Send> Send for IrqSpinLock<T> {}
// SAFETY: as above: shared access only gives `&mut T` under the lock.
unsafe impl<T: Send> Sync for IrqSpinLock<T> {}

impl<T> core::fmt::Debug for IrqSpinLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IrqSpinLock").finish()
    }
}

impl<T> IrqSpinLock<T> {
    /// A new unlocked lock around `data` (allocates the `spinlock_t`; may sleep).
    pub fn new(data: T) -> Result<Self> {
        let lock = KBox::new(Opaque::<bindings::spinlock_t>::uninit(), GFP_KERNEL)?;
        // SAFETY: `lock.get()` is valid, boxed memory for a `spinlock_t`, initialised here once
        // before any use.
        unsafe { helpers::rnvme_glue_spin_lock_init(lock.get()) };
        // INVARIANT: initialised above; boxed, so it never moves.
        Ok(Self {
            lock,
            data: UnsafeCell::new(data),
        })
    }

    /// Takes the lock with local interrupts disabled until the guard drops.
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        // SAFETY: initialised lock (type invariant).
        let flags = unsafe { helpers::rnvme_glue_spin_lock_irqsave(self.lock.get()) };
        IrqSpinLockGuard {
            lock: self,
            flags: Some(flags),
        }
    }

    /// Takes the lock in a hard interrupt handler, where local interrupts are already off
    /// (`spin_lock()` in C handlers): no interrupt state to save and restore, and under QEMU's
    /// TCG no exit from the translated code for the `popf` that restores it.
    #[inline]
    pub fn lock_in_irq<'a>(&'a self, _irq: &'a crate::irq::HardIrq<'_>) -> IrqSpinLockGuard<'a, T> {
        // SAFETY: initialised lock (type invariant); interrupts are off (`HardIrq` invariant),
        // so no interrupt handler can take it on this CPU while it is held.
        unsafe { spin_lock(self.lock.get()) };
        IrqSpinLockGuard {
            lock: self,
            flags: None,
        }
    }
}

/// The held lock of an [`IrqSpinLock`]; unlocks (and restores interrupts, if it saved them)
/// on drop.
pub struct IrqSpinLockGuard<'a, T> {
    lock: &'a IrqSpinLock<T>,
    /// The interrupt state saved by [`IrqSpinLock::lock`]; `None` when taken in a handler.
    flags: Option<kernel::ffi::c_ulong>,
}

impl<T> core::fmt::Debug for IrqSpinLockGuard<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IrqSpinLockGuard").finish()
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        match self.flags {
            // SAFETY: the lock is held by this guard with these flags.
            Some(flags) => unsafe {
                helpers::rnvme_glue_spin_unlock_irqrestore(self.lock.lock.get(), flags)
            },
            // SAFETY: the lock is held by this guard, taken by `spin_lock` without saving flags.
            None => unsafe { spin_unlock(self.lock.lock.get()) },
        }
    }
}

/// Data of type `T` behind a spinlock taken with interrupts left enabled (`spin_lock()`): for
/// data only process and softirq context touch, e.g. the submission side of an NVMe queue
/// (`nvmeq->sq_lock` in `drivers/nvme/host/pci.c`). Its holder may still be interrupted, so
/// an interrupt handler must never take it (it would spin on the CPU that holds it); its
/// `spinlock_t`s have their own lockdep class, which checks exactly that.
///
/// # Invariants
///
/// `lock` is an initialised `spinlock_t` that never moves (boxed); `data` is only reached
/// through a [`SpinLockGuard`], which holds the lock.
pub struct SpinLock<T> {
    lock: KBox<Opaque<bindings::spinlock_t>>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `T` to one thread at a time; `T: Send` may move between threads.
unsafe impl<T: Send> Send for SpinLock<T> {}
// SAFETY: as above: shared access only gives `&mut T` under the lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> core::fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinLock").finish()
    }
}

impl<T> SpinLock<T> {
    /// A new unlocked lock around `data` (allocates the `spinlock_t`; may sleep).
    pub fn new(data: T) -> Result<Self> {
        let lock = KBox::new(Opaque::<bindings::spinlock_t>::uninit(), GFP_KERNEL)?;
        // SAFETY: `lock.get()` is valid, boxed memory for a `spinlock_t`, initialised here once
        // before any use.
        unsafe { helpers::rnvme_glue_spin_lock_init_plain(lock.get()) };
        // INVARIANT: initialised above; boxed, so it never moves.
        Ok(Self {
            lock,
            data: UnsafeCell::new(data),
        })
    }

    /// Takes the lock (interrupts stay enabled) until the guard drops. Never call it from a
    /// hard-IRQ handler.
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        // SAFETY: initialised lock (type invariant).
        unsafe { spin_lock(self.lock.get()) };
        SpinLockGuard { lock: self }
    }
}

/// The held lock of a [`SpinLock`]; unlocks on drop.
pub struct SpinLockGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> core::fmt::Debug for SpinLockGuard<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinLockGuard").finish()
    }
}

impl<T> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinLockGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the lock is held by this guard, taken by `spin_lock`.
        unsafe { spin_unlock(self.lock.lock.get()) };
    }
}

/// A slot holding at most one `Arc<T>`, taken and put with atomic swaps (no lock), e.g. for a
/// reference a request carries in its PDU from submission to completion.
///
/// The reference is kept in its foreign form (`ForeignOwnable::into_foreign()`: the pointer to
/// the `Arc`'s allocation), not as `Arc::into_raw()`'s data pointer: getting the `Arc` back from
/// the data pointer computes the data's offset through a `core` layout function the kernel's
/// `core` does not inline, a call per use for nothing, while the foreign form is the `Arc`'s own
/// pointer.
///
/// # Invariants
///
/// `p` is null or a pointer from `Arc::<T>::into_foreign` whose reference the slot owns.
pub struct ArcSlot<T: 'static> {
    p: core::sync::atomic::AtomicPtr<c_void>,
    _t: core::marker::PhantomData<kernel::sync::Arc<T>>,
}

// SAFETY: the slot moves `Arc<T>`s between threads: as `Arc<T>` itself, needs `T: Send + Sync`.
unsafe impl<T: Send + Sync + 'static> Send for ArcSlot<T> {}
// SAFETY: `&ArcSlot` only swaps whole references atomically.
unsafe impl<T: Send + Sync + 'static> Sync for ArcSlot<T> {}

impl<T: 'static> Default for ArcSlot<T> {
    fn default() -> Self {
        // INVARIANT: empty.
        Self {
            p: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
            _t: core::marker::PhantomData,
        }
    }
}

impl<T: 'static> core::fmt::Debug for ArcSlot<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArcSlot").finish()
    }
}

/// `a` in its foreign form (the slot's representation).
#[inline(always)]
fn foreign<T: 'static>(a: kernel::sync::Arc<T>) -> *mut c_void {
    kernel::types::ForeignOwnable::into_foreign(a).cast_mut()
}

/// The `Arc` whose foreign form is `p`.
///
/// # Safety
///
/// `p` is non-null and came from `Arc::<T>::into_foreign`; its reference is the caller's.
#[inline(always)]
unsafe fn unforeign<T: 'static>(p: *mut c_void) -> kernel::sync::Arc<T> {
    // SAFETY: the caller's guarantee.
    unsafe { <kernel::sync::Arc<T> as kernel::types::ForeignOwnable>::from_foreign(p) }
}

impl<T: 'static> ArcSlot<T> {
    /// Puts `v` in the slot; returns what was there.
    #[inline]
    pub fn replace(&self, v: Option<kernel::sync::Arc<T>>) -> Option<kernel::sync::Arc<T>> {
        let new = v.map_or(core::ptr::null_mut(), foreign);
        // INVARIANT: the slot now owns `new`'s reference; the old one goes to the caller.
        let old = self.p.swap(new, core::sync::atomic::Ordering::AcqRel);
        if old.is_null() {
            None
        } else {
            // SAFETY: `old` came from `into_foreign` and its reference was the slot's (type
            // invariant); the swap handed it to us alone.
            Some(unsafe { unforeign(old) })
        }
    }

    /// Puts `v` in the slot, which is expected to be empty. Whatever was there is dropped by
    /// a call of its own, so the expected case is a swap and a test: `drop(replace(..))` makes
    /// the compiler drop the returned `Option` through one out-of-line call for both cases.
    #[inline]
    pub fn put(&self, v: kernel::sync::Arc<T>) {
        // INVARIANT: the slot now owns `v`'s reference; the old one is released below.
        let old = self
            .p
            .swap(foreign(v), core::sync::atomic::Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: `old` came from `into_foreign` with the slot's reference, which the swap
            // handed to this call alone.
            unsafe { Self::release(old) };
        }
    }

    /// Drops the reference `p` stands for (rare: a slot found occupied).
    ///
    /// # Safety
    ///
    /// `p` is non-null, came from `Arc::<T>::into_foreign` and its reference is the caller's
    /// to give up.
    #[cold]
    #[inline(never)]
    unsafe fn release(p: *mut c_void) {
        // SAFETY: the caller's guarantee.
        drop(unsafe { unforeign::<T>(p) });
    }

    /// Takes the reference out, leaving the slot empty.
    #[inline]
    pub fn take(&self) -> Option<kernel::sync::Arc<T>> {
        self.replace(None)
    }

    /// Whether the slot holds a reference (one load; no reference taken).
    #[inline]
    pub fn is_some(&self) -> bool {
        !self.p.load(core::sync::atomic::Ordering::Acquire).is_null()
    }

    /// Runs `f` on what the slot holds without taking a new reference: the slot's own is
    /// taken out for the call and put back after (a concurrent `take` in between sees an empty
    /// slot; one user at a time is the intended use). (Should `f` panic, the reference is
    /// leaked, never dropped twice.)
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        let p = self
            .p
            .swap(core::ptr::null_mut(), core::sync::atomic::Ordering::AcqRel);
        let b = if p.is_null() {
            None
        } else {
            // SAFETY: `p` came from `into_foreign` with the slot's reference (type invariant),
            // which the swap handed to this call alone: the data lives at least until that
            // reference is put back below, after the borrow's last use.
            Some(unsafe {
                <kernel::sync::Arc<T> as kernel::types::ForeignOwnable>::borrow(p)
            })
        };
        let r = f(b.as_deref());
        if !p.is_null() {
            // INVARIANT: the reference goes back to the slot.
            let old = self.p.swap(p, core::sync::atomic::Ordering::AcqRel);
            if !old.is_null() {
                // Something put in meanwhile is dropped: the slot keeps the reference it had.
                // SAFETY: `old` came from `into_foreign` with the slot's reference, which the
                // swap handed to us alone.
                unsafe { Self::release(old) };
            }
        }
        r
    }
}

impl<T: 'static> Drop for ArcSlot<T> {
    fn drop(&mut self) {
        drop(self.take());
    }
}
