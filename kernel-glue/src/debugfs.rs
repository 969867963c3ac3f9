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
/// # Invariants
///
/// `raw` is a handle from `rnvme_glue_debugfs_counters_create` with `names.len()` counters
/// whose name table is `names`, destroyed only by the drop.
pub struct DebugCounters {
    raw: NonNull<c_void>,
    names: KVec<*const kernel::ffi::c_char>,
}

// SAFETY: atomic counters; the name pointers are static strings; the handle may be destroyed
// from any thread that may sleep.
unsafe impl Send for DebugCounters {}
// SAFETY: `&DebugCounters` only adds to and reads atomics.
unsafe impl Sync for DebugCounters {}

impl fmt::Debug for DebugCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DebugCounters")
            .field("n", &self.names.len())
            .finish()
    }
}

impl DebugCounters {
    /// Creates the counters named `names` (all zero) in `rnvme/<dir>/<file>` (may sleep).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a directory name over 31 bytes, `ENOMEM`. (A debugfs failure only leaves
    /// the file out.)
    pub fn new(
        dir: fmt::Arguments<'_>,
        file: &'static CStr,
        names: &[&'static CStr],
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
        // INVARIANT: created just above with `table`.
        Ok(Self { raw, names: table })
    }

    /// Adds `v` to counter `idx` (ignored past the last), in this CPU's copy.
    #[inline]
    pub fn add(&self, idx: usize, v: i64) {
        let Ok(i) = u32::try_from(idx) else {
            return;
        };
        // SAFETY: `raw` is live while `self` is (type invariant); the helper ignores an index
        // past the last and may be called from any context.
        unsafe { helpers::rnvme_glue_debugfs_counters_add(self.raw.as_ptr(), i, v) };
    }

    /// Adds `vals[k]` to counter `first + k` for each `k` (those past the last are ignored), in
    /// this CPU's copies: counters a path updates together, in one call instead of one each.
    #[inline]
    pub fn add_range(&self, first: usize, vals: &[i64]) {
        let (Ok(first), Ok(n)) = (u32::try_from(first), u32::try_from(vals.len())) else {
            return;
        };
        // SAFETY: `raw` is live while `self` is (type invariant); `vals` holds `n` values for
        // the duration of the call; the helper ignores counters past the last and may be
        // called from any context.
        unsafe {
            helpers::rnvme_glue_debugfs_counters_add_range(
                self.raw.as_ptr(),
                first,
                vals.as_ptr(),
                n,
            )
        };
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

impl Drop for DebugCounters {
    fn drop(&mut self) {
        // SAFETY: live handle, destroyed once (type invariant); waits for readers, so `names`
        // (dropped after this) is no longer used.
        unsafe { helpers::rnvme_glue_debugfs_counters_destroy(self.raw.as_ptr()) };
    }
}
