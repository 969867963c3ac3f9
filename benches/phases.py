#!/usr/bin/env python3
"""Both drivers' passthrough submit path and interrupt handler, phase by phase (issue 9).

Usage: benches/phases.py GUEST_LOG
       benches/phases.py --self-test

GUEST_LOG is the guest log of a `scripts/profile-fio.sh --phases` boot: rnvme.ko built with
RNVME_PHASES=1 (rnvme/driver/phases.rs) and the C driver built with the same timers
(scripts/build-c-nvme-phases.sh). After each run the guest prints both drivers' cumulative
counters (`fio-profile-phases <workload> dev=<d> c|rnvme name value ...`, rnvme once per
controller) and, once, the TSC rate (`fio-profile-tsc-khz`). Per run, the counters of the
driver that ran are differenced against its previous line, and printed as

  fio-phases <workload> dev=<d> ios <n>: entry <ns> alloc <ns> data <ns> exec <ns> submit <ns> \
      irq <ns>/io <ns>/call irqs/io <x> queue_rq <ns>/call sq <ns>/call doorbell <ns>/write \
      writes/call <x>

or, for a run without passthrough commands (block I/O), only the interrupt handler per call and
the doorbell per write, with their counts:

  fio-phases <workload> dev=<d> no passthrough I/O: irq <ns>/call calls <n> doorbell <ns>/write \
      writes <n>

(ns per timed I/O command; submit = the four phases; irq per I/O and per handler call; irqs/io
the handler calls per I/O command; queue_rq and its ring write and doorbell, sq, per call; one
MMIO SQ tail doorbell write, and the writes per queue_rq call).
"""
import re
import sys

C_NAMES = {"entry": "phase_entry", "alloc": "phase_alloc", "data": "phase_data",
           "exec": "phase_exec", "ios": "phase_ios", "irq": "phase_irq_cycles",
           "calls": "phase_irq_calls", "qrq": "phase_queue_rq_cycles",
           "qcalls": "phase_queue_rq_calls", "sq": "phase_sq_cycles",
           "db": "phase_doorbell_cycles", "dbw": "phase_doorbell_writes"}
R_NAMES = {"entry": "entry_cycles", "alloc": "alloc_cycles", "data": "data_cycles",
           "exec": "exec_cycles", "ios": "ios", "irq": "irq_cycles", "calls": "irq_calls",
           "qrq": "queue_rq_cycles", "qcalls": "queue_rq_calls", "sq": "sq_cycles",
           "db": "doorbell_cycles", "dbw": "doorbell_writes"}


def parse(lines):
    """(TSC kHz, [(workload, dev, {phase: cumulative value}) per run])."""
    khz = None
    runs = []
    for line in lines:
        m = re.match(r"fio-profile-tsc-khz (\d+)", line)
        if m:
            khz = int(m.group(1))
            continue
        m = re.match(r"fio-profile-phases (\S+) dev=(\S+) (c|rnvme) (.*)", line)
        if not m:
            continue
        wl, dev, who, rest = m.groups()
        if (dev == "nvme") != (who == "c"):
            continue  # the other driver's counters, unchanged by this run
        parts = rest.split()
        vals = dict(zip(parts[::2], (int(v) for v in parts[1::2])))
        names = C_NAMES if who == "c" else R_NAMES
        cur = {k: vals.get(n, 0) for k, n in names.items()}
        # rnvme prints one line per controller: a run's lines are summed.
        if runs and runs[-1][0] == wl and runs[-1][1] == dev and runs[-1][3]:
            for k, v in cur.items():
                runs[-1][2][k] += v
        else:
            runs.append([wl, dev, cur, who == "rnvme"])
    return khz, [(wl, dev, vals) for wl, dev, vals, _ in runs]


def report(khz, runs):
    """The fio-phases lines."""
    out = []
    prev = {}
    for wl, dev, cur in runs:
        last = prev.get(dev, {k: 0 for k in cur})
        d = {k: cur[k] - last[k] for k in cur}
        prev[dev] = cur
        if not khz:
            continue
        if d["ios"] <= 0:
            # No passthrough command (block I/O): the shared phases alone, per call and write.
            if d["calls"] > 0 or d["dbw"] > 0:
                per_call = d["irq"] * 1e6 / khz / d["calls"] if d["calls"] else 0.0
                db = d["db"] * 1e6 / khz / d["dbw"] if d["dbw"] else 0.0
                out.append(f"fio-phases {wl} dev={dev} no passthrough I/O: irq {per_call:.0f}/call "
                           f"calls {d['calls']} doorbell {db:.0f}/write writes {d['dbw']}")
            continue
        ns = {k: d[k] * 1e6 / khz / d["ios"] for k in ("entry", "alloc", "data", "exec", "irq")}
        submit = ns["entry"] + ns["alloc"] + ns["data"] + ns["exec"]
        per_call = d["irq"] * 1e6 / khz / d["calls"] if d["calls"] else 0.0
        qrq = d["qrq"] * 1e6 / khz / d["qcalls"] if d["qcalls"] else 0.0
        sq = d["sq"] * 1e6 / khz / d["qcalls"] if d["qcalls"] else 0.0
        db = d["db"] * 1e6 / khz / d["dbw"] if d["dbw"] else 0.0
        dbw = d["dbw"] / d["qcalls"] if d["qcalls"] else 0.0
        out.append(f"fio-phases {wl} dev={dev} ios {d['ios']}: entry {ns['entry']:.0f} "
                   f"alloc {ns['alloc']:.0f} data {ns['data']:.0f} exec {ns['exec']:.0f} "
                   f"submit {submit:.0f} irq {ns['irq']:.0f}/io {per_call:.0f}/call "
                   f"irqs/io {d['calls'] / d['ios']:.3f} queue_rq {qrq:.0f}/call sq {sq:.0f}/call "
                   f"doorbell {db:.0f}/write writes/call {dbw:.2f}")
    return out


def self_test():
    """Hand-computed figures: 2 GHz TSC (2,000,000 kHz: 2 cycles per ns)."""
    log = """fio-profile-tsc-khz 2000000
fio-profile-phases wl dev=rnvme c phase_alloc 0 phase_data 0 phase_entry 0 phase_exec 0 phase_ios 0 phase_irq_calls 0 phase_irq_cycles 0 phase_queue_rq_calls 0 phase_queue_rq_cycles 0 phase_sq_cycles 0 phase_doorbell_cycles 0 phase_doorbell_writes 0
fio-profile-phases wl dev=rnvme rnvme entry_cycles 2000 alloc_cycles 4000 data_cycles 6000 exec_cycles 8000 irq_cycles 10000 queue_rq_cycles 3000 sq_cycles 1000 doorbell_cycles 800 ios 1 irq_calls 2 queue_rq_calls 1 doorbell_writes 1
fio-profile-phases wl dev=rnvme rnvme entry_cycles 2000 alloc_cycles 4000 data_cycles 6000 exec_cycles 8000 irq_cycles 10000 queue_rq_cycles 3000 sq_cycles 1000 doorbell_cycles 800 ios 1 irq_calls 2 queue_rq_calls 1 doorbell_writes 1
fio-profile-phases wl dev=nvme c phase_alloc 3000 phase_data 1000 phase_entry 1000 phase_exec 9000 phase_ios 1 phase_irq_calls 1 phase_irq_cycles 5000 phase_queue_rq_calls 1 phase_queue_rq_cycles 4000 phase_sq_cycles 2000 phase_doorbell_cycles 1000 phase_doorbell_writes 1
fio-profile-phases wl dev=nvme rnvme entry_cycles 2000 alloc_cycles 4000 data_cycles 6000 exec_cycles 8000 irq_cycles 10000 queue_rq_cycles 3000 sq_cycles 1000 doorbell_cycles 800 ios 1 irq_calls 2 queue_rq_calls 1 doorbell_writes 1
fio-profile-phases blk dev=rnvme rnvme entry_cycles 2000 alloc_cycles 4000 data_cycles 6000 exec_cycles 8000 irq_cycles 10000 queue_rq_cycles 3000 sq_cycles 1000 doorbell_cycles 800 ios 1 irq_calls 2 queue_rq_calls 1 doorbell_writes 1
fio-profile-phases blk dev=rnvme rnvme entry_cycles 2000 alloc_cycles 4000 data_cycles 6000 exec_cycles 8000 irq_cycles 16000 queue_rq_cycles 3000 sq_cycles 1000 doorbell_cycles 2800 ios 1 irq_calls 4 queue_rq_calls 1 doorbell_writes 2
fio-profile-phases wl2 dev=nvme c phase_alloc 7000 phase_data 5000 phase_entry 5000 phase_exec 13000 phase_ios 3 phase_irq_calls 5 phase_irq_cycles 13000 phase_queue_rq_calls 3 phase_queue_rq_cycles 8000 phase_sq_cycles 2000 phase_doorbell_cycles 3000 phase_doorbell_writes 2
"""
    khz, runs = parse(log.splitlines())
    got = report(khz, runs)
    want = [
        # rnvme, two controllers summed: entry 4000 cycles / 2 ios / 2 cycles per ns = 1000 ns;
        # irq 20000 cycles: 5000 ns per I/O, 2500 per call (4 calls for 2 I/Os)
        "fio-phases wl dev=rnvme ios 2: entry 1000 alloc 2000 data 3000 exec 4000 submit 10000 "
        "irq 5000/io 2500/call irqs/io 2.000 queue_rq 1500/call sq 500/call "
        "doorbell 400/write writes/call 1.00",
        "fio-phases wl dev=nvme ios 1: entry 500 alloc 1500 data 500 exec 4500 submit 7000 "
        "irq 2500/io 2500/call irqs/io 1.000 queue_rq 2000/call sq 1000/call "
        "doorbell 500/write writes/call 1.00",
        # a block run, its second controller's counters grown: 6000 irq cycles over 2 calls,
        # 2000 doorbell cycles over 1 write, no passthrough command
        "fio-phases blk dev=rnvme no passthrough I/O: irq 1500/call calls 2 doorbell 1000/write "
        "writes 1",
        # the C driver's second run, differenced: 4000 cycles over 2 ios, 8000 over 4 calls
        "fio-phases wl2 dev=nvme ios 2: entry 1000 alloc 1000 data 1000 exec 1000 submit 4000 "
        "irq 2000/io 1000/call irqs/io 2.000 queue_rq 1000/call sq 0/call "
        "doorbell 1000/write writes/call 0.50",
    ]
    if got != want:
        sys.exit("phases self-test: FAIL\n" + "\n".join(got))
    print("phases self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) == 2:
        with open(sys.argv[1], errors="replace") as f:
            khz, runs = parse(f)
        if not khz:
            sys.exit("phases: no fio-profile-tsc-khz line in the log")
        for line in report(khz, runs):
            print(line)
    else:
        sys.exit(__doc__)
