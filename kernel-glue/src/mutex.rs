// SPDX-License-Identifier: GPL-2.0

//! A sleeping lock whose waiters can be interrupted by a signal (`mutex_lock_interruptible()`).
//!
//! C header: [`include/linux/mutex.h`](srctree/include/linux/mutex.h)
//!
//! Linux 6.12's `kernel::sync::Mutex` only has the uninterruptible `mutex_lock()`: a waiter
//! behind a long holder sleeps in `TASK_UNINTERRUPTIBLE` and cannot be killed. This lock is for
//! process context only (never from an interrupt handler).

use core::{
    cell::UnsafeCell,
    ops::{Deref, DerefMut},
};

use kernel::{alloc::KBox, bindings, prelude::*, types::Opaque};

use crate::helpers;

/// Data of type `T` behind a `struct mutex`.
///
/// # Invariants
///
/// `lock` is an initialised `struct mutex` that never moves (boxed) and is destroyed on drop;
/// `data` is only reached through a [`SleepLockGuard`], which holds the lock.
pub struct SleepLock<T> {
    lock: KBox<Opaque<bindings::mutex>>,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `T` to one thread at a time; `T: Send` may move between threads.
unsafe impl<T: Send> Send for SleepLock<T> {}
// SAFETY: as above: shared access only gives `&mut T` under the lock.
unsafe impl<T: Send> Sync for SleepLock<T> {}

impl<T> core::fmt::Debug for SleepLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SleepLock").finish()
    }
}

impl<T> SleepLock<T> {
    /// A new unlocked lock around `data` (allocates the mutex; may sleep).
    pub fn new(data: T) -> Result<Self> {
        let lock = KBox::new(Opaque::<bindings::mutex>::uninit(), GFP_KERNEL)?;
        // SAFETY: `lock.get()` is valid, boxed memory for a `struct mutex`, initialised here
        // once before any use.
        unsafe { helpers::rnvme_glue_mutex_init(lock.get()) };
        // INVARIANT: initialised above; boxed, so it never moves.
        Ok(Self {
            lock,
            data: UnsafeCell::new(data),
        })
    }

    /// Takes the lock, sleeping interruptibly while another thread holds it.
    ///
    /// # Errors
    ///
    /// `EINTR` when a signal arrived while waiting; the lock is then not held.
    pub fn lock_interruptible(&self) -> Result<SleepLockGuard<'_, T>> {
        // SAFETY: initialised lock (type invariant); the caller is in process context, the
        // only context that can reach this lock's users (documented at module level).
        let r = unsafe { helpers::rnvme_glue_mutex_lock_interruptible(self.lock.get()) };
        crate::error::to_result(r)?;
        Ok(SleepLockGuard { lock: self })
    }
}

impl<T> Drop for SleepLock<T> {
    fn drop(&mut self) {
        // SAFETY: initialised and, since `&mut self` excludes a live guard, not held.
        unsafe { helpers::rnvme_glue_mutex_destroy(self.lock.get()) };
    }
}

/// The held lock of a [`SleepLock`]; unlocks on drop.
pub struct SleepLockGuard<'a, T> {
    lock: &'a SleepLock<T>,
}

impl<T> core::fmt::Debug for SleepLockGuard<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SleepLockGuard").finish()
    }
}

impl<T> Deref for SleepLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SleepLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SleepLockGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the lock is held by this guard, taken by this thread.
        unsafe { helpers::rnvme_glue_mutex_unlock(self.lock.lock.get()) };
    }
}
