// SPDX-License-Identifier: GPL-2.0

//! An optional resource whose drop, when it holds nothing, is one inline test.
//!
//! A request's owned state holds optional mappings that many requests leave empty (a
//! passthrough command on a premapped tag maps nothing). As plain `Option`s, their drops were
//! functions of their own, which the completion paths called for every request whatever the
//! slot held: a call and a return per slot, each a jump-cache lookup under emulation, for
//! nothing. C's `nvme_unmap_data()` tests its flags inline first; so does this.

use core::{
    mem::ManuallyDrop,
    ops::{Deref, DerefMut},
};

/// An `Option<T>` (reached through `Deref`) dropped by an inline test and, only when it holds
/// a value, an out-of-line call.
///
/// # Invariants
///
/// The inner `Option` is live until [`Held`]'s `drop`, which drops it once.
pub(crate) struct Held<T>(ManuallyDrop<Option<T>>);

impl<T> Held<T> {
    /// An empty slot.
    pub(crate) const fn none() -> Self {
        Self(ManuallyDrop::new(None))
    }
}

impl<T> Held<T> {
    /// Fills the slot with `f()` if it is empty; returns the slot's value.
    ///
    /// `Option::get_or_insert_with` assigns over the `None` it fills, and the compiler drops
    /// that `None` through an out-of-line call per use; a `ManuallyDrop` assigned over has no
    /// drop glue, and an empty slot holds nothing to drop.
    #[inline(always)]
    pub(crate) fn get_or_insert_with(&mut self, f: impl FnOnce() -> T) -> &mut T {
        if self.0.is_none() {
            self.0 = ManuallyDrop::new(Some(f()));
        }
        // SAFETY: filled above if it was empty.
        unsafe { self.full() }
    }

    /// Puts `v` in the slot, dropping what it held (out of line, if anything); returns it.
    #[inline(always)]
    pub(crate) fn put(&mut self, v: T) -> &mut T {
        if self.0.is_some() {
            drop_value(&mut self.0);
        }
        // The old value is dropped (or was none): assigned over without drop glue.
        self.0 = ManuallyDrop::new(Some(v));
        // SAFETY: filled just above.
        unsafe { self.full() }
    }

    /// The value of a slot just filled.
    ///
    /// # Safety
    ///
    /// The slot holds a value.
    #[inline(always)]
    unsafe fn full(&mut self) -> &mut T {
        // SAFETY: the caller's guarantee (no panic path: the module has none).
        unsafe { self.0.as_mut().unwrap_unchecked() }
    }
}

impl<T> Deref for Held<T> {
    type Target = Option<T>;
    #[inline(always)]
    fn deref(&self) -> &Option<T> {
        &self.0
    }
}

impl<T> DerefMut for Held<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Option<T> {
        &mut self.0
    }
}

impl<T> Drop for Held<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_value(&mut self.0);
        }
    }
}

/// Drops what `v` holds (out of line: the uncommon case).
#[inline(never)]
fn drop_value<T>(v: &mut ManuallyDrop<Option<T>>) {
    // SAFETY: called from `Held::drop` only, once: the inner `Option` is live (type invariant)
    // and never used again.
    unsafe { ManuallyDrop::drop(v) };
}
