// SPDX-License-Identifier: GPL-2.0

//! A completion: an event a thread sleeps on, bounded by a timeout, and an interrupt handler
//! signals (`struct completion`).
//!
//! C header: [`include/linux/completion.h`](srctree/include/linux/completion.h)
//!
//! [`Completion::complete`] may be called from any context, hard-IRQ included; the waits are
//! for process context only. The completion counts `complete()` calls not yet consumed by a
//! wait: a `complete()` that runs before the waiter sleeps makes the wait return at once (no
//! lost wake-up). [`Completion::reinit`] forgets uncounted signals; its caller must make sure
//! no `complete()` for the previous round can still run (else that signal would count for the
//! next round: a spurious wake-up, never a memory error).

use kernel::{alloc::KBox, bindings, prelude::*, types::Opaque};

use crate::helpers;

/// A `struct completion`.
///
/// # Invariants
///
/// `raw` is an initialised `struct completion` that never moves (boxed).
pub struct Completion {
    raw: KBox<Opaque<bindings::completion>>,
}

// SAFETY: `struct completion` is designed to be shared between threads and IRQ handlers; every
// operation takes its internal wait-queue lock.
unsafe impl Send for Completion {}
// SAFETY: as above.
unsafe impl Sync for Completion {}

impl core::fmt::Debug for Completion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Completion").finish()
    }
}

impl Completion {
    /// A new completion with no signal counted (allocates; may sleep).
    pub fn new() -> Result<Self> {
        let raw = KBox::new(Opaque::<bindings::completion>::uninit(), GFP_KERNEL)?;
        // SAFETY: `raw.get()` is valid, boxed memory for a `struct completion`, initialised here
        // once before any use.
        unsafe { helpers::rnvme_glue_init_completion(raw.get()) };
        // INVARIANT: initialised above; boxed, so it never moves.
        Ok(Self { raw })
    }

    /// Forgets every signal not yet consumed (`reinit_completion()`), before a new round.
    pub fn reinit(&self) {
        // SAFETY: initialised completion (type invariant).
        unsafe { helpers::rnvme_glue_reinit_completion(self.raw.get()) };
    }

    /// Signals the completion, waking one waiter (`complete()`); any context.
    pub fn complete(&self) {
        // SAFETY: initialised completion (type invariant); `complete()` takes the wait-queue
        // lock with interrupts disabled, so it may run in hard-IRQ context.
        unsafe { bindings::complete(self.raw.get()) };
    }

    /// Sleeps (uninterruptibly, counted as I/O wait) until a signal is counted or `ms`
    /// milliseconds passed (`wait_for_completion_io_timeout()`); consumes the signal and
    /// returns `true`, or `false` on the timeout. Process context only.
    pub fn wait_timeout_ms(&self, ms: u32) -> bool {
        // SAFETY: initialised completion (type invariant); the caller may sleep (documented
        // contract; calling it in atomic context is diagnosed by the kernel, not UB).
        unsafe { helpers::rnvme_glue_wait_for_completion_io_ms(self.raw.get(), ms) != 0 }
    }
}
