// SPDX-License-Identifier: GPL-2.0

//! Read-only access to a module's C-declared parameters (6.12's `module!` has no `params`).
//!
//! C header: [`include/linux/moduleparam.h`](srctree/include/linux/moduleparam.h)
//!
//! A Rust module declares its parameters in a small C file linked into the same `.ko`
//! (`module_param(name, bool, 0444)`); the loader records them in `THIS_MODULE->kp`. The functions
//! here find a parameter by name there and read its value, checking the parameter's type through
//! its `ops` pointer, so a wrong type is `None`, not a misread.

use kernel::{bindings, str::CStr, ThisModule};

/// Finds read-only parameter `name` of `module` whose ops are `ops`; returns its `arg` pointer.
fn find(
    module: &ThisModule,
    name: &CStr,
    ops: *const bindings::kernel_param_ops,
) -> Option<*const core::ffi::c_void> {
    let m = module.as_ptr();
    if m.is_null() {
        // Built-in code: no parameter table to search.
        return None;
    }
    // SAFETY: `m` is this module's `struct module` (the `ThisModule` contract), alive while code
    // of the module runs; `kp` and `num_kp` are set by the loader before `init` and constant
    // until unload.
    let (kp, num) = unsafe { ((*m).kp, (*m).num_kp) };
    if kp.is_null() {
        return None;
    }
    for i in 0..num as usize {
        // SAFETY: `kp` points to `num_kp` parameters (see above); `i < num_kp`.
        let p = unsafe { &*kp.add(i) };
        if p.name.is_null() || !core::ptr::eq(p.ops, ops) || p.perm & 0o222 != 0 {
            continue;
        }
        // SAFETY: `name` of a registered parameter is a NUL-terminated string in the module's
        // `.rodata`, alive as long as the module.
        let pname = unsafe { CStr::from_char_ptr(p.name) };
        if pname.as_bytes() == name.as_bytes() {
            // SAFETY: for parameters with value ops (bool/uint) the union member is `arg`.
            return Some(unsafe { p.__bindgen_anon_1.arg }.cast_const());
        }
    }
    None
}

/// The value of read-only (`0444`) `bool` parameter `name` of `module`, `None` if it has no
/// such parameter.
pub fn param_bool(module: &ThisModule, name: &CStr) -> Option<bool> {
    let arg = find(module, name, &raw const bindings::param_ops_bool)?;
    // SAFETY: a parameter with `param_ops_bool` points at a `bool` in the module's data; it is
    // read-only (no write permission, checked in `find`) so nothing writes it concurrently.
    Some(unsafe { arg.cast::<bool>().read() })
}

/// The value of read-only (`0444`) `uint` parameter `name` of `module`, `None` if it has no
/// such parameter.
pub fn param_uint(module: &ThisModule, name: &CStr) -> Option<u32> {
    let arg = find(module, name, &raw const bindings::param_ops_uint)?;
    // SAFETY: as in `param_bool`, for a `uint` parameter (`unsigned int`).
    Some(unsafe { arg.cast::<u32>().read() })
}
