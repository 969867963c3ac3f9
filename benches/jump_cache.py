#!/usr/bin/env python3
"""QEMU's jump-cache lookups and misses per guest I/O, by code region (issue 9).

Under TCG a return, an indirect branch or a branch to another guest page leaves the translated
code and looks the next block up in the vCPU's direct-mapped jump cache (4,096 entries in QEMU
7.2); a miss walks the global hash table and probes the code TLB. A QEMU built by
`scripts/build-qemu-debug.sh` (benches/qemu-patches/jump-cache-stats.patch) prints each vCPU's
running totals at every run marker of the profile guest (a read of an NVMe controller's INTMS
register): `qemu-jc cpu=N lookups= jmiss= htmiss= flush= rl=user,kernel,modules
rm=user,kernel,modules`. Marker k opens the run of the guest's `fio-profile ... marker=k` line
and marker k + 1 closes it. Per run, summed over the vCPUs and divided by the run's I/Os:

  fio-jc <workload> <dev>: ios N lookups L (user U kernel K modules M) misses X (P%; user ...
      kernel ... modules ...) translated H flushes F

  python3 benches/jump_cache.py CONSOLE_LOG
  python3 benches/jump_cache.py --self-test
"""
import re
import sys

JC_RE = re.compile(r"^qemu-jc cpu=(\d+) lookups=(\d+) jmiss=(\d+) htmiss=(\d+) flush=(\d+) "
                   r"rl=(\d+),(\d+),(\d+) rm=(\d+),(\d+),(\d+)")


def parse(lines):
    """The counter snapshots (one tuple of sums over the vCPUs per marker read) and the runs
    (workload, driver, I/Os, marker)."""
    snaps, cur, runs = [], None, []

    def close():
        if cur:
            snaps.append(tuple(sum(v) for v in zip(*cur.values())))

    for line in lines:
        line = line.replace("\r", "").strip()
        m = JC_RE.match(line)
        if m:
            # One snapshot: the lines of vCPU 0, 1, ... printed together at one marker read.
            cpu = int(m.group(1))
            if cpu == 0:
                close()
                cur = {}
            if cur is None or cpu in cur:
                sys.exit(f"jump_cache: vCPU {cpu} out of order in a snapshot")
            cur[cpu] = tuple(int(x) for x in m.groups()[1:])
        elif line.startswith("fio-profile "):
            f = line.split()
            kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
            runs.append((f[1], kv["dev"], int(kv["ios"]), int(kv["marker"])))
    close()
    return snaps, runs


def report(snaps, runs):
    out = []
    for wl, dev, ios, m in runs:
        if m + 1 > len(snaps):
            sys.exit(f"jump_cache: run {wl} {dev} (marker {m}) has no closing snapshot")
        d = [(b - a) / ios for a, b in zip(snaps[m - 1], snaps[m])]
        look, miss, ht, fl = d[0], d[1], d[2], d[3]
        pct = 100 * miss / look if look else 0.0
        out.append(f"fio-jc {wl} {dev}: ios {ios} lookups {look:.0f} (user {d[4]:.0f} kernel "
                   f"{d[5]:.0f} modules {d[6]:.0f}) misses {miss:.1f} ({pct:.1f}%; user "
                   f"{d[7]:.1f} kernel {d[8]:.1f} modules {d[9]:.1f}) translated {ht:.2f} "
                   f"flushes {fl:.4f}")
    return out


def self_test():
    # Two vCPUs; markers 1-4. Run 1 (rnvme, 10 I/Os) between snapshots 1 and 2: lookups
    # (130+70)-(100+50) = 50 -> 5.0 per I/O, of them user 1, kernel 3, modules 1; misses 10
    # -> 1.0 (20.0%), user 0.2 kernel 0.5 modules 0.3; translated 0.2; flushes 0.1.
    # Run 2 (nvme, 4 I/Os) between snapshots 3 and 4: 8 lookups, all kernel -> 2 per I/O.
    log = """boot noise
qemu-jc cpu=0 lookups=100 jmiss=10 htmiss=5 flush=1 rl=20,60,20 rm=2,5,3
qemu-jc cpu=1 lookups=50 jmiss=5 htmiss=1 flush=0 rl=10,30,10 rm=1,2,2
qemu-jc cpu=0 lookups=130 jmiss=16 htmiss=6 flush=2 rl=25,80,25 rm=3,8,5
qemu-jc cpu=1 lookups=70 jmiss=9 htmiss=2 flush=0 rl=15,40,15 rm=2,4,3
fio-profile wl dev=rnvme ios=10 irqs=10 irqs_per_io=1.000 marker=1 smark=0
qemu-jc cpu=0 lookups=200 jmiss=20 htmiss=6 flush=2 rl=25,150,25 rm=3,12,5
qemu-jc cpu=1 lookups=70 jmiss=9 htmiss=2 flush=0 rl=15,40,15 rm=2,4,3
qemu-jc cpu=0 lookups=204 jmiss=20 htmiss=6 flush=2 rl=25,154,25 rm=3,12,5
qemu-jc cpu=1 lookups=74 jmiss=9 htmiss=2 flush=0 rl=15,44,15 rm=2,4,3
fio-profile wl dev=nvme ios=4 irqs=4 irqs_per_io=1.000 marker=3 smark=0
""".splitlines()
    got = report(*parse(log))
    want = [
        "fio-jc wl rnvme: ios 10 lookups 5 (user 1 kernel 3 modules 1) misses 1.0 (20.0%; user "
        "0.2 kernel 0.5 modules 0.3) translated 0.20 flushes 0.1000",
        "fio-jc wl nvme: ios 4 lookups 2 (user 0 kernel 2 modules 0) misses 0.0 (0.0%; user "
        "0.0 kernel 0.0 modules 0.0) translated 0.00 flushes 0.0000",
    ]
    if got != want:
        print("jump_cache self-test FAILED:\n got  " + "\n      ".join(got) + "\n want " +
              "\n      ".join(want), file=sys.stderr)
        return 1
    print(f"jump_cache self-test: {len(want)} runs as expected")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], errors="replace") as f:
        snaps, runs = parse(f)
    if not runs:
        sys.exit("jump_cache: no fio-profile lines in the log")
    for line in report(snaps, runs):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
