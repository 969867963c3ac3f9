#!/usr/bin/env python3
"""Instructions per 4 KiB page of each copy geometry, from callgrind (deterministic; load-proof).

Usage: benches/instr.py [PROFILE_COPY_BINARY] [NPAGES] [REPS] [GEOMETRY ...]

Runs `examples/profile_copy` (default: $CARGO_TARGET_DIR/release/examples/profile_copy, built
with `cargo build --profile bench -p iovstack-benches --example profile_copy`) once per geometry
under `valgrind --tool=callgrind --toggle-collect=profile_copy::timed`, so only the benchmark's
timed region is counted, and splits the instructions by the source file they were inlined from:

  memcpy   glibc's memcpy (the copy itself)
  crate    iov/src and bvec/src (the engine, the copy steps, segment accessors)
  memory   benches/src/tiled.rs (the benchmark's memory: address checks, page tiling)
  core     inlined core library helpers (min, checked arithmetic, slice get), called from either
  bench    benches/src/kunit.rs and the example (the benchmark loop, UBUF/bvec_split set-up)

and prints them per page, with "extra": everything but memcpy, minus the same for the kind's
ceiling (memcpy_4k for ubuf, memcpy for the rest).
"""
import os
import re
import subprocess
import sys
import tempfile

KINDS = ["memcpy_4k", "memcpy", "ubuf", "iovec", "kvec", "bvec", "bvec_split", "page_list"]
GROUPS = ["memcpy", "crate", "memory", "core", "bench", "other"]
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?):(.*)$")


def group(path):
    if "memmove" in path or "memcpy" in path:
        return "memcpy"
    if re.search(r"(^|/)(iov|bvec)/src/", path):
        return "crate"
    if re.search(r"(^|/)benches/src/tiled\.rs$", path):
        return "memory"
    if "/rustlib/" in path or "/library/core/" in path:
        return "core"
    if re.search(r"(^|/)benches/", path):
        return "bench"
    return "other"


def count(binary, kind, npages, reps):
    """Group -> instructions inside profile_copy::timed for `reps` runs of `kind`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--toggle-collect=profile_copy::timed", binary, kind, str(npages),
                        str(reps)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        text = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", out],
                              check=True, capture_output=True, text=True).stdout
    res = dict.fromkeys(GROUPS, 0)
    for line in text.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            res[group(m.group(2))] += int(m.group(1).replace(",", ""))
    return res


def main():
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    args = sys.argv[1:]
    binary = args.pop(0) if args else os.path.join(target, "release/examples/profile_copy")
    npages = int(args.pop(0)) if args else 4096
    reps = int(args.pop(0)) if args else 2
    kinds = args or KINDS
    pages = npages * reps
    per = {}
    print(f"instructions per 4 KiB page ({npages} pages x {reps} runs, callgrind)")
    print(f"{'geometry':<11}" + "".join(f"{g:>8}" for g in GROUPS) + f"{'total':>9}{'extra':>8}")
    for kind in kinds:
        c = {g: n / pages for g, n in count(binary, kind, npages, reps).items()}
        per[kind] = c
        total = sum(c.values())
        ceiling = "memcpy_4k" if kind == "ubuf" else "memcpy"
        extra = ""
        if ceiling in per and not kind.startswith("memcpy"):
            ceil = per[ceiling]
            extra = f"{(total - c['memcpy']) - (sum(ceil.values()) - ceil['memcpy']):8.1f}"
        print(f"{kind:<11}" + "".join(f"{c[g]:8.1f}" for g in GROUPS) + f"{total:9.1f}{extra}")


if __name__ == "__main__":
    main()
