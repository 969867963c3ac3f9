/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of kernel-glue-testing (the differential self-test's wrappers of the kernel's own
 * iov_iter, bvec_iter and bio functions): out-of-line wrappers for static inline functions and
 * macros. Rust declarations are generated from this header by bindgen (rnvme/selftest/Kbuild).
 * Only iovstack_selftest.ko links these; rnvme.ko does not.
 */
#ifndef RNVME_KERNEL_GLUE_TESTING_HELPERS_H
#define RNVME_KERNEL_GLUE_TESTING_HELPERS_H

#include <linux/compiler_types.h>
#include <linux/types.h>

struct bio_vec;
struct gendisk;
struct io_comp_batch;
struct request;
struct bvec_iter;
struct folio_queue;
struct iov_iter;
struct iov_iter_state;
struct mm_struct;
struct page;
struct queue_limits;

/* virt_to_page() of a direct-map (kmalloc/page allocator) address. */
struct page *rnvme_glue_virt_to_page(const void *addr);
/* iov_iter_ubuf(). */
void rnvme_glue_iov_iter_ubuf(struct iov_iter *i, unsigned int direction, void __user *buf,
			      size_t count);
/* iov_iter_save_state(): iov_offset, count and nr_segs of an iterator. */
void rnvme_glue_iov_iter_save_state(const struct iov_iter *i, struct iov_iter_state *state);
/*
 * copy_from_user() without zeroing the bytes it could not copy, as the kernel's own iov_iter
 * step does (copy_from_user_iter()): returns the number of bytes not copied.
 */
unsigned long rnvme_glue_copy_from_user_nozero(void *to, const void __user *from,
					       unsigned long n);
/* clear_user(). */
unsigned long rnvme_glue_clear_user(void __user *to, unsigned long n);
/* vm_mmap() of an anonymous private read/write mapping of len bytes in current->mm. */
unsigned long rnvme_glue_vm_mmap_anon(unsigned long len);
/*
 * bio_advance_iter() (single == false) or bio_advance_iter_single() (single == true) for a
 * READ bio whose bvec table is `table`.
 */
void rnvme_glue_bio_advance_iter(const struct bio_vec *table, struct bvec_iter *iter,
				 unsigned int bytes, bool single);
/* mp_bvec_iter_bvec() and bvec_iter_bvec(): the multipage and single-page current segment. */
void rnvme_glue_bvec_iter_views(const struct bio_vec *table, const struct bvec_iter *iter,
				struct bio_vec *mp, struct bio_vec *sp);
/*
 * bio_split_rw_at(bio, lim, segs, max_bytes) on a bio from bio_kmalloc(nr) + bio_init() whose
 * table is filled with __bio_add_page() from the `nr` entries of `table` (no merging) and whose
 * bi_size is then set to `size` (at most the table's bytes), with queue limits holding the given
 * fields (all others 0). Stores the return value in *sectors and the segment count in *segs.
 * Returns 0, or -ENOMEM if the bio cannot be allocated. The bio is freed before returning.
 */
int rnvme_glue_bio_split_rw_at(const struct bio_vec *table, unsigned short nr, unsigned int size,
			       bool write, unsigned int logical_block_size,
			       unsigned short max_segments, unsigned int max_segment_size,
			       unsigned long seg_boundary_mask, unsigned long virt_boundary_mask,
			       unsigned int max_bytes, int *sectors, unsigned int *segs);
/* current->mm (NULL in kernel threads). */
const struct mm_struct *rnvme_glue_current_mm(void);

/*
 * A folio_queue segment (kzalloc(), folioq_init()) holding `nr` folios: slot k is page_folio() of
 * heads[k], recorded with order orders[k], as folioq_append() records a folio and its
 * __folio_order(). The pages need not be compound: the ITER_FOLIOQ walkers only do arithmetic on
 * folio_page() and read the orders from the queue. NULL if nr > PAGEVEC_SIZE or the allocation
 * fails. Free with rnvme_glue_folioq_free().
 */
struct folio_queue *rnvme_glue_folioq_new(struct page *const *heads, const u8 *orders,
					  unsigned int nr);
/* kfree() of a queue from rnvme_glue_folioq_new() (NULL is ignored). */
void rnvme_glue_folioq_free(struct folio_queue *folioq);

/*
 * A gendisk (blk_alloc_disk(), never added, capacity 2^52 sectors) whose request queue carries
 * the limits under test, for bio_split_to_limits() on real bios. Its submit_bio fails every bio;
 * nothing is ever submitted to it (see rnvme_glue_bio_split_to_limits()). NULL if it cannot be
 * allocated.
 */
struct gendisk *rnvme_glue_split_disk_alloc(void);
/* put_disk(). */
void rnvme_glue_split_disk_free(struct gendisk *disk);
/*
 * Sets the disk queue's limits to *lim with max_user_discard_sectors = UINT_MAX (as
 * blk_set_default_limits() does) through queue_limits_start_update() +
 * queue_limits_commit_update(), i.e. blk_validate_limits(). Returns its result (0 or -EINVAL);
 * on success *lim holds the validated limits.
 */
int rnvme_glue_split_disk_set_limits(struct gendisk *disk, struct queue_limits *lim);
/*
 * bio_split_to_limits() on a bio of `op` (0 read, 1 write, 2 discard, 3 write-zeroes) for the
 * disk, from bio_kmalloc(nr) + bio_init() + __bio_add_page() of the `nr` entries of `table` (no
 * merging; nr may be 0), at `sector` with bi_size `size`. current->bio_list is set during the
 * call, so the remainder that bio_submit_split() resubmits is only queued there, not issued.
 * Stores the front's sectors in *front (0 when the bio was not split), the queued remainder's
 * sectors in *rest, and whether a remainder was queued in *queued. Every bio is ended and freed
 * before returning. Returns 0, -ENOMEM, -EBUSY (already inside a submission), or the errno of a
 * bio the split ended with an error.
 */
int rnvme_glue_bio_split_to_limits(struct gendisk *disk, const struct bio_vec *table,
				   unsigned short nr, unsigned int op, u64 sector,
				   unsigned int size, unsigned int *front, unsigned int *rest,
				   bool *queued);
/*
 * The kernel's blk_mq_add_to_batch(rq, iob, is_error, complete) (include/linux/blk-mq.h, an inline
 * function), for the differential test of kernel_glue's copy of it.
 */
bool rnvme_glue_test_blk_mq_add_to_batch(struct request *rq, struct io_comp_batch *iob,
					 bool is_error, void (*complete)(struct io_comp_batch *));

#endif /* RNVME_KERNEL_GLUE_TESTING_HELPERS_H */
