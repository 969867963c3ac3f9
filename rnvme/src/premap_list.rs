//! The PRP list of a whole premapped buffer, built once, and the data pointer of an I/O inside
//! it by arithmetic: PRP1 into the buffer, PRP2 into the list.
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! # Layout
//!
//! Every controller page `i` of the buffer has one entry, its bus address, at slot `i % 511` of
//! list page `i / 511`; slot 511 of each list page (but the last) points at the next list page
//! ([`crate::PrpListLayout::stride`]).
//! An I/O covering pages `f..f + n` (`n > 2`) uses PRP1 = its first byte and PRP2 = the address
//! of page `f + 1`'s entry, so the controller reads its `n - 1` entries straight out of the
//! premapped list.
//!
//! A controller walking a PRP list treats the last slot of a list page as a pointer to the next
//! list page only when more than one entry is still needed (NVMe Base Specification, "Physical
//! Region Page Entry and List"); with one entry left it reads that slot as data. So an I/O whose
//! last entry is at slot 0 of a list page it reaches through a chain pointer (its last page
//! index is a multiple of 511, and it starts on an earlier list page) would have the chain
//! pointer read as its last data page. [`premap_prps`] detects exactly that case and returns
//! [`PremapPrps::PerIoList`]: the I/O's entries, to be copied into a list page of its own (no
//! mapping, no pinning: they come from the page table).

use crate::dma_tag::{first_prp, resolve};
use crate::dptr::CTRL_PAGE_MASK;
use crate::{chained_slot, DmaPageTable, DptrError, PrpListLayout, TagRange, PRP_LIST_DATA_SLOTS};

/// Data entries of one list page of a premapped buffer's PRP list: its last slot chains.
pub const PREMAP_LIST_DATA_SLOTS: usize = PRP_LIST_DATA_SLOTS;

/// List pages a premapped PRP list needs for a buffer of `nr_pages` controller pages.
///
/// # Examples
///
/// ```
/// use nvme::premap_list_pages;
/// assert_eq!((premap_list_pages(1), premap_list_pages(511), premap_list_pages(512)), (1, 1, 2));
/// assert_eq!(premap_list_pages(262_144), 514); // 1 GiB
/// ```
#[inline]
pub fn premap_list_pages(nr_pages: usize) -> usize {
    PrpListLayout::stride(nr_pages).pages()
}

/// Where page `index`'s entry is in the premapped list: `(list page, slot)`.
///
/// # Examples
///
/// ```
/// use nvme::premap_list_slot;
/// assert_eq!((premap_list_slot(0), premap_list_slot(510), premap_list_slot(511)), ((0, 0), (0, 510), (1, 0)));
/// ```
pub fn premap_list_slot(index: usize) -> (usize, usize) {
    chained_slot(index)
}

/// The slots of a premapped list, in order: `(list page, slot, value)` for every page entry and
/// every chain pointer. Everything else in the list pages is unused.
///
/// # Errors
///
/// [`DptrError::ListTooSmall`] when `list_dma` has fewer addresses than
/// [`premap_list_pages`] of the table, [`DptrError::ListMisaligned`] for a list page address
/// not on a controller page.
///
/// # Examples
///
/// ```
/// use nvme::{premap_list_entries, PremappedPages};
/// let pages: Vec<u64> = (0..512).map(|i| 0x100_0000 + i * 0x2000).collect();
/// let buf = PremappedPages::new(&pages, 0, 512 * 4096)?;
/// let slots: Vec<_> = premap_list_entries(&buf, &[0xa000, 0xb000])?.collect();
/// assert_eq!(slots.len(), 513);
/// assert_eq!(slots[511], (0, 511, 0xb000));          // chain pointer
/// assert_eq!(slots[512], (1, 0, 0x100_0000 + 511 * 0x2000));
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn premap_list_entries<'a, T: DmaPageTable + ?Sized>(
    table: &'a T,
    list_dma: &'a [u64],
) -> Result<impl Iterator<Item = (usize, usize, u64)> + 'a, DptrError> {
    let pages = table.dma_pages();
    PrpListLayout::stride(pages.len()).stores(pages.iter().copied(), list_dma)
}

/// The data pointer of an I/O on a premapped buffer with a premapped list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PremapPrps<'a> {
    /// PRP1 and PRP2 as they go into the command (PRP2 is 0, the second page, or an address
    /// inside the premapped list).
    Direct {
        /// PRP entry 1.
        prp1: u64,
        /// PRP entry 2.
        prp2: u64,
    },
    /// The premapped list cannot be used (see the module documentation): PRP2 must point at a
    /// list of the I/O's own holding `entries`, laid out as [`PrpListLayout::new`] says.
    PerIoList {
        /// PRP entry 1.
        prp1: u64,
        /// The entries of the I/O's list, in order.
        entries: &'a [u64],
    },
}

/// The data pointer of `range` of a premapped buffer whose list (laid out as in the module
/// documentation) is at the bus addresses `list_dma`.
///
/// # Errors
///
/// As [`crate::build_prps_from_tag`] for the range; [`DptrError::ListTooSmall`] when
/// `list_dma` is shorter than the table needs; [`DptrError::ListMisaligned`] for a list page address not on a controller page.
///
/// # Examples
///
/// ```
/// use nvme::{premap_prps, PremapPrps, PremappedPages, TagRange};
/// let pages: Vec<u64> = (0..1024).map(|i| 0x100_0000 + i * 0x2000).collect();
/// let buf = PremappedPages::new(&pages, 0, 1024 * 4096)?;
/// let lists = [0xa000, 0xb000, 0xc000];
/// // Pages 2..6: PRP2 points at page 3's entry.
/// let p = premap_prps(&buf, &lists, TagRange { offset: 2 * 4096, len: 4 * 4096 })?;
/// assert_eq!(p, PremapPrps::Direct { prp1: pages[2], prp2: 0xa000 + 3 * 8 });
/// // Pages 508..512: the last entry (page 511) would be read from the chain slot.
/// let p = premap_prps(&buf, &lists, TagRange { offset: 508 * 4096, len: 4 * 4096 })?;
/// assert_eq!(p, PremapPrps::PerIoList { prp1: pages[508], entries: &pages[509..512] });
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn premap_prps<'a, T: DmaPageTable + ?Sized>(
    table: &'a T,
    list_dma: &[u64],
    range: TagRange,
) -> Result<PremapPrps<'a>, DptrError> {
    let r = resolve(table, range)?;
    let pages = table.dma_pages();
    let needed = premap_list_pages(pages.len());
    if list_dma.len() < needed {
        return Err(DptrError::ListTooSmall {
            needed,
            available: list_dma.len(),
        });
    }
    let (prp1, rest) = first_prp(pages, &r)?;
    if let Some(i) = rest.iter().position(|a| a & CTRL_PAGE_MASK != 0) {
        return Err(DptrError::TagTable {
            index: r.first + 1 + i,
        });
    }
    match rest {
        [] => Ok(PremapPrps::Direct { prp1, prp2: 0 }),
        [second] => Ok(PremapPrps::Direct {
            prp1,
            prp2: *second,
        }),
        _ => {
            if PrpListLayout::window(r.first + 1, rest.len()).last_in_chain_slot() {
                // The last entry is at slot 0 of a later list page than the first entry: the
                // controller would take the chain slot before it as data.
                return Ok(PremapPrps::PerIoList {
                    prp1,
                    entries: rest,
                });
            }
            let (page, slot) = premap_list_slot(r.first + 1);
            let base = *list_dma.get(page).ok_or(DptrError::ListTooSmall {
                needed,
                available: list_dma.len(),
            })?;
            if base & CTRL_PAGE_MASK != 0 {
                return Err(DptrError::ListMisaligned {
                    index: page,
                    addr: base,
                });
            }
            Ok(PremapPrps::Direct {
                prp1,
                prp2: base + (slot as u64) * 8,
            })
        }
    }
}
