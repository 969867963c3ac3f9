// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters of iovstack_bench.ko. Linux 6.12's Rust `module!` macro has no parameter
 * support, so they are declared here and read from Rust through THIS_MODULE->kp
 * (kernel-glue/src/params.rs).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>

static unsigned int size_mib = 256;
module_param(size_mib, uint, 0444);
MODULE_PARM_DESC(size_mib, "MiB copied per sample and kind (1..1024; the kunit benchmarks: 256)");

static unsigned int samples = 16;
module_param(samples, uint, 0444);
MODULE_PARM_DESC(samples, "Samples per kind and implementation (1..64)");

static unsigned int table_mib = 1024;
module_param(table_mib, uint, 0444);
MODULE_PARM_DESC(table_mib,
		 "MiB described by the registered-buffer table of the construction benchmarks (1..4096)");

static bool inject_fault;
module_param(inject_fault, bool, 0444);
MODULE_PARM_DESC(inject_fault,
		 "Spoil the destination of every Rust bvec copy before it is checked (the run must then fail)");
