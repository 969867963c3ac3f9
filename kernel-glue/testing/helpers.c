// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of kernel-glue-testing; see helpers.h. Each helper calls the static inline function
 * or macro it is named after.
 */
#include <linux/bio.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/bvec.h>
#include <linux/folio_queue.h>
#include <linux/highmem.h>
#include <linux/instrumented.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "helpers.h"

struct page *rnvme_glue_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

void rnvme_glue_iov_iter_ubuf(struct iov_iter *i, unsigned int direction, void __user *buf,
			      size_t count)
{
	iov_iter_ubuf(i, direction, buf, count);
}

void rnvme_glue_iov_iter_save_state(const struct iov_iter *i, struct iov_iter_state *state)
{
	/* iov_iter_save_state() takes a non-const pointer but only reads. */
	state->iov_offset = i->iov_offset;
	state->count = i->count;
	state->nr_segs = i->nr_segs;
}

unsigned long rnvme_glue_copy_from_user_nozero(void *to, const void __user *from,
					       unsigned long n)
{
	unsigned long left = n;

	might_fault();
	if (access_ok(from, n)) {
		instrument_copy_from_user_before(to, from, n);
		left = raw_copy_from_user(to, from, n);
		instrument_copy_from_user_after(to, from, n, left);
	}
	return left;
}

unsigned long rnvme_glue_clear_user(void __user *to, unsigned long n)
{
	return clear_user(to, n);
}

unsigned long rnvme_glue_vm_mmap_anon(unsigned long len)
{
	return vm_mmap(NULL, 0, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, 0);
}

void rnvme_glue_bio_advance_iter(const struct bio_vec *table, struct bvec_iter *iter,
				 unsigned int bytes, bool single)
{
	/* Only bi_opf and bi_io_vec are read by the two inline functions. */
	struct bio bio = { .bi_opf = REQ_OP_READ, .bi_io_vec = (struct bio_vec *)table };

	if (single)
		bio_advance_iter_single(&bio, iter, bytes);
	else
		bio_advance_iter(&bio, iter, bytes);
}

void rnvme_glue_bvec_iter_views(const struct bio_vec *table, const struct bvec_iter *iter,
				struct bio_vec *mp, struct bio_vec *sp)
{
	*mp = mp_bvec_iter_bvec(table, *iter);
	*sp = bvec_iter_bvec(table, *iter);
}

const struct mm_struct *rnvme_glue_current_mm(void)
{
	return current->mm;
}

int rnvme_glue_bio_split_rw_at(const struct bio_vec *table, unsigned short nr, unsigned int size,
			       bool write, unsigned int logical_block_size,
			       unsigned short max_segments, unsigned int max_segment_size,
			       unsigned long seg_boundary_mask, unsigned long virt_boundary_mask,
			       unsigned int max_bytes, int *sectors, unsigned int *segs)
{
	/* Only the fields bio_split_rw_at() and its helpers read; zone_write_granularity is 0. */
	const struct queue_limits lim = {
		.logical_block_size = logical_block_size,
		.physical_block_size = logical_block_size,
		.max_segments = max_segments,
		.max_segment_size = max_segment_size,
		.seg_boundary_mask = seg_boundary_mask,
		.virt_boundary_mask = virt_boundary_mask,
	};
	struct bio *bio;
	unsigned short i;

	bio = bio_kmalloc(nr, GFP_KERNEL);
	if (!bio)
		return -ENOMEM;
	bio_init(bio, NULL, bio->bi_inline_vecs, nr, write ? REQ_OP_WRITE : REQ_OP_READ);
	/* __bio_add_page() never merges: the kernel's table is exactly ours. */
	for (i = 0; i < nr; i++)
		__bio_add_page(bio, table[i].bv_page, table[i].bv_len, table[i].bv_offset);
	bio->bi_iter.bi_size = size;
	*segs = 0;
	*sectors = bio_split_rw_at(bio, &lim, segs, max_bytes);
	bio_uninit(bio);
	kfree(bio);
	return 0;
}

struct folio_queue *rnvme_glue_folioq_new(struct page *const *heads, const u8 *orders,
					  unsigned int nr)
{
	struct folio_queue *folioq;
	unsigned int k;

	if (nr > PAGEVEC_SIZE)
		return NULL;
	folioq = kzalloc(sizeof(*folioq), GFP_KERNEL);
	if (!folioq)
		return NULL;
	folioq_init(folioq, 0);
	for (k = 0; k < nr; k++) {
		folioq->vec.folios[k] = page_folio(heads[k]);
		folioq->orders[k] = orders[k];
	}
	folioq->vec.nr = nr;
	return folioq;
}

void rnvme_glue_folioq_free(struct folio_queue *folioq)
{
	kfree(folioq);
}

/* ---- bio_split_to_limits() on a real queue ------------------------------------------------- */

/* 2^52 sectors: any sector below 2^51 with a bio of at most 4 GiB is inside. */
#define RNVME_GLUE_SPLIT_DISK_SECTORS (1ULL << 52)

static void rnvme_glue_split_submit_bio(struct bio *bio)
{
	/* Never reached (bios are only queued on current->bio_list); fail rather than pretend. */
	bio_io_error(bio);
}

static const struct block_device_operations rnvme_glue_split_fops = {
	.owner = THIS_MODULE,
	.submit_bio = rnvme_glue_split_submit_bio,
};

struct gendisk *rnvme_glue_split_disk_alloc(void)
{
	struct queue_limits lim = {};
	struct gendisk *disk;

	disk = blk_alloc_disk(&lim, NUMA_NO_NODE);
	if (IS_ERR(disk))
		return NULL;
	disk->fops = &rnvme_glue_split_fops;
	/* bio_check_eod() refuses every bio on a disk of capacity 0. */
	set_capacity(disk, RNVME_GLUE_SPLIT_DISK_SECTORS);
	return disk;
}

void rnvme_glue_split_disk_free(struct gendisk *disk)
{
	put_disk(disk);
}

int rnvme_glue_split_disk_set_limits(struct gendisk *disk, struct queue_limits *lim)
{
	struct request_queue *q = disk->queue;
	int ret;

	/* Takes q->limits_lock; queue_limits_commit_update() releases it. */
	queue_limits_start_update(q);
	lim->max_user_discard_sectors = UINT_MAX;
	ret = queue_limits_commit_update(q, lim);
	if (!ret)
		*lim = q->limits;
	return ret;
}

int rnvme_glue_bio_split_to_limits(struct gendisk *disk, const struct bio_vec *table,
				   unsigned short nr, unsigned int op, u64 sector,
				   unsigned int size, unsigned int *front, unsigned int *rest,
				   bool *queued)
{
	static const blk_opf_t ops[] = { REQ_OP_READ, REQ_OP_WRITE, REQ_OP_DISCARD,
					 REQ_OP_WRITE_ZEROES };
	struct bio_list list[2];
	struct bio *bio, *ret, *rem;
	unsigned short i;
	int err = 0;

	if (op >= ARRAY_SIZE(ops))
		return -EINVAL;
	if (current->bio_list)
		return -EBUSY;
	bio = bio_kmalloc(nr, GFP_KERNEL);
	if (!bio)
		return -ENOMEM;
	bio_init(bio, disk->part0, bio->bi_inline_vecs, nr, ops[op]);
	/* __bio_add_page() never merges: the kernel's table is exactly ours (bi_vcnt == nr). */
	for (i = 0; i < nr; i++)
		__bio_add_page(bio, table[i].bv_page, table[i].bv_len, table[i].bv_offset);
	bio->bi_iter.bi_sector = sector;
	bio->bi_iter.bi_size = size;

	bio_list_init(&list[0]);
	bio_list_init(&list[1]);
	current->bio_list = list;
	ret = bio_split_to_limits(bio);
	current->bio_list = NULL;
	rem = bio_list_pop(&list[0]);

	*front = 0;
	*rest = rem ? bio_sectors(rem) : 0;
	*queued = rem == bio;
	if (!ret)
		err = blk_status_to_errno(bio->bi_status);
	else if (ret != bio) {
		*front = bio_sectors(ret);
		/* The front is chained to the bio: ending it drops the bio's extra reference. */
		bio_endio(ret);
	}
	if (rem)
		bio_endio(rem);
	bio_uninit(bio);
	kfree(bio);
	return err;
}

bool rnvme_glue_test_blk_mq_add_to_batch(struct request *rq, struct io_comp_batch *iob,
					 bool is_error, void (*complete)(struct io_comp_batch *))
{
	return blk_mq_add_to_batch(rq, iob, is_error, complete);
}
