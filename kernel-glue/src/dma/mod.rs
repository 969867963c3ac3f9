// SPDX-License-Identifier: GPL-2.0

//! DMA through the DMA API only: coherent buffers, pools of small coherent blocks, and streaming
//! mappings of pages.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)
//!
//! Every bus address handed to a device comes from a mapping call of the DMA API
//! (`dma_alloc_attrs`, `dma_pool_alloc`, `dma_map_page_attrs`, `dma_map_sg_attrs`), never from
//! `page_to_phys`, so the driver works behind an IOMMU and under `CONFIG_DMA_API_DEBUG`. Every
//! allocation and mapping is an RAII value freed or unmapped on drop.

mod coherent;
mod map;
mod pool;
mod sg;

pub use coherent::CoherentAllocation;
pub use map::{Direction, MappedSegment, Mapping};
pub use pool::{DmaPool, PoolBlock};
pub use sg::SgMapping;
