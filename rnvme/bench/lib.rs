// SPDX-License-Identifier: GPL-2.0

//! The `iov` crate against the kernel's own `iov_iter`, in the kernel, in the same boot.
//!
//! At load time (in the context of the `insmod` process) the module runs the six copy
//! geometries of the kunit iov_iter benchmarks ([`kinds`]) through the kernel's exported
//! `copy_from_iter` and through `iov::IovIter::copy_from_iter`, over the same memory, `samples`
//! times each, alternating which side goes first; then iterator construction, advance and
//! `npages`, and a registered-buffer I/O import on a 1 GiB-sized bvec table ([`ops`]). Per kind
//! it prints
//!
//! ```text
//! iov-bench <kind>: rust <median ns> c <median ns> ratio <rust/c>
//! iov-bench-spread <kind>: rust min <ns> p10 <ns> p90 <ns> max <ns> c min <ns> p10 <ns> p90 <ns> max <ns>
//! ```
//!
//! (the operations in ns per operation, with one decimal), then `iov-bench: done`. A copy that
//! moves the wrong number of bytes or leaves the wrong bytes, or an operation whose result
//! differs between the two sides, prints `iov-bench error: ...`, and the load fails with
//! `iov-bench: FAIL`.
//!
//! Parameters (declared in `params.c`): `size_mib` (MiB per sample, default 256), `samples`
//! (default 16), `table_mib` (MiB described by the construction table, default 1024),
//! `inject_fault=1` (spoils the destination of every Rust bvec copy before it is checked, so the
//! run must fail: proves the checks reach the guest test).
//!
//! This crate contains no `unsafe` code: everything that needs it is in `kernel-glue/bench`.

use kernel::{
    alloc::{flags::GFP_KERNEL, KVVec, KVec},
    c_str,
    prelude::*,
};

use bvec::{Bvec, PAGE_SIZE};
use iov::{Folio, Iovec, Kvec};
use kernel_glue::{
    params::{param_bool, param_uint},
    sched::cond_resched,
};
use kernel_glue_bench::{c_copy::Timed, BenchPage, CFolioQueue, TiledVmap, UserMapping};

mod kinds;
mod ops;
mod stats;

use kinds::{Geometry, Kind, KVEC_SEGS};
use ops::{Op, Table};
use stats::{ratio_micro, spread, Ratio, Spread};

module! {
    type: IovstackBench,
    name: "iovstack_bench",
    author: "rnvme",
    description: "The iov crate against the kernel's iov_iter: copies, construction, npages",
    license: "GPL",
}

/// Byte the source page is filled with.
const FILL: u8 = 0x5a;
/// Byte the destination page is reset to before each copy.
const POISON: u8 = 0xa5;

struct IovstackBench;

impl kernel::Module for IovstackBench {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let size_mib = param_uint(module, c_str!("size_mib"))
            .unwrap_or(256)
            .clamp(1, 1024);
        let samples = param_uint(module, c_str!("samples"))
            .unwrap_or(16)
            .clamp(1, 64);
        let table_mib = param_uint(module, c_str!("table_mib"))
            .unwrap_or(1024)
            .clamp(1, 4096);
        pr_info!(
            "iov-bench: size_mib={} samples={} table_mib={}\n",
            size_mib,
            samples,
            table_mib
        );
        let inject = param_bool(module, c_str!("inject_fault")).unwrap_or(false);
        if inject {
            pr_info!("iov-bench: inject_fault=1, every Rust bvec copy will be reported wrong\n");
        }
        let pages_per_mib = (1 << 20) / PAGE_SIZE;
        let errors = copies(size_mib as usize * pages_per_mib, samples as usize, inject)?
            + operations(table_mib as usize * pages_per_mib, samples as usize)?;
        if errors == 0 {
            pr_info!("iov-bench: done\n");
            Ok(Self)
        } else {
            pr_err!("iov-bench: FAIL ({} errors)\n", errors);
            Err(EINVAL)
        }
    }
}

/// Which implementation a sample ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Rust,
    C,
}

/// Runs every copy kind `samples` times per side over `npages` pages; prints the results and
/// returns the number of errors. `inject` spoils every Rust bvec copy (see the module docs).
fn copies(npages: usize, samples: usize, inject: bool) -> Result<usize> {
    let mut src_page = BenchPage::new()?;
    src_page.fill(FILL);
    let mut dst_page = BenchPage::new()?;
    let src = TiledVmap::new(&mut src_page, npages)?;
    let mut scratch = TiledVmap::new(&mut dst_page, npages)?;
    let user = UserMapping::new(npages * PAGE_SIZE)?;

    let mut iovec = KVVec::with_capacity(npages, GFP_KERNEL)?;
    for i in 0..npages {
        iovec.push(
            Iovec::new(user.addr() + i * PAGE_SIZE, PAGE_SIZE),
            GFP_KERNEL,
        )?;
    }
    let kv_len = npages / KVEC_SEGS * PAGE_SIZE;
    let mut kvec = KVec::with_capacity(KVEC_SEGS, GFP_KERNEL)?;
    for i in 0..KVEC_SEGS {
        kvec.push(Kvec::new(src.addr() + i * kv_len, kv_len), GFP_KERNEL)?;
    }
    let seg = Bvec::new(src.page(), 0, PAGE_SIZE as u32).map_err(|_| EINVAL)?;
    let bvec = KVVec::from_elem(seg, npages, GFP_KERNEL)?;
    let folios = KVVec::from_elem(Folio::page(src.page()), npages, GFP_KERNEL)?;
    let fq = CFolioQueue::new(&src, npages)?;
    let geo = Geometry {
        src: &src,
        user: &user,
        iovec: &iovec,
        kvec: &kvec,
        bvec: &bvec,
        folios: &folios,
        fq: &fq,
        npages,
    };

    let kinds = Kind::ALL.len();
    let mut rust_ns = KVec::from_elem(0u64, kinds * samples, GFP_KERNEL)?;
    let mut c_ns = KVec::from_elem(0u64, kinds * samples, GFP_KERNEL)?;
    let mut errors = 0;
    // Warm-up: faults in the user mapping's page-table entries (the kernel benchmark drops its
    // first sample for this) and warms the caches, on both sides.
    for kind in Kind::ALL {
        for side in [Side::C, Side::Rust] {
            errors += usize::from(copy_once(&geo, kind, side, &mut scratch, inject).is_none());
        }
    }
    for s in 0..samples {
        for (k, kind) in Kind::ALL.into_iter().enumerate() {
            // Alternate which side goes first, so drift hits both alike.
            let order = if (s + k) % 2 == 0 {
                [Side::Rust, Side::C]
            } else {
                [Side::C, Side::Rust]
            };
            for side in order {
                let ns = copy_once(&geo, kind, side, &mut scratch, inject);
                errors += usize::from(ns.is_none());
                let slot = match side {
                    Side::Rust => rust_ns.get_mut(k * samples + s),
                    Side::C => c_ns.get_mut(k * samples + s),
                };
                if let (Some(slot), Some(ns)) = (slot, ns) {
                    *slot = ns;
                }
            }
        }
    }
    for (k, kind) in Kind::ALL.into_iter().enumerate() {
        let range = k * samples..(k + 1) * samples;
        let (Some(r), Some(c)) = (rust_ns.get_mut(range.clone()), c_ns.get_mut(range)) else {
            continue;
        };
        report(kind.name(), spread(r), spread(c), false);
    }
    Ok(errors)
}

/// One sample of `kind` on `side`, checked: the bytes copied and the first and last byte of
/// the destination page (spoiled first for a Rust bvec copy with `inject`). Returns the time,
/// or `None` (with a message) on an error.
fn copy_once(
    geo: &Geometry<'_, '_>,
    kind: Kind,
    side: Side,
    scratch: &mut TiledVmap<'_>,
    inject: bool,
) -> Option<u64> {
    if let Some(page) = scratch.as_mut_slice().get_mut(..PAGE_SIZE) {
        page.fill(POISON);
    }
    let t: Option<Timed> = match side {
        Side::Rust => geo.rust(kind, scratch),
        Side::C => geo.c(kind, scratch),
    };
    cond_resched();
    if inject && side == Side::Rust && kind == Kind::Bvec {
        if let Some(b) = scratch.as_mut_slice().first_mut() {
            *b = POISON;
        }
    }
    let want = geo.expected(kind, FILL);
    let page = scratch.as_mut_slice().get(..PAGE_SIZE);
    let edges = page.map(|p| (p.first().copied(), p.last().copied()));
    match t {
        Some(t) if t.copied == geo.bytes() && edges == Some((Some(want), Some(want))) => Some(t.ns),
        _ => {
            pr_err!(
                "iov-bench error: {} {:?}: copied {:?} of {} bytes, destination edges {:?}, expected {:#x}\n",
                kind.name(),
                side,
                t.map(|t| t.copied),
                geo.bytes(),
                edges,
                want
            );
            None
        }
    }
}

/// Runs every operation on a table of `entries` page segments; prints the results (ns per
/// operation) and returns the number of errors.
fn operations(entries: usize, samples: usize) -> Result<usize> {
    let page = BenchPage::new()?;
    let seg = Bvec::new(page.kpage(), 0, PAGE_SIZE as u32).map_err(|_| EINVAL)?;
    let bvec = KVVec::from_elem(seg, entries, GFP_KERNEL)?;
    let table = Table {
        bvec: &bvec,
        count: entries * PAGE_SIZE,
    };
    let mut errors = 0;
    let mut r_tenths = KVec::from_elem(0u64, samples, GFP_KERNEL)?;
    let mut c_tenths = KVec::from_elem(0u64, samples, GFP_KERNEL)?;
    for op in Op::ALL {
        let reps = (
            ops::calibrate(|n| table.rust(op, n)),
            ops::calibrate(|n| table.c(op, n)),
        );
        let (Some(r_reps), Some(c_reps)) = reps else {
            pr_err!("iov-bench error: {}: cannot run\n", op.name());
            errors += 1;
            continue;
        };
        for s in 0..samples {
            let first = if s % 2 == 0 { Side::Rust } else { Side::C };
            let mut per_rep = [0usize; 2];
            for side in [
                first,
                if first == Side::Rust {
                    Side::C
                } else {
                    Side::Rust
                },
            ] {
                let (t, reps, out, i) = match side {
                    Side::Rust => (table.rust(op, r_reps), r_reps, &mut r_tenths, 0),
                    Side::C => (table.c(op, c_reps), c_reps, &mut c_tenths, 1),
                };
                cond_resched();
                let Some(t) = t else {
                    errors += 1;
                    continue;
                };
                if let Some(slot) = out.get_mut(s) {
                    *slot = t.ns.saturating_mul(10) / reps as u64;
                }
                if let Some(slot) = per_rep.get_mut(i) {
                    *slot = t.copied / reps;
                }
            }
            let [rust_res, c_res] = per_rep;
            if rust_res != c_res {
                pr_err!(
                    "iov-bench error: {}: rust result {} != c result {}\n",
                    op.name(),
                    rust_res,
                    c_res
                );
                errors += 1;
            }
        }
        report(
            op.name(),
            spread(&mut r_tenths),
            spread(&mut c_tenths),
            true,
        );
    }
    Ok(errors)
}

/// A value in ns, or in tenths of ns shown with one decimal.
#[derive(Clone, Copy)]
struct Ns(u64, bool);

impl core::fmt::Display for Ns {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.1 {
            write!(f, "{}.{}", self.0 / 10, self.0 % 10)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Prints the two result lines of one kind or operation.
fn report(name: &str, r: Spread, c: Spread, tenths: bool) {
    let ratio = ratio_micro(r.median, c.median).unwrap_or(0);
    let ns = |v| Ns(v, tenths);
    pr_info!(
        "iov-bench {}: rust {} c {} ratio {}\n",
        name,
        ns(r.median),
        ns(c.median),
        Ratio(ratio)
    );
    pr_info!(
        "iov-bench-spread {}: rust min {} p10 {} p90 {} max {} c min {} p10 {} p90 {} max {}\n",
        name,
        ns(r.min),
        ns(r.p10),
        ns(r.p90),
        ns(r.max),
        ns(c.min),
        ns(c.p10),
        ns(c.p90),
        ns(c.max)
    );
}
