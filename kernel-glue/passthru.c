// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of kernel-glue for NVMe passthrough (declarations and contracts in passthru.h):
 * misc character devices with Rust callbacks, user passthrough requests, io_uring commands.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/io_uring/cmd.h>
#include <linux/io_uring_types.h>
#include <linux/jiffies.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "passthru.h"

struct rnvme_chardev {
	struct miscdevice misc;
	char name[32];
	void *data;
	int (*open)(void *data, void **file_data);
	void (*release)(void *file_data);
	long (*ioctl)(void *file_data, unsigned int cmd, unsigned long arg, bool write);
	int (*uring_cmd)(void *file_data, void *ioucmd, const void *payload,
			 unsigned int cmd_op, unsigned int issue_flags, unsigned int facts);
};

/* What an open file keeps: the Rust file data and the callbacks (the device may go first). */
struct rnvme_chardev_file {
	void *file_data;
	void (*release)(void *file_data);
	long (*ioctl)(void *file_data, unsigned int cmd, unsigned long arg, bool write);
	int (*uring_cmd)(void *file_data, void *ioucmd, const void *payload,
			 unsigned int cmd_op, unsigned int issue_flags, unsigned int facts);
};

/* Lives in io_uring_cmd's pdu (32 bytes) while the command is in flight. */
struct rnvme_uring_pdu {
	/* The request while it is allocated (IOPOLL polls it); NULL once freed. */
	struct request *rq;
	/* The user mapping to undo in the submitter's task, or NULL. */
	struct bio *bio;
	union {
		/* Until the request is freed (rnvme_glue_uring_execute()). */
		bool (*status)(struct request *rq, u8 blk_status, int *value, u64 *result,
			       bool at_end);
		int value;			/* the CQE's value, once freed at its end */
	};
	union {
		bool early;	/* until the request ends: may it be freed there */
		u8 blk_status;	/* the end's status, when the task frees the request */
		u64 result;	/* the CQE's result, once freed at its end */
	};
};

static struct rnvme_uring_pdu *rnvme_uring_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct rnvme_uring_pdu) > sizeof(ioucmd->pdu));
	return (struct rnvme_uring_pdu *)ioucmd->pdu;
}

static int rnvme_chardev_open(struct inode *inode, struct file *file)
{
	/* misc_open() set private_data to our miscdevice and holds misc_mtx. */
	struct rnvme_chardev *cd = container_of(file->private_data, struct rnvme_chardev, misc);
	struct rnvme_chardev_file *f;
	int ret;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	ret = cd->open(cd->data, &f->file_data);
	if (ret) {
		kfree(f);
		return ret;
	}
	f->release = cd->release;
	f->ioctl = cd->ioctl;
	f->uring_cmd = cd->uring_cmd;
	file->private_data = f;
	return 0;
}

static int rnvme_chardev_release(struct inode *inode, struct file *file)
{
	struct rnvme_chardev_file *f = file->private_data;

	f->release(f->file_data);
	kfree(f);
	return 0;
}

static long rnvme_chardev_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct rnvme_chardev_file *f = file->private_data;

	return f->ioctl(f->file_data, cmd, arg, file->f_mode & FMODE_WRITE);
}

static int rnvme_chardev_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct rnvme_chardev_file *f = ioucmd->file->private_data;
	unsigned int facts = 0;

	if (ioucmd->file->f_mode & FMODE_WRITE)
		facts |= RNVME_URING_WRITE;
	if (issue_flags & IO_URING_F_SQE128)
		facts |= RNVME_URING_SQE128;
	if (issue_flags & IO_URING_F_NONBLOCK)
		facts |= RNVME_URING_NONBLOCK;
	if (issue_flags & IO_URING_F_IOPOLL)
		facts |= RNVME_URING_IOPOLL;
	if (ioucmd->flags & IORING_URING_CMD_FIXED)
		facts |= RNVME_URING_FIXED;
	if (issue_flags & IO_URING_F_CQE32)
		facts |= RNVME_URING_CQE32;
	/* No request yet: rnvme_chardev_uring_cmd_iopoll() polls only one that was issued. */
	WRITE_ONCE(rnvme_uring_pdu(ioucmd)->rq, NULL);
	/*
	 * The SQE's command payload (16 bytes, 80 with IO_URING_F_SQE128; 16-byte aligned), which
	 * the Rust side reads with single loads, as the C driver reads struct nvme_uring_cmd with
	 * READ_ONCE() (user space can still write it).
	 */
	return f->uring_cmd(f->file_data, ioucmd, io_uring_sqe_cmd(ioucmd->sqe), ioucmd->cmd_op,
			    issue_flags, facts);
}

/*
 * IOPOLL (nvme_ns_chr_uring_cmd_iopoll() in drivers/nvme/host/ioctl.c): polls the hardware queue
 * of the command's request when it is a poll queue's. The request stays allocated until the
 * command's task work has run (rnvme_uring_task_done() clears the pointer first), and that runs
 * in the task that also polls.
 */
static int rnvme_chardev_uring_cmd_iopoll(struct io_uring_cmd *ioucmd, struct io_comp_batch *iob,
					  unsigned int poll_flags)
{
	struct request *rq = READ_ONCE(rnvme_uring_pdu(ioucmd)->rq);

	if (rq && blk_rq_is_poll(rq))
		return blk_rq_poll(rq, iob, poll_flags);
	return 0;
}

static const struct file_operations rnvme_chardev_fops = {
	.owner = THIS_MODULE,
	.open = rnvme_chardev_open,
	.release = rnvme_chardev_release,
	.unlocked_ioctl = rnvme_chardev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.uring_cmd = rnvme_chardev_uring_cmd,
	.uring_cmd_iopoll = rnvme_chardev_uring_cmd_iopoll,
};

void *rnvme_glue_chardev_register(const char *name, void *data,
				  int (*open)(void *data, void **file_data),
				  void (*release)(void *file_data),
				  long (*ioctl)(void *file_data, unsigned int cmd, unsigned long arg,
						bool write),
				  int (*uring_cmd)(void *file_data, void *ioucmd, const void *payload,
						   unsigned int cmd_op, unsigned int issue_flags,
						   unsigned int facts),
				  int *err)
{
	struct rnvme_chardev *cd = kzalloc(sizeof(*cd), GFP_KERNEL);

	if (!cd) {
		*err = -ENOMEM;
		return NULL;
	}
	strscpy(cd->name, name, sizeof(cd->name));
	cd->data = data;
	cd->open = open;
	cd->release = release;
	cd->ioctl = ioctl;
	cd->uring_cmd = uring_cmd;
	cd->misc.minor = MISC_DYNAMIC_MINOR;
	cd->misc.name = cd->name;
	cd->misc.fops = &rnvme_chardev_fops;
	cd->misc.mode = 0600;
	*err = misc_register(&cd->misc);
	if (*err) {
		kfree(cd);
		return NULL;
	}
	return cd;
}

void rnvme_glue_chardev_unregister(void *p)
{
	struct rnvme_chardev *cd = p;

	misc_deregister(&cd->misc);
	kfree(cd);
}

bool rnvme_glue_capable_sys_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}

struct request *rnvme_glue_user_rq_alloc(struct gendisk *disk, bool write, bool nowait,
					 bool polled, bool cache, int *err)
{
	blk_opf_t opf = write ? REQ_OP_DRV_OUT : REQ_OP_DRV_IN;
	struct request *rq;

	if (nowait)
		opf |= REQ_NOWAIT;
	/* A poll queue's request, if the queue set has poll queues (nvme_uring_cmd_io()). */
	if (polled)
		opf |= REQ_POLLED;
	/*
	 * blk_rq_map_user_io() takes the bio from the per-CPU cache instead of kmalloc()ing it
	 * (blk_rq_map_bio_alloc() in block/blk-map.c), as nvme_uring_cmd_io() asks for every
	 * io_uring command.
	 */
	if (cache)
		opf |= REQ_ALLOC_CACHE;
	rq = blk_mq_alloc_request(disk->queue, opf, nowait ? BLK_MQ_REQ_NOWAIT : 0);
	if (IS_ERR(rq)) {
		*err = PTR_ERR(rq);
		return NULL;
	}
	return rq;
}

int rnvme_glue_user_rq_map(struct request *rq, u64 ubuf, u32 len)
{
	return blk_rq_map_user_io(rq, NULL, u64_to_user_ptr(ubuf), len, GFP_KERNEL, false, 0,
				  false, rq_data_dir(rq));
}

int rnvme_glue_user_rq_map_fixed(struct request *rq, void *ioucmd, u64 ubuf, u32 len)
{
	struct iov_iter iter;
	int ret;

	ret = io_uring_cmd_import_fixed(ubuf, len, rq_data_dir(rq), &iter, ioucmd);
	if (ret < 0)
		return ret;
	return blk_rq_map_user_iov(rq->q, rq, NULL, &iter, GFP_KERNEL);
}

struct bio *rnvme_glue_user_rq_bio(struct request *rq)
{
	return rq->bio;
}

void rnvme_glue_user_rq_set_timeout_ms(struct request *rq, u32 ms)
{
	rq->timeout = ms ? msecs_to_jiffies(ms) : 0;
}

u8 rnvme_glue_user_rq_execute(struct request *rq)
{
	return blk_execute_rq(rq, false);
}

void rnvme_glue_user_rq_finish(struct request *rq, struct bio *bio)
{
	if (bio)
		blk_rq_unmap_user(bio);
	blk_mq_free_request(rq);
}

void rnvme_glue_uring_cmd_done(void *ioucmd, int value, u64 result, unsigned int issue_flags)
{
	io_uring_cmd_done(ioucmd, value, result, issue_flags);
}

int rnvme_glue_uring_fixed_copy(void *ioucmd, u64 ubuf, void *kbuf, u32 len, bool from_user)
{
	struct iov_iter iter;
	int ret;

	ret = io_uring_cmd_import_fixed(ubuf, len, from_user ? ITER_SOURCE : ITER_DEST, &iter,
					ioucmd);
	if (ret < 0 || !kbuf)
		return ret;
	if (from_user)
		return copy_from_iter(kbuf, len, &iter) == len ? 0 : -EFAULT;
	return copy_to_iter(kbuf, len, &iter) == len ? 0 : -EFAULT;
}

/*
 * In the submitter's task: the value and result, from the end (request already freed) or from
 * the driver now (which may also drop what the request held, e.g. a premapped buffer's last
 * reference, where sleeping-safe freeing is fine); then unmap, free the request if it is still
 * allocated, and post the CQE.
 */
static void rnvme_uring_task_done(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct rnvme_uring_pdu *pdu = rnvme_uring_pdu(ioucmd);
	struct request *rq = pdu->rq;
	int value = 0;
	u64 result = 0;

	if (rq) {
		pdu->status(rq, pdu->blk_status, &value, &result, false);
	} else {
		value = pdu->value;
		result = pdu->result;
	}
	if (pdu->bio)
		blk_rq_unmap_user(pdu->bio);
	if (rq) {
		WRITE_ONCE(pdu->rq, NULL);
		blk_mq_free_request(rq);
	}
	io_uring_cmd_done(ioucmd, value, result, issue_flags);
}

static enum rq_end_io_ret rnvme_uring_end_io(struct request *rq, blk_status_t err)
{
	struct io_uring_cmd *ioucmd = rq->end_io_data;
	struct rnvme_uring_pdu *pdu = rnvme_uring_pdu(ioucmd);
	enum rq_end_io_ret ret = RQ_END_IO_NONE;
	int value;
	u64 result;

	/*
	 * Post from the submitter's task (the right ring even when several poll one queue). The
	 * request is freed here when the driver can give the CQE's value now (freed in the
	 * completion batch, without blk_mq_free_request()'s per-request queue restart check), else
	 * it stays allocated until rnvme_uring_task_done().
	 */
	if (pdu->early && pdu->status(rq, (u8)err, &value, &result, true)) {
		WRITE_ONCE(pdu->rq, NULL);
		pdu->value = value;
		pdu->result = result;
		ret = RQ_END_IO_FREE;
	} else {
		pdu->blk_status = (u8)err;
	}
	io_uring_cmd_do_in_task_lazy(ioucmd, rnvme_uring_task_done);
	return ret;
}

int rnvme_glue_uring_execute(void *p, struct request *rq,
			     bool (*status)(struct request *rq, u8 blk_status, int *value,
					    u64 *result, bool at_end))
{
	struct io_uring_cmd *ioucmd = p;
	struct rnvme_uring_pdu *pdu = rnvme_uring_pdu(ioucmd);

	pdu->bio = rq->bio;
	WRITE_ONCE(pdu->rq, rq);
	pdu->status = status;
	pdu->result = 0;
	/* Never for an IOPOLL ring's command: uring_cmd_iopoll reads pdu->rq until the task. */
	pdu->early = !(cmd_to_io_kiocb(ioucmd)->ctx->flags & IORING_SETUP_IOPOLL);
	rq->end_io_data = ioucmd;
	rq->end_io = rnvme_uring_end_io;
	blk_execute_rq_nowait(rq, false);
	return -EIOCBQUEUED;
}
