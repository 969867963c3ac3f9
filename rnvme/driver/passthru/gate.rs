// SPDX-License-Identifier: GPL-2.0

//! A gate in front of a controller's passthrough state: open files enter it for each call, the
//! controller's removal closes it and waits until every call that entered has left.
//!
//! C header: [`include/linux/srcu.h`](srctree/include/linux/srcu.h) (the C driver keeps its
//! namespaces alive with SRCU and references; this is the same guarantee for a sleeping
//! caller, with a counter).

use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{sync::IrqSpinLock, time::msleep};

/// Gives callers the state `T` until [`Gate::close`].
///
/// # Invariants
///
/// `open` is the address of the `Arc` in `state` until `close` sets it to null, and `close`
/// drops that `Arc` only after it has set `open` to null and then seen `users` at zero. A caller
/// counts itself in `users` before it reads a non-null `open` and stays counted while it uses
/// the state, so the state outlives every [`Entered`]. (Sequentially consistent on both
/// sides: of `close`'s null store and a caller's increment, whichever comes second sees the
/// other.)
pub(crate) struct Gate<T> {
    /// The state, taken and dropped by `close`.
    state: IrqSpinLock<Option<Arc<T>>>,
    /// The state's address while the gate is open; null once it is closing.
    open: AtomicPtr<T>,
    /// Callers inside.
    users: AtomicU32,
}

/// A caller inside the gate.
pub(crate) struct Entered<'a, T> {
    state: &'a T,
    gate: &'a Gate<T>,
}

impl<T> core::ops::Deref for Entered<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.state
    }
}

impl<T> Drop for Entered<'_, T> {
    fn drop(&mut self) {
        // The caller is done with the state (`close` may drop it from now on).
        self.gate.users.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T: Send + Sync> Gate<T> {
    /// An open gate in front of `state`.
    pub(crate) fn new(state: Arc<T>) -> Result<Self> {
        let open = AtomicPtr::new(core::ptr::from_ref::<T>(&state).cast_mut());
        Ok(Self {
            state: IrqSpinLock::new(Some(state))?,
            open,
            users: AtomicU32::new(0),
        })
    }

    /// Enters: `ENODEV` once the gate is closed (the controller is gone). Takes no lock and no
    /// reference: one atomic increment and one load (this runs for every I/O command).
    pub(crate) fn enter(&self) -> Result<Entered<'_, T>> {
        self.users.fetch_add(1, Ordering::SeqCst);
        let p = self.open.load(Ordering::SeqCst);
        // SAFETY: a non-null `open` read after counting ourselves in `users` is the state's
        // address, and `close` drops the state only after it sees `users` at zero (type
        // invariant), which cannot happen before this caller's `Entered` drops.
        match unsafe { p.as_ref() } {
            Some(state) => Ok(Entered { state, gate: self }),
            None => {
                self.users.fetch_sub(1, Ordering::SeqCst);
                Err(ENODEV)
            }
        }
    }

    /// Closes the gate and waits until every caller has left; then drops the state. Callers
    /// sleep at most as long as their command's timeout, so the wait ends.
    pub(crate) fn close(&self) {
        self.open.store(core::ptr::null_mut(), Ordering::SeqCst);
        while self.users.load(Ordering::SeqCst) != 0 {
            msleep(1);
        }
        let s = self.state.lock().take();
        drop(s);
    }
}
