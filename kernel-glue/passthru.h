/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of kernel-glue for NVMe passthrough: character devices whose file operations call
 * back into Rust, user passthrough requests (REQ_OP_DRV_IN/OUT) with user or io_uring fixed
 * buffers, and io_uring command completion. Included by helpers.h, so bindgen generates the Rust
 * declarations with the other helpers. Pointers to struct io_uring_cmd are passed as void *
 * (the type is not in the kernel crate's bindings).
 */
#ifndef RNVME_KERNEL_GLUE_PASSTHRU_H
#define RNVME_KERNEL_GLUE_PASSTHRU_H

#include <linux/types.h>

struct bio;
struct gendisk;
struct request;

/* ---- character devices (include/linux/miscdevice.h) ----------------------------------------- */
/*
 * Registers a misc character device /dev/<name> (dynamic minor, mode 0600) owned by THIS_MODULE.
 * On open, `open(data, &file_data)` runs under the misc core's lock (so never concurrently with
 * rnvme_glue_chardev_unregister()) and its file_data is what the other callbacks get; `release`
 * runs on the last close. `ioctl` returns a value or a negative errno; `uring_cmd` returns
 * -EIOCBQUEUED or a completion value. IOPOLL rings are supported: uring_cmd_iopoll polls the
 * request of a command issued with rnvme_glue_uring_execute() when it is on a poll queue.
 * `write` (ioctl): the file was opened for writing; `facts` (uring_cmd): RNVME_URING_* bits.
 * Returns an opaque handle or NULL with *err set.
 */
/* What uring_cmd's callback learns about a command in one word (testing a bit needs no call). */
#define RNVME_URING_WRITE 0x1U /* the file was opened for writing (FMODE_WRITE) */
#define RNVME_URING_SQE128 0x2U /* issue_flags & IO_URING_F_SQE128 */
#define RNVME_URING_NONBLOCK 0x4U /* issue_flags & IO_URING_F_NONBLOCK */
#define RNVME_URING_IOPOLL 0x8U /* issue_flags & IO_URING_F_IOPOLL */
#define RNVME_URING_FIXED 0x10U /* ioucmd->flags & IORING_URING_CMD_FIXED */
#define RNVME_URING_CQE32 0x20U /* issue_flags & IO_URING_F_CQE32 */
void *rnvme_glue_chardev_register(const char *name, void *data,
				  int (*open)(void *data, void **file_data),
				  void (*release)(void *file_data),
				  long (*ioctl)(void *file_data, unsigned int cmd, unsigned long arg,
						bool write),
				  int (*uring_cmd)(void *file_data, void *ioucmd, const void *payload,
						   unsigned int cmd_op, unsigned int issue_flags,
						   unsigned int facts),
				  int *err);
/* misc_deregister() and free: no open() after it returns; open files stay valid. */
void rnvme_glue_chardev_unregister(void *cd);
/* capable(CAP_SYS_ADMIN). */
bool rnvme_glue_capable_sys_admin(void);

/* ---- user passthrough requests (include/linux/blk-mq.h) ------------------------------------- */
/*
 * blk_mq_alloc_request() on the disk's queue for REQ_OP_DRV_OUT (write) or REQ_OP_DRV_IN, with
 * BLK_MQ_REQ_NOWAIT + REQ_NOWAIT when `nowait`, REQ_POLLED (a poll queue's request, if there are
 * poll queues) when `polled`, REQ_ALLOC_CACHE (the data's bio from the per-CPU bio cache, freed
 * back to it by blk_rq_unmap_user() in task context) when `cache`. Returns the request or NULL
 * with *err set.
 */
struct request *rnvme_glue_user_rq_alloc(struct gendisk *disk, bool write, bool nowait,
					 bool polled, bool cache, int *err);
/* blk_rq_map_user_io() of `len` bytes at user address `ubuf` (pinned, or copied when unaligned). */
int rnvme_glue_user_rq_map(struct request *rq, u64 ubuf, u32 len);
/*
 * io_uring_cmd_import_fixed() of [ubuf, ubuf + len) in the command's registered buffer, then
 * blk_rq_map_user_iov() of that bvec iterator (no pinning: the ring holds the pages).
 */
int rnvme_glue_user_rq_map_fixed(struct request *rq, void *ioucmd, u64 ubuf, u32 len);
/* rq->bio (to unmap after completion, when rq->bio has been consumed). */
struct bio *rnvme_glue_user_rq_bio(struct request *rq);
/* rq->timeout = msecs_to_jiffies(ms) (0: the queue's default). */
void rnvme_glue_user_rq_set_timeout_ms(struct request *rq, u32 ms);
/* blk_execute_rq(rq, false): waits for the end; returns its blk_status_t. */
u8 rnvme_glue_user_rq_execute(struct request *rq);
/* blk_rq_unmap_user(bio) when bio is not NULL, then blk_mq_free_request(rq). */
void rnvme_glue_user_rq_finish(struct request *rq, struct bio *bio);

/* ---- io_uring commands (include/linux/io_uring/cmd.h) --------------------------------------- */
/* io_uring_cmd_done(ioucmd, value, result, issue_flags): completes a command issued inline. */
void rnvme_glue_uring_cmd_done(void *ioucmd, int value, u64 result, unsigned int issue_flags);
/*
 * io_uring_cmd_import_fixed() of [ubuf, ubuf + len) in the command's registered buffer, then
 * copy_from_iter() into `kbuf` (`from_user`) or copy_to_iter() out of it: -EFAULT when the range
 * is not inside the registered buffer (or a copy comes up short), as nvme_map_user_request()
 * answers for a fixed buffer. With `kbuf` NULL only the range is checked.
 */
int rnvme_glue_uring_fixed_copy(void *ioucmd, u64 ubuf, void *kbuf, u32 len, bool from_user);
/*
 * Issues `rq` (mapped, rq->bio saved) without waiting. `status` gives the value and result of
 * the CQE of the ended request (blk_status_t `blk_status`); with `at_end` it runs where the
 * request ended (any context, hard-IRQ included) and returns false when something the request
 * holds must be released in process context (then it is called again later without `at_end`,
 * which always returns true). When the request ends, `status` is asked in the completion
 * context, and if it can answer there the request is freed at once, in the completion batch
 * (RQ_END_IO_FREE, as nvme_uring_cmd_end_io() in drivers/nvme/host/ioctl.c); otherwise, and
 * always for a command of an IOPOLL ring (uring_cmd_iopoll reads the request until the task
 * frees it), `status` is asked in the submitter's task with the request still allocated, which
 * is then freed there. In the task the bio is unmapped and io_uring_cmd_done() posts the CQE.
 * Returns -EIOCBQUEUED.
 */
int rnvme_glue_uring_execute(void *ioucmd, struct request *rq,
			     bool (*status)(struct request *rq, u8 blk_status, int *value,
					    u64 *result, bool at_end));

#endif /* RNVME_KERNEL_GLUE_PASSTHRU_H */
