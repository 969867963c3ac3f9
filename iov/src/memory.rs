//! Access to the memory behind segments: user addresses, kernel addresses and pages.
//!
//! C header: [`include/linux/uaccess.h`](srctree/include/linux/uaccess.h)
//!
//! Iterators only hold segment tables; every operation that touches bytes takes the memory as a
//! `&mut M` argument with `M: `[`Memory<P>`]. The kernel implementation is a zero-sized type over
//! `copy_to_user`/`copy_from_user`/`clear_user`, `memcpy` on kernel addresses and
//! `kmap_local_page`; the user-space model in the tests crate is an arena.
//!
//! Every copy method returns the number of bytes it did **not** process (0 = all done), like
//! `copy_to_user`. A fault becomes a short count, never undefined behaviour. Iteration code calls
//! each method once per chunk and clamps the result to the chunk length.

use bvec::{Page, PageMemory};

/// Flags of a user page lookup (the `FOLL_*` bits the iterator passes to GUP).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GupFlags {
    /// `FOLL_WRITE`: the pages will be written (the iterator is a DEST).
    pub write: bool,
    /// `FOLL_PIN` (`pin_user_pages_fast`, from `extract_pages`) instead of plain references
    /// (`get_user_pages_fast`, from `get_pages`).
    pub pin: bool,
    /// `FOLL_NOFAULT`: do not fault pages in (the iterator's `nofault` flag).
    pub nofault: bool,
}

/// User memory: `copy_to_user`, `copy_from_user`, `clear_user` and GUP.
///
/// # Implementer notes
///
/// Each copy must process a prefix of the range and return how many bytes of it were not
/// processed (at most the length asked for; larger values are clamped). Addresses are untrusted:
/// an address outside the user range is a fault (`access_ok` failing), reported as a short copy.
pub trait UserMemory<P: Page> {
    /// Copies `src` to user address `addr`; returns the bytes not copied.
    fn copy_to_user(&mut self, addr: usize, src: &[u8]) -> usize;
    /// Copies `dst.len()` bytes from user address `addr` into `dst`; returns the bytes not copied.
    fn copy_from_user(&mut self, addr: usize, dst: &mut [u8]) -> usize;
    /// Zeroes `len` bytes at user address `addr`; returns the bytes not zeroed.
    fn clear_user(&mut self, addr: usize, len: usize) -> usize;
    /// Looks up the pages of the user range starting at the page-aligned `addr`, filling a prefix
    /// of `pages` (`get_user_pages_fast` / `pin_user_pages_fast`). Returns how many were filled;
    /// 0 means the first page faulted. The caller owns the references or pins taken.
    fn user_pages(&mut self, addr: usize, flags: GupFlags, pages: &mut [P]) -> usize;
}

/// Kernel memory behind `struct kvec` addresses.
///
/// # Implementer notes
///
/// The kernel implementation dereferences the addresses it is given; since iterators are built
/// from safe code, such an implementation must only be constructible through an `unsafe` function
/// whose contract is that every kvec table used with it describes valid kernel memory. Copies on
/// valid kernel memory are never short (`memcpy_to_iter` returns 0); a model may return a short
/// count for addresses it does not have.
pub trait KernelMemory<P: Page> {
    /// Copies `src` to kernel address `addr`; returns the bytes not copied.
    fn copy_to_kernel(&mut self, addr: usize, src: &[u8]) -> usize;
    /// Copies `dst.len()` bytes from kernel address `addr`; returns the bytes not copied.
    fn copy_from_kernel(&mut self, addr: usize, dst: &mut [u8]) -> usize;
    /// Zeroes `len` bytes at kernel address `addr`; returns the bytes not zeroed.
    fn clear_kernel(&mut self, addr: usize, len: usize) -> usize;
    /// The page holding kernel address `addr` (`virt_to_page` or `vmalloc_to_page`), `None` if
    /// there is none. Used by `extract_pages` on KVEC iterators; no reference is taken.
    fn kernel_page(&self, addr: usize) -> Option<P>;
    /// Takes a reference on `page` (`get_page`), as `get_pages` does for BVEC and page lists.
    fn get_page(&mut self, page: P);
}

/// Size of the bounce buffer the default cross-space copies use.
const BOUNCE: usize = 256;

/// All the memory an iterator may reach, plus copies between a page and the other spaces.
///
/// The cross-space methods serve `copy_page_to_iter` / `copy_page_from_iter` (the kernel kmaps the
/// page and copies directly). The defaults go through a small stack bounce buffer; a kernel
/// implementation overrides them with `kmap_local_page` plus one copy. Page ranges always lie
/// inside one page (`offset + len <= PAGE_SIZE`). All return the bytes not copied.
pub trait Memory<P: Page>: UserMemory<P> + KernelMemory<P> + PageMemory<P> {
    /// Copies `len` bytes from `page` at `offset` to user address `addr`.
    fn copy_page_to_user(&mut self, page: P, offset: usize, addr: usize, len: usize) -> usize {
        bounce(
            self,
            len,
            |m, done, buf| m.read(page, offset.wrapping_add(done), buf),
            |m, done, buf| m.copy_to_user(addr.wrapping_add(done), buf),
        )
    }

    /// Copies `len` bytes from user address `addr` into `page` at `offset`.
    fn copy_user_to_page(&mut self, addr: usize, page: P, offset: usize, len: usize) -> usize {
        bounce(
            self,
            len,
            |m, done, buf| m.copy_from_user(addr.wrapping_add(done), buf),
            |m, done, buf| m.write(page, offset.wrapping_add(done), buf),
        )
    }

    /// Copies `len` bytes from `page` at `offset` to kernel address `addr`.
    fn copy_page_to_kernel(&mut self, page: P, offset: usize, addr: usize, len: usize) -> usize {
        bounce(
            self,
            len,
            |m, done, buf| m.read(page, offset.wrapping_add(done), buf),
            |m, done, buf| m.copy_to_kernel(addr.wrapping_add(done), buf),
        )
    }

    /// Copies `len` bytes from kernel address `addr` into `page` at `offset`.
    fn copy_kernel_to_page(&mut self, addr: usize, page: P, offset: usize, len: usize) -> usize {
        bounce(
            self,
            len,
            |m, done, buf| m.copy_from_kernel(addr.wrapping_add(done), buf),
            |m, done, buf| m.write(page, offset.wrapping_add(done), buf),
        )
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`.
    fn copy_page_to_page(
        &mut self,
        src: P,
        src_off: usize,
        dst: P,
        dst_off: usize,
        len: usize,
    ) -> usize {
        bounce(
            self,
            len,
            |m, done, buf| m.read(src, src_off.wrapping_add(done), buf),
            |m, done, buf| m.write(dst, dst_off.wrapping_add(done), buf),
        )
    }
}

/// Moves `len` bytes through a stack buffer: `read(mem, done, buf)` fills `buf` and returns the
/// bytes it did not read, `write(mem, done, buf)` drains it likewise. Stops at the first short
/// count and returns the bytes not moved.
fn bounce<M: ?Sized>(
    mem: &mut M,
    len: usize,
    mut read: impl FnMut(&mut M, usize, &mut [u8]) -> usize,
    mut write: impl FnMut(&mut M, usize, &[u8]) -> usize,
) -> usize {
    let mut buf = [0u8; BOUNCE];
    let mut done = 0;
    while done < len {
        let n = core::cmp::min(BOUNCE, len - done);
        let Some(chunk) = buf.get_mut(..n) else {
            break;
        };
        let unread = core::cmp::min(read(mem, done, chunk), n);
        let Some(got) = chunk.get(..n - unread) else {
            break;
        };
        let unwritten = core::cmp::min(write(mem, done, got), got.len());
        done += got.len() - unwritten;
        if unread != 0 || unwritten != 0 {
            break;
        }
    }
    len - done
}
