// SPDX-License-Identifier: GPL-2.0

//! Differential test of [`bvec::BvecIter`] against the kernel's `struct bvec_iter` helpers
//! (`bio_advance_iter`, `bio_advance_iter_single`, `mp_bvec_iter_bvec`, `bvec_iter_bvec`).
//!
//! Random multipage tables over the arena's pages; random sequences of advances (some past the
//! end, which both sides must refuse) and single-segment steps. After every step the state
//! (sector, size, index, bytes done) and both views of the current segment are compared.

use bvec::{Bvec, BvecIter};
use kernel::prelude::*;
use kernel_glue::KPage;
use kernel_glue_testing::c_bvec::{CBvecIter, CBvecView};

use crate::arena::Arena;
use crate::geometry::gen_bvec;
use crate::rng::Rng;

/// Most steps in one case.
const MAX_STEPS: usize = 12;

/// What one step observed: accepted, state, multipage view, single-page view.
type Obs = (bool, (u64, u32, u32, u32), Option<(CBvecView, CBvecView)>);

fn view(bv: Bvec<KPage>) -> CBvecView {
    CBvecView {
        page: bv.page(),
        offset: bv.offset(),
        len: bv.len(),
    }
}

fn observe_rust(it: &BvecIter<'_, KPage>, ok: bool) -> Obs {
    let st = it.state();
    let views = it
        .current()
        .zip(it.current_page())
        .map(|(m, s)| (view(m), view(s)));
    (ok, (st.sector(), st.size(), st.idx(), st.done()), views)
}

/// Runs one case; returns whether both sides agreed at every step.
fn run_case(rng: &mut Rng, arena: &Arena, idx: usize, report: bool) -> Result<bool> {
    let table = gen_bvec(rng, arena)?;
    let total: u32 = table.iter().map(|b| b.len()).sum();
    let size = if rng.chance(75) {
        total
    } else {
        rng.range(0, total as usize) as u32
    };
    let sector = rng.next_u64() >> 24;
    let mut c = CBvecIter::new(&table, sector, size).ok_or(EINVAL)?;
    let mut r = BvecIter::new(&table, sector, size).map_err(|_| EINVAL)?;
    let steps = rng.range(1, MAX_STEPS);
    for step in 0..steps {
        let left = c.state().1 as usize;
        let single = rng.chance(40);
        let bytes = match rng.below(5) {
            0 => left as u32,
            1 => (left + rng.range(1, 600)) as u32,
            2 => rng.range(0, 600) as u32,
            _ => rng.range(0, left) as u32,
        };
        let (c_ok, r_ok) = if single {
            (c.advance_single(bytes), r.advance_single(bytes).is_ok())
        } else {
            (c.advance(bytes), r.advance(bytes).is_ok())
        };
        let ours = observe_rust(&r, r_ok);
        let kernel: Obs = (c_ok, c.state(), c.views());
        if ours != kernel {
            if report {
                pr_err!(
                    "bvec_iter mismatch in case {} step {} ({} {} bytes), sector {} size {} table:\n",
                    idx,
                    step,
                    if single { "advance_single" } else { "advance" },
                    bytes,
                    sector,
                    size
                );
                for (i, bv) in table.iter().enumerate() {
                    pr_err!(
                        "  [{}] page {:?} offset {} len {}\n",
                        i,
                        bv.page(),
                        bv.offset(),
                        bv.len()
                    );
                }
                pr_err!("  kernel {:?}\n", kernel);
                pr_err!("  ours   {:?}\n", ours);
            }
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs `cases` cases; returns the number of mismatching ones (the first few are printed).
pub(crate) fn run(rng: &mut Rng, arena: &Arena, cases: usize, reported: usize) -> Result<usize> {
    let mut mismatches = 0;
    for idx in 0..cases {
        if idx % 256 == 0 {
            kernel_glue::sched::cond_resched();
        }
        if !run_case(rng, arena, idx, mismatches + reported < 5)? {
            mismatches += 1;
        }
    }
    Ok(mismatches)
}
