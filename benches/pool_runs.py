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

When some round had rnvme on controller rnvme-b (a crossover run, `bench-fio.sh --legs cb`
or `bc`), a second line per workload splits the rounds by the controller rnvme had:

  position <wl>: rnvme on rnvme-c: Gc [..] (Nc rounds); on rnvme-b: Gb [..] (Nb rounds);
  controller effect: E [LO-HI]

E = sqrt(Gc / Gb) is how much faster a driver runs on rnvme-c than on rnvme-b (the A/A
check's question, answered while both drivers run): a ratio measured with rnvme on rnvme-c
alone is E times the balanced one. Its interval takes the two groups' rounds as independent
(Student's t with the smaller group's degrees of freedom, on half the difference of the log
means). Rounds without a recorded controller (runs before it was recorded) had rnvme on
rnvme-c.

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


def run_rounds(path, workloads=None):
    """workload -> (ratio rnvme/nvme, controller rnvme had) per paired round of one run file,
    in round order."""
    rounds = collections.defaultdict(dict)
    ctrls = {}
    for r in read_csv(path):
        if workloads and r["workload"] not in workloads:
            continue
        if r.get("err", "0") not in ("0", ""):
            continue
        key = (r["workload"], int(r["round"]))
        rounds[key][r["dev"]] = float(r["iops"])
        if r["dev"] == "rnvme":
            ctrls[key] = r.get("ctrl") or "rnvme-c"
    out = collections.defaultdict(list)
    for key, devs in sorted(rounds.items()):
        if devs.get("rnvme") and devs.get("nvme"):
            out[key[0]].append((devs["rnvme"] / devs["nvme"], ctrls[key]))
    return out


def position(rounds):
    """((Gc, lo, hi), Nc, (Gb, lo, hi), Nb, (E, lo, hi)) of (ratio, controller) rounds, None
    unless both rnvme-c and rnvme-b have at least two rounds."""
    rc = [x for x, ctrl in rounds if ctrl == "rnvme-c"]
    rb = [x for x, ctrl in rounds if ctrl == "rnvme-b"]
    if len(rc) < 2 or len(rb) < 2:
        return None
    lc, lb = [math.log(x) for x in rc], [math.log(x) for x in rb]
    half = (statistics.mean(lc) - statistics.mean(lb)) / 2
    se = math.sqrt(statistics.variance(lc) / len(lc) + statistics.variance(lb) / len(lb)) / 2
    h = t975(min(len(lc), len(lb))) * se
    return (paired_ci(rc), len(rc), paired_ci(rb), len(rb),
            (math.exp(half), math.exp(half - h), math.exp(half + h)))


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
    per_run_rounds = [run_rounds(p, workloads) for p in paths]
    per_run = [{wl: [x for x, _ in rs] for wl, rs in run.items()} for run in per_run_rounds]
    names = sorted({wl for run in per_run for wl in run})
    lines = []
    for wl in names:
        runs = [run[wl] for run in per_run if run.get(wl)]
        rounds = [x for run in runs for x in run]
        pos = position([x for run in per_run_rounds for x in run.get(wl, [])])
        means = [gmean(run) for run in runs]
        lines.append("pool %s: rounds %d: %s; runs %d: %s; over runs: %s; runs to resolve 1%%: %s"
                     % (wl, len(rounds), fmt_ci(paired_ci(rounds)), len(runs),
                        " ".join("%.3f" % m for m in means), fmt_ci(paired_ci(means)),
                        fmt_runs(runs_to_resolve(means))))
        if pos:
            lines.append("position %s: rnvme on rnvme-c: %s (%d rounds); on rnvme-b: %s "
                         "(%d rounds); controller effect: %s"
                         % (wl, fmt_ci(pos[0]), pos[1], fmt_ci(pos[2]), pos[3], fmt_ci(pos[4])))
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

    Run C, a crossover of workload x, rnvme on rnvme-c in rounds 0 and 1 (1.1, 1.3) and on
    rnvme-b in rounds 2 and 3 (0.9, 1.0). All four: logs 0.095310, 0.262364, -0.105361, 0;
    mean 0.063078, sd 0.156103, half 3.182 * 0.156103 / 2 = 0.248360: 1.065 [0.831-1.365].
    On rnvme-c: mean 0.178837, sd 0.118125, half 12.706 * 0.118125 / sqrt(2) = 1.061295:
    1.196 [0.414-3.456]; on rnvme-b: mean -0.052680, sd 0.074501, half 0.669355: 0.949
    [0.486-1.853]. The effect: half the difference of the means, 0.115759; its standard error
    sqrt(0.013954 / 2 + 0.005550 / 2) / 2 = 0.049376, times 12.706 = 0.627372: exp(0.115759)
    = 1.123 [exp(-0.511613) = 0.600 - exp(0.743131) = 2.103].
    """
    hdr = "workload,dev,round,iops,err\n"
    a = hdr + "".join("w,rnvme,%d,%d,0\nw,nvme,%d,1000,0\n" % (i, x, i)
                      for i, x in enumerate((500, 1000, 2000)))
    a += "u,rnvme,0,1000,0\nu,nvme,0,1000,0\n"
    b = (hdr + "w,rnvme,0,2000,0\nw,nvme,0,1000,0\nw,rnvme,1,4000,0\nw,nvme,1,2000,0\n"
         "w,rnvme,2,1000,5\nw,nvme,2,1000,0\nw,rnvme,3,1000,0\n"
         "v,rnvme,0,900,0\nv,nvme,0,1000,0\nv,rnvme,1,1100,0\nv,nvme,1,1000,0\n"
         "u,rnvme,0,1020,0\nu,nvme,0,1000,0\n")
    c = "workload,dev,round,iops,err,ctrl\n" + "".join(
        "x,rnvme,%d,%d,0,%s\nx,nvme,%d,1000,0,%s\n" % (i, x, rc, i, cc)
        for i, (x, rc, cc) in enumerate((
            (1100, "rnvme-c", "rnvme-b"), (1300, "rnvme-c", "rnvme-b"),
            (900, "rnvme-b", "rnvme-c"), (1000, "rnvme-b", "rnvme-c"))))
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
        "pool x: rounds 4: 1.065 [0.831-1.365]; runs 1: 1.065; over runs: n/a; "
        "runs to resolve 1%: n/a",
        "position x: rnvme on rnvme-c: 1.196 [0.414-3.456] (2 rounds); on rnvme-b: 0.949 "
        "[0.486-1.853] (2 rounds); controller effect: 1.123 [0.600-2.103]",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in (("a.csv", a), ("b.csv", b), ("c.csv", c)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w") as f:
                f.write(text)
        got = pool(paths)
        only_w = pool(paths, {"w"})
    ok = got == want and only_w == want[2:3]
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
