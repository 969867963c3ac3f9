// SPDX-License-Identifier: GPL-2.0

//! Self-test and differential test of the iovstack crates on real kernel memory.

use kernel::{c_str, prelude::*};

module! {
    type: IovstackSelftest,
    name: "iovstack_selftest",
    author: "rnvme",
    description: "Self-test and differential test of the bvec/iov/bio crates",
    license: "GPL",
}

struct IovstackSelftest;

impl kernel::Module for IovstackSelftest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let fault = kernel_glue::params::param_bool(module, c_str!("inject_fault"));
        pr_info!("inject_fault={:?}\n", fault);
        let mut mem = kernel_glue::CheckedMemory::new();
        let _ = mem.alloc_pages(2)?;
        Ok(Self)
    }
}
