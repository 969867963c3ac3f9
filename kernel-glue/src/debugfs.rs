// SPDX-License-Identifier: GPL-2.0

//! Counters in debugfs: one file of `name value` lines, e.g. a driver's path statistics.
//!
//! C header: [`include/linux/debugfs.h`](srctree/include/linux/debugfs.h)

use core::{ffi::c_void, fmt, ptr::NonNull};

use kernel::{prelude::*, str::CStr};

use crate::helpers;

/// 64-bit counters shown as `/sys/kernel/debug/rnvme/<dir>/<file>`, one `name value` line
/// each; the file is removed on drop. Each CPU updates its own copy (`this_cpu_add()`), so
/// counting on the I/O path writes no cache line another CPU writes too; a read sums them.
///
/// On x86-64 SMP kernels a counter is added by one `add` to its `%gs`-relative per-CPU address,
/// inline, as C's `this_cpu_add()` compiles (`arch/x86/include/asm/percpu.h`); elsewhere by a
/// call into the glue, which uses `this_cpu_add()` itself.
///
/// The number of counters, `N`, is a type parameter, so the bounds of an update with a
/// constant index fold away at compile time: on the I/O path an update is its `add`
/// instructions and nothing else.
///
/// # Invariants
///
/// `raw` is a handle from `rnvme_glue_debugfs_counters_create` with `N` counters whose name
/// table is `names`, destroyed only by the drop. `percpu` is the handle's per-CPU base
/// (`rnvme_glue_debugfs_counters_percpu`), `N` counters of 8 bytes per CPU, allocated until
/// the drop.
pub struct DebugCounters<const N: usize> {
    raw: NonNull<c_void>,
    names: KVec<*const kernel::ffi::c_char>,
    percpu: *mut i64,
}

// SAFETY: per-CPU counters, each added to by one instruction on its own CPU (or by the glue's
// `this_cpu_add()`) and read by summing; the name pointers are static strings; the handle may
// be destroyed from any thread that may sleep.
unsafe impl<const N: usize> Send for DebugCounters<N> {}
// SAFETY: `&DebugCounters` only adds to this CPU's copies (one instruction each) and reads sums.
unsafe impl<const N: usize> Sync for DebugCounters<N> {}

impl<const N: usize> fmt::Debug for DebugCounters<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DebugCounters")
            .field("n", &self.names.len())
            .finish()
    }
}

impl<const N: usize> DebugCounters<N> {
    /// Creates the counters named `names` (all zero) in `rnvme/<dir>/<file>` (may sleep).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a directory name over 31 bytes or if the glue made other than `N`
    /// counters, `ENOMEM`. (A debugfs failure only leaves the file out.)
    pub fn new(
        dir: fmt::Arguments<'_>,
        file: &'static CStr,
        names: &[&'static CStr; N],
    ) -> Result<Self> {
        let mut buf = [0u8; 32];
        let mut w = crate::chardev::NameBuf::new(&mut buf);
        fmt::Write::write_fmt(&mut w, dir).map_err(|_| EINVAL)?;
        let mut table = KVec::with_capacity(names.len(), GFP_KERNEL)?;
        for n in names {
            table.push(n.as_char_ptr(), GFP_KERNEL)?;
        }
        let n = u32::try_from(table.len()).map_err(|_| EINVAL)?;
        // SAFETY: `buf` is NUL-terminated (NameBuf keeps the last byte zero); `file` and every
        // name are static NUL-terminated strings; `table` holds `n` of them and stays allocated
        // (in `Self`) until after the handle is destroyed.
        let raw = unsafe {
            helpers::rnvme_glue_debugfs_counters_create(
                buf.as_ptr().cast(),
                file.as_char_ptr(),
                table.as_ptr(),
                n,
            )
        };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        let mut n = 0u32;
        // SAFETY: `raw` is a live handle (created just above); `n` is writable.
        let percpu = unsafe { helpers::rnvme_glue_debugfs_counters_percpu(raw.as_ptr(), &mut n) };
        // INVARIANT: created just above with `table`; `percpu` has its `n` counters, checked
        // to be `N`. (Built before the check, so that a mismatch destroys the handle.)
        let this = Self {
            raw,
            names: table,
            percpu,
        };
        if n as usize != N {
            return Err(EINVAL);
        }
        Ok(this)
    }

    /// Adds `v` to this CPU's copy of counter `i`, which must be below `N`.
    #[inline(always)]
    fn add_this_cpu(&self, i: usize, v: i64) {
        #[cfg(all(target_arch = "x86_64", CONFIG_SMP))]
        {
            // The per-CPU address of counter `i`: an offset from this CPU's `%gs` base, never
            // dereferenced as a plain pointer.
            let addr = (self.percpu as usize).wrapping_add(i.wrapping_mul(8));
            // SAFETY: `i < N` (caller), so `addr` is counter `i` of the live per-CPU
            // allocation (type invariant), which `%gs` relocates to this CPU's copy. One
            // read-modify-write instruction: an interrupt or a migration cannot split it, as
            // with `this_cpu_add()`. Only the flags and that counter change.
            unsafe {
                core::arch::asm!(
                    "add qword ptr gs:[{addr}], {v}",
                    addr = in(reg) addr,
                    v = in(reg) v,
                    options(nostack)
                )
            };
        }
        #[cfg(not(all(target_arch = "x86_64", CONFIG_SMP)))]
        // SAFETY: `raw` is live while `self` is (type invariant); `i < N` fits the helper's
        // `u32` (the handle was made with a `u32` count), which may be called from any context.
        unsafe {
            helpers::rnvme_glue_debugfs_counters_add(self.raw.as_ptr(), i as u32, v)
        };
    }

    /// Adds `v` to counter `idx` (ignored past the last), in this CPU's copy.
    #[inline]
    pub fn add(&self, idx: usize, v: i64) {
        if idx < N {
            self.add_this_cpu(idx, v);
        }
    }

    /// Adds `vals[k]` to counter `first + k` for each `k` (those past the last are ignored), in
    /// this CPU's copies: counters a path updates together. With a constant `first`, the
    /// bounds are checked at compile time and the update is `K` instructions on x86-64.
    #[inline]
    pub fn add_range<const K: usize>(&self, first: usize, vals: &[i64; K]) {
        // One bounds check for the whole range (the usual case), then one add each.
        if first.checked_add(K).is_some_and(|end| end <= N) {
            for (k, &v) in vals.iter().enumerate() {
                self.add_this_cpu(first.wrapping_add(k), v);
            }
            return;
        }
        for (k, &v) in vals.iter().enumerate() {
            let i = first.saturating_add(k);
            if i >= N {
                return;
            }
            self.add_this_cpu(i, v);
        }
    }

    /// Counter `idx`'s value, summed over the CPUs (0 past the last).
    pub fn get(&self, idx: usize) -> i64 {
        let Ok(i) = u32::try_from(idx) else {
            return 0;
        };
        // SAFETY: as in `add`.
        unsafe { helpers::rnvme_glue_debugfs_counters_get(self.raw.as_ptr(), i) }
    }
}

impl<const N: usize> Drop for DebugCounters<N> {
    fn drop(&mut self) {
        // SAFETY: live handle, destroyed once (type invariant); waits for readers, so `names`
        // (dropped after this) is no longer used.
        unsafe { helpers::rnvme_glue_debugfs_counters_destroy(self.raw.as_ptr()) };
    }
}
