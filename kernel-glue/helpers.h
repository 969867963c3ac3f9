/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers of kernel-glue: out-of-line wrappers for static inline kernel functions and macros
 * that Rust cannot call. The Rust declarations are generated from this header by bindgen at build
 * time (rnvme/kbuild/crates.mk), so the two cannot drift apart. Helpers used only by the
 * differential self-test live in kernel-glue/testing/helpers.h.
 */
#ifndef RNVME_KERNEL_GLUE_HELPERS_H
#define RNVME_KERNEL_GLUE_HELPERS_H

#include <linux/compiler_types.h>
#include <linux/spinlock_types.h>
#include <linux/types.h>

struct attribute_group;
struct blk_mq_tag_set;
struct completion;
struct blk_mq_tags;
struct device;
struct dma_pool;
struct gendisk;
struct io_comp_batch;
struct mutex;
struct page;
struct pci_dev;
struct queue_limits;
struct request;
struct scatterlist;

/* page_to_phys(): arithmetic on the pointer value (vmemmap), never a dereference. */
phys_addr_t rnvme_glue_page_to_phys(const struct page *page);
/* page_address(): the direct-map address of a (lowmem) page. */
void *rnvme_glue_page_address(const struct page *page);
/* cond_resched(). */
void rnvme_glue_cond_resched(void);

/* ---- PCI (include/linux/pci.h) ---------------------------------------------------------------- */
/*
 * Allocates a struct pci_driver named `name` matching PCI class `class` under `class_mask` (any
 * vendor/device), with the given probe/remove/shutdown callbacks, and registers it for
 * THIS_MODULE (pci_register_driver()). Returns the driver (an opaque handle for
 * rnvme_glue_pci_unregister()) or NULL with *err set. The driver has no MODULE_DEVICE_TABLE: the
 * module is never autoloaded for a device.
 */
void *rnvme_glue_pci_register(const char *name, u32 class, u32 class_mask,
			      int (*probe)(struct pci_dev *pdev),
			      void (*remove)(struct pci_dev *pdev),
			      void (*shutdown)(struct pci_dev *pdev), int *err);
/* pci_unregister_driver() and free of a driver from rnvme_glue_pci_register(). */
void rnvme_glue_pci_unregister(void *drv);
/* &pdev->dev. */
struct device *rnvme_glue_pci_device(struct pci_dev *pdev);
/* pci_name(). */
const char *rnvme_glue_pci_name(const struct pci_dev *pdev);
/* (pdev->vendor << 16) | pdev->device. */
u32 rnvme_glue_pci_ids(const struct pci_dev *pdev);
/* pci_set_drvdata() / pci_get_drvdata(). */
void rnvme_glue_pci_set_drvdata(struct pci_dev *pdev, void *data);
void *rnvme_glue_pci_get_drvdata(struct pci_dev *pdev);
/* pci_enable_device_mem() / pci_disable_device(). */
int rnvme_glue_pci_enable_device_mem(struct pci_dev *pdev);
void rnvme_glue_pci_disable_device(struct pci_dev *pdev);
/* pci_set_master() (on) or pci_clear_master() (off). */
void rnvme_glue_pci_set_master(struct pci_dev *pdev, bool on);
/* pci_request_mem_regions() / pci_release_mem_regions(). */
int rnvme_glue_pci_request_mem_regions(struct pci_dev *pdev, const char *name);
void rnvme_glue_pci_release_mem_regions(struct pci_dev *pdev);
/* pci_resource_len() of BAR `bar` if it is a memory BAR, else 0. */
u64 rnvme_glue_pci_mem_resource_len(const struct pci_dev *pdev, int bar);
/* pci_iomap(pdev, bar, maxlen) / pci_iounmap(). */
void __iomem *rnvme_glue_pci_iomap(struct pci_dev *pdev, int bar, unsigned long maxlen);
void rnvme_glue_pci_iounmap(struct pci_dev *pdev, void __iomem *addr);
/*
 * pci_alloc_irq_vectors_affinity(pdev, min, max, MSI-X | MSI | INTx (+ PCI_IRQ_AFFINITY when
 * `pre_vectors` < max), { .pre_vectors = pre_vectors }): the vectors after the first
 * `pre_vectors` are spread over the CPUs. Returns the number allocated or a negative errno.
 */
int rnvme_glue_pci_alloc_irq_vectors(struct pci_dev *pdev, unsigned int min, unsigned int max,
				     unsigned int pre_vectors);
/* pci_free_irq_vectors(). */
void rnvme_glue_pci_free_irq_vectors(struct pci_dev *pdev);
/* pci_irq_vector(): the Linux IRQ number of vector `nr`, or a negative errno. */
int rnvme_glue_pci_irq_vector(struct pci_dev *pdev, unsigned int nr);
/* dev->msix_enabled. */
bool rnvme_glue_pci_msix_enabled(const struct pci_dev *pdev);

/* ---- MMIO (include/linux/io.h, include/linux/io-64-nonatomic-lo-hi.h) ------------------------ */
u32 rnvme_glue_readl(const void __iomem *addr);
void rnvme_glue_writel(u32 value, void __iomem *addr);
/* lo_hi_readq() / lo_hi_writeq(): two 32-bit accesses, low half first (NVMe 3.1.2). */
u64 rnvme_glue_lo_hi_readq(const void __iomem *addr);
void rnvme_glue_lo_hi_writeq(u64 value, void __iomem *addr);

/* ---- DMA (include/linux/dma-mapping.h, include/linux/dmapool.h) ------------------------------- */
/* dma_set_mask_and_coherent(). */
int rnvme_glue_dma_set_mask_and_coherent(struct device *dev, u64 mask);
/* dma_opt_mapping_size(): the largest mapping that costs no more than smaller ones. */
u64 rnvme_glue_dma_opt_mapping_size(struct device *dev);
/*
 * Whether streaming mappings of dev must be unmapped: false only when unmapping does nothing
 * (direct mapping without DMA ops or an IOMMU, cache-coherent, no swiotlb bounce buffer used
 * for dev since its mask was set, no DMA-API debugging). Upstream's dma_need_unmap()
 * (kernel/dma/mapping.c, Linux 6.16) with 6.12's fields. It can only turn from false to true
 * (swiotlb_tbl_map_single() clears dma_skip_sync in the mapping call that bounces), so asked
 * after a mapping was made it also covers that mapping.
 */
bool rnvme_glue_dma_need_unmap(struct device *dev);
/* use_dma_iommu(): streaming mappings of dev go through iommu-dma (an IOVA per mapping call). */
bool rnvme_glue_dma_use_iommu(struct device *dev);
/* dma_set_max_seg_size(): the longest DMA segment dma_map_sg() may merge entries into. */
void rnvme_glue_dma_set_max_seg_size(struct device *dev, u32 size);
/*
 * One mapping call for a request's segments (dma_map_sg_attrs(), as nvme_map_data() does with
 * dma_map_sgtable() in drivers/nvme/host/pci.c): behind an IOMMU the segments share one IOVA
 * range, allocated, mapped and later unmapped once instead of once per segment.
 * rnvme_glue_sg_alloc() allocates (GFP_ATOMIC) a table of n cleared entries (sg_init_table())
 * followed by room for n DMA segments (at sgl + n), freed by rnvme_glue_sg_free();
 * rnvme_glue_sg_set() sets entry i (sg_set_page()); rnvme_glue_sg_map() maps the first n
 * entries, writes the resulting DMA segments (at most n) to the segment room of a table of cap
 * entries and returns their number, 0 when the DMA API refuses (nothing mapped then);
 * rnvme_glue_sg_unmap() undoes a map of the same n entries (dma_unmap_sg_attrs()).
 */
struct rnvme_glue_dma_seg {
	u64 addr;
	u32 len;
};
struct scatterlist *rnvme_glue_sg_alloc(u32 n);
void rnvme_glue_sg_free(struct scatterlist *sgl);
void rnvme_glue_sg_set(struct scatterlist *sgl, u32 i, struct page *page, u32 len, u32 offset);
u32 rnvme_glue_sg_map(struct device *dev, struct scatterlist *sgl, u32 n, u32 cap, bool to_device);
void rnvme_glue_sg_unmap(struct device *dev, struct scatterlist *sgl, u32 n, bool to_device);
/* dma_pool_create() / dma_pool_destroy() / dma_pool_alloc(GFP_ATOMIC) / dma_pool_free(). */
struct dma_pool *rnvme_glue_dma_pool_create(const char *name, struct device *dev, size_t size,
					    size_t align, size_t boundary);
void rnvme_glue_dma_pool_destroy(struct dma_pool *pool);
void *rnvme_glue_dma_pool_alloc(struct dma_pool *pool, u64 *handle);
void rnvme_glue_dma_pool_free(struct dma_pool *pool, void *vaddr, u64 handle);

/* ---- blk-mq (include/linux/blk-mq.h, include/linux/blkdev.h) --------------------------------- */
/* blk_mq_rq_to_pdu() / blk_mq_rq_from_pdu(). */
void *rnvme_glue_blk_mq_rq_to_pdu(struct request *rq);
struct request *rnvme_glue_blk_mq_rq_from_pdu(void *pdu);
/* blk_should_fake_timeout(): fault injection (fail_io_timeout) asks to drop this completion. */
bool rnvme_glue_blk_should_fake_timeout(struct request *rq);
/*
 * Whether atomic write rq fits its queue's atomic write limits: at most
 * queue_atomic_write_unit_max_bytes(), and within one queue_atomic_write_boundary_bytes() unit
 * when there is a boundary (as nvme_valid_atomic_write() in drivers/nvme/host/core.c checks).
 */
bool rnvme_glue_rq_atomic_write_fits(struct request *rq);
/*
 * blk_mq_alloc_disk(set, lim, queuedata) with disk->fops set to a block_device_operations whose
 * owner is THIS_MODULE (so an open disk holds a module reference and rmmod is refused).
 * Returns the disk or an ERR_PTR.
 */
struct gendisk *rnvme_glue_blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim, void *queuedata);
/*
 * A namespace disk's identity in sysfs: /sys/block/<disk>/{nsid,wwid,csi,metadata_bytes}, as
 * the C driver's nvme_ns_attr_group (drivers/nvme/host/sysfs.c). The driver puts one in
 * disk->private_data before device_add_disk(disk, rnvme_glue_ns_attr_groups()) and frees it
 * after del_gendisk(); wwid is NUL-terminated.
 */
struct rnvme_glue_ns_attrs {
	u32 nsid;
	char wwid[160];
};
/* The attribute groups for device_add_disk() (NULL-terminated). */
const struct attribute_group **rnvme_glue_ns_attr_groups(void);
/* ---- locks (include/linux/spinlock.h) -------------------------------------------------------- */
/* spin_lock_init() (one lockdep class for all kernel-glue IRQ-safe locks). */
void rnvme_glue_spin_lock_init(spinlock_t *lock);
/* spin_lock_irqsave(): returns the saved flags. */
unsigned long rnvme_glue_spin_lock_irqsave(spinlock_t *lock);
/* spin_unlock_irqrestore(). */
void rnvme_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
/* spin_lock_init() of a lock never taken in hard-IRQ context (its own lockdep class). */
void rnvme_glue_spin_lock_init_plain(spinlock_t *lock);
/* spin_lock(): interrupts stay enabled. */
void rnvme_glue_spin_lock(spinlock_t *lock);
/* spin_unlock(). */
void rnvme_glue_spin_unlock(spinlock_t *lock);
/* mutex_init() (one lockdep class for all kernel-glue sleeping locks). */
void rnvme_glue_mutex_init(struct mutex *lock);
/* mutex_lock_interruptible(): 0 or -EINTR. */
int rnvme_glue_mutex_lock_interruptible(struct mutex *lock);
/* mutex_unlock(). */
void rnvme_glue_mutex_unlock(struct mutex *lock);
/* mutex_destroy(). */
void rnvme_glue_mutex_destroy(struct mutex *lock);
/* init_completion(). */
void rnvme_glue_init_completion(struct completion *x);
/* reinit_completion(). */
void rnvme_glue_reinit_completion(struct completion *x);
/*
 * wait_for_completion_io_timeout(x, msecs_to_jiffies(ms)): sleeps uninterruptibly (counted as
 * I/O wait) until complete() or the timeout; 0 on a timeout, else the jiffies left (at least 1).
 */
unsigned long rnvme_glue_wait_for_completion_io_ms(struct completion *x, unsigned int ms);

/* NVMe passthrough: character devices, user requests, io_uring commands. */
#include "passthru.h"
#include "premap.h"

/* num_online_cpus(). */
unsigned int rnvme_glue_num_online_cpus(void);

/*
 * local_clock() (include/linux/sched/clock.h): nanoseconds of this CPU's scheduler clock (the
 * TSC on x86; cheap, no clocksource read), for timing short code paths.
 */
u64 rnvme_glue_local_clock(void);

/* tsc_khz (arch/x86/kernel/tsc.c): the TSC's calibrated frequency, 0 if unknown. */
unsigned int rnvme_glue_tsc_khz(void);

#endif /* RNVME_KERNEL_GLUE_HELPERS_H */
