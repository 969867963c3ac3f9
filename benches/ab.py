#!/usr/bin/env python3
"""Paired A/B runs of criterion bench binaries, for comparing builds on a loaded machine.

Usage: benches/ab.py ROUNDS FILTER LABEL=BINARY [LABEL=BINARY ...]

BINARY is a copy of a built bench executable (`cargo bench -p iovstack-benches --no-run` prints
its path; copy it before rebuilding the other variant). Each round runs every binary once with
`--bench FILTER`, the order reversed every other round, each with its own CRITERION_HOME, and
records criterion's median (the point estimate summarize.py reports) per benchmark. Prints, per
benchmark and binary, the median over rounds, and the median of the per-round ratios against the
first binary: load that comes and goes hits both sides of a round alike.
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def medians(home):
    """Benchmark id -> median in ns, from every new/estimates.json under home."""
    out = {}
    for path in glob.glob(os.path.join(home, "**", "new", "estimates.json"), recursive=True):
        rel = os.path.relpath(os.path.dirname(os.path.dirname(path)), home)
        with open(path) as f:
            out[rel] = json.load(f)["median"]["point_estimate"]
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, filt = int(sys.argv[1]), sys.argv[2]
    bins = [a.split("=", 1) for a in sys.argv[3:]]
    root = tempfile.mkdtemp(prefix="ab-criterion-")
    res = {}  # bench -> label -> [median per round]
    for r in range(rounds):
        for label, binary in bins if r % 2 == 0 else bins[::-1]:
            home = os.path.join(root, f"{label}-{r}")
            env = dict(os.environ, CRITERION_HOME=home)
            subprocess.run([binary, "--bench", filt], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, ns in medians(home).items():
                res.setdefault(name, {}).setdefault(label, []).append(ns)
        print(f"round {r + 1}/{rounds}, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    base = bins[0][0]
    for name in sorted(res):
        d = res[name]
        cells = []
        for label, _ in bins:
            v = d.get(label, [])
            if not v:
                continue
            cell = f"{label} {statistics.median(v):.2f} ns"
            if label != base and len(v) == len(d.get(base, [])):
                ratio = statistics.median(x / y for x, y in zip(v, d[base]))
                cell += f" ({ratio:.3f}×)"
            cells.append(cell)
        print(f"{name}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
