#!/usr/bin/env python3
"""What the host's scheduler did with QEMU's main loop while the NVMe model stalled (issue 9).

Usage: benches/qemu_sched.py --trace TRACE --perf-script FILE --clock-offset SECONDS
       benches/qemu_sched.py --self-test

TRACE is QEMU's timestamped NVMe trace of `scripts/profile-fio.sh --timeline --host-perf`
(wall clock, `TID@SECONDS:EVENT ARGS`); FILE is `perf script -F comm,pid,tid,cpu,time,event,trace
--ns` of the host's `sched:sched_switch` and `sched:sched_wakeup` events recorded at the same
time (CLOCK_MONOTONIC); CLOCK_OFFSET is wall clock minus CLOCK_MONOTONIC. QEMU 7.2 runs the NVMe
model (command fetches, backend completions, interrupts) in its main-loop thread: the thread of
the trace's `pci_nvme_io_cmd` lines.

A stall is an MMIO SQ doorbell the device took more than 1 ms to react to (its first command
fetch on that queue, before the queue's next doorbell; `benches/qemu_batches.py`). For each,
the main loop's state at the doorbell (from its last scheduler event before it): running,
runnable (preempted, or woken and not yet on a CPU) or sleeping; if sleeping, when it was woken
after the doorbell; when it next got a CPU; and whether some host CPU was idle at the moment it
became runnable. Per run (segment k of the trace between the guest's INTMS reads, as
`benches/qemu_batches.py`):

  sched marker=K stalls=N running=.. runnable=.. sleeping_woken=.. sleeping_not_woken=.. \
      woken_after_us p50=.. cpu_after_us p50=.. p90=.. idle_cpu_when_runnable=..

`cpu_after_us` is the time from becoming runnable (the wakeup, or the doorbell if it was
runnable already) to getting a CPU; `idle_cpu_when_runnable` the fraction of those stalls in
which some host CPU ran its idle task at that moment.
"""
import argparse
import bisect
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_batches  # noqa: E402

SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=.*? prev_pid=(\d+) "
                    r"prev_prio=-?\d+ prev_state=(\S+) ==> next_comm=.*? next_pid=(\d+)")
WAKEUP = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_wakeup: comm=.*? pid=(\d+) prio=-?\d+ "
                    r"target_cpu=(\d+)")
TID = re.compile(r"^(\d+)@[\d.]+:pci_nvme_io_cmd ")


def parse_sched(lines):
    """Scheduler events, time-ordered: (time, kind, tid, cpu, prev_state)."""
    ev = []
    for line in lines:
        m = SWITCH.search(line)
        if m:
            cpu, t = int(m.group(1)), float(m.group(2))
            ev.append((t, "out", int(m.group(3)), cpu, m.group(4)))
            ev.append((t, "in", int(m.group(5)), cpu, None))
            continue
        m = WAKEUP.search(line)
        if m:
            ev.append((float(m.group(2)), "wake", int(m.group(3)), int(m.group(4)), None))
    ev.sort(key=lambda e: (e[0], e[1] != "out"))
    return ev


def stalls_of(events, limit=1e-3):
    """(doorbell time, first fetch time) of each doorbell reacted to after more than `limit`."""
    return [(t, f) for t, f, _ in qemu_batches.batches(events) if f is not None and f - t > limit]


class Sched:
    """Scheduler events with lookups by time."""

    def __init__(self, ev):
        self.ev = ev
        self.times = [e[0] for e in ev]

    def last_of(self, tid, t):
        i = bisect.bisect_right(self.times, t) - 1
        while i >= 0:
            if self.ev[i][2] == tid:
                return self.ev[i]
            i -= 1
        return None

    def next_of(self, tid, kind, t0, t1):
        i = bisect.bisect_right(self.times, t0)
        while i < len(self.ev) and self.ev[i][0] <= t1:
            e = self.ev[i]
            if e[2] == tid and e[1] == kind:
                return e[0]
            i += 1
        return None

    def idle_cpu_at(self, t, cpus):
        """Whether some CPU of `cpus` ran its idle task (pid 0) at `t`, as far as seen."""
        cur = {}
        i = bisect.bisect_right(self.times, t) - 1
        while i >= 0 and len(cur) < len(cpus):
            e = self.ev[i]
            if e[1] == "in" and e[3] not in cur:
                cur[e[3]] = e[2]
            i -= 1
        return any(tid == 0 for tid in cur.values())


def analyse(stalls, sched, tid, offset, cpus):
    """The figures of one run's stalls (QEMU wall-clock times; `offset` = wall - monotonic)."""
    c = collections.Counter()
    woken_after, cpu_after, idle = [], [], 0
    for t0w, t1w in stalls:
        t0, t1 = t0w - offset, t1w - offset
        last = sched.last_of(tid, t0)
        if last is None:
            c["unknown"] += 1
            continue
        if last[1] == "in":
            c["running"] += 1
            continue
        if last[1] == "wake" or last[4] in ("R", "R+"):
            c["runnable"] += 1
            ready = t0
        else:
            wake = sched.next_of(tid, "wake", t0, t1)
            if wake is None:
                c["sleeping_not_woken"] += 1
                continue
            c["sleeping_woken"] += 1
            woken_after.append((wake - t0) * 1e6)
            ready = wake
        run = sched.next_of(tid, "in", ready, t1 + 1.0)
        if run is not None:
            cpu_after.append((run - ready) * 1e6)
        if sched.idle_cpu_at(ready + 1e-9, cpus):
            idle += 1
    runnable = c["runnable"] + c["sleeping_woken"]
    return {
        "stalls": len(stalls),
        "counts": c,
        "woken_after_p50": qemu_batches.quantile(woken_after, 0.5),
        "cpu_after_p50": qemu_batches.quantile(cpu_after, 0.5),
        "cpu_after_p90": qemu_batches.quantile(cpu_after, 0.9),
        "idle_cpu": idle / runnable if runnable else float("nan"),
    }


def line(seg, a):
    c = a["counts"]
    return (f"sched marker={seg} stalls={a['stalls']} running={c['running']} "
            f"runnable={c['runnable']} sleeping_woken={c['sleeping_woken']} "
            f"sleeping_not_woken={c['sleeping_not_woken']} "
            f"woken_after_us p50={a['woken_after_p50']:.0f} cpu_after_us p50={a['cpu_after_p50']:.0f} "
            f"p90={a['cpu_after_p90']:.0f} idle_cpu_when_runnable={a['idle_cpu']:.2f}")


def run(trace_lines, sched_lines, offset):
    tid = next((int(m.group(1)) for m in map(TID.match, trace_lines) if m), None)
    if tid is None:
        return []
    sched = Sched(parse_sched(sched_lines))
    cpus = {e[3] for e in sched.ev}
    return [line(seg, analyse(stalls_of(ev), sched, tid, offset, cpus))
            for seg, ev in qemu_batches.runs(trace_lines)]


def self_test():
    """Hand-made input whose figures are known. Wall clock = monotonic + 1000 s; main loop 7."""
    trace = [
        "5@1010.000000:pci_nvme_mmio_read addr 0xc size 4",
        # stall 1: doorbell at 10.0010, main loop asleep, woken 20 us later, on a CPU 1.5 ms
        # after that (CPU 1 idle at the wakeup), fetch at 10.0030
        "5@1010.001000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 1",
        "7@1010.003000:pci_nvme_io_cmd cid 1 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        # prompt: 30 us (no stall)
        "5@1010.004000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 2",
        "7@1010.004030:pci_nvme_io_cmd cid 2 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        # stall 2: the main loop was preempted (runnable) at the doorbell; a CPU 2 ms later
        "5@1010.005000:pci_nvme_mmio_doorbell_sq sqid 2 new_tail 1",
        "7@1010.007100:pci_nvme_io_cmd cid 3 nsid 0x1 sqid 2 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "5@1010.008000:pci_nvme_mmio_read addr 0xc size 4",
    ]
    sw = "{c} {p}/{p} [00{cpu}] {t:.9f}:       sched:sched_switch: prev_comm={c} prev_pid={p} " \
         "prev_prio=120 prev_state={st} ==> next_comm={nc} next_pid={n} next_prio=120"
    wk = "{c} {p}/{p} [00{cpu}] {t:.9f}:       sched:sched_wakeup: comm={wc} pid={w} prio=120 " \
         "target_cpu=00{cpu}"
    sched = [
        # CPU 0 runs vCPU 11; CPU 1 runs the main loop 7, which sleeps at 9.9995 (CPU 1 idle)
        sw.format(c="x", p=3, cpu=0, t=9.9990, st="S", nc="cpu0", n=11),
        sw.format(c="x", p=4, cpu=1, t=9.9991, st="S", nc="main", n=7),
        sw.format(c="main", p=7, cpu=1, t=9.9995, st="S", nc="swapper", n=0),
        # woken at 10.00102 onto CPU 0, runs at 10.00252
        wk.format(c="cpu0", p=11, cpu=0, t=10.00102, wc="main", w=7),
        sw.format(c="cpu0", p=11, cpu=0, t=10.00252, st="R", nc="main", n=7),
        # preempted at 10.0049 (runnable), CPU 1 busy with vCPU 12 from 10.0048
        sw.format(c="swapper", p=0, cpu=1, t=10.0048, st="R", nc="cpu1", n=12),
        sw.format(c="main", p=7, cpu=0, t=10.0049, st="R", nc="cpu0", n=11),
        sw.format(c="cpu0", p=11, cpu=0, t=10.0070, st="R", nc="main", n=7),
    ]
    out = run(trace, sched, 1000.0)
    want = ["sched marker=1 stalls=2 running=0 runnable=1 sleeping_woken=1 sleeping_not_woken=0 "
            "woken_after_us p50=20 cpu_after_us p50=1500 p90=2000 idle_cpu_when_runnable=0.50"]
    assert out == want, out
    print("qemu_sched self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--perf-script", required=True)
    ap.add_argument("--clock-offset", type=float, required=True)
    a = ap.parse_args()
    with open(a.trace, errors="replace") as t, open(a.perf_script, errors="replace") as p:
        for out in run(t.readlines(), p, a.clock_offset):
            print(out)


if __name__ == "__main__":
    main()
