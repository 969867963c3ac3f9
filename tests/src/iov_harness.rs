//! Runs the same operations on an `iov::IovIter` and on the reference [`IovModel`] and asserts
//! that every result, position and byte agrees. Shared by `tests/tests/iov_props.rs` and the
//! `iov_ops` fuzz target.

use std::ops::Range;

use bvec::{Bvec, Pfn};
use iov::{AnyDir, BvecTable, Dest, Folio, IovError, IovIter, IovState, Iovec, Kvec, Source};

use crate::iov_model::{IovModel, MErr, MKind, MSeg};
use crate::mem::ArenaMem;

/// Pages in the arenas the harness uses.
pub const ARENA_PAGES: usize = 32;
/// Pages `0..PAGE_OP_PAGES` are reserved as the sources and destinations of
/// `copy_page_{to,from}_iter`; generated segments lie above them, so one copy never reads and
/// writes overlapping bytes (the model copies byte by byte, the crate chunk by chunk).
pub const PAGE_OP_PAGES: usize = 8;

/// The segments of an iterator, per kind.
#[derive(Clone, Debug)]
pub enum Shape {
    /// One user buffer (address, length).
    Ubuf(usize, usize),
    /// User segments (address, length).
    Iovec(Vec<(usize, usize)>),
    /// Kernel segments (address, length).
    Kvec(Vec<(usize, usize)>),
    /// Page segments (pfn, offset, length >= 1).
    Bvec(Vec<(u64, u32, u32)>),
    /// Folios (pfn, order) and the start offset.
    PageList(Vec<(u64, u8)>, usize),
    /// Page segments (pfn, offset, length >= 1) checked once as a [`iov::BvecTable`], and an
    /// I/O at this byte offset imported as io_uring/rsrc.c `io_import_fixed()` does
    /// ([`IovIter::import_fixed`]); the model is a BVEC iterator over the whole table advanced
    /// by the offset.
    BvecFixed(Vec<(u64, u32, u32)>, usize),
    /// A sink of this many bytes.
    Discard(usize),
}

/// A complete iterator description: shape, direction and count (as a fraction of the capacity
/// when `count` exceeds it).
#[derive(Clone, Debug)]
pub struct Geometry {
    /// Segments.
    pub shape: Shape,
    /// Whether the iterator is a source (ignored for DISCARD, always a destination).
    pub source: bool,
    /// Requested count; clamped to the capacity.
    pub count: usize,
}

/// Owned tables the real iterator borrows.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    iovecs: Vec<Iovec>,
    kvecs: Vec<Kvec>,
    bvecs: Vec<Bvec<Pfn>>,
    folios: Vec<Folio<Pfn>>,
}

impl Geometry {
    /// The bytes the segments hold (saturating; generators keep it below `usize::MAX`).
    pub fn capacity(&self) -> usize {
        match &self.shape {
            Shape::Ubuf(_, len) | Shape::Discard(len) => *len,
            Shape::Iovec(v) | Shape::Kvec(v) => v.iter().fold(0usize, |a, s| a.saturating_add(s.1)),
            Shape::Bvec(v) => v.iter().fold(0usize, |a, s| a.saturating_add(s.2 as usize)),
            Shape::BvecFixed(v, off) => v
                .iter()
                .fold(0usize, |a, s| a.saturating_add(s.2 as usize))
                .saturating_sub(*off),
            Shape::PageList(v, off) => v
                .iter()
                .fold(0usize, |a, s| a.saturating_add(4096usize << s.1))
                .saturating_sub(*off),
        }
    }

    /// What `reexpand` may grow to: the construction count (reexpand only undoes a truncation).
    pub fn reexpand_limit(&self) -> usize {
        // Reexpand may only undo a truncation: never past the construction count.
        self.clamped_count()
    }

    /// The count actually used: `count` clamped to the capacity.
    pub fn clamped_count(&self) -> usize {
        self.count.min(self.capacity())
    }

    /// The tables of the real iterator.
    pub fn tables(&self) -> Tables {
        let mut t = Tables::default();
        match &self.shape {
            Shape::Iovec(v) => t.iovecs = v.iter().map(|&(a, l)| Iovec::new(a, l)).collect(),
            Shape::Kvec(v) => t.kvecs = v.iter().map(|&(a, l)| Kvec::new(a, l)).collect(),
            Shape::Bvec(v) | Shape::BvecFixed(v, _) => {
                t.bvecs = v
                    .iter()
                    .map(|&(p, o, l)| Bvec::new(Pfn(p), o, l).expect("generator makes valid bvecs"))
                    .collect()
            }
            Shape::PageList(v, _) => {
                t.folios = v
                    .iter()
                    .map(|&(p, o)| Folio::new(Pfn(p), o).expect("generator makes valid folios"))
                    .collect()
            }
            Shape::Ubuf(..) | Shape::Discard(_) => {}
        }
        t
    }

    /// The model of this geometry.
    pub fn model(&self) -> IovModel {
        let count = self.clamped_count() as u128;
        let seg = |addr: u128, pfn: u128, len: u128| MSeg { addr, pfn, len };
        let (kind, segs, off) = match &self.shape {
            Shape::Ubuf(a, l) => (MKind::Ubuf, vec![seg(*a as u128, 0, *l as u128)], 0),
            Shape::Iovec(v) => (
                MKind::Iovec,
                v.iter()
                    .map(|&(a, l)| seg(a as u128, 0, l as u128))
                    .collect(),
                0,
            ),
            Shape::Kvec(v) => (
                MKind::Kvec,
                v.iter()
                    .map(|&(a, l)| seg(a as u128, 0, l as u128))
                    .collect(),
                0,
            ),
            Shape::Bvec(v) => (
                MKind::Bvec,
                v.iter()
                    .map(|&(p, o, l)| seg(o.into(), p.into(), l.into()))
                    .collect(),
                0,
            ),
            Shape::BvecFixed(v, off) => {
                // io_import_fixed: an iterator over the whole table with count `off + len`,
                // advanced by `off`.
                let segs = v
                    .iter()
                    .map(|&(p, o, l)| seg(o.into(), p.into(), l.into()))
                    .collect();
                let mut m = IovModel::new(MKind::Bvec, self.source, segs, 0, count + *off as u128);
                m.advance(*off as u128);
                return m;
            }
            Shape::PageList(v, off) => (
                MKind::PageList,
                v.iter()
                    .map(|&(p, o)| seg(0, p.into(), 4096u128 << o))
                    .collect(),
                *off as u128,
            ),
            Shape::Discard(_) => (MKind::Discard, Vec::new(), 0),
        };
        let source = self.source && !matches!(self.shape, Shape::Discard(_));
        IovModel::new(kind, source, segs, off, count)
    }
}

impl Tables {
    /// Builds the real iterator for `geo` with a run-time direction.
    pub fn iter(&self, geo: &Geometry) -> Result<IovIter<'_, Pfn, AnyDir>, IovError> {
        let count = geo.clamped_count();
        macro_rules! build {
            ($d:ty) => {
                match &geo.shape {
                    Shape::Ubuf(a, _) => Ok(IovIter::<Pfn, $d>::ubuf(*a, count).into_any()),
                    Shape::Iovec(_) => {
                        IovIter::<Pfn, $d>::iovec(&self.iovecs, count).map(IovIter::into_any)
                    }
                    Shape::Kvec(_) => {
                        IovIter::<Pfn, $d>::kvec(&self.kvecs, count).map(IovIter::into_any)
                    }
                    Shape::Bvec(_) => {
                        IovIter::<Pfn, $d>::bvec(&self.bvecs, count).map(IovIter::into_any)
                    }
                    Shape::BvecFixed(_, off) => {
                        let table = BvecTable::new(&self.bvecs)?;
                        IovIter::<Pfn, $d>::import_fixed(&table, *off, count).map(IovIter::into_any)
                    }
                    Shape::PageList(_, off) => {
                        IovIter::<Pfn, $d>::page_list(&self.folios, *off, count)
                            .map(IovIter::into_any)
                    }
                    Shape::Discard(_) => Ok(IovIter::<Pfn, Dest>::discard(count).into_any()),
                }
            };
        }
        if geo.source {
            build!(Source)
        } else {
            build!(Dest)
        }
    }
}

/// One operation of a sequence.
#[derive(Clone, Debug)]
pub enum Op {
    /// `copy_to_iter` of this many pattern bytes.
    CopyTo(usize),
    /// `copy_from_iter` into a buffer of this size.
    CopyFrom(usize),
    /// `copy_to_iter_full`.
    CopyToFull(usize),
    /// `copy_from_iter_full`.
    CopyFromFull(usize),
    /// `iov_iter_zero`.
    Zero(usize),
    /// `iov_iter_advance`.
    Advance(usize),
    /// `iov_iter_revert`.
    Revert(usize),
    /// `iov_iter_truncate`.
    Truncate(u64),
    /// `iov_iter_reexpand`.
    Reexpand(usize),
    /// `iov_iter_save_state`.
    Save,
    /// `iov_iter_restore` of the last save.
    Restore,
    /// `copy_page_to_iter(page, offset, bytes)`.
    CopyPageTo(u64, usize, usize),
    /// `copy_page_from_iter(page, offset, bytes)`.
    CopyPageFrom(u64, usize, usize),
    /// `get_pages(maxpages, maxsize)`.
    GetPages(usize, usize),
    /// `extract_pages(maxpages, maxsize)`.
    ExtractPages(usize, usize),
    /// Make these arena bytes fault from now on.
    Fault(Range<usize>),
}

fn merr(e: IovError) -> MErr {
    match e {
        IovError::Unsupported => MErr::Unsupported,
        IovError::Fault { addr } => MErr::Fault(addr as u128),
        IovError::NoPageRoom => MErr::NoRoom,
        IovError::RevertTooFar {
            requested,
            available,
        } => MErr::TooFar(requested as u128, available as u128),
        IovError::RevertTooLarge { requested } => MErr::TooLarge(requested as u128),
        IovError::CountExceedsSegments { count, available } => {
            MErr::Exceeds(count as u128, available as u128)
        }
        IovError::RestoreUnsupported => MErr::NoRestore,
        IovError::BadState => MErr::BadState,
        other => panic!("unexpected error {other:?}"),
    }
}

/// Runs `ops` on `geo` against the model, asserting agreement after every step.
///
/// # Panics
///
/// On any disagreement, and if the real constructor refuses a geometry whose count fits.
pub fn check(geo: &Geometry, ops: &[Op]) {
    let tables = geo.tables();
    let mut it = tables.iter(geo).expect("clamped count fits the segments");
    let mut model = geo.model();
    let mut ma = ArenaMem::new(ARENA_PAGES);
    let mut mb = ma.clone();
    let mut saved: Option<IovState> = None;
    compare(&it, &model, &mut ma, &mut mb, "construction");
    for (n, op) in ops.iter().enumerate() {
        let ctx = format!("op #{n} {op:?}");
        match op {
            Op::CopyTo(len) | Op::CopyToFull(len) => {
                let src: Vec<u8> = (0..*len).map(|i| (i * 7 + n) as u8).collect();
                if matches!(op, Op::CopyTo(_)) {
                    let a = it.copy_to_iter(&mut ma, &src);
                    let b = model.copy_to(&mut mb, &src);
                    assert_eq!(a as u128, b, "{ctx}: copy_to result");
                } else {
                    let a = it.copy_to_iter_full(&mut ma, &src);
                    let d = model.copy_to(&mut mb, &src);
                    assert_eq!(
                        a,
                        model.full(d, src.len() as u128),
                        "{ctx}: copy_to_full result"
                    );
                }
            }
            Op::CopyFrom(len) | Op::CopyFromFull(len) => {
                let mut da = vec![0xEE; *len];
                let mut db = da.clone();
                if matches!(op, Op::CopyFrom(_)) {
                    let a = it.copy_from_iter(&mut ma, &mut da);
                    let b = model.copy_from(&mut mb, &mut db);
                    assert_eq!(a as u128, b, "{ctx}: copy_from result");
                } else {
                    let a = it.copy_from_iter_full(&mut ma, &mut da);
                    let d = model.copy_from(&mut mb, &mut db);
                    assert_eq!(
                        a,
                        model.full(d, *len as u128),
                        "{ctx}: copy_from_full result"
                    );
                }
                assert!(da == db, "{ctx}: copied bytes differ");
            }
            Op::Zero(len) => {
                assert_eq!(
                    it.zero(&mut ma, *len) as u128,
                    model.zero(&mut mb, *len as u128),
                    "{ctx}"
                );
            }
            Op::Advance(k) => {
                it.advance(*k);
                model.advance(*k as u128);
            }
            Op::Revert(k) => assert_eq!(
                it.revert(*k).map_err(merr),
                model.revert(*k as u128),
                "{ctx}"
            ),
            Op::Truncate(k) => {
                it.truncate(*k);
                model.truncate(u128::from(*k));
            }
            Op::Reexpand(k) => {
                assert_eq!(
                    it.reexpand(*k).map_err(merr),
                    model.reexpand(*k as u128),
                    "{ctx}"
                )
            }
            Op::Save => {
                saved = Some(it.save_state());
                model.save();
            }
            Op::Restore => {
                if let Some(s) = saved {
                    assert_eq!(it.restore(&s).map_err(merr), model.restore(), "{ctx}");
                }
            }
            Op::CopyPageTo(p, off, bytes) => {
                let a = it.copy_page_to_iter(&mut ma, Pfn(*p), *off, *bytes);
                assert_eq!(
                    a as u128,
                    model.copy_page(&mut mb, true, *p, *off, *bytes),
                    "{ctx}"
                );
            }
            Op::CopyPageFrom(p, off, bytes) => {
                let a = it.copy_page_from_iter(&mut ma, Pfn(*p), *off, *bytes);
                assert_eq!(
                    a as u128,
                    model.copy_page(&mut mb, false, *p, *off, *bytes),
                    "{ctx}"
                );
            }
            Op::GetPages(maxpages, maxsize) | Op::ExtractPages(maxpages, maxsize) => {
                let extract = matches!(op, Op::ExtractPages(..));
                let mut pages = vec![Pfn(u64::MAX); *maxpages];
                let a = if extract {
                    it.extract_pages(&mut ma, &mut pages, *maxsize)
                } else {
                    it.get_pages(&mut ma, &mut pages, *maxsize)
                };
                let b = model.pages(&mut mb, *maxpages, *maxsize as u128, extract);
                match (a, b) {
                    (Ok((bytes, off0)), Ok((mbytes, moff0, mpages))) => {
                        assert_eq!((bytes as u128, off0 as u128), (mbytes, moff0), "{ctx}");
                        let used = if bytes == 0 {
                            0
                        } else {
                            (off0 + bytes).div_ceil(4096)
                        };
                        assert_eq!(used, mpages.len(), "{ctx}: pages used");
                        assert_eq!(pages.get(..used), Some(&mpages[..]), "{ctx}: pages");
                    }
                    (a, b) => assert_eq!(a.map(|_| ()).map_err(merr), b.map(|_| ()), "{ctx}"),
                }
            }
            Op::Fault(r) => {
                ma.add_fault(r.clone());
                mb.add_fault(r.clone());
            }
        }
        compare(&it, &model, &mut ma, &mut mb, &ctx);
    }
}

/// Asserts that the iterator and the model agree on every query and on the memory.
///
/// The arenas agreed after the previous step (or were equal copies), so only bytes either side
/// wrote since then can differ: the union of both arenas' written ranges is compared.
fn compare(
    it: &IovIter<'_, Pfn, AnyDir>,
    m: &IovModel,
    ma: &mut ArenaMem,
    mb: &mut ArenaMem,
    ctx: &str,
) {
    assert_eq!(it.count() as u128, m.count, "{ctx}: count");
    assert_eq!(it.nr_segs(), m.nr_segs(), "{ctx}: nr_segs");
    assert_eq!(it.iov_offset() as u128, m.iov_offset(), "{ctx}: iov_offset");
    assert_eq!(it.consumed() as u128, m.consumed(), "{ctx}: consumed");
    assert_eq!(
        it.single_seg_count() as u128,
        m.single_seg_count(),
        "{ctx}: single_seg_count"
    );
    for max in [0usize, 1, 3, usize::MAX] {
        assert_eq!(
            it.npages(max) as u128,
            m.npages(max as u128),
            "{ctx}: npages({max})"
        );
    }
    assert_eq!(it.alignment() as u128, m.alignment(), "{ctx}: alignment");
    assert_eq!(
        it.gap_alignment() as u128,
        m.gap_alignment(),
        "{ctx}: gap_alignment"
    );
    for (am, lm) in [(0u32, 0u32), (511, 511), (4095, 4095), (3, 0), (0, 1)] {
        assert_eq!(
            it.is_aligned(am, lm),
            m.is_aligned(am.into(), lm.into()),
            "{ctx}: is_aligned({am}, {lm})"
        );
    }
    // The same questions on truncated copies (`iov_iter_npages_cap` and friends), where the
    // count ends inside a segment.
    for cut in [it.count() / 2, it.count().saturating_sub(1), 1, 4097] {
        let (mut it2, mut m2) = (it.clone(), m.clone());
        it2.truncate(cut as u64);
        m2.truncate(cut as u128);
        for max in [1usize, 5, usize::MAX] {
            assert_eq!(
                it2.npages(max) as u128,
                m2.npages(max as u128),
                "{ctx}: npages({max}) cut {cut}"
            );
        }
        assert_eq!(
            it2.single_seg_count() as u128,
            m2.single_seg_count(),
            "{ctx}: single_seg_count cut {cut}"
        );
        assert_eq!(
            it2.alignment() as u128,
            m2.alignment(),
            "{ctx}: alignment cut {cut}"
        );
        assert_eq!(
            it2.gap_alignment() as u128,
            m2.gap_alignment(),
            "{ctx}: gap_alignment cut {cut}"
        );
        assert_eq!(
            it2.is_aligned(511, 511),
            m2.is_aligned(511, 511),
            "{ctx}: is_aligned cut {cut}"
        );
    }
    let (da, db) = (ma.take_dirty(), mb.take_dirty());
    let written = if da.is_empty() {
        db
    } else if db.is_empty() {
        da
    } else {
        da.start.min(db.start)..da.end.max(db.end)
    };
    assert_eq!(ma.bytes().len(), mb.bytes().len(), "{ctx}: arena sizes");
    assert!(
        ma.bytes()[written.clone()] == mb.bytes()[written],
        "{ctx}: memory differs"
    );
    assert_eq!(ma.gup, mb.gup, "{ctx}: GUP log");
    assert_eq!(ma.refs, mb.refs, "{ctx}: page references");
}
