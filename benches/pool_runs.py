#!/usr/bin/env python3
"""Paired rnvme/C ratios of several fio runs of the same points, two ways (issue 9).

    benches/pool_runs.py [--workload WL]... RUNS.csv [RUNS.csv ...]
    benches/pool_runs.py --self-test

Each RUNS.csv is the per-round file (`fio-matrix-runs.csv`, kept in `benches/results/` as
`fio-paired-<commit>-*-runs.csv`) of one `scripts/bench-fio.sh` run: one guest boot, whose
rounds pair rnvme with the C driver (`dev` nvme) back to back. For each workload (all those
the files have, or the `--workload`s given) it prints

  pool <wl>: rounds N: G [LO-HI]; runs K: M1 M2 ...; over runs: G2 [LO2-HI2]; runs to resolve 1%: R

G [LO-HI] is the geometric mean of every paired round's ratio with its 95% confidence interval
(Student's t on the logarithms, `paired_ci` of plot_fio.py), as if all rounds were independent.
They are not quite: a whole run can sit higher or lower than another by more than its own
interval allows (the guest's speed per instruction under TCG moves from boot to boot), so the
second figure takes each run's geometric mean M as one sample and gives the interval over the
K runs. With K = 1 there is no interval over runs ("n/a"). Rounds with an error (`err` not 0)
or without both drivers are left out.

R says what the runs can resolve: how many runs, scattering as these K do, it takes for the
interval over runs to be narrower than 1% on either side (so that a true ratio of 1.01 or
0.99 would, on average, be told from 1.00): the least R with t(R-1) * sd / sqrt(R) <
ln(1.01), sd the standard deviation of the K runs' log means; "n/a" with one run, ">1000"
beyond that.
"""
import collections
import math
import statistics
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_fio import paired_ci, read_csv, t975  # noqa: E402


def run_ratios(path, workloads=None):
    """workload -> the paired ratios rnvme/nvme of one run file, in round order."""
    rounds = collections.defaultdict(dict)
    for r in read_csv(path):
        if workloads and r["workload"] not in workloads:
            continue
        if r.get("err", "0") not in ("0", ""):
            continue
        rounds[(r["workload"], int(r["round"]))][r["dev"]] = float(r["iops"])
    out = collections.defaultdict(list)
    for (wl, _), devs in sorted(rounds.items()):
        if devs.get("rnvme") and devs.get("nvme"):
            out[wl].append(devs["rnvme"] / devs["nvme"])
    return out


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def runs_to_resolve(means, effect=0.01):
    """The least number of runs, scattering as `means` (run geometric means) do, whose 95%
    interval over runs is narrower than `effect` on either side; None with fewer than two
    runs, 1001 when it takes more than 1,000."""
    if len(means) < 2:
        return None
    sd = statistics.stdev(math.log(m) for m in means)
    for r in range(2, 1001):
        if t975(r) * sd / math.sqrt(r) < math.log(1 + effect):
            return r
    return 1001


def fmt_runs(r):
    return "n/a" if r is None else (">1000" if r > 1000 else str(r))


def fmt_ci(ci):
    return "n/a" if ci is None else "%.3f [%.3f-%.3f]" % ci


def pool(paths, workloads=None):
    """The output lines for `paths` (one run each)."""
    per_run = [run_ratios(p, workloads) for p in paths]
    names = sorted({wl for run in per_run for wl in run})
    lines = []
    for wl in names:
        runs = [run[wl] for run in per_run if run.get(wl)]
        rounds = [x for run in runs for x in run]
        means = [gmean(run) for run in runs]
        lines.append("pool %s: rounds %d: %s; runs %d: %s; over runs: %s; runs to resolve 1%%: %s"
                     % (wl, len(rounds), fmt_ci(paired_ci(rounds)), len(runs),
                        " ".join("%.3f" % m for m in means), fmt_ci(paired_ci(means)),
                        fmt_runs(runs_to_resolve(means))))
    return lines


def self_test():
    """Two hand-made runs of one workload, checked against figures computed by hand.

    Run A: rounds 0.5, 1.0, 2.0 (geometric mean 1.000); run B: 2.0, 2.0 (2.000), plus a round
    with an error and one with rnvme only, both left out. All five rounds: logs -ln2, 0, ln2,
    ln2, ln2, mean 0.277259, sd 0.619970, half 2.776 * 0.619970 / sqrt(5) = 0.769671:
    exp(0.277259) = 1.320 [exp(-0.492412) = 0.611 - exp(1.046930) = 2.849]. Over the runs:
    logs 0 and ln2, mean 0.346574, sd 0.490129, half 12.706 * 0.490129 / sqrt(2) = 4.403564:
    1.414 [exp(-4.056991) = 0.017 - exp(4.750138) = 115.600]; to resolve 1% it would take
    (1.960 * 0.490129 / ln 1.01)^2 = 9,321 runs, more than 1,000. A second workload only in run
    B has one run: no interval over runs. A third, u, one round per run (1.00 in A, 1.02 in B):
    logs 0 and ln1.02 = 0.019803, sd 0.014003; 10 runs give 2.262 * 0.014003 / sqrt(10) =
    0.010016, not below ln 1.01 = 0.009950, 11 runs 2.228 * 0.014003 / sqrt(11) = 0.009407:
    11.
    """
    hdr = "workload,dev,round,iops,err\n"
    a = hdr + "".join("w,rnvme,%d,%d,0\nw,nvme,%d,1000,0\n" % (i, x, i)
                      for i, x in enumerate((500, 1000, 2000)))
    a += "u,rnvme,0,1000,0\nu,nvme,0,1000,0\n"
    b = (hdr + "w,rnvme,0,2000,0\nw,nvme,0,1000,0\nw,rnvme,1,4000,0\nw,nvme,1,2000,0\n"
         "w,rnvme,2,1000,5\nw,nvme,2,1000,0\nw,rnvme,3,1000,0\n"
         "v,rnvme,0,900,0\nv,nvme,0,1000,0\nv,rnvme,1,1100,0\nv,nvme,1,1000,0\n"
         "u,rnvme,0,1020,0\nu,nvme,0,1000,0\n")
    want = [
        # u: two runs of one round each, so rounds and runs give the same interval: mean log
        # 0.009901, half 12.706 * 0.014003 / sqrt(2) = 0.125806: exp(0.009901) = 1.010
        # [exp(-0.115905) = 0.891 - exp(0.135707) = 1.145].
        "pool u: rounds 2: 1.010 [0.891-1.145]; runs 2: 1.000 1.020; over runs: 1.010 "
        "[0.891-1.145]; runs to resolve 1%: 11",
        # v: logs ln0.9, ln1.1; mean -0.005025, sd 0.141896, half 12.706 * 0.141896 /
        # sqrt(2) = 1.274861: exp(-0.005025) = 0.995 [exp(-1.279886) = 0.278 - exp(1.269836)
        # = 3.560].
        "pool v: rounds 2: 0.995 [0.278-3.560]; runs 1: 0.995; over runs: n/a; "
        "runs to resolve 1%: n/a",
        "pool w: rounds 5: 1.320 [0.611-2.849]; runs 2: 1.000 2.000; over runs: 1.414 "
        "[0.017-115.600]; runs to resolve 1%: >1000",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in (("a.csv", a), ("b.csv", b)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w") as f:
                f.write(text)
        got = pool(paths)
        only_w = pool(paths, {"w"})
    ok = got == want and only_w == want[2:]
    for line in got:
        print("  " + line)
    print("pool_runs selftest: %s" % ("ok" if ok else "FAIL, want:\n  " + "\n  ".join(want)))
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    workloads = set()
    paths = []
    while args:
        if args[0] == "--workload" and len(args) > 1:
            workloads.add(args[1])
            args = args[2:]
        elif args[0].startswith("-"):
            sys.exit(__doc__)
        else:
            paths.append(args.pop(0))
    if not paths:
        sys.exit(__doc__)
    for line in pool(paths, workloads or None):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
