// SPDX-License-Identifier: GPL-2.0

//! An anonymous mapping in the loading process: the user memory of the UBUF and IOVEC copies.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use bvec::PAGE_SIZE;
use kernel::error::{code::EINVAL, Error, Result};

use crate::helpers;

/// Largest errno that `vm_mmap` encodes in its return value (`IS_ERR_VALUE`).
const MAX_ERRNO: usize = 4095;

/// A private anonymous read/write mapping made with `vm_mmap` in `current->mm` (module init
/// runs in the `insmod` process), removed with `vm_munmap` on drop.
///
/// Never written by the benchmark, so its pages read as the shared zero page once faulted in
/// (one page, cache-hot, as the kernel benchmark's user buffer). All accesses go through the
/// user-copy functions, which check the address and handle faults.
///
/// # Invariants
///
/// `addr .. addr + len` was returned by `vm_mmap` in the current process; `len` is a non-zero
/// multiple of `PAGE_SIZE`.
#[derive(Debug)]
pub struct UserBuf {
    addr: usize,
    len: usize,
}

impl UserBuf {
    /// Maps `len` bytes (rounded up to pages).
    ///
    /// # Errors
    ///
    /// `EINVAL` for `len == 0` or without a user address space (kernel threads); the
    /// `vm_mmap` error otherwise.
    pub fn new(len: usize) -> Result<Self> {
        let len = len
            .checked_next_multiple_of(PAGE_SIZE)
            .filter(|&l| l != 0)
            .ok_or(EINVAL)?;
        // SAFETY: reads `current->mm`.
        if !unsafe { helpers::rnvme_glue_bench_has_mm() } {
            return Err(EINVAL);
        }
        // SAFETY: `vm_mmap` in the current (user) process; takes the mmap lock itself.
        let ret = unsafe { helpers::rnvme_glue_bench_vm_mmap(len as _) } as usize;
        if ret > usize::MAX - MAX_ERRNO {
            return Err(Error::from_errno(ret as isize as i32));
        }
        // INVARIANT: a fresh mapping of `len` bytes.
        Ok(Self { addr: ret, len })
    }

    /// User address of the first byte.
    #[inline]
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a mapping is at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl Drop for UserBuf {
    fn drop(&mut self) {
        // SAFETY: removes the mapping made in `new` (type invariant); if user space changed it
        // meanwhile, `vm_munmap` just unmaps whatever is there, in that process only.
        unsafe { helpers::rnvme_glue_bench_vm_munmap(self.addr as _, self.len as _) };
    }
}
