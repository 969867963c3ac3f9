#!/usr/bin/env python3
"""What QEMU's vCPU threads do per guest I/O, by call chain: on and off their host CPU (issue 9).

Needs a QEMU with frame pointers and symbols (`scripts/build-qemu-debug.sh`; Debian's binary
is stripped, so its chains end in `[unknown]`). `scripts/profile-fio.sh --host-perf` with
RNVME_HOST_CHAINS=1 records the host's cpu-clock samples and `sched_switch` events with call
chains (`perf record -g`); this script cuts them at the guest's run markers as
benches/host_profile.py does and prints per run, in µs per I/O of the vCPU threads:

  host-vcpu-on <wl> <dev>: mmio-write W mmio-read R lookup L translate T interrupt I other O
      on the CPU: in an MMIO write (`io_writex`: the device model's register write, the
      global lock taken), an MMIO read, the jump-cache lookup after a return, an indirect
      branch or a branch to another page (`helper_lookup_tb_ptr`, with the hash-table walk of
      a miss), translation (`tb_gen_code`), interrupt delivery, and everything else (the
      translated code itself and the memory-access helpers)
  host-vcpu-off <wl> <dev>: lock-mmio A lock-other B preempted-mmio C preempted-other D
      off the CPU: waiting for QEMU's global lock in an MMIO access or elsewhere, preempted
      (runnable, not running) in an MMIO access or elsewhere; a halted vCPU's sleep is left out

Usage: qemu_vcpu_chains.py --trace QEMU_TRACE --perf-script FILE --log GUEST_LOG
           --clock-offset S --period-us P
       qemu_vcpu_chains.py --self-test
where FILE is `perf script -F comm,pid,tid,time,event,trace,ip,sym --ns` output.
"""

import argparse
import bisect
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_profile  # noqa: E402  (markers and runs: the same cut as the host profile's)

HDR_RE = re.compile(r"^(\S.*?)\s+(-?\d+)/(-?\d+)\s+(\d+\.\d+):\s+(?:\d+\s+)?(\S+?):?(?:\s+(.*))?$")
SWITCH_RE = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
MMIO = ("io_writex", "io_readx")
ON_KINDS = ("mmio-write", "mmio-read", "lookup", "translate", "interrupt", "other")
OFF_KINDS = ("lock-mmio", "lock-other", "preempted-mmio", "preempted-other")


def is_vcpu(comm):
    return comm.startswith("CPU ") and comm.endswith("/TCG")


def on_kind(chain):
    """The class of an on-CPU sample by the QEMU functions on its stack."""
    if "io_writex" in chain:
        return "mmio-write"
    if "io_readx" in chain:
        return "mmio-read"
    if "helper_lookup_tb_ptr" in chain:
        return "lookup"
    if "tb_gen_code" in chain:
        return "translate"
    if "cpu_handle_interrupt" in chain or "x86_cpu_exec_interrupt" in chain:
        return "interrupt"
    return "other"


def off_kind(state, chain):
    """The class of a switch-out of a vCPU thread, or None for a halted vCPU's sleep."""
    mmio = any(f in chain for f in MMIO)
    if state.startswith("R"):
        return "preempted-mmio" if mmio else "preempted-other"
    if "qemu_mutex_lock_iothread_impl" in chain:
        return "lock-mmio" if mmio else "lock-other"
    return None


def parse(lines):
    """On-CPU samples (time, kind) and off-CPU intervals (start, end, kind) of vCPU threads."""
    samples, switches = [], []
    cur = None

    def done():
        if cur is None:
            return
        kind, t, info, chain = cur
        frames = set(chain)
        if kind == "sample":
            samples.append((t, on_kind(frames)))
        else:
            switches.append((t, info, frames))

    for line in lines:
        if line.startswith(("\t", " ")) and line.strip():
            if cur is not None:
                parts = line.split(None, 1)
                if len(parts) == 2:
                    cur[3].append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0].strip()))
            continue
        m = HDR_RE.match(line.rstrip("\n"))
        if not m:
            continue
        done()
        cur = None
        comm, _pid, _tid, t, ev, rest = m.groups()
        if ev.startswith("cpu-clock") and is_vcpu(comm):
            cur = ("sample", float(t), None, [])
        elif ev == "sched:sched_switch":
            s = SWITCH_RE.search(rest)
            if s:
                cur = ("switch", float(t), (s.group(1), int(s.group(2)), s.group(3), int(s.group(5))), [])
    done()
    # Off-CPU intervals: from a vCPU thread's switch-out to its next switch-in.
    out, iv = {}, []
    for t, (pcomm, prev, state, nxt), frames in sorted(switches, key=lambda x: x[0]):
        if nxt in out:
            t0, k = out.pop(nxt)
            if k is not None:
                iv.append((t0, t, k))
        if is_vcpu(pcomm):
            out[prev] = (t, off_kind(state, frames))
    samples.sort()
    iv.sort()
    return samples, iv


def report(runs, samples, iv, period_us):
    st = [s[0] for s in samples]
    it = [x[0] for x in iv]
    lines = []
    for wl, dev, ios, t0, t1 in runs:
        on = collections.Counter(k for _, k in samples[bisect.bisect_left(st, t0):bisect.bisect_right(st, t1)])
        off = collections.Counter()
        for a, b, k in iv[bisect.bisect_left(it, t0):bisect.bisect_right(it, t1)]:
            off[k] += min(b, t1) - a
        lines.append(f"host-vcpu-on {wl} {dev}: " +
                     " ".join(f"{k} {on[k] * period_us / ios:.2f}" for k in ON_KINDS))
        lines.append(f"host-vcpu-off {wl} {dev}: " +
                     " ".join(f"{k} {off[k] * 1e6 / ios:.2f}" for k in OFF_KINDS))
    return lines


def self_test():
    # One run of 2 I/Os from t=10 to t=20 (host_profile's runs, given directly). vCPU thread
    # 11: on-CPU samples (250 µs each) in an MMIO write, a lookup, translated code; off the CPU
    # waiting for the global lock in an MMIO write from 11.0 to 11.000010 s (10 µs), preempted
    # elsewhere from 12.0 to 12.000004 s (4 µs), halted from 13 to 15 s (left out). A sample
    # of another process and one outside the run are ignored.
    text = """CPU 0/TCG 10/11 10.5: 250000 cpu-clock:ppp:
\t55 helper_le_stl_mmu+0x1 (/q)
\t56 io_writex+0x2 (/q)
\t57 [unknown] (/tmp/perf-10.map)

CPU 0/TCG 10/11 10.6: 250000 cpu-clock:ppp:
\t55 qht_lookup_custom+0x1 (/q)
\t56 helper_lookup_tb_ptr+0x2 (/q)

CPU 0/TCG 10/11 10.7: 250000 cpu-clock:ppp:
\t57 [unknown] (/tmp/perf-10.map)

bash 99/99 10.8: 250000 cpu-clock:ppp:
\t57 main (/bin/bash)

CPU 0/TCG 10/11 30.0: 250000 cpu-clock:ppp:
\t56 io_writex+0x2 (/q)

CPU 0/TCG 10/11 11.000000: sched:sched_switch: prev_comm=CPU 0/TCG prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffff1 __schedule (k)
\t55 __lll_lock_wait (/libc)
\t56 qemu_mutex_lock_iothread_impl+0x1 (/q)
\t57 prepare_mmio_access (/q)
\t58 io_writex+0x3 (/q)

swapper 0/0 11.000010: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG next_pid=11 next_prio=120
\tffff1 __schedule (k)

CPU 0/TCG 10/11 12.000000: sched:sched_switch: prev_comm=CPU 0/TCG prev_pid=11 prev_prio=120 prev_state=R+ ==> next_comm=qemu-system-x86 next_pid=10 next_prio=120
\tffff1 __schedule (k)
\t57 [unknown] (/tmp/perf-10.map)

qemu-system-x86 10/10 12.000004: sched:sched_switch: prev_comm=qemu-system-x86 prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=CPU 0/TCG next_pid=11 next_prio=120
\tffff1 __schedule (k)

CPU 0/TCG 10/11 13.0: sched:sched_switch: prev_comm=CPU 0/TCG prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\t55 qemu_cond_wait_impl (/q)

swapper 0/0 15.0: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG next_pid=11 next_prio=120
"""
    samples, iv = parse(text.splitlines(True))
    got = report([("wl", "rnvme", 2, 10.0, 20.0)], samples, iv, 250.0)
    want = [
        "host-vcpu-on wl rnvme: mmio-write 125.00 mmio-read 0.00 lookup 125.00 translate 0.00 "
        "interrupt 0.00 other 125.00",
        "host-vcpu-off wl rnvme: lock-mmio 5.00 lock-other 0.00 preempted-mmio 0.00 "
        "preempted-other 2.00",
    ]
    if got != want:
        print("qemu_vcpu_chains self-test FAILED:\n got  " + "\n      ".join(got) +
              "\n want " + "\n      ".join(want), file=sys.stderr)
        return 1
    print("qemu_vcpu_chains self-test: on- and off-CPU classes as expected")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--perf-script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--clock-offset", type=float, required=True)
    ap.add_argument("--period-us", type=float, required=True)
    a = ap.parse_args()
    runs = host_profile.runs(a.log, host_profile.markers(a.trace, a.clock_offset))
    with open(a.perf_script, errors="replace") as f:
        samples, iv = parse(f)
    for line in report(runs, samples, iv, a.period_us):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
