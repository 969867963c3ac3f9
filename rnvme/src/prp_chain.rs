//! The layout of chained PRP lists: which list page and slot holds each entry, and where the
//! chain pointers go (`nvme_pci_setup_prps()` in `drivers/nvme/host/pci.c`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! A PRP list page holds 512 entries. A controller walking a list takes the last slot of a
//! page as a pointer to the next list page only when more than one entry is still needed
//! (NVMe Base Specification, "Physical Region Page Entry and List"); with exactly one entry
//! left it reads that slot as data. So, counting list entries from 0:
//!
//! - entry `i` sits at slot `i % 511` of page `i / 511` ([`chained_slot`]), and slot 511 of
//!   every page but the last points at the next page;
//! - except the last entry of a list when that position would be slot 0 of a new page (its
//!   index is a non-zero multiple of 511, and it is not the list's first entry): the
//!   controller reads it from slot 511 of the page before, so it goes there, and no chain
//!   pointer is written ([`PrpListLayout::last_in_chain_slot`]).
//!
//! A command's own list starts at slot 0 of its first page ([`PrpListLayout::new`]); an I/O
//! on a premapped buffer points PRP2 into the middle of the buffer's shared list
//! ([`PrpListLayout::window`]), which is laid out with every page chaining
//! ([`PrpListLayout::stride`], see `premap_list`). Every builder of PRP lists in this crate
//! and in the driver writes what [`PrpListLayout::runs`] and [`PrpListLayout::stores`] give.

use core::ops::Range;

use crate::dptr::CTRL_PAGE_MASK;
use crate::{DptrError, NVME_CTRL_PAGE_SIZE, NVME_MAX_HW_SECTORS, PRPS_PER_PAGE};

/// Data slots of a list page that chains to another: its last slot is the pointer.
pub const PRP_LIST_DATA_SLOTS: usize = PRPS_PER_PAGE - 1;

/// The most list pages one command needs: a transfer of [`NVME_MAX_HW_SECTORS`] (8 MiB) from a
/// dword-aligned but not page-aligned start touches 2049 controller pages, 2048 of them in the
/// list: 5 pages (`NVME_MAX_NR_ALLOCATIONS` in `drivers/nvme/host/pci.c`).
pub const PRP_MAX_LIST_PAGES: usize =
    PrpListLayout::new((NVME_MAX_HW_SECTORS as usize * 512).div_ceil(NVME_CTRL_PAGE_SIZE as usize))
        .pages();

/// Where list entry `i` is when every page holds 511 entries and chains through its last slot:
/// `(page, slot)`.
///
/// # Examples
///
/// ```
/// use nvme::chained_slot;
/// assert_eq!((chained_slot(0), chained_slot(510), chained_slot(511)), ((0, 0), (0, 510), (1, 0)));
/// ```
#[inline]
pub const fn chained_slot(i: usize) -> (usize, usize) {
    (i / PRP_LIST_DATA_SLOTS, i % PRP_LIST_DATA_SLOTS)
}

/// The layout of `entries` PRP list entries, from stride position `start` on (see the module
/// documentation). Pages are counted from the page of the first entry.
///
/// # Examples
///
/// ```
/// use nvme::PrpListLayout;
/// // 2 MiB from a page-aligned start: 511 list entries, one page.
/// assert_eq!(PrpListLayout::new(511).pages(), 1);
/// // 512 entries still fit one page: the last one is read from slot 511.
/// let l = PrpListLayout::new(512);
/// assert_eq!((l.pages(), l.slot(511), l.last_in_chain_slot()), (1, Some((0, 511)), true));
/// // 513 entries: slot 511 of page 0 chains to page 1, which holds entries 511 and 512.
/// let l = PrpListLayout::new(513);
/// assert_eq!((l.pages(), l.slot(511), l.slot(512)), (2, Some((1, 0)), Some((1, 1))));
/// // 8 MiB + one page: 2048 entries in 5 pages (`NVME_MAX_NR_ALLOCATIONS`).
/// assert_eq!(PrpListLayout::new(2048).pages(), nvme::PRP_MAX_LIST_PAGES);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrpListLayout {
    /// Stride position ([`chained_slot`]) of the first entry.
    start: usize,
    /// Number of entries.
    entries: usize,
    /// The last entry goes into the chain slot of the page before its stride position.
    moved_last: bool,
}

impl PrpListLayout {
    /// A command's own list of `entries` entries, from slot 0 of its first page, as the
    /// controller walks it.
    #[inline]
    pub const fn new(entries: usize) -> Self {
        Self::window(0, entries)
    }

    /// `entries` entries of a list from stride position `start` on, as the controller walks
    /// them when PRP2 points at `start`'s slot.
    #[inline]
    pub const fn window(start: usize, entries: usize) -> Self {
        let last = start.saturating_add(entries.saturating_sub(1));
        Self {
            start,
            entries,
            moved_last: entries >= 2 && last % PRP_LIST_DATA_SLOTS == 0,
        }
    }

    /// `entries` entries at their stride positions, every page but the last chaining: the
    /// shared list of a premapped buffer, into which any I/O's [`Self::window`] may point.
    pub const fn stride(entries: usize) -> Self {
        Self {
            start: 0,
            entries,
            moved_last: false,
        }
    }

    /// Number of entries.
    #[inline]
    pub const fn entries(&self) -> usize {
        self.entries
    }

    /// Whether the last entry is at slot 511 of a page (see the module documentation): where
    /// the stride layout has a chain pointer, so a window with this property cannot point into
    /// a [`Self::stride`] list.
    pub const fn last_in_chain_slot(&self) -> bool {
        self.moved_last
    }

    /// List pages used (0 for no entries).
    #[inline]
    pub const fn pages(&self) -> usize {
        if self.entries == 0 {
            return 0;
        }
        let first = self.start / PRP_LIST_DATA_SLOTS;
        let last = (self.start + self.entries - 1) / PRP_LIST_DATA_SLOTS;
        let pages = last - first + 1;
        if self.moved_last {
            pages - 1
        } else {
            pages
        }
    }

    /// `(page, slot)` of entry `j` (`None` past the end).
    #[inline]
    pub const fn slot(&self, j: usize) -> Option<(usize, usize)> {
        if j >= self.entries {
            return None;
        }
        let first = self.start / PRP_LIST_DATA_SLOTS;
        let (page, slot) = chained_slot(self.start + j);
        if self.moved_last && j + 1 == self.entries {
            Some((page - first - 1, PRP_LIST_DATA_SLOTS))
        } else {
            Some((page - first, slot))
        }
    }

    /// The pages in order: which entries each holds, from which slot on, and whether its last
    /// slot points at the next page.
    pub fn runs(&self) -> impl Iterator<Item = PrpListRun> {
        let this = *self;
        (0..self.pages()).map(move |page| {
            let first_slot = if page == 0 {
                this.start % PRP_LIST_DATA_SLOTS
            } else {
                0
            };
            let lo = if page == 0 {
                0
            } else {
                page * PRP_LIST_DATA_SLOTS - this.start % PRP_LIST_DATA_SLOTS
            };
            let chains = page + 1 < this.pages();
            let hi = if chains {
                lo + (PRP_LIST_DATA_SLOTS - first_slot)
            } else {
                this.entries
            };
            PrpListRun {
                page,
                first_slot,
                entries: lo..hi,
                chains,
            }
        })
    }

    /// Every store a list needs, in order: `(page, slot, value)` for each entry of `entries`
    /// and each chain pointer (the bus address of the next page, from `list_dma`). Stops at the
    /// end of the layout or of `entries`, whichever comes first.
    ///
    /// # Errors
    ///
    /// [`DptrError::ListTooSmall`] when `list_dma` has fewer addresses than [`Self::pages`],
    /// [`DptrError::ListMisaligned`] for an address not on a controller page.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::PrpListLayout;
    /// let stores: Vec<_> = PrpListLayout::new(513).stores(100.., &[0xa000, 0xb000])?.collect();
    /// assert_eq!(stores.len(), 514);
    /// assert_eq!(stores[511], (0, 511, 0xb000));          // chain pointer
    /// assert_eq!(stores[512], (1, 0, 100 + 511));
    /// # Ok::<(), nvme::DptrError>(())
    /// ```
    pub fn stores<'a, I: IntoIterator<Item = u64>>(
        &self,
        entries: I,
        list_dma: &'a [u64],
    ) -> Result<impl Iterator<Item = (usize, usize, u64)> + 'a, DptrError>
    where
        I::IntoIter: 'a,
    {
        let list_dma = self.check_list_dma(list_dma)?;
        Ok(Stores {
            layout: *self,
            entries: entries.into_iter(),
            list_dma,
            next: 0,
            pending: None,
        })
    }

    /// `list_dma` cut to [`Self::pages`] addresses, checked.
    fn check_list_dma<'a>(&self, list_dma: &'a [u64]) -> Result<&'a [u64], DptrError> {
        let needed = self.pages();
        let list_dma = list_dma.get(..needed).ok_or(DptrError::ListTooSmall {
            needed,
            available: list_dma.len(),
        })?;
        if let Some(index) = list_dma.iter().position(|a| a & CTRL_PAGE_MASK != 0) {
            return Err(DptrError::ListMisaligned {
                index,
                addr: list_dma.get(index).copied().unwrap_or(0),
            });
        }
        Ok(list_dma)
    }
}

/// One page of a [`PrpListLayout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrpListRun {
    /// The page, counted from the layout's first.
    pub page: usize,
    /// Slot of the first entry in this page.
    pub first_slot: usize,
    /// The entries the page holds, in consecutive slots from `first_slot`.
    pub entries: Range<usize>,
    /// Slot 511 points at the next page.
    pub chains: bool,
}

/// Iterator behind [`PrpListLayout::stores`].
struct Stores<'a, I> {
    layout: PrpListLayout,
    entries: I,
    /// Checked: at least `layout.pages()` page-aligned addresses.
    list_dma: &'a [u64],
    /// Index of the next entry.
    next: usize,
    /// An entry to store after the chain pointer that leads to its page.
    pending: Option<(usize, usize, u64)>,
}

impl<I: Iterator<Item = u64>> Iterator for Stores<'_, I> {
    type Item = (usize, usize, u64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        let (page, slot) = self.layout.slot(self.next)?;
        let value = self.entries.next()?;
        self.next += 1;
        if slot == 0 && page > 0 {
            // The first entry of a later page: the page before chains to it first.
            let to = *self.list_dma.get(page)?;
            self.pending = Some((page, 0, value));
            return Some((page - 1, PRP_LIST_DATA_SLOTS, to));
        }
        Some((page, slot, value))
    }
}
