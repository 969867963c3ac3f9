// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters of rnvme.ko. Linux 6.12's Rust `module!` macro has no parameter support, so
 * they are declared here and read from Rust through THIS_MODULE->kp (kernel-glue/src/params.rs).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>

static unsigned int io_queues;
module_param(io_queues, uint, 0444);
MODULE_PARM_DESC(io_queues, "I/O queues per controller (0: one per online CPU, as granted)");

static unsigned int poll_queues;
module_param(poll_queues, uint, 0444);
MODULE_PARM_DESC(poll_queues, "Polled I/O queues per controller, no interrupts (io_uring IOPOLL)");

static unsigned int sgl_threshold = 32768;
module_param(sgl_threshold, uint, 0444);
MODULE_PARM_DESC(sgl_threshold,
		 "Use SGLs (if the controller has them) when the average segment is this large (0: never)");

static unsigned int queue_depth = 256;
module_param(queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth, "Entries per I/O queue (2..1024, at most CAP.MQES + 1)");

static unsigned int shadow_doorbells = 1;
module_param(shadow_doorbells, uint, 0444);
MODULE_PARM_DESC(shadow_doorbells,
		 "Use shadow doorbells (Doorbell Buffer Config) when the controller has them (0: MMIO only)");

static unsigned int defer_cq_doorbell = 1;
module_param(defer_cq_doorbell, uint, 0444);
MODULE_PARM_DESC(defer_cq_doorbell,
		 "Completion queues deeper than their submission queues, head doorbell written once per many completions (MSI-X and poll queues; 0: after every interrupt, as the C driver)");

static unsigned int delete_queues_before_disable = 1;
module_param(delete_queues_before_disable, uint, 0444);
MODULE_PARM_DESC(delete_queues_before_disable,
		 "Delete the I/O queues of a controller that still answers before a reset disables it, as the C driver (0: disable at once; QEMU 7.2 can crash then, scripts/qemu-nvme-reset-race.sh)");

static unsigned int premap = 1;
module_param(premap, uint, 0444);
MODULE_PARM_DESC(premap,
		 "Premap io_uring registered buffers on first use (DMA tags; 0: map every I/O)");

static unsigned int premap_max_tags = 64;
module_param(premap_max_tags, uint, 0444);
MODULE_PARM_DESC(premap_max_tags, "Premapped registered buffers per open file (1..4096)");

static unsigned int premap_max_mb = 1024;
module_param(premap_max_mb, uint, 0444);
MODULE_PARM_DESC(premap_max_mb, "MiB of registered buffers premapped per open file");
