#!/usr/bin/env python3
"""Where the host's time went per guest I/O: QEMU's threads seen from the host (issue 9).

Under TCG a guest I/O costs host time in QEMU's vCPU threads (the emulated instructions, MMIO
exits, waits for QEMU's global lock), in its main loop (the NVMe device model, bottom halves,
MSI-X delivery) and in its thread-pool workers (the image file's reads and writes). The guest
cannot see the split: its system time is wall time of a vCPU, whatever the host did with it.
`scripts/profile-fio.sh --host-perf` records the host's `perf` system-wide (cpu-clock samples
and uprobes on QEMU functions, CLOCK_MONOTONIC timestamps) around the guest's boot, with
QEMU's trace stamped by the wall clock (`-msg timestamp=on`; `--clock-offset` is realtime -
monotonic). This script cuts both at the guest's run markers (reads of the controller's INTMS
register, `pci_nvme_mmio_read addr 0xc`) and prints, per run (driver and workload), divided by
the run's I/Os:

  host-profile <wl> <dev>: ios N wall W | vcpu V main M worker K | host-other O idle I
      µs per I/O: wall time; host CPU time of QEMU's vCPU threads, main loop and thread-pool
      workers; of every other host process; and the host CPUs' idle time (CPUs x wall minus
      all samples). Idle time left over means the host's CPUs were not what limited the run.
  host-profile-calls <wl> <dev> <calls/IO> <thread class> <QEMU function>   (uprobes)
  host-profile-sym <wl> <dev> <µs/IO> <thread class> <symbol>   (the hottest on-CPU symbols;
      TCG's generated code is `[tcg code]`, QEMU's functions without an exported symbol
      `[unknown qemu-system-x86_64]`)
  host-profile-diff <wl> <µs/IO rnvme - C> <thread class> <symbol>

Usage: host_profile.py --trace QEMU_TRACE --perf-script FILE --log GUEST_LOG --clock-offset S
           --period-us P --cpus N [--top N]
where FILE is `perf script -F pid,tid,comm,time,event,ip,sym,dso --ns` output.
"""

import argparse
import bisect
import collections
import re
import sys

TRACE_RE = re.compile(r"^(\d+)@(\d+)\.(\d+):pci_nvme_mmio_read addr 0xc ")


def thread_class(comm):
    """The kind of QEMU thread a thread name (QEMU's `-name debug-threads=on`) belongs to."""
    if comm.startswith("CPU ") and comm.endswith("/TCG"):
        return "vcpu"
    if comm.startswith("qemu-system"):
        return "main"
    if comm == "worker":
        return "worker"
    return "other"


def markers(trace_path, offset):
    """Timestamps (seconds, host CLOCK_MONOTONIC) of the guest's INTMS reads, in order."""
    out = []
    with open(trace_path, errors="replace") as f:
        for line in f:
            m = TRACE_RE.match(line)
            if m:
                out.append(int(m.group(2)) + int(m.group(3)) / 1e6 - offset)
    return out


def runs(log_path, marks):
    """(workload, driver, I/Os, start, end) per `fio-profile` line; marker m opens run m."""
    out = []
    with open(log_path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").strip()
            if not line.startswith("fio-profile "):
                continue
            fields = line.split()
            kv = dict(x.split("=", 1) for x in fields[2:] if "=" in x)
            m = int(kv["marker"])
            if m + 1 > len(marks):
                sys.exit(f"host_profile: marker {m} has no closing read in the trace")
            out.append((fields[1], kv["dev"], int(kv["ios"]), marks[m - 1], marks[m]))
    return out


def parse_perf(path):
    """Samples (time, tid, thread name, symbol), uprobe hits (time, tid, thread name, probe)
    and the thread ids of QEMU's process (the process with a `CPU n/TCG` thread)."""
    samples, events, pid_of = [], [], {}
    line_re = re.compile(r"^\s*(.+?)\s+(-?\d+)/(-?\d+)\s+(\d+\.\d+):\s+(\S+):\s*(.*)$")
    with open(path, errors="replace") as f:
        for line in f:
            m = line_re.match(line.rstrip("\n"))
            if not m:
                continue
            comm, pid, tid, t, ev, rest = m.groups()
            pid, tid = int(pid), int(tid)
            pid_of[tid] = pid
            if ev.startswith("probe_qemu:"):
                # A uprobe on a QEMU function: counted, not timed.
                events.append((float(t), tid, comm, ev.split(":", 1)[1]))
                continue
            if not ev.startswith("cpu-clock"):
                continue
            # `ip sym+off (dso)`: QEMU's static functions have no symbol (`[unknown]` in the
            # binary), TCG's generated code is in perf's JIT map file of the process.
            parts = rest.split(None, 1)
            sym = re.sub(r"\+0x[0-9a-f]+", "", parts[1] if len(parts) > 1 else "?").strip()
            if sym.startswith("[unknown]"):
                where = sym.rsplit("/", 1)[-1].rstrip(")")
                sym = "[tcg code]" if where.startswith("perf-") else f"[unknown {where}]"
            samples.append((float(t), tid, comm, sym))
    qemu_pids = {pid_of[tid] for _, tid, comm, _ in samples if thread_class(comm) == "vcpu"}
    samples.sort()
    events.sort()
    return samples, events, {t for t, p in pid_of.items() if p in qemu_pids}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--perf-script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--clock-offset", type=float, required=True)
    ap.add_argument("--period-us", type=float, required=True, help="cpu-clock sampling period")
    ap.add_argument("--cpus", type=int, required=True, help="the host's CPUs")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    rs = runs(a.log, markers(a.trace, a.clock_offset))
    samples, events, qemu_tids = parse_perf(a.perf_script)
    etimes = [e[0] for e in events]
    if not qemu_tids:
        sys.exit("host_profile: no QEMU vCPU thread in the perf data (-name debug-threads=on?)")
    stimes = [s[0] for s in samples]
    period = a.period_us * 1e-6
    per_sym = {}
    for wl, dev, ios, t0, t1 in rs:
        us = 1e6 / ios
        lo, hi = bisect.bisect_left(stimes, t0), bisect.bisect_right(stimes, t1)
        cls, cnt = collections.Counter(), collections.Counter()
        for _, tid, comm, sym in samples[lo:hi]:
            if tid == 0:
                cls["idle"] += 1
            elif tid in qemu_tids:
                c = thread_class(comm)
                cls[c] += 1
                cnt[(c, sym)] += 1
            else:
                cls["host-other"] += 1
        f = {k: v * period * us for k, v in cls.items()}
        # The idle task is sampled only where the host's timer still ticks in idle; what no
        # sample covers of CPUs x wall is idle too.
        idle = a.cpus * (t1 - t0) * us - sum(v for k, v in f.items() if k != "idle")
        print(f"host-profile {wl} {dev}: ios {ios} wall {(t1 - t0) * us:.1f} | vcpu {f.get('vcpu', 0):.1f} "
              f"main {f.get('main', 0):.1f} worker {f.get('worker', 0):.1f} other {f.get('other', 0):.1f} | "
              f"host-other {f.get('host-other', 0):.1f} idle {idle:.1f} (us/IO)")
        lo, hi = bisect.bisect_left(etimes, t0), bisect.bisect_right(etimes, t1)
        calls = collections.Counter(
            (thread_class(comm), probe) for _, tid, comm, probe in events[lo:hi] if tid in qemu_tids
        )
        for (c, probe), n in sorted(calls.items()):
            print(f"host-profile-calls {wl} {dev} {n / ios:.3f} {c} {probe}")
        d = {k: v * period * us for k, v in cnt.items()}
        per_sym[(wl, dev)] = d
        for (c, sym), v in sorted(d.items(), key=lambda kv: -kv[1])[: a.top]:
            print(f"host-profile-sym {wl} {dev} {v:.2f} {c} {sym}")
    for wl in dict.fromkeys(w for w, _, _, _, _ in rs):
        r, c = per_sym.get((wl, "rnvme")), per_sym.get((wl, "nvme"))
        if r is None or c is None:
            continue
        diff = sorted(((r.get(k, 0) - c.get(k, 0), k) for k in set(r) | set(c)), key=lambda x: -abs(x[0]))
        for v, (cl, sym) in diff[: a.top]:
            print(f"host-profile-diff {wl} {v:+.2f} {cl} {sym}")


if __name__ == "__main__":
    main()
