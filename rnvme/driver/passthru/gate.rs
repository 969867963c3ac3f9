// SPDX-License-Identifier: GPL-2.0

//! A gate in front of a controller's passthrough state: open files enter it for each call, the
//! controller's removal closes it and waits until every call that entered has left.
//!
//! C header: [`include/linux/srcu.h`](srctree/include/linux/srcu.h) (the C driver keeps its
//! namespaces alive with SRCU and references; this is the same guarantee for a sleeping
//! caller, with a counter).

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::{prelude::*, sync::Arc};
use kernel_glue::{sync::IrqSpinLock, time::msleep};

/// Gives callers the state `T` until [`Gate::close`].
pub(crate) struct Gate<T> {
    state: IrqSpinLock<Option<Arc<T>>>,
    /// Callers inside (incremented under the lock while the state is present).
    users: AtomicU32,
}

/// A caller inside the gate.
pub(crate) struct Entered<'a, T> {
    state: Arc<T>,
    gate: &'a Gate<T>,
}

impl<T> core::ops::Deref for Entered<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.state
    }
}

impl<T> Drop for Entered<'_, T> {
    fn drop(&mut self) {
        // The caller is done with the state; its reference is dropped right after this (the
        // state's own drop releases only references, safe in any context).
        self.gate.users.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<T> Gate<T> {
    /// An open gate in front of `state`.
    pub(crate) fn new(state: Arc<T>) -> Result<Self> {
        Ok(Self {
            state: IrqSpinLock::new(Some(state))?,
            users: AtomicU32::new(0),
        })
    }

    /// Enters: `ENODEV` once the gate is closed (the controller is gone).
    pub(crate) fn enter(&self) -> Result<Entered<'_, T>> {
        let g = self.state.lock();
        let s = g.as_ref().ok_or(ENODEV)?.clone();
        self.users.fetch_add(1, Ordering::AcqRel);
        drop(g);
        Ok(Entered {
            state: s,
            gate: self,
        })
    }

    /// Closes the gate and waits until every caller has left; then drops the state. Callers
    /// sleep at most as long as their command's timeout, so the wait ends.
    pub(crate) fn close(&self) {
        let s = self.state.lock().take();
        while self.users.load(Ordering::Acquire) != 0 {
            msleep(1);
        }
        drop(s);
    }
}
