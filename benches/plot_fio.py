#!/usr/bin/env python3
"""CSVs and plots of the fio matrix (scripts/bench-fio.sh, guest test 61-fio-matrix.sh).

    benches/plot_fio.py --log CONSOLE_LOG --out DIR [--mode long|short] [--commit C]
                        [--load-before L] [--load-after L] [--host-cpus N] [--no-plot]
    benches/plot_fio.py --replot --out DIR        # plots again from DIR's CSVs
    benches/plot_fio.py --markdown --out DIR      # the tables of BENCHMARKS.md, from the CSV
    benches/plot_fio.py --premap-log LOG [--premap-log LOG_IOMMU] --out DIR
                        # premap.csv (and premap.png) from 90-bench-premap.sh console logs

Reads the guest's `fio-point` lines (one per run: workload, device, round, IOPS, KiB/s, I/Os,
guest CPU ticks around the job) and writes, in DIR (suffix `-short` for the short form):

* fio-matrix-runs.csv: one row per run (with the controller, `ctrl`, the device's driver had);
* fio-matrix.csv: one row per point and device: median/min/max IOPS over the rounds, median
  bandwidth, guest kernel CPU time per I/O (system+irq+softirq ticks of all CPUs during the job,
  in microseconds per I/O) and busy time per I/O (the same plus user), the ratio of the medians
  to the C nvme driver's (rnvme/nvme; rnull/null_blk for the null devices), the min/max of
  the per-round paired ratios (the devices of one round ran back to back), and their geometric
  mean with a 95% confidence interval (Student's t on the logarithms; printed as `fio-ci`
  lines with the verdict: above 1.00, below 1.00 or not resolved);
* fio-iops.png: IOPS against block size per device, one panel per rw and queue depth;
* fio-ratio.png: rnvme/C and rnull/null_blk per point with the paired-ratio spread;
* premap.png, when DIR/premap.csv exists: premapped vs mapped IOPS. Its columns:
  workload,mode,iops_median,iops_min,iops_max (mode: premapped | mapped); `--premap-log`
  writes it from the `bench-premap:` lines of tests/qemu/guest-tests/90-bench-premap.sh
  (rnvme's fixedbufs=1 runs as premapped, fixedbufs=0 as mapped; a log whose guest ran with
  intel_iommu=on gives workloads suffixed -iommu).
"""

import argparse
import csv
import datetime
import math
import os
import re
import statistics
import sys

POINT = re.compile(r"^fio-point (\S+) dev=(\S+) round=(\d+) (iops=.*)$")
RW_ORDER = ("randread", "randwrite", "read")
DEVS = ("rnvme", "nvme", "null_blk", "rnull")
PAIRS = (("rnvme", "nvme"), ("rnull", "null_blk"))
USER_HZ_US = 10000  # one /proc/stat tick (USER_HZ 100) in microseconds
# Two-sided 95% quantiles of Student's t distribution for 1..30 degrees of freedom.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(n):
    """Student's t at 97.5% for a mean of n samples (n - 1 degrees of freedom; 1.960 beyond
    the table)."""
    return T975[n - 2] if n - 1 <= len(T975) else 1.960


def paired_ci(ratios):
    """Geometric mean of per-round paired ratios and its 95% confidence interval (Student's t
    on the logarithms: the rounds are the independent samples, each one a pair of devices run
    back to back). None with fewer than two ratios."""
    logs = [math.log(x) for x in ratios if x and x > 0]
    n = len(logs)
    if n < 2:
        return None
    mean = statistics.fmean(logs)
    half = t975(n) * statistics.stdev(logs) / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def bs_bytes(bs):
    return int(bs[:-1]) * 1024 if bs.endswith("k") else int(bs)


def split_wl(wl):
    """randread-4k-qd1-io_uring -> (rw, bs, qd, engine)."""
    rw, bs, qd, engine = wl.split("-", 3)
    return rw, bs, int(qd[2:]), engine


def parse_log(path):
    runs = []
    with open(path, errors="replace") as f:
        for line in f:
            m = POINT.match(line.strip().replace("\r", ""))
            if not m:
                continue
            wl, dev, rnd, rest = m.groups()
            kv = dict(x.split("=", 1) for x in rest.split())
            rw, bs, qd, engine = split_wl(wl)
            ios = int(kv["ios"])
            runs.append({
                "workload": wl, "rw": rw, "bs": bs, "bs_bytes": bs_bytes(bs), "qd": qd,
                "engine": engine, "dev": dev, "round": int(rnd), "iops": int(kv["iops"]),
                "bw_kib": int(kv["bw_kib"]), "ios": ios, "runtime_ms": int(kv["runtime_ms"]),
                "sys_ticks": int(kv["sys_ticks"]), "busy_ticks": int(kv["busy_ticks"]),
                "sys_us_per_io": round(int(kv["sys_ticks"]) * USER_HZ_US / ios, 2) if ios else "",
                "busy_us_per_io": round(int(kv["busy_ticks"]) * USER_HZ_US / ios, 2) if ios else "",
                # Hard and soft interrupt time alone (runs before it was recorded: empty).
                "irq_us_per_io": (round(int(kv["irq_ticks"]) * USER_HZ_US / ios, 2)
                                  if ios and "irq_ticks" in kv else ""),
                "err": int(kv["err"]),
                # The emulated controller the device's driver had in this round (runs before
                # it was recorded: empty; they all had rnvme on rnvme-c).
                "ctrl": kv.get("ctrl", ""),
            })
    return runs


def med(xs):
    xs = [x for x in xs if x != ""]
    return statistics.median(xs) if xs else ""


def summarise(runs, meta):
    by = {}
    for r in runs:
        by.setdefault((r["workload"], r["dev"]), []).append(r)
    rows = []
    for (wl, dev), all_rs in by.items():
        rw, bs, qd, engine = split_wl(wl)
        # A run without I/O (a 1 s job that ended before its first completion on a loaded host)
        # is kept in the runs CSV and left out here.
        rs = [r for r in all_rs if r["ios"] > 0] or all_rs
        iops = [r["iops"] for r in rs]
        rows.append({
            "workload": wl, "rw": rw, "bs": bs, "bs_bytes": bs_bytes(bs), "qd": qd,
            "engine": engine, "dev": dev, "rounds": len(rs),
            "empty_runs": len(all_rs) - len([r for r in all_rs if r["ios"] > 0]),
            "iops_median": med(iops),
            "iops_min": min(iops), "iops_max": max(iops),
            "bw_kib_median": med([r["bw_kib"] for r in rs]),
            "sys_us_per_io_median": med([r["sys_us_per_io"] for r in rs]),
            "busy_us_per_io_median": med([r["busy_us_per_io"] for r in rs]),
            "irq_us_per_io_median": med([r["irq_us_per_io"] for r in rs]),
        })
    index = {(r["workload"], r["dev"]): r for r in rows}
    rounds = {(r["workload"], r["dev"], r["round"]): r["iops"] for r in runs if r["ios"] > 0}
    for row in rows:
        ref = {a: b for a, b in PAIRS}.get(row["dev"])
        other = index.get((row["workload"], ref)) if ref else None
        if other and other["iops_median"]:
            row["ratio"] = round(row["iops_median"] / other["iops_median"], 3)
            paired = [rounds[(row["workload"], row["dev"], k)] / v
                      for (w, d, k), v in rounds.items()
                      if w == row["workload"] and d == ref and v
                      and (row["workload"], row["dev"], k) in rounds]
            row["ratio_min"] = round(min(paired), 3) if paired else ""
            row["ratio_max"] = round(max(paired), 3) if paired else ""
            ci = paired_ci(paired)
            row["ratio_gmean"], row["ratio_ci_lo"], row["ratio_ci_hi"] = (
                tuple(round(x, 3) for x in ci) if ci else ("", "", ""))
            row["ratio_of"] = f"{row['dev']}/{ref}"
        else:
            row["ratio"] = row["ratio_min"] = row["ratio_max"] = row["ratio_of"] = ""
            row["ratio_gmean"] = row["ratio_ci_lo"] = row["ratio_ci_hi"] = ""
        row.update(meta)
    key = lambda r: (r["engine"], RW_ORDER.index(r["rw"]) if r["rw"] in RW_ORDER else 9,
                     r["bs_bytes"], r["qd"], DEVS.index(r["dev"]) if r["dev"] in DEVS else 9)
    return sorted(rows, key=key)


def write_csv(path, rows):
    if not rows:
        return
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def plot_iops(rows, path, plt):
    rws = [rw for rw in RW_ORDER if any(r["rw"] == rw for r in rows)]
    qds = sorted({int(r["qd"]) for r in rows})
    fig, axes = plt.subplots(len(rws), len(qds), figsize=(4.2 * len(qds), 3.4 * len(rws)),
                             squeeze=False, sharex=True)
    colors = {"rnvme": "tab:orange", "nvme": "tab:blue", "null_blk": "tab:gray",
              "rnull": "tab:brown"}
    styles = {"io_uring": "-", "libaio": "--"}
    for i, rw in enumerate(rws):
        for j, qd in enumerate(qds):
            ax = axes[i][j]
            if not any(r["rw"] == rw and int(r["qd"]) == qd for r in rows):
                ax.set_visible(False)
                continue
            for dev in DEVS:
                for engine, ls in styles.items():
                    pts = sorted((int(r["bs_bytes"]), num(r["iops_median"]), num(r["iops_min"]),
                                  num(r["iops_max"]))
                                 for r in rows if r["rw"] == rw and int(r["qd"]) == qd
                                 and r["dev"] == dev and r["engine"] == engine)
                    if not pts:
                        continue
                    x = [p[0] for p in pts]
                    y = [p[1] for p in pts]
                    err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
                    ax.errorbar(x, y, yerr=err, color=colors[dev], linestyle=ls, marker="o",
                                markersize=3, capsize=2, linewidth=1.2,
                                label=f"{dev} {engine}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{rw} QD{qd}", fontsize=10)
            ax.grid(True, which="major", alpha=0.3)
            if j == 0:
                ax.set_ylabel("IOPS (median, min..max)")
            if i == len(rws) - 1:
                ax.set_xlabel("block size (bytes)")
    handles, labels = next(a for row in axes for a in row if a.get_visible()).get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_ratio(rows, path, plt):
    fig, axes = plt.subplots(len(PAIRS), 1, figsize=(max(8, 0.22 * len(rows) / 2), 7.5),
                             squeeze=False)
    rw_colors = {"randread": "tab:blue", "randwrite": "tab:red", "read": "tab:green"}
    for ax, (dev, ref) in zip((a[0] for a in axes), PAIRS):
        rs = [r for r in rows if r["dev"] == dev and r["ratio"] not in ("", None)]
        if not rs:
            ax.set_visible(False)
            continue
        mids = [num(r["ratio"]) for r in rs]
        lo = [m - num(r["ratio_min"]) if r["ratio_min"] != "" else 0 for m, r in zip(mids, rs)]
        hi = [num(r["ratio_max"]) - m if r["ratio_max"] != "" else 0 for m, r in zip(mids, rs)]
        x = range(len(rs))
        ax.bar(x, mids, color=[rw_colors.get(r["rw"], "gray") for r in rs],
               yerr=[[max(v, 0) for v in lo], [max(v, 0) for v in hi]], capsize=2, alpha=0.85)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_xticks(list(x))
        short = {"io_uring": "uring", "libaio": "aio"}
        ax.set_xticklabels([f"{r['rw']} {r['bs']} qd{r['qd']} {short.get(r['engine'], r['engine'])}"
                            for r in rs], rotation=90, fontsize=6)
        ax.set_ylabel(f"{dev} / {ref} (median IOPS)")
        ax.set_title(f"{dev} / {ref} per point (bar: ratio of the medians; whiskers: "
                     "per-round paired ratios)\nblue randread, red randwrite, green read",
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_premap(csv_path, path, plt):
    rows = read_csv(csv_path)
    wls = list(dict.fromkeys(r["workload"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(wls)), 4))
    width = 0.38
    for k, (mode, color) in enumerate((("mapped", "tab:blue"), ("premapped", "tab:orange"))):
        ys, lo, hi = [], [], []
        for wl in wls:
            r = next((r for r in rows if r["workload"] == wl and r["mode"] == mode), None)
            y = num(r["iops_median"]) if r else float("nan")
            ys.append(y)
            lo.append(y - num(r["iops_min"]) if r and r.get("iops_min") else 0)
            hi.append(num(r["iops_max"]) - y if r and r.get("iops_max") else 0)
        ax.bar([i + (k - 0.5) * width for i in range(len(wls))], ys, width, yerr=[lo, hi],
               capsize=3, color=color, label=mode)
    ax.set_xticks(list(range(len(wls))))
    ax.set_xticklabels(wls, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("IOPS (median, min..max)")
    ax.set_title("rnvme passthrough: premapped DMA tags vs mapped per I/O")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PREMAP = re.compile(r"^bench-premap: round=\d+ point=(\S+) dev=rnvme fixedbufs=([01]) iops=(\d+)")


def premap_rows(logs):
    """premap.csv rows from 90-bench-premap.sh console logs: rnvme IOPS per point and mode."""
    vals = {}
    for log in logs:
        with open(log, errors="replace") as f:
            text = f.read()
        iommu = "intel_iommu=on" in text
        for line in text.splitlines():
            m = PREMAP.match(line.strip())
            if not m:
                continue
            wl = m.group(1) + ("-iommu" if iommu else "")
            mode = "premapped" if m.group(2) == "1" else "mapped"
            vals.setdefault((wl, mode), []).append(int(m.group(3)))
    return [{"workload": wl, "mode": mode, "iops_median": statistics.median(v),
             "iops_min": min(v), "iops_max": max(v)} for (wl, mode), v in vals.items()]


def plots(out, suffix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_csv(os.path.join(out, f"fio-matrix{suffix}.csv"))
    plot_iops(rows, os.path.join(out, f"fio-iops{suffix}.png"), plt)
    plot_ratio(rows, os.path.join(out, f"fio-ratio{suffix}.png"), plt)
    premap = os.path.join(out, "premap.csv")
    if os.path.exists(premap):
        plot_premap(premap, os.path.join(out, "premap.png"), plt)
    else:
        print(f"plot_fio: no {premap}: premap.png not drawn", file=sys.stderr)


def markdown(out, suffix):
    """Markdown tables of fio-matrix{suffix}.csv for BENCHMARKS.md, on stdout."""
    rows = read_csv(os.path.join(out, f"fio-matrix{suffix}.csv"))
    by = {(r["workload"], r["dev"]): r for r in rows}
    wls = list(dict.fromkeys(r["workload"] for r in rows))

    def cell(r):
        if not r:
            return "n/a"
        return f"{int(num(r['iops_median']))} [{r['iops_min']}–{r['iops_max']}]"

    def ratio(r):
        if not r or r["ratio"] == "":
            return "n/a"
        return f"**{num(r['ratio']):.2f}** [{num(r['ratio_min']):.2f}–{num(r['ratio_max']):.2f}]"

    def cpu(r):
        return "n/a" if not r or r["sys_us_per_io_median"] == "" else f"{num(r['sys_us_per_io_median']):.0f}"

    def ci(r):
        if not r or r.get("ratio_ci_lo", "") == "":
            return "n/a"
        return f"{num(r['ratio_gmean']):.2f} [{num(r['ratio_ci_lo']):.2f}–{num(r['ratio_ci_hi']):.2f}]"

    goal = [w for w in wls if w.startswith(("randread-4k-qd1-", "randread-4k-qd32-", "read-128k-"))]
    print("Goal points (rnvme/C IOPS ratio of the medians, [min–max of the per-round paired ratios];"
          " geometric mean of the paired ratios [95% confidence interval]):\n")
    print("| point | rnvme IOPS | C nvme IOPS | rnvme/C | paired geo-mean [95% CI] | sys µs/I/O rnvme | sys µs/I/O C |")
    print("|---|---|---|---|---|---|---|")
    for w in goal:
        r, c = by.get((w, "rnvme")), by.get((w, "nvme"))
        print(f"| {w} | {cell(r)} | {cell(c)} | {ratio(r)} | {ci(r)} | {cpu(r)} | {cpu(c)} |")
    print("\nEvery point (IOPS median [min–max] over the rounds; guest kernel CPU µs per I/O):\n")
    print("| point | rnvme | C nvme | rnvme/C | null_blk | rnull | rnull/null_blk | sys µs/I/O rnvme / C |")
    print("|---|---|---|---|---|---|---|---|")
    for w in wls:
        g = lambda d: by.get((w, d))
        print(f"| {w} | {cell(g('rnvme'))} | {cell(g('nvme'))} | {ratio(g('rnvme'))} | "
              f"{cell(g('null_blk'))} | {cell(g('rnull'))} | {ratio(g('rnull'))} | "
              f"{cpu(g('rnvme'))} / {cpu(g('nvme'))} |")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="long")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--load-before", default="")
    ap.add_argument("--load-after", default="")
    ap.add_argument("--host-cpus", default="")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--replot", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print the tables for BENCHMARKS.md")
    ap.add_argument("--premap-log", action="append", default=[],
                    help="a 90-bench-premap.sh console log (repeatable): writes premap.csv")
    a = ap.parse_args(argv)
    suffix = "" if a.mode == "long" else f"-{a.mode}"
    if a.premap_log:
        rows = premap_rows(a.premap_log)
        if not rows:
            sys.exit("plot_fio: no bench-premap lines in " + ", ".join(a.premap_log))
        write_csv(os.path.join(a.out, "premap.csv"), rows)
        print(f"plot_fio: {len(rows)} points -> {a.out}/premap.csv", file=sys.stderr)
        if not a.no_plot:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            plot_premap(os.path.join(a.out, "premap.csv"), os.path.join(a.out, "premap.png"), plt)
        return
    if a.markdown:
        markdown(a.out, suffix)
        return
    if not a.replot:
        runs = parse_log(a.log)
        if not runs:
            sys.exit(f"plot_fio: no fio-point lines in {a.log}")
        meta = {"mode": a.mode, "accel": "tcg", "host_cpus": a.host_cpus,
                "load_before": a.load_before, "load_after": a.load_after, "commit": a.commit,
                "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ")}
        write_csv(os.path.join(a.out, f"fio-matrix-runs{suffix}.csv"), runs)
        rows = summarise(runs, meta)
        write_csv(os.path.join(a.out, f"fio-matrix{suffix}.csv"), rows)
        print(f"plot_fio: {len(runs)} runs -> {a.out}/fio-matrix{suffix}.csv", file=sys.stderr)
        # The paired rounds' verdict per point: above 1.00, below, or not resolved.
        for r in rows:
            if r["ratio_ci_lo"] == "":
                continue
            lo, hi = r["ratio_ci_lo"], r["ratio_ci_hi"]
            verdict = "above 1.00" if lo > 1 else "below 1.00" if hi < 1 else "not resolved"
            print(f"fio-ci {r['workload']}: {r['ratio_of']} {r['ratio_gmean']:.3f} [{lo:.3f}-{hi:.3f}]"
                  f" 95% CI over {r['rounds']} paired rounds: {verdict}")
    if not a.no_plot:
        plots(a.out, suffix)


if __name__ == "__main__":
    main(sys.argv[1:])
