#!/usr/bin/env python3
"""Before/after of the kind-vs-ceiling ratios: several builds of examples/paired, interleaved.

Usage: benches/paired_ab.py PASSES ROUNDS LABEL=BINARY [LABEL=BINARY ...] [-- GEOMETRY ...]

BINARY is a copy of a built `examples/paired` (`cargo build --profile bench -p iovstack-benches
--example paired`, then copy $CARGO_TARGET_DIR/release/examples/paired before building the
other variant). Each pass runs every binary once with ROUNDS rounds (the order of the binaries
reversed every other pass), each round itself pairing a geometry with its memcpy ceiling
(see examples/paired.rs). The per-round ratios of all passes are pooled per binary and
geometry; printed are their median, 10th and 90th percentiles and number over the clean rounds
(rounds preempted in every attempt, "dirty", are counted but left out), the preempted attempts
that were retried, and the 1-minute load range. PAIRED_PAGES is passed on.
"""
import csv
import os
import subprocess
import sys
import tempfile


def quantile(v, q):
    v = sorted(v)
    return v[round((len(v) - 1) * q)] if v else float("nan")


def main():
    args = sys.argv[1:]
    geos = []
    if "--" in args:
        geos = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    if len(args) < 3:
        sys.exit(__doc__)
    passes, rounds = int(args[0]), int(args[1])
    bins = [a.split("=", 1) for a in args[2:]]
    rows = {}  # (label, geometry) -> list of (ratio, load_before, load_after, attempts)
    with tempfile.TemporaryDirectory() as tmp:
        for p in range(passes):
            for label, binary in bins if p % 2 == 0 else bins[::-1]:
                out = os.path.join(tmp, f"{label}-{p}.csv")
                env = dict(os.environ, PAIRED_CSV=out)
                subprocess.run([binary, str(rounds), *geos], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                with open(out) as f:
                    for r in csv.DictReader(f):
                        rows.setdefault((label, r["geometry"]), []).append((
                            float(r["geometry_ns"]) / float(r["ceiling_ns"]),
                            float(r["load_before"]), float(r["load_after"]),
                            int(r["attempts"]), r["clean"] == "true"))
            print(f"pass {p + 1}/{passes}, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"{'geometry':<18} {'build':<8} {'ratio':>6} {'p10':>6} {'p90':>6} {'rounds':>6} "
          f"{'retry':>5} {'dirty':>5} {'load':>9}")
    for geo in dict.fromkeys(g for _, g in rows):
        for label, _ in bins:
            v = rows.get((label, geo), [])
            if not v:
                continue
            # Rounds preempted in every attempt measure the neighbours: left out, counted.
            ratios = [x[0] for x in v if x[4]]
            loads = [x[1] for x in v] + [x[2] for x in v]
            print(f"{geo:<18} {label:<8} {quantile(ratios, 0.5):6.3f} "
                  f"{quantile(ratios, 0.1):6.3f} {quantile(ratios, 0.9):6.3f} {len(ratios):6d} "
                  f"{sum(x[3] - 1 for x in v):5d} {len(v) - len(ratios):5d} "
                  f"{min(loads):4.2f}-{max(loads):<4.2f}")


if __name__ == "__main__":
    main()
