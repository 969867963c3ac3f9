#!/usr/bin/env python3
"""Plot the Rust/C ratio per kind of the in-kernel iov benchmark (scripts/bench-kernel.sh).

    benches/plot_kernel_iov.py CSV PNG [BEFORE_CSV]

CSV is benches/results/kernel_iov.csv: one row per kind with the medians of both sides
(iovstack_bench.ko: the iov crate vs the kernel's iov_iter in one boot) and their
min/p10/p90/max. The bar is the ratio of the medians; the whisker spans
rust_p10/c_p90 .. rust_p90/c_p10 (the ratio if both sides were at the favourable or the
unfavourable end of their spread). Copies on a linear axis, iterator operations (whose ratios
span orders of magnitude) on a log axis; the dashed line is the goal, Rust/C = 1. With
BEFORE_CSV (an earlier run, e.g. benches/results/kernel_iov_before.csv), its ratios are drawn
as grey bars left of each kind's current bar.
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OPS = ("iter_init", "iter_init_advance", "npages", "fixed_io_128k")


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ratio_band(row):
    """(median ratio, low, high) of one row; low/high from the p10/p90 spread."""
    f = {k: float(row[k]) for k in ("rust_median", "c_median", "rust_p10", "rust_p90", "c_p10", "c_p90")}
    mid = f["rust_median"] / f["c_median"] if f["c_median"] else float("nan")
    low = f["rust_p10"] / f["c_p90"] if f["c_p90"] else mid
    high = f["rust_p90"] / f["c_p10"] if f["c_p10"] else mid
    return mid, min(low, mid), max(high, mid)


def panel(ax, rows, title, log, before=None):
    names = [r["kind"] for r in rows]
    bands = [ratio_band(r) for r in rows]
    mids = [b[0] for b in bands]
    err = [[b[0] - b[1] for b in bands], [b[2] - b[0] for b in bands]]
    colors = ["tab:green" if round(m, 3) <= 1.0 else "tab:red" for m in mids]
    x = range(len(rows))
    width = 0.8
    if before:
        width = 0.4
        old = [ratio_band(before[n])[0] if n in before else float("nan") for n in names]
        ax.bar([i - 0.2 for i in x], old, width=width, color="tab:gray", alpha=0.6,
               label=f"before ({next(iter(before.values()))['commit']})")
        for i, m in enumerate(old):
            label = f"{m:.3g}" if log else f"{m:.3f}"
            ax.annotate(label, (i - 0.2, m), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=7, color="dimgray")
        x = [i + 0.2 for i in x]
    ax.bar(x, mids, width=width, color=colors, yerr=err, capsize=4, alpha=0.85,
           label="now" if before else None)
    if before:
        ax.legend(fontsize=8)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(list(range(len(rows))))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_title(title)
    ax.set_ylabel("Rust / C (median time)")
    if log:
        ax.set_yscale("log")
    for i, m in zip(x, mids):
        label = f"{m:.3g}" if log else f"{m:.3f}"
        ax.annotate(label, (i, m), textcoords="offset points", xytext=(0, 4),
                    ha="center", fontsize=8)


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    rows = load(argv[1])
    before = {r["kind"]: r for r in load(argv[3])} if len(argv) == 4 else None
    if not rows:
        sys.exit(f"{argv[1]}: no rows")
    copies = [r for r in rows if r["kind"] not in OPS]
    ops = [r for r in rows if r["kind"] in OPS]
    first = rows[0]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [2, 1]})
    panel(axes[0], copies, f"copy_from_iter, {first['size_mib']} MiB per sample", log=False,
          before=before)
    panel(axes[1], ops, f"BVEC iterator ops, {first['table_mib']} MiB table", log=True,
          before=before)
    fig.suptitle(
        "iov crate vs kernel iov_iter in Linux 6.12 (iovstack_bench.ko): "
        f"{first['samples']} samples/side, {first['variant']} kernel, {first['accel']} guest, "
        f"host load {first['load_before']}->{first['load_after']} on {first['host_cpus']} CPUs, "
        f"commit {first['commit']}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
