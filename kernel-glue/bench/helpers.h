/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of kernel-glue-bench (iovstack_bench.ko): the memory the benchmark copies through
 * (one page tiled over a large vmap, a folio_queue chain), the
 * kernel's own iov_iter copies run as timed loops in C (so no Rust-to-C call sits inside the C
 * side's timed region), and a monotonic clock. Rust declarations are generated from this header
 * by bindgen (rnvme/bench/Kbuild). Only iovstack_bench.ko links these.
 */
#ifndef RNVME_KERNEL_GLUE_BENCH_HELPERS_H
#define RNVME_KERNEL_GLUE_BENCH_HELPERS_H

#include <linux/compiler_types.h>
#include <linux/types.h>

struct bio_vec;
struct folio_queue;
struct iovec;
struct kvec;
struct page;

/* ktime_get_ns(). */
u64 rnvme_glue_bench_now_ns(void);

/* alloc_page(GFP_KERNEL | __GFP_ZERO); NULL on failure. */
struct page *rnvme_glue_bench_alloc_page(void);
/* __free_page(). */
void rnvme_glue_bench_free_page(struct page *page);
/* page_address() of a page from rnvme_glue_bench_alloc_page(). */
void *rnvme_glue_bench_page_address(struct page *page);

/*
 * vmap() of `page` repeated `npages` times (VM_MAP, PAGE_KERNEL): a virtual buffer of
 * npages * PAGE_SIZE bytes backed by one physical page, as the kunit iov_iter benchmarks build
 * their source and destination. NULL on failure. Undo with rnvme_glue_bench_vunmap().
 */
void *rnvme_glue_bench_vmap_tiled(struct page *page, unsigned long npages);
/* vunmap(). */
void rnvme_glue_bench_vunmap(const void *addr);

/*
 * The user-copy steps of lib/iov_iter.c (copy_from_user_iter(), copy_to_user_iter()):
 * access_ok() + raw_copy_{from,to}_user(); the bytes not copied are returned and, unlike
 * copy_from_user(), not zeroed.
 */
unsigned long rnvme_glue_bench_copy_from_user(void *to, const void __user *from,
					      unsigned long n);
unsigned long rnvme_glue_bench_copy_to_user(void __user *to, const void *from, unsigned long n);
/* clear_user(). */
unsigned long rnvme_glue_bench_clear_user(void __user *to, unsigned long n);

/*
 * A chain of folio_queue segments (kzalloc(), folioq_init(), folioq_append()) holding `nr`
 * order-0 folios, every one page_folio(page). NULL on allocation failure. Free with
 * rnvme_glue_bench_folioq_free().
 */
struct folio_queue *rnvme_glue_bench_folioq_tiled(struct page *page, unsigned long nr);
/* kfree() of every segment of a chain from rnvme_glue_bench_folioq_tiled() (NULL ignored). */
void rnvme_glue_bench_folioq_free(struct folio_queue *fq);

/*
 * Timed C copies, each with ITER_SOURCE and copy_from_iter() into `scratch`, as the kunit
 * benchmarks. Each returns the nanoseconds of its timed region and stores the bytes copied.
 *
 * ubuf: n x { iov_iter_ubuf(buf, len); copy_from_iter(scratch, len) } (all timed).
 */
u64 rnvme_glue_bench_c_ubuf(void __user *buf, size_t len, unsigned long n, void *scratch,
			    size_t *copied);
/* iovec: iov_iter_init(iov, nr, count) untimed; copy_from_iter(scratch, count) timed. */
u64 rnvme_glue_bench_c_iovec(const struct iovec *iov, unsigned long nr, size_t count,
			     void *scratch, size_t *copied);
/* kvec: iov_iter_kvec(kv, nr, count) untimed; copy_from_iter(scratch, count) timed. */
u64 rnvme_glue_bench_c_kvec(const struct kvec *kv, unsigned long nr, size_t count, void *scratch,
			    size_t *copied);
/* bvec: iov_iter_bvec(bv, nr, count) untimed; copy_from_iter(scratch, count) timed. */
u64 rnvme_glue_bench_c_bvec(const struct bio_vec *bv, unsigned long nr, size_t count,
			    void *scratch, size_t *copied);
/*
 * bvec_split: chunks x { fill table[0..nr] with {page, PAGE_SIZE, 0}; iov_iter_bvec(table, nr,
 * nr * PAGE_SIZE); copy_from_iter(scratch, nr * PAGE_SIZE) } (all timed). `table` holds nr
 * entries.
 */
u64 rnvme_glue_bench_c_bvec_split(struct page *page, struct bio_vec *table, unsigned long nr,
				  unsigned long chunks, void *scratch, size_t *copied);
/* folioq: iov_iter_folio_queue(fq, 0, 0, count) untimed; copy_from_iter(scratch, count) timed. */
u64 rnvme_glue_bench_c_folioq(const struct folio_queue *fq, size_t count, void *scratch,
			      size_t *copied);

/*
 * Iterator operations on a bvec table, reps times, all timed; *sink gets a value derived from
 * every result so nothing is optimised away. op 0: iov_iter_bvec(bv, nr, count); op 1: the same
 * + iov_iter_advance(skip); op 2: iov_iter_npages(INT_MAX) of an iterator built (untimed) with
 * count; op 3: an I/O of count bytes at byte skip of a registered buffer of page-sized entries
 * as io_uring/rsrc.c:io_import_fixed() imports it (the user range checked against the
 * registration, iov_iter_bvec(bv, nr, skip + count), then whole entries skipped by the folio
 * shift and the rest as iov_offset); an out-of-range import returns 0 with *sink = 0.
 */
u64 rnvme_glue_bench_c_bvec_op(unsigned int op, const struct bio_vec *bv, unsigned long nr,
			       size_t count, size_t skip, unsigned long reps, unsigned long *sink);

#endif /* RNVME_KERNEL_GLUE_BENCH_HELPERS_H */
