// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of kernel-glue-bench; see helpers.h. The timed loops follow the kunit iov_iter
 * benchmarks ("iov_iter: Add benchmarking kunit tests", David Howells, 2023): ITER_SOURCE
 * iterators drained with copy_from_iter().
 */
#include <linux/bvec.h>
#include <linux/folio_queue.h>
#include <linux/gfp.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/vmalloc.h>

#include "helpers.h"

u64 rnvme_glue_bench_now_ns(void)
{
	return ktime_get_ns();
}

struct page *rnvme_glue_bench_alloc_page(void)
{
	return alloc_page(GFP_KERNEL | __GFP_ZERO);
}

void rnvme_glue_bench_free_page(struct page *page)
{
	__free_page(page);
}

void *rnvme_glue_bench_page_address(struct page *page)
{
	return page_address(page);
}

void *rnvme_glue_bench_vmap_tiled(struct page *page, unsigned long npages)
{
	struct page **pages;
	unsigned long i;
	void *addr;

	if (npages == 0 || npages > UINT_MAX)
		return NULL;
	pages = kvmalloc_array(npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return NULL;
	for (i = 0; i < npages; i++)
		pages[i] = page;
	/* VM_MAP without VM_MAP_PUT_PAGES: the array is not needed once mapped. */
	addr = vmap(pages, npages, VM_MAP, PAGE_KERNEL);
	kvfree(pages);
	return addr;
}

void rnvme_glue_bench_vunmap(const void *addr)
{
	vunmap(addr);
}

unsigned long rnvme_glue_bench_copy_from_user(void *to, const void __user *from, unsigned long n)
{
	if (!access_ok(from, n))
		return n;
	return raw_copy_from_user(to, from, n);
}

unsigned long rnvme_glue_bench_copy_to_user(void __user *to, const void *from, unsigned long n)
{
	if (!access_ok(to, n))
		return n;
	return raw_copy_to_user(to, from, n);
}

unsigned long rnvme_glue_bench_clear_user(void __user *to, unsigned long n)
{
	return clear_user(to, n);
}

struct folio_queue *rnvme_glue_bench_folioq_tiled(struct page *page, unsigned long nr)
{
	struct folio_queue *head = NULL, *tail = NULL;
	unsigned long i;

	for (i = 0; i < nr; i++) {
		if (!tail || folioq_full(tail)) {
			struct folio_queue *seg = kzalloc(sizeof(*seg), GFP_KERNEL);

			if (!seg) {
				rnvme_glue_bench_folioq_free(head);
				return NULL;
			}
			folioq_init(seg, 0);
			seg->prev = tail;
			if (tail)
				tail->next = seg;
			else
				head = seg;
			tail = seg;
		}
		folioq_append(tail, page_folio(page));
	}
	return head;
}

void rnvme_glue_bench_folioq_free(struct folio_queue *fq)
{
	while (fq) {
		struct folio_queue *next = fq->next;

		kfree(fq);
		fq = next;
	}
}

u64 rnvme_glue_bench_c_ubuf(void __user *buf, size_t len, unsigned long n, void *scratch,
			    size_t *copied)
{
	struct iov_iter iter;
	size_t done = 0;
	unsigned long k;
	u64 a, b;

	a = ktime_get_ns();
	for (k = 0; k < n; k++) {
		iov_iter_ubuf(&iter, ITER_SOURCE, buf, len);
		done += copy_from_iter(scratch, len, &iter);
	}
	b = ktime_get_ns();
	*copied = done;
	return b - a;
}

/* Drains an ITER_SOURCE iterator into scratch with one timed copy_from_iter(). */
static u64 rnvme_bench_drain(struct iov_iter *iter, size_t count, void *scratch, size_t *copied)
{
	u64 a, b;

	a = ktime_get_ns();
	*copied = copy_from_iter(scratch, count, iter);
	b = ktime_get_ns();
	return b - a;
}

u64 rnvme_glue_bench_c_iovec(const struct iovec *iov, unsigned long nr, size_t count,
			     void *scratch, size_t *copied)
{
	struct iov_iter iter;

	iov_iter_init(&iter, ITER_SOURCE, iov, nr, count);
	return rnvme_bench_drain(&iter, count, scratch, copied);
}

u64 rnvme_glue_bench_c_kvec(const struct kvec *kv, unsigned long nr, size_t count, void *scratch,
			    size_t *copied)
{
	struct iov_iter iter;

	iov_iter_kvec(&iter, ITER_SOURCE, kv, nr, count);
	return rnvme_bench_drain(&iter, count, scratch, copied);
}

u64 rnvme_glue_bench_c_bvec(const struct bio_vec *bv, unsigned long nr, size_t count,
			    void *scratch, size_t *copied)
{
	struct iov_iter iter;

	iov_iter_bvec(&iter, ITER_SOURCE, bv, nr, count);
	return rnvme_bench_drain(&iter, count, scratch, copied);
}

u64 rnvme_glue_bench_c_bvec_split(struct page *page, struct bio_vec *table, unsigned long nr,
				  unsigned long chunks, void *scratch, size_t *copied)
{
	size_t part = nr * PAGE_SIZE, done = 0;
	struct iov_iter iter;
	unsigned long c, k;
	u64 a, b;

	a = ktime_get_ns();
	for (c = 0; c < chunks; c++) {
		for (k = 0; k < nr; k++)
			bvec_set_page(&table[k], page, PAGE_SIZE, 0);
		iov_iter_bvec(&iter, ITER_SOURCE, table, nr, part);
		done += copy_from_iter(scratch, part, &iter);
	}
	b = ktime_get_ns();
	*copied = done;
	return b - a;
}

u64 rnvme_glue_bench_c_folioq(const struct folio_queue *fq, size_t count, void *scratch,
			      size_t *copied)
{
	struct iov_iter iter;

	iov_iter_folio_queue(&iter, ITER_SOURCE, fq, 0, 0, count);
	return rnvme_bench_drain(&iter, count, scratch, copied);
}

/*
 * The fields of io_uring/rsrc.h `struct io_mapped_ubuf` that io_import_fixed() reads, with their
 * 6.12 types: a registration of `len` bytes at user address `ubuf`, its table and folio shift.
 */
struct rnvme_bench_reg {
	u64 ubuf;
	unsigned int len;
	unsigned int nr_bvecs;
	unsigned int folio_shift;
	const struct bio_vec *bvec;
};

/* Any user address: the import only computes with it. */
#define RNVME_BENCH_REG_UBUF 0x7f0000000000ULL

u64 rnvme_glue_bench_c_bvec_op(unsigned int op, const struct bio_vec *bv, unsigned long nr,
			       size_t count, size_t skip, unsigned long reps, unsigned long *sink)
{
	struct rnvme_bench_reg reg = {
		.ubuf = RNVME_BENCH_REG_UBUF,
		.len = min_t(u64, U32_MAX, (u64)nr << PAGE_SHIFT),
		.nr_bvecs = nr,
		.folio_shift = PAGE_SHIFT,
		.bvec = bv,
	};
	unsigned long acc = 0, k;
	struct iov_iter iter;
	u64 a, b;

	/*
	 * The registration escapes, so every barrier_data() below makes the loop read it again,
	 * as the Rust loop reads its checked table through black_box().
	 */
	barrier_data(&reg);
	if (op == 2)
		iov_iter_bvec(&iter, ITER_SOURCE, bv, nr, count);
	/* One loop per operation, as on the Rust side: no dispatch inside the timed loop. */
	a = ktime_get_ns();
	switch (op) {
	case 0:
		for (k = 0; k < reps; k++) {
			iov_iter_bvec(&iter, ITER_SOURCE, bv, nr, count);
			/* Keep each construction: the compiler cannot see through iter. */
			barrier_data(&iter);
			acc += iter.count;
		}
		break;
	case 1:
		for (k = 0; k < reps; k++) {
			iov_iter_bvec(&iter, ITER_SOURCE, bv, nr, count);
			iov_iter_advance(&iter, skip);
			acc += iter.iov_offset + iter.nr_segs;
		}
		break;
	case 2:
		for (k = 0; k < reps; k++)
			acc += iov_iter_npages(&iter, INT_MAX);
		break;
	default:
		for (k = 0; k < reps; k++) {
			/*
			 * io_uring/rsrc.c io_import_fixed() for `count` bytes at byte `skip` of the
			 * registration: the user range checked against it, an iterator over the table
			 * up to the range's end, whole entries after the first skipped by the folio
			 * shift.
			 */
			u64 addr = reg.ubuf + skip, end;
			size_t off;

			if (unlikely(check_add_overflow(addr, (u64)count, &end)) ||
			    unlikely(addr < reg.ubuf || end > reg.ubuf + reg.len)) {
				*sink = 0;
				return 0;
			}
			off = addr - reg.ubuf;
			iov_iter_bvec(&iter, ITER_SOURCE, reg.bvec, reg.nr_bvecs, off + count);
			if (off && off < reg.bvec->bv_len) {
				iter.count -= off;
				iter.iov_offset = off;
			} else if (off) {
				size_t rest = off - reg.bvec->bv_len;
				unsigned long seg_skip = 1 + (rest >> reg.folio_shift);

				iter.bvec += seg_skip;
				iter.nr_segs -= seg_skip;
				iter.count -= reg.bvec->bv_len + rest;
				iter.iov_offset = rest & ((1UL << reg.folio_shift) - 1);
			}
			barrier_data(&iter);
			acc += iter.iov_offset + iter.nr_segs + iter.count;
		}
		break;
	}
	b = ktime_get_ns();
	*sink = acc;
	return b - a;
}
