/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of kernel-glue for premapped io_uring registered buffers ("DMA tags"): the
 * registration an io_uring command names, page references and long-lived DMA mappings of its
 * pages, the check that an I/O's bytes are the premapped pages, and debugfs counters. Included
 * by helpers.h, so bindgen generates the Rust declarations with the other helpers. Pointers to
 * struct io_uring_cmd are passed as void *.
 */
#ifndef RNVME_KERNEL_GLUE_PREMAP_H
#define RNVME_KERNEL_GLUE_PREMAP_H

#include <linux/types.h>

struct device;
struct page;

/* ---- io_uring registered buffers (io_uring/rsrc.h, struct io_mapped_ubuf) ------------------- */
/*
 * The registered buffer of a command with IORING_URING_CMD_FIXED (the one io_uring_cmd_prep()
 * stored in the request): `id` identifies the registration while it lives (a cache key only;
 * never trusted for safety), `ubuf`/`len` its user address range, `nr_pages` the 4 KiB pages it
 * spans, `fpo` the offset of its first byte in the first page, `index` its index in the ring's
 * table (sqe->buf_index; a cache hint only). Returns 0, or -EINVAL when the command has no
 * registered buffer.
 */
int rnvme_glue_uring_fixed_buf(void *ioucmd, u64 *id, u64 *ubuf, u64 *len, u64 *nr_pages,
			       u32 *fpo, u32 *index);
/*
 * Takes a page reference (get_page()) on every page of the command's registered buffer and
 * stores the pages in pages[0..nr_pages), in buffer order. Returns 0, or -EINVAL (no reference
 * taken) when the buffer does not span exactly nr_pages pages.
 */
int rnvme_glue_uring_fixed_get_pages(void *ioucmd, struct page **pages, u64 nr_pages);
/* put_page() on pages[0..n). */
void rnvme_glue_put_pages(struct page *const *pages, u64 n);
/*
 * Whether the bytes [addr, addr + len) of the command's registered buffer
 * (io_uring_cmd_import_fixed()) are, byte for byte, the bytes at position pos.. of pages[]
 * (position p is byte p % 4096 of pages[p / 4096]): 0 if so, 1 if any byte is elsewhere, or a
 * negative error of io_uring_cmd_import_fixed() (-EFAULT: outside the registered buffer).
 */
int rnvme_glue_uring_fixed_check(void *ioucmd, u64 addr, u32 len, bool write, u64 pos,
				 struct page *const *pages, u64 nr_pages);

/* ---- long-lived DMA mappings of pages (include/linux/dma-mapping.h) ------------------------- */
/*
 * Maps pages[0..n) for `dev` (DMA_BIDIRECTIONAL), one mapping per run of physically contiguous
 * pages of at most dma_max_mapping_size() bytes: runs[2 * i] is run i's bus address,
 * runs[2 * i + 1] its length; dma[k] is page k's bus address. runs must hold 2 * n values.
 * *need_sync is set to whether any run needs dma_sync_single_*() to hand its bytes between
 * CPU and device (dma_need_sync(): false on cache-coherent platforms without bouncing).
 * Returns the number of runs, or -EIO with nothing left mapped.
 */
long rnvme_glue_dma_map_page_runs(struct device *dev, struct page *const *pages, u64 n, u64 *dma,
				  u64 *runs, bool *need_sync);
/* Unmaps the nr_runs runs of rnvme_glue_dma_map_page_runs(). */
void rnvme_glue_dma_unmap_page_runs(struct device *dev, const u64 *runs, u64 nr_runs);
/*
 * dma_sync_single_for_device() (for_cpu false) or dma_sync_single_for_cpu() of the bytes
 * [pos, pos + len) of pages mapped with rnvme_glue_dma_map_page_runs() (dma[] as it filled in),
 * in direction DMA_TO_DEVICE (to_device) or DMA_FROM_DEVICE; bytes past dma[n - 1] are ignored.
 */
void rnvme_glue_dma_sync_pages(struct device *dev, const u64 *dma, u64 n, u64 pos, u32 len,
			       bool for_cpu, bool to_device);

/* ---- debugfs counters (include/linux/debugfs.h) --------------------------------------------- */
/*
 * n 64-bit counters named names[0..n) (static strings) shown as one "name value" line each in
 * /sys/kernel/debug/rnvme/<dir>/<file>. The directory rnvme/ is shared by every such file and
 * removed with the last; so is rnvme/<dir> by the files in it (e.g. a controller's premap and
 * batch counters). Returns a handle, or NULL when out of memory (a debugfs failure only leaves
 * the file out).
 */
void *rnvme_glue_debugfs_counters_create(const char *dir, const char *file,
					 const char *const *names, u32 n);
/*
 * Adds v to counter i (< n; others are ignored) in this CPU's copy of the counters: no shared
 * cache line is written on the I/O path. Any context.
 */
void rnvme_glue_debugfs_counters_add(void *c, u32 i, s64 v);
/*
 * The per-CPU base of the n counters (a __percpu pointer: counter i of this CPU is at
 * this_cpu_ptr(base) + i), with n in *n: for callers that add with this_cpu_add() themselves
 * (kernel_glue::debugfs, one gs-relative instruction on x86-64). Valid until destroy.
 */
s64 __percpu *rnvme_glue_debugfs_counters_percpu(void *c, u32 *n);
/* Counter i's value: the sum over the CPUs (0 for i >= n). Any context. */
s64 rnvme_glue_debugfs_counters_get(void *c, u32 i);
/* Removes the file (waiting for readers) and frees the counters. */
void rnvme_glue_debugfs_counters_destroy(void *c);

#endif /* RNVME_KERNEL_GLUE_PREMAP_H */
