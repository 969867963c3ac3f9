// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers of kernel-glue; see helpers.h. Each helper calls the static inline function or macro
 * it is named after; rnvme_glue_page_to_phys() also validates its argument.
 */
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/dma-map-ops.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/highmem.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/io.h>
#include <linux/iommu-dma.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include <asm/tsc.h>

#include "helpers.h"

/* page_address() must be the direct map, so a high-order allocation is virtually contiguous. */
#ifdef CONFIG_HIGHMEM
#error "kernel-glue does not support CONFIG_HIGHMEM"
#endif

/*
 * Page handles reaching rnvme_glue_page_to_phys() may be arbitrary values: safe Rust code can
 * build `page + n` for any n (a bvec with a huge offset). With the vmemmap, page_to_phys() is
 * arithmetic on the pointer and never dereferences it, and `page + n` is the page n frames on
 * (kpage.rs refuses to build without it, too).
 */
#ifndef CONFIG_SPARSEMEM_VMEMMAP
#error "kernel-glue needs CONFIG_SPARSEMEM_VMEMMAP"
#endif

phys_addr_t rnvme_glue_page_to_phys(const struct page *page)
{
	/* Arithmetic on the pointer value (offset from vmemmap): no dereference. */
	return page_to_phys(page);
}

void *rnvme_glue_page_address(const struct page *page)
{
	return page_address(page);
}

void rnvme_glue_cond_resched(void)
{
	cond_resched();
}

/* ---- PCI ------------------------------------------------------------------------------------- */

/* A driver from rnvme_glue_pci_register(): the driver, its id table (match + end), the probe. */
struct rnvme_glue_pci_driver {
	struct pci_driver drv;
	struct pci_device_id ids[2];
	int (*probe)(struct pci_dev *pdev);
};

static int rnvme_glue_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct rnvme_glue_pci_driver *d =
		container_of(to_pci_driver(pdev->dev.driver), struct rnvme_glue_pci_driver, drv);

	/* The id is always ids[0]: the driver matches one class. */
	return d->probe(pdev);
}

void *rnvme_glue_pci_register(const char *name, u32 class, u32 class_mask,
			      int (*probe)(struct pci_dev *pdev),
			      void (*remove)(struct pci_dev *pdev),
			      void (*shutdown)(struct pci_dev *pdev), int *err)
{
	struct rnvme_glue_pci_driver *d = kzalloc(sizeof(*d), GFP_KERNEL);
	int ret;

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	d->ids[0] = (struct pci_device_id){ PCI_DEVICE_CLASS(class, class_mask) };
	d->drv.name = name;
	d->drv.id_table = d->ids;
	d->drv.probe = rnvme_glue_pci_probe;
	d->drv.remove = remove;
	d->drv.shutdown = shutdown;
	d->probe = probe;
	ret = pci_register_driver(&d->drv);
	if (ret) {
		kfree(d);
		*err = ret;
		return NULL;
	}
	return d;
}

void rnvme_glue_pci_unregister(void *drv)
{
	struct rnvme_glue_pci_driver *d = drv;

	pci_unregister_driver(&d->drv);
	kfree(d);
}

struct device *rnvme_glue_pci_device(struct pci_dev *pdev)
{
	return &pdev->dev;
}

u32 rnvme_glue_pci_ids(const struct pci_dev *pdev)
{
	return ((u32)pdev->vendor << 16) | pdev->device;
}

const char *rnvme_glue_pci_name(const struct pci_dev *pdev)
{
	return pci_name(pdev);
}

void rnvme_glue_pci_set_drvdata(struct pci_dev *pdev, void *data)
{
	pci_set_drvdata(pdev, data);
}

void *rnvme_glue_pci_get_drvdata(struct pci_dev *pdev)
{
	return pci_get_drvdata(pdev);
}

int rnvme_glue_pci_enable_device_mem(struct pci_dev *pdev)
{
	return pci_enable_device_mem(pdev);
}

void rnvme_glue_pci_disable_device(struct pci_dev *pdev)
{
	pci_disable_device(pdev);
}

void rnvme_glue_pci_set_master(struct pci_dev *pdev, bool on)
{
	if (on)
		pci_set_master(pdev);
	else
		pci_clear_master(pdev);
}

int rnvme_glue_pci_request_mem_regions(struct pci_dev *pdev, const char *name)
{
	return pci_request_mem_regions(pdev, name);
}

void rnvme_glue_pci_release_mem_regions(struct pci_dev *pdev)
{
	pci_release_mem_regions(pdev);
}

u64 rnvme_glue_pci_mem_resource_len(const struct pci_dev *pdev, int bar)
{
	if (bar < 0 || bar >= PCI_STD_NUM_BARS ||
	    !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM))
		return 0;
	return pci_resource_len(pdev, bar);
}

void __iomem *rnvme_glue_pci_iomap(struct pci_dev *pdev, int bar, unsigned long maxlen)
{
	return pci_iomap(pdev, bar, maxlen);
}

void rnvme_glue_pci_iounmap(struct pci_dev *pdev, void __iomem *addr)
{
	pci_iounmap(pdev, addr);
}

int rnvme_glue_pci_alloc_irq_vectors(struct pci_dev *pdev, unsigned int min, unsigned int max,
				     unsigned int pre_vectors)
{
	struct irq_affinity affd = { .pre_vectors = pre_vectors };
	unsigned int flags = PCI_IRQ_MSIX | PCI_IRQ_MSI | PCI_IRQ_INTX;

	if (pre_vectors < max)
		flags |= PCI_IRQ_AFFINITY;
	return pci_alloc_irq_vectors_affinity(pdev, min, max, flags,
					      pre_vectors < max ? &affd : NULL);
}

void rnvme_glue_pci_free_irq_vectors(struct pci_dev *pdev)
{
	pci_free_irq_vectors(pdev);
}

int rnvme_glue_pci_irq_vector(struct pci_dev *pdev, unsigned int nr)
{
	return pci_irq_vector(pdev, nr);
}

bool rnvme_glue_pci_msix_enabled(const struct pci_dev *pdev)
{
	return pdev->msix_enabled;
}

/* ---- MMIO ------------------------------------------------------------------------------------ */

u32 rnvme_glue_readl(const void __iomem *addr)
{
	return readl(addr);
}

void rnvme_glue_writel(u32 value, void __iomem *addr)
{
	writel(value, addr);
}

u64 rnvme_glue_lo_hi_readq(const void __iomem *addr)
{
	return lo_hi_readq(addr);
}

void rnvme_glue_lo_hi_writeq(u64 value, void __iomem *addr)
{
	lo_hi_writeq(value, addr);
}

/* ---- DMA ------------------------------------------------------------------------------------- */

/* The helpers pass DMA addresses as u64. */
static_assert(sizeof(dma_addr_t) == sizeof(u64));
/* kernel_glue::dma::map's DMA_MAPPING_ERROR. */
static_assert(DMA_MAPPING_ERROR == (dma_addr_t)~0ULL);

int rnvme_glue_dma_set_mask_and_coherent(struct device *dev, u64 mask)
{
	return dma_set_mask_and_coherent(dev, mask);
}

u64 rnvme_glue_dma_opt_mapping_size(struct device *dev)
{
	return dma_opt_mapping_size(dev);
}

bool rnvme_glue_dma_need_unmap(struct device *dev)
{
	if (IS_ENABLED(CONFIG_DMA_API_DEBUG) || use_dma_iommu(dev) || get_dma_ops(dev))
		return true;
#ifdef CONFIG_DMA_NEED_SYNC
	return !dev->dma_skip_sync;
#else
	return true;
#endif
}

bool rnvme_glue_dma_use_iommu(struct device *dev)
{
	return use_dma_iommu(dev);
}

void rnvme_glue_dma_set_max_seg_size(struct device *dev, u32 size)
{
	dma_set_max_seg_size(dev, size);
}

/* kernel_glue::dma::MappedSegment, #[repr(C)] (asserted in helpers.rs too). */
static_assert(sizeof(struct rnvme_glue_dma_seg) == 16 &&
	      offsetof(struct rnvme_glue_dma_seg, len) == 8);

struct scatterlist *rnvme_glue_sg_alloc(u32 n)
{
	struct scatterlist *sgl;

	if (!n)
		return NULL;
	sgl = kmalloc_array(n, sizeof(*sgl) + sizeof(struct rnvme_glue_dma_seg), GFP_ATOMIC);
	if (sgl)
		sg_init_table(sgl, n);
	return sgl;
}

void rnvme_glue_sg_free(struct scatterlist *sgl)
{
	kfree(sgl);
}

/* The room for the DMA segments of a table of cap entries: right after the entries. */
static struct rnvme_glue_dma_seg *rnvme_glue_sg_segs(struct scatterlist *sgl, u32 cap)
{
	return (struct rnvme_glue_dma_seg *)(sgl + cap);
}

void rnvme_glue_sg_set(struct scatterlist *sgl, u32 i, struct page *page, u32 len, u32 offset)
{
	sg_set_page(&sgl[i], page, len, offset);
}

u32 rnvme_glue_sg_map(struct device *dev, struct scatterlist *sgl, u32 n, u32 cap, bool to_device)
{
	enum dma_data_direction dir = to_device ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	struct rnvme_glue_dma_seg *out = rnvme_glue_sg_segs(sgl, cap);
	struct scatterlist *sg;
	int nents, i;

	if (!n || n > cap)
		return 0;
	/* The table may be longer than the request: the walk ends at entry n. */
	sg_mark_end(&sgl[n - 1]);
	nents = dma_map_sg_attrs(dev, sgl, n, dir, DMA_ATTR_NO_WARN);
	if (nents <= 0)
		return 0;
	for_each_sg(sgl, sg, nents, i) {
		out[i].addr = sg_dma_address(sg);
		out[i].len = sg_dma_len(sg);
	}
	return nents;
}

void rnvme_glue_sg_unmap(struct device *dev, struct scatterlist *sgl, u32 n, bool to_device)
{
	dma_unmap_sg_attrs(dev, sgl, n, to_device ? DMA_TO_DEVICE : DMA_FROM_DEVICE, 0);
}

struct dma_pool *rnvme_glue_dma_pool_create(const char *name, struct device *dev, size_t size,
					    size_t align, size_t boundary)
{
	return dma_pool_create(name, dev, size, align, boundary);
}

void rnvme_glue_dma_pool_destroy(struct dma_pool *pool)
{
	dma_pool_destroy(pool);
}

void *rnvme_glue_dma_pool_alloc(struct dma_pool *pool, u64 *handle)
{
	dma_addr_t h = 0;
	void *p = dma_pool_alloc(pool, GFP_ATOMIC, &h);

	*handle = h;
	return p;
}

void rnvme_glue_dma_pool_free(struct dma_pool *pool, void *vaddr, u64 handle)
{
	dma_pool_free(pool, vaddr, handle);
}

/* ---- blk-mq ---------------------------------------------------------------------------------- */

void *rnvme_glue_blk_mq_rq_to_pdu(struct request *rq)
{
	return blk_mq_rq_to_pdu(rq);
}

struct request *rnvme_glue_blk_mq_rq_from_pdu(void *pdu)
{
	return blk_mq_rq_from_pdu(pdu);
}

bool rnvme_glue_blk_should_fake_timeout(struct request *rq)
{
	return blk_should_fake_timeout(rq->q);
}

/* Disks of this module: an open disk holds a reference on THIS_MODULE. */
static const struct block_device_operations rnvme_glue_disk_fops = {
	.owner = THIS_MODULE,
};

bool rnvme_glue_rq_atomic_write_fits(struct request *rq)
{
	struct request_queue *q = rq->q;
	u64 len = blk_rq_bytes(rq);
	u64 unit = queue_atomic_write_boundary_bytes(q);
	u64 first = (u64)blk_rq_pos(rq) << SECTOR_SHIFT;

	if (len > queue_atomic_write_unit_max_bytes(q))
		return false;
	/* With a boundary, the first and the last byte in the same boundary unit. */
	return !unit || (len <= unit && first / unit == (first + len - 1) / unit);
}

struct gendisk *rnvme_glue_blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
					     void *queuedata)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, lim, queuedata);

	if (!IS_ERR(disk))
		disk->fops = &rnvme_glue_disk_fops;
	return disk;
}

/* The Rust declaration (kernel-glue/src/helpers.rs) relies on this layout. */
static_assert(sizeof(struct rnvme_glue_ns_attrs) == 164);
static_assert(offsetof(struct rnvme_glue_ns_attrs, wwid) == 4);

static const struct rnvme_glue_ns_attrs *rnvme_ns_attrs_of(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static ssize_t nsid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", rnvme_ns_attrs_of(dev)->nsid);
}
static DEVICE_ATTR_RO(nsid);

static ssize_t wwid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", rnvme_ns_attrs_of(dev)->wwid);
}
static DEVICE_ATTR_RO(wwid);

/* rnvme takes NVM command set namespaces without metadata only. */
static ssize_t csi_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", 0);
}
static DEVICE_ATTR_RO(csi);

static ssize_t metadata_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", 0);
}
static DEVICE_ATTR_RO(metadata_bytes);

static struct attribute *rnvme_ns_attrs[] = {
	&dev_attr_nsid.attr,
	&dev_attr_wwid.attr,
	&dev_attr_csi.attr,
	&dev_attr_metadata_bytes.attr,
	NULL,
};

/* A disk without the driver's data shows none of them. */
static umode_t rnvme_ns_attrs_visible(struct kobject *kobj, struct attribute *a, int n)
{
	return rnvme_ns_attrs_of(kobj_to_dev(kobj)) ? a->mode : 0;
}

static const struct attribute_group rnvme_ns_attr_group = {
	.attrs = rnvme_ns_attrs,
	.is_visible = rnvme_ns_attrs_visible,
};

static const struct attribute_group *rnvme_ns_attr_groups[] = {
	&rnvme_ns_attr_group,
	NULL,
};

const struct attribute_group **rnvme_glue_ns_attr_groups(void)
{
	return rnvme_ns_attr_groups;
}

void rnvme_glue_spin_lock_init(spinlock_t *lock)
{
	spin_lock_init(lock);
}

unsigned long rnvme_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rnvme_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

void rnvme_glue_spin_lock_init_plain(spinlock_t *lock)
{
	spin_lock_init(lock);
}

void rnvme_glue_spin_lock(spinlock_t *lock)
{
	spin_lock(lock);
}

void rnvme_glue_spin_unlock(spinlock_t *lock)
{
	spin_unlock(lock);
}

void rnvme_glue_mutex_init(struct mutex *lock)
{
	mutex_init(lock);
}

int rnvme_glue_mutex_lock_interruptible(struct mutex *lock)
{
	return mutex_lock_interruptible(lock);
}

void rnvme_glue_mutex_unlock(struct mutex *lock)
{
	mutex_unlock(lock);
}

void rnvme_glue_mutex_destroy(struct mutex *lock)
{
	mutex_destroy(lock);
}

void rnvme_glue_init_completion(struct completion *x)
{
	init_completion(x);
}

void rnvme_glue_reinit_completion(struct completion *x)
{
	reinit_completion(x);
}

unsigned long rnvme_glue_wait_for_completion_io_ms(struct completion *x, unsigned int ms)
{
	return wait_for_completion_io_timeout(x, msecs_to_jiffies(ms));
}

unsigned int rnvme_glue_num_online_cpus(void)
{
	return num_online_cpus();
}

u64 rnvme_glue_local_clock(void)
{
	return local_clock();
}

unsigned int rnvme_glue_tsc_khz(void)
{
	return tsc_khz;
}

/* Values kernel-glue/src (error.rs, block/mq/gen_disk.rs) spells out because bindgen cannot. */
static_assert(BLK_STS_NOTSUPP == (__force blk_status_t)1);
static_assert(BLK_STS_TIMEOUT == (__force blk_status_t)2);
static_assert(BLK_STS_NOSPC == (__force blk_status_t)3);
static_assert(BLK_STS_TRANSPORT == (__force blk_status_t)4);
static_assert(BLK_STS_TARGET == (__force blk_status_t)5);
static_assert(BLK_STS_MEDIUM == (__force blk_status_t)7);
static_assert(BLK_STS_PROTECTION == (__force blk_status_t)8);
static_assert(BLK_STS_RESOURCE == (__force blk_status_t)9);
static_assert(BLK_STS_IOERR == (__force blk_status_t)10);
static_assert(BLK_STS_AGAIN == (__force blk_status_t)12);
static_assert(BLK_STS_DEV_RESOURCE == (__force blk_status_t)13);
static_assert(BLK_STS_INVAL == (__force blk_status_t)19);
static_assert(BLK_FEAT_WRITE_CACHE == (__force blk_features_t)(1u << 0));
static_assert(BLK_FEAT_FUA == (__force blk_features_t)(1u << 1));
static_assert(BLK_FEAT_POLL == (__force blk_features_t)(1u << 9));
static_assert(IRQF_SHARED == 0x80);
