//! Property test of `IovIter::restore` with states saved from unrelated iterators (issue 11
//! item 5): two KVEC iterators, over two tables or over one shared table, take random moves,
//! copies, saves and cross-restores. After every call both agree with the reference model
//! (`iovstack_tests::iov_model`, whose `restore_state` refuses a state from another table) and
//! keep the invariant that their remaining segments hold `count` bytes.

use bvec::Pfn;
use iov::{Dest, IovError, IovIter, IovState, Kvec};
use iovstack_tests::iov_model::{IovModel, MErr, MKind, MSeg, MState};
use iovstack_tests::mem::{ArenaMem, KERNEL_BASE};
use proptest::prelude::*;

/// Arena pages: segments live in the first 16 KiB of kernel addresses.
const PAGES: usize = 4;

#[derive(Clone, Debug)]
enum Step {
    Advance(usize),
    Revert(usize),
    Truncate(u64),
    Reexpand(usize),
    Copy(usize),
    Save,
    /// Restore saved state number `k` (modulo the number saved).
    Restore(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => (0usize..300).prop_map(Step::Advance),
        1 => (0usize..300).prop_map(Step::Revert),
        1 => (0u64..300).prop_map(Step::Truncate),
        1 => (0usize..300).prop_map(Step::Reexpand),
        1 => (0usize..40).prop_map(Step::Copy),
        1 => Just(Step::Save),
        2 => any::<usize>().prop_map(Step::Restore),
    ]
}

fn table() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop::collection::vec((0usize..PAGES * 4096 - 200, 0usize..120), 0..6)
}

/// Bytes the remaining segments hold after the position.
fn room(it: &IovIter<'_, Pfn, Dest>) -> usize {
    let (rest, off) = it.kvec_table().unwrap();
    rest.iter().map(|s| s.len).sum::<usize>() - off
}

fn merr(e: IovError) -> MErr {
    match e {
        IovError::RevertTooFar {
            requested,
            available,
        } => MErr::TooFar(requested as u128, available as u128),
        IovError::RevertTooLarge { requested } => MErr::TooLarge(requested as u128),
        IovError::CountExceedsSegments { count, available } => {
            MErr::Exceeds(count as u128, available as u128)
        }
        IovError::BadState => MErr::BadState,
        IovError::RestoreUnsupported => MErr::NoRestore,
        other => panic!("unexpected error {other:?}"),
    }
}

/// One side: the crate's iterator, its model, and the id of the table it walks.
struct Side<'a> {
    it: IovIter<'a, Pfn, Dest>,
    model: IovModel,
    origin: u64,
}

impl Side<'_> {
    fn check(&self, ctx: &str) -> Result<(), TestCaseError> {
        let m = &self.model;
        prop_assert_eq!(
            (
                self.it.count() as u128,
                self.it.consumed() as u128,
                self.it.nr_segs(),
                self.it.iov_offset() as u128
            ),
            (m.count, m.consumed(), m.nr_segs(), m.iov_offset()),
            "{}",
            ctx
        );
        prop_assert!(
            room(&self.it) >= self.it.count(),
            "{ctx}: segments hold fewer bytes than count"
        );
        Ok(())
    }
}

fn side(table: &[Kvec], count_pick: usize, origin: u64) -> Side<'_> {
    let total: usize = table.iter().map(|s| s.len).sum();
    let count = count_pick % (total + 1);
    let segs = table
        .iter()
        .map(|s| MSeg {
            addr: s.base as u128,
            pfn: 0,
            len: s.len as u128,
        })
        .collect();
    Side {
        it: IovIter::kvec(table, count).unwrap(),
        model: IovModel::new(MKind::Kvec, false, segs, 0, count as u128),
        origin,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn restore_with_states_from_unrelated_iterators(
        ta in table(),
        tb in table(),
        shared in any::<bool>(),
        counts in (any::<usize>(), any::<usize>()),
        steps in prop::collection::vec((any::<bool>(), step()), 1..60),
    ) {
        let ka: Vec<Kvec> = ta.iter().map(|&(o, l)| Kvec::new(KERNEL_BASE + o, l)).collect();
        let kb: Vec<Kvec> = tb.iter().map(|&(o, l)| Kvec::new(KERNEL_BASE + o, l)).collect();
        // With `shared`, both iterators walk the very same table (id 0). Empty tables are all
        // alike (their only position is the start): one id.
        let id = |t: &[Kvec], n: u64| if t.is_empty() { 2 } else { n };
        let (second, second_id) = if shared { (&ka[..], id(&ka, 0)) } else { (&kb[..], id(&kb, 1)) };
        let mut sides = [side(&ka, counts.0, id(&ka, 0)), side(second, counts.1, second_id)];
        let mut mem_crate = ArenaMem::zeroed(PAGES);
        let mut mem_model = ArenaMem::zeroed(PAGES);
        let mut saved: Vec<(IovState<'_>, MState)> = Vec::new();
        for (n, (which, st)) in steps.iter().enumerate() {
            let s = &mut sides[usize::from(*which)];
            let ctx = format!("step {n}: {st:?} on side {}", usize::from(*which));
            match *st {
                Step::Advance(k) => {
                    s.it.advance(k);
                    s.model.advance(k as u128);
                }
                Step::Revert(k) => {
                    prop_assert_eq!(s.it.revert(k).map_err(merr), s.model.revert(k as u128), "{}", ctx);
                }
                Step::Truncate(k) => {
                    s.it.truncate(k);
                    s.model.truncate(u128::from(k));
                }
                Step::Reexpand(k) => {
                    prop_assert_eq!(s.it.reexpand(k).map_err(merr), s.model.reexpand(k as u128), "{}", ctx);
                }
                Step::Copy(k) => {
                    let src = vec![0x5a; k];
                    let a = s.it.copy_to_iter(&mut mem_crate, &src);
                    prop_assert_eq!(a as u128, s.model.copy_to(&mut mem_model, &src), "{}", ctx);
                }
                Step::Save => saved.push((s.it.save_state(), s.model.save_state(s.origin))),
                Step::Restore(k) => {
                    if let Some((cs, ms)) = saved.get(k % saved.len().max(1)) {
                        let before = (s.it.count(), s.it.consumed(), s.it.nr_segs(), s.it.iov_offset());
                        let got = s.it.restore(cs);
                        prop_assert_eq!(got.map_err(merr), s.model.restore_state(ms, s.origin), "{}", ctx);
                        if got.is_err() {
                            prop_assert_eq!(
                                (s.it.count(), s.it.consumed(), s.it.nr_segs(), s.it.iov_offset()),
                                before,
                                "{}: a refused restore moved the iterator",
                                ctx
                            );
                        }
                    }
                }
            }
            s.check(&ctx)?;
        }
        prop_assert_eq!(mem_crate.bytes(), mem_model.bytes());
    }
}
