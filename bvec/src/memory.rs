//! Access to the bytes behind page handles (the kernel's `kmap_local_page` + `memcpy`).

use crate::Page;

/// Reaches the memory of pages.
///
/// Every method works inside one page: callers guarantee `offset + len <= PAGE_SIZE`
/// (iteration code splits at page boundaries exactly like the kernel's `iterate_bvec`).
/// Each method returns the number of bytes it did **not** process, like `copy_to_user`:
/// 0 means success. Kernel memory never comes up short (the kernel implementation always
/// returns 0); a model may return a short count for a page it does not have, which the
/// iterators turn into a short copy, never a panic.
///
/// # Implementer notes
///
/// A method must not process more than it was given, and must return a value no larger than
/// the length it was asked for; the iterators clamp the result anyway, so a buggy implementation
/// produces wrong data, not undefined behaviour.
pub trait PageMemory<P: Page> {
    /// Copies `dst.len()` bytes out of `page` starting at `offset`.
    fn read(&self, page: P, offset: usize, dst: &mut [u8]) -> usize;
    /// Copies `src` into `page` starting at `offset`.
    fn write(&mut self, page: P, offset: usize, src: &[u8]) -> usize;
    /// Fills `len` bytes of `page` starting at `offset` with zeroes.
    fn zero(&mut self, page: P, offset: usize, len: usize) -> usize;
}
