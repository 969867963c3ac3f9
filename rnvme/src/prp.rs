//! NVMe PRP data pointers: PRP1/PRP2 and chained PRP lists (`nvme_pci_setup_prps`).
//!
//! C header: [`include/linux/nvme.h`](srctree/include/linux/nvme.h)
//!
//! The data is cut into controller pages. PRP1 points at the first byte (it alone may have an
//! offset); if the data touches two pages PRP2 points at the second; if it touches more, PRP2
//! points at a list of the remaining page addresses. A list page holds 512 entries; when more
//! entries follow, its last slot instead points at the next list page.

use crate::dptr::CTRL_PAGE_MASK;
use crate::{DmaSegment, DptrError, PrpListLayout, NVME_CTRL_PAGE_SIZE};

/// Entries in one PRP list page (`NVME_CTRL_PAGE_SIZE / 8`).
pub const PRPS_PER_PAGE: usize = 512;
/// Entries in a list from the driver's small pool (256 bytes, "for I/Os between 4k and 128k").
pub const PRP_SMALL_POOL_ENTRIES: usize = 32;

/// One PRP list page as the device reads it: 512 little-endian 64-bit entries.
pub type PrpListPage = [u64; PRPS_PER_PAGE];

/// Which DMA pool the Linux driver would take the list from (information for the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrpPool {
    /// No list: PRP1 and PRP2 describe everything.
    None,
    /// At most 32 entries: a 256-byte list from the small pool.
    Small,
    /// A 4 KiB list page (or a chain of them) from the page pool.
    Page,
}

/// The PRP layout of a transfer, known before any list is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrpPlan {
    /// Controller pages the data touches (PRP entries including PRP1).
    pub entries: usize,
    /// Entries stored in lists (0 when PRP2 is a direct pointer or unused).
    pub list_entries: usize,
    /// List pages needed.
    pub list_pages: usize,
    /// Pool the driver would use.
    pub pool: PrpPool,
}

impl PrpPlan {
    /// The plan for a transfer touching `entries` controller pages.
    const fn for_entries(entries: usize) -> Self {
        if entries <= 2 {
            return Self {
                entries,
                list_entries: 0,
                list_pages: 0,
                pool: PrpPool::None,
            };
        }
        let list_entries = entries - 1;
        let list_pages = PrpListLayout::new(list_entries).pages();
        Self {
            entries,
            list_entries,
            list_pages,
            pool: if list_entries <= PRP_SMALL_POOL_ENTRIES {
                PrpPool::Small
            } else {
                PrpPool::Page
            },
        }
    }
}

/// Built PRP data pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prps {
    /// PRP entry 1 (native-endian value; see [`Prps::dptr_bytes`]).
    pub prp1: u64,
    /// PRP entry 2: 0, the second page, or the first list page's bus address.
    pub prp2: u64,
    /// The layout used; `plan.list_pages` list pages were written, in order.
    pub plan: PrpPlan,
}

impl Prps {
    /// The command's 16-byte DPTR field (command bytes 24..40), little-endian.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{build_prps, DmaSegment, PrpLists};
    /// let p = build_prps(&[DmaSegment::new(0x1122_3000, 8192)], &mut PrpLists::new(&mut [], &[])?)?;
    /// let b = p.dptr_bytes();
    /// assert_eq!(b[..8], 0x1122_3000u64.to_le_bytes());
    /// assert_eq!(b[8..], 0x1122_4000u64.to_le_bytes());
    /// # Ok::<(), nvme::DptrError>(())
    /// ```
    pub fn dptr_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        let (a, b) = out.split_at_mut(8);
        a.copy_from_slice(&self.prp1.to_le_bytes());
        b.copy_from_slice(&self.prp2.to_le_bytes());
        out
    }
}

/// Caller-provided PRP list pages and their bus addresses.
///
/// # Invariants
///
/// `dma.len() >= pages.len()` and every `dma[i]` used is 4096-aligned.
#[derive(Debug)]
pub struct PrpLists<'a> {
    pages: &'a mut [PrpListPage],
    dma: &'a [u64],
}

impl<'a> PrpLists<'a> {
    /// Wraps list pages and the bus address of each.
    ///
    /// # Errors
    ///
    /// [`DptrError::ListDmaCount`] if there are fewer addresses than pages,
    /// [`DptrError::ListMisaligned`] if an address is not 4096-aligned.
    ///
    /// # Examples
    ///
    /// ```
    /// use nvme::{DptrError, PrpLists};
    /// let mut pages = [[0u64; 512]; 2];
    /// assert!(PrpLists::new(&mut pages, &[0x1000, 0x3000]).is_ok());
    /// assert_eq!(PrpLists::new(&mut pages, &[0x1000]).unwrap_err(), DptrError::ListDmaCount { pages: 2, addrs: 1 });
    /// assert!(PrpLists::new(&mut pages, &[0x1000, 0x3008]).is_err());
    /// assert!(PrpLists::new(&mut [], &[]).is_ok()); // enough for transfers of one or two pages
    /// ```
    pub fn new(pages: &'a mut [PrpListPage], dma: &'a [u64]) -> Result<Self, DptrError> {
        if dma.len() < pages.len() {
            return Err(DptrError::ListDmaCount {
                pages: pages.len(),
                addrs: dma.len(),
            });
        }
        for (index, &addr) in dma.iter().enumerate().take(pages.len()) {
            if addr & CTRL_PAGE_MASK != 0 {
                return Err(DptrError::ListMisaligned { index, addr });
            }
        }
        // INVARIANT: both conditions were checked above.
        Ok(Self { pages, dma })
    }

    /// Number of list pages available.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether no list page is available.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The list pages (for inspection after a build).
    pub fn pages(&self) -> &[PrpListPage] {
        self.pages
    }
}

/// Checks `segs` against the PRP rules and returns the layout they need.
///
/// The rules: at least one segment, no empty segment, the first byte 4-byte aligned, every
/// segment but the first starting on a controller page and every segment but the last ending on
/// one (what the NVMe queue limits guarantee for every bio).
///
/// # Errors
///
/// The [`DptrError`] of the first rule broken.
///
/// # Examples
///
/// ```
/// use nvme::{plan_prps, DmaSegment, PrpPool};
/// let p = plan_prps(&[DmaSegment::new(0x1000, 4096)])?;
/// assert_eq!((p.entries, p.list_pages, p.pool), (1, 0, PrpPool::None));
/// let p = plan_prps(&[DmaSegment::new(0x1800, 4096)])?;      // offset: touches 2 pages
/// assert_eq!((p.entries, p.list_pages), (2, 0));
/// let p = plan_prps(&[DmaSegment::new(0, 8 << 20)])?;        // 8 MiB: 2048 entries
/// assert_eq!((p.list_entries, p.list_pages, p.pool), (2047, 5, PrpPool::Page));
/// assert!(plan_prps(&[DmaSegment::new(0, 100), DmaSegment::new(0x1000, 100)]).is_err());
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn plan_prps(segs: &[DmaSegment]) -> Result<PrpPlan, DptrError> {
    plan_prps_iter(segs.iter().copied())
}

/// [`plan_prps`] for segments given by an iterator (e.g. the driver's mapped segments).
///
/// # Errors
///
/// As [`plan_prps`].
pub fn plan_prps_iter<I: IntoIterator<Item = DmaSegment>>(segs: I) -> Result<PrpPlan, DptrError> {
    let mut segs = segs.into_iter().enumerate().peekable();
    let mut entries: usize = 0;
    if segs.peek().is_none() {
        return Err(DptrError::NoSegments);
    }
    while let Some((index, seg)) = segs.next() {
        let is_last = segs.peek().is_none();
        if seg.len == 0 {
            return Err(DptrError::ZeroLength { index });
        }
        let end = seg.end().ok_or(DptrError::AddressOverflow { index })?;
        let offset = seg.addr & CTRL_PAGE_MASK;
        if index == 0 && seg.addr & 3 != 0 {
            return Err(DptrError::FirstNotDwordAligned { addr: seg.addr });
        }
        if index != 0 && offset != 0 {
            return Err(DptrError::StartNotPageAligned {
                index,
                addr: seg.addr,
            });
        }
        if !is_last && end & CTRL_PAGE_MASK != 0 {
            return Err(DptrError::EndNotPageAligned { index, end });
        }
        // The quotient of a u64 below 2^33 fits in usize.
        let pages = seg.ctrl_pages();
        entries = entries
            .checked_add(pages as usize)
            .ok_or(DptrError::AddressOverflow { index })?;
    }
    Ok(PrpPlan::for_entries(entries))
}

/// What [`prp_fill`] found: PRP1 and how many list entries the transfer needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrpFill {
    /// The first byte of the transfer.
    pub prp1: u64,
    /// PRP entries after PRP1 (the transfer's controller pages but the first). When it is at
    /// most the list's length, they were all written to the list's first slots.
    pub list_entries: usize,
}

/// Checks `segs` against the PRP rules and writes the entries after PRP1 (little-endian) into
/// `list`, in one pass over the segments: the per-I/O path of a multi-segment transfer whose
/// list fits one page (`nvme_pci_setup_prps()` fills its list the same way, entry by entry).
/// Entries past `list.len()` are counted but not written; the caller then needs a chained list
/// ([`build_prps`]). The rules, their order and the errors are [`plan_prps_iter`]'s, and for
/// valid segments the entries are [`prp_entries`]' after the first.
///
/// # Errors
///
/// As [`plan_prps_iter`]; `list` may then have been partly written.
///
/// # Examples
///
/// ```
/// use nvme::{prp_fill, DmaSegment, PrpFill};
/// let mut list = [0u64; 4];
/// let segs = [DmaSegment::new(0x1800, 6144), DmaSegment::new(0x9000, 100)];
/// assert_eq!(prp_fill(segs, &mut list)?, PrpFill { prp1: 0x1800, list_entries: 2 });
/// assert_eq!(list[..2], [0x2000u64.to_le(), 0x9000u64.to_le()]);
/// # Ok::<(), nvme::DptrError>(())
/// ```
#[inline]
pub fn prp_fill<I: IntoIterator<Item = DmaSegment>>(
    segs: I,
    list: &mut [u64],
) -> Result<PrpFill, DptrError> {
    let page = u64::from(NVME_CTRL_PAGE_SIZE);
    let mut segs = segs.into_iter();
    let mut cur = segs.next().ok_or(DptrError::NoSegments)?;
    if cur.len == 0 {
        return Err(DptrError::ZeroLength { index: 0 });
    }
    let mut end = cur.end().ok_or(DptrError::AddressOverflow { index: 0 })?;
    if cur.addr & 3 != 0 {
        return Err(DptrError::FirstNotDwordAligned { addr: cur.addr });
    }
    let prp1 = cur.addr;
    // The first segment's entries after PRP1 start at its second page.
    let mut next = (cur.addr & !CTRL_PAGE_MASK).checked_add(page);
    let mut n = 0usize;
    let mut index = 0usize;
    loop {
        // This segment's entries from `next` on: the page starts below its end.
        while let Some(e) = next.filter(|&e| e < end) {
            if let Some(slot) = list.get_mut(n) {
                *slot = e.to_le();
            }
            n = n
                .checked_add(1)
                .ok_or(DptrError::AddressOverflow { index })?;
            next = e.checked_add(page);
        }
        let Some(seg) = segs.next() else {
            break;
        };
        // Not the last: it must end on a page.
        if end & CTRL_PAGE_MASK != 0 {
            return Err(DptrError::EndNotPageAligned { index, end });
        }
        index += 1;
        cur = seg;
        if cur.len == 0 {
            return Err(DptrError::ZeroLength { index });
        }
        end = cur.end().ok_or(DptrError::AddressOverflow { index })?;
        if cur.addr & CTRL_PAGE_MASK != 0 {
            return Err(DptrError::StartNotPageAligned {
                index,
                addr: cur.addr,
            });
        }
        next = Some(cur.addr);
    }
    Ok(PrpFill {
        prp1,
        list_entries: n,
    })
}

/// PRP1 and PRP2 of a transfer that is one segment of at most two controller pages: the case
/// `nvme_setup_prp_simple()` in `drivers/nvme/host/pci.c` handles without a list. PRP2 is the
/// second page's start, or 0 when the segment stays in its first page. `None` when the
/// segment needs a list (more than two pages) or breaks a PRP rule (empty, first byte not
/// dword aligned, end past the address space); [`plan_prps`] and [`build_prps`] handle, or
/// refuse, those.
///
/// # Examples
///
/// ```
/// use nvme::{prp_simple, DmaSegment};
/// assert_eq!(prp_simple(DmaSegment::new(0x10_0000, 4096)), Some((0x10_0000, 0)));
/// assert_eq!(prp_simple(DmaSegment::new(0x10_0200, 4096)), Some((0x10_0200, 0x10_1000)));
/// assert_eq!(prp_simple(DmaSegment::new(0x10_0200, 8192)), None); // three pages: a list
/// assert_eq!(prp_simple(DmaSegment::new(0x10_0202, 512)), None);  // not dword aligned
/// ```
#[inline]
pub fn prp_simple(seg: DmaSegment) -> Option<(u64, u64)> {
    let offset = seg.addr & CTRL_PAGE_MASK;
    let page = u64::from(NVME_CTRL_PAGE_SIZE);
    if seg.len == 0 || seg.addr & 3 != 0 || offset + u64::from(seg.len) > 2 * page {
        return None;
    }
    // The segment fits in two pages, so its last byte is at most a page past its own page.
    seg.end()?;
    if offset + u64::from(seg.len) <= page {
        Some((seg.addr, 0))
    } else {
        Some((seg.addr, (seg.addr - offset).checked_add(page)?))
    }
}

/// The PRP entries of `segs` in order: the first byte (PRP1), then the start of every further
/// controller page the segments touch. Meant for segments [`plan_prps_iter`] accepted (then it
/// yields `plan.entries` addresses); for others it yields addresses without meaning but never
/// panics.
///
/// # Examples
///
/// ```
/// use nvme::{prp_entries, DmaSegment};
/// let e: Vec<u64> = prp_entries([DmaSegment::new(0x1800, 4096), DmaSegment::new(0x9000, 10)]).collect();
/// assert_eq!(e, [0x1800, 0x2000, 0x9000]);
/// ```
pub fn prp_entries<I: IntoIterator<Item = DmaSegment>>(segs: I) -> PrpEntries<I::IntoIter> {
    PrpEntries {
        segs: segs.into_iter(),
        next: 0,
        end: 0,
    }
}

/// Iterator behind [`prp_entries`].
#[derive(Clone, Debug)]
pub struct PrpEntries<I> {
    segs: I,
    /// The next entry of the current segment.
    next: u64,
    /// One past the current segment's last byte.
    end: u64,
}

impl<I: Iterator<Item = DmaSegment>> Iterator for PrpEntries<I> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        while self.next >= self.end {
            let seg = self.segs.next()?;
            self.next = seg.addr;
            self.end = seg.addr.saturating_add(u64::from(seg.len));
        }
        let out = self.next;
        // The next entry is the next page start; past the top of the address space the
        // segment is over.
        self.next = (out & !CTRL_PAGE_MASK)
            .checked_add(u64::from(NVME_CTRL_PAGE_SIZE))
            .unwrap_or(u64::MAX);
        Some(out)
    }
}

/// Builds PRP1/PRP2 and, when needed, the chained PRP lists for DMA-mapped `segs`
/// (`nvme_pci_setup_prps`, with `nvme_setup_prp_simple` as the case that needs no list).
///
/// List entries are written little-endian into `lists` in order; the result's
/// `plan.list_pages` says how many pages were used (the chain order is the slice order).
/// On error the list pages are untouched.
///
/// # Errors
///
/// A [`DptrError`] if `segs` break a PRP rule (see [`plan_prps`]), or
/// [`DptrError::ListTooSmall`] if `lists` has fewer pages than needed.
///
/// # Examples
///
/// ```
/// use nvme::{build_prps, DmaSegment, PrpLists};
/// // One segment with an offset, spanning two pages: PRP2 points at the second page.
/// let p = build_prps(&[DmaSegment::new(0x10_0200, 4096)], &mut PrpLists::new(&mut [], &[])?)?;
/// assert_eq!((p.prp1, p.prp2, p.plan.list_pages), (0x10_0200, 0x10_1000, 0));
/// // Three pages: PRP2 is the list.
/// let mut pages = [[0u64; 512]; 1];
/// let mut lists = PrpLists::new(&mut pages, &[0xaa000])?;
/// let p = build_prps(&[DmaSegment::new(0x10_0000, 8192), DmaSegment::new(0x50_0000, 1)], &mut lists)?;
/// assert_eq!((p.prp1, p.prp2), (0x10_0000, 0xaa000));
/// assert_eq!(&lists.pages()[0][..2], &[0x10_1000u64.to_le(), 0x50_0000u64.to_le()]);
/// # Ok::<(), nvme::DptrError>(())
/// ```
pub fn build_prps(segs: &[DmaSegment], lists: &mut PrpLists<'_>) -> Result<Prps, DptrError> {
    let plan = plan_prps(segs)?;
    if plan.list_pages > lists.len() {
        return Err(DptrError::ListTooSmall {
            needed: plan.list_pages,
            available: lists.len(),
        });
    }
    let mut entries = prp_entries(segs.iter().copied());
    let prp1 = entries.next().ok_or(DptrError::NoSegments)?;
    let prp2 = match plan.entries {
        1 => 0,
        2 => entries.next().ok_or(DptrError::NoSegments)?,
        _ => {
            let layout = PrpListLayout::new(plan.list_entries);
            for (page, slot, value) in layout.stores(entries, lists.dma)? {
                if let Some(e) = lists.pages.get_mut(page).and_then(|p| p.get_mut(slot)) {
                    *e = value.to_le();
                }
            }
            *lists.dma.first().ok_or(DptrError::ListTooSmall {
                needed: 1,
                available: 0,
            })?
        }
    };
    Ok(Prps { prp1, prp2, plan })
}

/// Stores `src` little-endian into the start of `dst` (as many entries as both hold).
#[inline]
fn store_le(dst: &mut [u64], src: &[u64]) {
    // On little-endian targets `to_le` is the identity and this loop compiles to one memcpy.
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.to_le();
    }
}

/// Writes `entries` (at least two) into the list pages a page at a time, as
/// [`PrpListLayout::new`] lays them out. Returns the first list page's bus address (PRP2).
fn fill_lists(entries: &[u64], lists: &mut PrpLists<'_>) -> Result<u64, DptrError> {
    let layout = PrpListLayout::new(entries.len());
    let available = lists.pages.len();
    if layout.pages() > available || layout.pages() > lists.dma.len() {
        return Err(DptrError::ListTooSmall {
            needed: layout.pages(),
            available,
        });
    }
    for run in layout.runs() {
        let next = lists.dma.get(run.page + 1).copied();
        let (Some(page), Some(src)) = (lists.pages.get_mut(run.page), entries.get(run.entries))
        else {
            continue;
        };
        store_le(page.get_mut(run.first_slot..).unwrap_or(&mut []), src);
        if let (true, Some(next), Some(link)) = (run.chains, next, page.last_mut()) {
            *link = next.to_le();
        }
    }
    lists.dma.first().copied().ok_or(DptrError::ListTooSmall {
        needed: 1,
        available,
    })
}

/// Builds PRPs for a transfer whose controller-page addresses are already known: `first` is the
/// first byte's address (PRP1, may carry an offset) and `rest` holds the following page
/// addresses, which must be 4096-aligned; `rest[i]` is entry `rest_index + i` of the caller's
/// page table (for errors). Used for premapped buffers: the list entries are copied from `rest`
/// a list page at a time. On error the list pages are untouched.
pub(crate) fn build_prps_from_pages(
    first: u64,
    rest: &[u64],
    rest_index: usize,
    lists: &mut PrpLists<'_>,
) -> Result<Prps, DptrError> {
    let plan = PrpPlan::for_entries(rest.len().saturating_add(1));
    if plan.list_pages > lists.len() {
        return Err(DptrError::ListTooSmall {
            needed: plan.list_pages,
            available: lists.len(),
        });
    }
    // One OR over the entries (vectorised) before looking for the culprit.
    if rest.iter().fold(0, |acc, a| acc | a) & CTRL_PAGE_MASK != 0 {
        let at = rest
            .iter()
            .position(|a| a & CTRL_PAGE_MASK != 0)
            .unwrap_or(0);
        return Err(DptrError::TagTable {
            index: rest_index.saturating_add(at),
        });
    }
    let prp2 = match rest {
        [] => 0,
        [only] => *only,
        _ => fill_lists(rest, lists)?,
    };
    Ok(Prps {
        prp1: first,
        prp2,
        plan,
    })
}
