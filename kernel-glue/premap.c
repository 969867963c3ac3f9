// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of kernel-glue for premapped io_uring registered buffers (declarations and contracts
 * in premap.h).
 *
 * struct io_mapped_ubuf is private to io_uring (io_uring/rsrc.h). rnvme is built against this
 * exact kernel source tree (scripts/build-module.sh), so its header is included from there to
 * read the registration an io_uring command names (io_uring/uring_cmd.c io_uring_cmd_prep()
 * stores it in req->imu; io_import_fixed() in io_uring/rsrc.c walks it the same way). Nothing
 * read here is trusted for memory safety: the registration's pages get our own references, and
 * before an I/O uses premapped pages, rnvme_glue_uring_fixed_check() compares them with the pages
 * io_uring_cmd_import_fixed() gives for that I/O.
 */
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/io_uring/cmd.h>
#include <linux/io_uring_types.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uio.h>

/* rsrc.h has no includes of its own; its inline helpers need io_uring.h. */
#include "io_uring/io_uring.h"
#include "io_uring/rsrc.h"

#include "premap.h"

/* Premapped pages are 4 KiB controller pages; rnvme is built for x86_64 only. */
static_assert(PAGE_SIZE == 4096);

static struct io_mapped_ubuf *rnvme_imu(struct io_uring_cmd *ioucmd)
{
	if (!(ioucmd->flags & IORING_URING_CMD_FIXED))
		return NULL;
	return cmd_to_io_kiocb(ioucmd)->imu;
}

int rnvme_glue_uring_fixed_buf(void *p, u64 *id, u64 *ubuf, u64 *len, u64 *nr_pages, u32 *fpo,
			       u32 *index)
{
	struct io_mapped_ubuf *imu = rnvme_imu(p);

	if (!imu || !imu->len)
		return -EINVAL;
	*id = (u64)(uintptr_t)imu;
	*ubuf = imu->ubuf;
	*len = imu->len;
	*fpo = imu->ubuf & ~PAGE_MASK;
	*nr_pages = DIV_ROUND_UP((u64)*fpo + imu->len, PAGE_SIZE);
	/* io_uring_cmd_prep() checked it against the table and took req->imu from there. */
	*index = cmd_to_io_kiocb((struct io_uring_cmd *)p)->buf_index;
	return 0;
}

/*
 * Runs `body` with PG (the page), INP (offset in it) and CH (bytes) for each piece inside one
 * page of the first `count` bytes of bv[0..nr), starting `skip` bytes into bv[0], in order.
 */
#define rnvme_for_each_page_chunk(bv, nr, skip, count, PG, INP, CH, body)		\
	do {											\
		u64 __left = (count), __skip = (skip);						\
		unsigned int __i;								\
		for (__i = 0; __i < (nr) && __left; __i++) {					\
			u64 __o = (u64)(bv)[__i].bv_offset + __skip;				\
			u64 __l = (bv)[__i].bv_len - __skip;					\
			__skip = 0;								\
			while (__l && __left) {							\
				struct page *PG = nth_page((bv)[__i].bv_page,		\
							   __o >> PAGE_SHIFT);			\
				u64 INP = __o & ~PAGE_MASK;					\
				u64 CH = min3(__l, __left, (u64)PAGE_SIZE - INP);		\
				body;								\
				__o += CH;							\
				__l -= CH;							\
				__left -= CH;							\
			}									\
		}										\
	} while (0)

int rnvme_glue_uring_fixed_get_pages(void *p, struct page **pages, u64 nr_pages)
{
	struct io_mapped_ubuf *imu = rnvme_imu(p);
	u64 n = 0;

	if (!imu)
		return -EINVAL;
	/* Count first: no reference is taken unless the buffer spans exactly nr_pages pages. */
	rnvme_for_each_page_chunk(imu->bvec, imu->nr_bvecs, 0, (u64)imu->len, pg, in_page, chunk, {
		(void)pg;
		if (in_page == 0 || n == 0)
			n++;
	});
	if (n != nr_pages)
		return -EINVAL;
	n = 0;
	rnvme_for_each_page_chunk(imu->bvec, imu->nr_bvecs, 0, (u64)imu->len, pg, in_page, chunk, {
		if (in_page == 0 || n == 0) {
			get_page(pg);
			pages[n++] = pg;
		}
	});
	return 0;
}

void rnvme_glue_put_pages(struct page *const *pages, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		put_page(pages[i]);
}

int rnvme_glue_uring_fixed_check(void *p, u64 addr, u32 len, bool write, u64 pos,
				 struct page *const *pages, u64 nr_pages)
{
	struct iov_iter iter;
	int ret = 0;

	ret = io_uring_cmd_import_fixed(addr, len, write ? ITER_SOURCE : ITER_DEST, &iter, p);
	if (ret < 0)
		return ret;
	if (!iov_iter_is_bvec(&iter) || iov_iter_count(&iter) != len)
		return 1;
	rnvme_for_each_page_chunk(iter.bvec, iter.nr_segs, (u64)iter.iov_offset, (u64)len, pg,
				  in_page, chunk, {
		u64 idx = pos >> PAGE_SHIFT;

		if (idx >= nr_pages || pages[idx] != pg || (pos & ~PAGE_MASK) != in_page)
			return 1;
		pos += chunk;
	});
	return 0;
}

long rnvme_glue_dma_map_page_runs(struct device *dev, struct page *const *pages, u64 n, u64 *dma,
				  u64 *runs, bool *need_sync)
{
	u64 max = min_t(u64, dma_max_mapping_size(dev), SZ_1G);
	u64 i = 0, k, nr_runs = 0;

	max = max(max & PAGE_MASK, (u64)PAGE_SIZE);
	*need_sync = false;
	while (i < n) {
		u64 len = PAGE_SIZE;
		dma_addr_t a;

		while (i + len / PAGE_SIZE < n && len < max &&
		       page_to_phys(pages[i + len / PAGE_SIZE]) == page_to_phys(pages[i]) + len)
			len += PAGE_SIZE;
		/*
		 * DMA_ATTR_SKIP_CPU_SYNC: the mapping lives as long as the tag, and every I/O
		 * hands the bytes it uses to the device and back where the platform needs it
		 * (rnvme_glue_dma_sync_pages(), dma_sync_single_for_{device,cpu}(), when
		 * *need_sync), as long-lived mappings do (page_pool's PP_FLAG_DMA_SYNC_DEV in
		 * net/core/page_pool.c), so a sync of the whole buffer at map and unmap time would
		 * only repeat work on platforms where syncs cost.
		 */
		a = dma_map_page_attrs(dev, pages[i], 0, len, DMA_BIDIRECTIONAL,
				       DMA_ATTR_SKIP_CPU_SYNC);
		if (dma_mapping_error(dev, a)) {
			rnvme_glue_dma_unmap_page_runs(dev, runs, nr_runs);
			return -EIO;
		}
		/*
		 * Whether the CPU and the device must hand this run's bytes over by a sync
		 * (non-coherent DMA, or a swiotlb bounce buffer); dma_need_sync() answers for the
		 * mapping as made, as page_pool asks it for its long-lived mappings
		 * (net/core/page_pool.c, page_pool_init()).
		 */
		if (dma_need_sync(dev, a))
			*need_sync = true;
		runs[2 * nr_runs] = a;
		runs[2 * nr_runs + 1] = len;
		nr_runs++;
		for (k = 0; k < len / PAGE_SIZE; k++)
			dma[i + k] = a + k * PAGE_SIZE;
		i += len / PAGE_SIZE;
		cond_resched();
	}
	return nr_runs;
}

void rnvme_glue_dma_unmap_page_runs(struct device *dev, const u64 *runs, u64 nr_runs)
{
	u64 i;

	for (i = 0; i < nr_runs; i++)
		dma_unmap_page_attrs(dev, runs[2 * i], runs[2 * i + 1], DMA_BIDIRECTIONAL,
				     DMA_ATTR_SKIP_CPU_SYNC);
}

void rnvme_glue_dma_sync_pages(struct device *dev, const u64 *dma, u64 n, u64 pos, u32 len,
			       bool for_cpu, bool to_device)
{
	enum dma_data_direction dir = to_device ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	u64 end = pos + len;

	while (pos < end && (pos >> PAGE_SHIFT) < n) {
		u64 in_page = pos & ~PAGE_MASK;
		u64 chunk = min(end - pos, (u64)PAGE_SIZE - in_page);
		dma_addr_t a = dma[pos >> PAGE_SHIFT] + in_page;

		if (for_cpu)
			dma_sync_single_for_cpu(dev, a, chunk, dir);
		else
			dma_sync_single_for_device(dev, a, chunk, dir);
		pos += chunk;
	}
}

/* ---- debugfs counters --------------------------------------------------------------------- */

static DEFINE_MUTEX(rnvme_debugfs_lock);
static struct dentry *rnvme_debugfs_root;
static unsigned int rnvme_debugfs_users;
/* The directories under rnvme/, each shared by the counter files in it (under the lock). */
static LIST_HEAD(rnvme_debugfs_dirs);

struct rnvme_debugfs_dir {
	struct list_head node;
	struct dentry *dentry;
	unsigned int users;
	char name[32];
};

struct rnvme_counters {
	struct rnvme_debugfs_dir *dir;
	struct dentry *file;
	const char *const *names;
	u32 n;
	/* n counters per CPU: an update touches only its CPU's copy, no shared cache line. */
	s64 __percpu *v;
};

/* Counter i: the sum of every CPU's copy (a counter may go down on another CPU than up). */
static s64 rnvme_counters_sum(struct rnvme_counters *c, u32 i)
{
	s64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(c->v, cpu)[i]);
	return sum;
}

static int rnvme_counters_show(struct seq_file *m, void *unused)
{
	struct rnvme_counters *c = m->private;
	u32 i;

	for (i = 0; i < c->n; i++)
		seq_printf(m, "%s %lld\n", c->names[i], (long long)rnvme_counters_sum(c, i));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rnvme_counters);

/* The directory `name` under rnvme/, created on first use; one more user. Under the lock. */
static struct rnvme_debugfs_dir *rnvme_debugfs_dir_get(const char *name)
{
	struct rnvme_debugfs_dir *d;

	list_for_each_entry(d, &rnvme_debugfs_dirs, node) {
		if (!strcmp(d->name, name)) {
			d->users++;
			return d;
		}
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return NULL;
	if (strscpy(d->name, name, sizeof(d->name)) < 0) {
		kfree(d);
		return NULL;
	}
	d->dentry = debugfs_create_dir(name, rnvme_debugfs_root);
	d->users = 1;
	list_add(&d->node, &rnvme_debugfs_dirs);
	return d;
}

/* One user less; the last one removes the directory. Under the lock. */
static void rnvme_debugfs_dir_put(struct rnvme_debugfs_dir *d)
{
	if (--d->users)
		return;
	list_del(&d->node);
	debugfs_remove(d->dentry);
	kfree(d);
}

void *rnvme_glue_debugfs_counters_create(const char *dir, const char *file,
					 const char *const *names, u32 n)
{
	struct rnvme_counters *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	/* Zeroed for every CPU (alloc_percpu memory is). */
	c->v = __alloc_percpu(sizeof(s64) * max(n, 1U), __alignof__(s64));
	if (!c->v) {
		kfree(c);
		return NULL;
	}
	c->names = names;
	c->n = n;
	mutex_lock(&rnvme_debugfs_lock);
	if (!rnvme_debugfs_users)
		rnvme_debugfs_root = debugfs_create_dir("rnvme", NULL);
	c->dir = rnvme_debugfs_dir_get(dir);
	if (!c->dir) {
		if (!rnvme_debugfs_users) {
			debugfs_remove(rnvme_debugfs_root);
			rnvme_debugfs_root = NULL;
		}
		mutex_unlock(&rnvme_debugfs_lock);
		free_percpu(c->v);
		kfree(c);
		return NULL;
	}
	rnvme_debugfs_users++;
	c->file = debugfs_create_file(file, 0444, c->dir->dentry, c, &rnvme_counters_fops);
	mutex_unlock(&rnvme_debugfs_lock);
	return c;
}

void rnvme_glue_debugfs_counters_add(void *p, u32 i, s64 v)
{
	struct rnvme_counters *c = p;

	/* One instruction on x86 (safe against preemption and interrupts on this CPU). */
	if (i < c->n)
		this_cpu_add(c->v[i], v);
}

s64 __percpu *rnvme_glue_debugfs_counters_percpu(void *p, u32 *n)
{
	struct rnvme_counters *c = p;

	*n = c->n;
	return c->v;
}

s64 rnvme_glue_debugfs_counters_get(void *p, u32 i)
{
	struct rnvme_counters *c = p;

	return i < c->n ? rnvme_counters_sum(c, i) : 0;
}

void rnvme_glue_debugfs_counters_destroy(void *p)
{
	struct rnvme_counters *c = p;

	mutex_lock(&rnvme_debugfs_lock);
	/* debugfs_remove() waits until no reader is inside the file's operations. */
	debugfs_remove(c->file);
	rnvme_debugfs_dir_put(c->dir);
	if (!--rnvme_debugfs_users) {
		debugfs_remove(rnvme_debugfs_root);
		rnvme_debugfs_root = NULL;
	}
	mutex_unlock(&rnvme_debugfs_lock);
	free_percpu(c->v);
	kfree(c);
}
