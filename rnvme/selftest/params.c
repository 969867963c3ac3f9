// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters of iovstack_selftest.ko. Linux 6.12's Rust `module!` macro has no parameter
 * support, so they are declared here and read from Rust through THIS_MODULE->kp
 * (kernel-glue/src/params.rs).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool inject_fault;
module_param(inject_fault, bool, 0444);
MODULE_PARM_DESC(inject_fault,
		 "Corrupt one byte of one differential-test result (the test must then fail)");

static unsigned int seed = 0x10f5eed;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "Seed of the random differential-test geometries");

static unsigned int cases = 8000;
module_param(cases, uint, 0444);
MODULE_PARM_DESC(cases, "Number of random differential cases (spread over the iterator kinds)");
