// SPDX-License-Identifier: GPL-2.0

//! An anonymous mapping in the current process, for tests of user-backed iterators.
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use kernel::{
    bindings,
    error::{code::EFAULT, code::EINVAL, Error, Result},
};

use crate::helpers;

/// Largest errno that `vm_mmap` encodes in its return value (`IS_ERR_VALUE`).
const MAX_ERRNO: usize = 4095;

/// An anonymous, private, read/write mapping of the current task's address space, made with
/// `vm_mmap` and removed with `vm_munmap` on drop.
///
/// Used to get a real user buffer from module init, which runs in the context of the `insmod`
/// process. All accesses go through `copy_to_user`/`copy_from_user`, which handle faults, so the
/// mapping being changed by user space behind our back is harmless.
///
/// # Invariants
///
/// - `addr .. addr + len` was returned by `vm_mmap` in the address space `mm`, and `len` is a
///   non-zero multiple of `PAGE_SIZE`.
/// - `mm` is only compared, never dereferenced.
#[derive(Debug)]
pub struct UserMapping {
    addr: usize,
    len: usize,
    mm: *const bindings::mm_struct,
}

impl UserMapping {
    /// Maps `len` bytes (rounded up to whole pages) of anonymous memory in the current process.
    ///
    /// # Errors
    ///
    /// `EINVAL` for `len == 0` or in a task without a user address space (kernel threads);
    /// the `vm_mmap` error otherwise.
    pub fn new(len: usize) -> Result<Self> {
        let len = len
            .checked_next_multiple_of(bindings::PAGE_SIZE)
            .filter(|&l| l != 0)
            .ok_or(EINVAL)?;
        // SAFETY: reads `current->mm`; always valid in task context.
        let mm = unsafe { helpers::rnvme_glue_current_mm() };
        if mm.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `vm_mmap` on `current->mm` (non-NULL, checked above) with a length; it takes
        // the mmap lock itself and returns an address or an encoded errno.
        let ret = unsafe { helpers::rnvme_glue_vm_mmap_anon(len) };
        if ret > usize::MAX - MAX_ERRNO {
            // A negative errno in `-MAX_ERRNO..0` by the check above.
            return Err(Error::from_errno(ret as isize as i32));
        }
        // INVARIANT: `ret` is the start of a fresh `len`-byte mapping in `mm`.
        Ok(Self { addr: ret, len, mm })
    }

    /// User address of the first byte.
    #[inline]
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Length in bytes (a multiple of `PAGE_SIZE`).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a mapping is at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether the current task runs in the address space this mapping belongs to.
    pub fn is_current(&self) -> bool {
        // SAFETY: reads `current->mm`; always valid in task context.
        let mm = unsafe { helpers::rnvme_glue_current_mm() };
        core::ptr::eq(mm, self.mm)
    }

    /// Copies `src` into the mapping at `offset` (`copy_to_user`).
    ///
    /// # Errors
    ///
    /// `EFAULT` if the range leaves the mapping, the task is not in its address space, or the
    /// copy faults.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let addr = self.user_range(offset, src.len())?;
        // SAFETY: `copy_to_user` checks `access_ok` and handles faults itself; `src` is valid for
        // reads of `src.len()` bytes.
        let left =
            unsafe { bindings::copy_to_user(addr as *mut _, src.as_ptr().cast(), src.len()) };
        if left == 0 {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    /// Copies `dst.len()` bytes out of the mapping at `offset` (`copy_from_user`).
    ///
    /// # Errors
    ///
    /// As for [`Self::write`].
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let addr = self.user_range(offset, dst.len())?;
        // SAFETY: `copy_from_user` checks `access_ok` and handles faults (zeroing the rest);
        // `dst` is valid for writes of `dst.len()` bytes.
        let left = unsafe {
            bindings::copy_from_user(dst.as_mut_ptr().cast(), addr as *const _, dst.len())
        };
        if left == 0 {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    fn user_range(&self, offset: usize, len: usize) -> Result<usize> {
        let end = offset.checked_add(len).ok_or(EFAULT)?;
        if end > self.len || !self.is_current() {
            return Err(EFAULT);
        }
        Ok(self.addr + offset)
    }
}

impl Drop for UserMapping {
    fn drop(&mut self) {
        // Dropped in another task (say, module exit run by `rmmod`): the mapping belongs to the
        // original process and goes away with it; unmapping here would hit the wrong mm.
        if !self.is_current() {
            return;
        }
        // SAFETY: `addr .. addr + len` is our mapping in the current mm (type invariant, checked
        // above); `vm_munmap` takes the mmap lock itself. A failure leaves the mapping to the
        // process, which is not a kernel leak.
        let _ = unsafe { bindings::vm_munmap(self.addr, self.len) };
    }
}
