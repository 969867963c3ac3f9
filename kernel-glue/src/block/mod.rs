// SPDX-License-Identifier: GPL-2.0

//! The block layer.
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)

pub mod mq;
