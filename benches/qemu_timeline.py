#!/usr/bin/env python3
"""Per-I/O timeline of a QD1 fio run from QEMU's timestamped NVMe trace.

Usage: benches/qemu_timeline.py TRACE_LOG
       benches/qemu_timeline.py --self-test

TRACE_LOG is QEMU's `-D` log of a `scripts/profile-fio.sh --timeline` boot (`-msg timestamp=on`,
lines `TID@SECONDS:EVENT ARGS`). The guest test 62-fio-profile.sh reads the controller's INTMS
register (offset 0xc) before and after each fio run, so the trace splits into segments at those
reads; segment k (1-based, odd) is the run with `marker=k`.

Within a run each I/O queue command (one in flight: QD1) is a cycle of four or five events:
  SQ tail doorbell MMIO write (guest vCPU) -> `pci_nvme_io_cmd` (QEMU fetched the command) ->
  `pci_nvme_rw_cb` (the backend finished the read or write) -> `pci_nvme_irq_msix` (interrupt
  raised) -> [CQ head doorbell MMIO write (the guest's interrupt handler)] -> next SQ doorbell.
`msix->next_sq_db` is the guest's whole turn: interrupt, completion, the application, the next
submission up to its doorbell. The CQ head doorbell is optional: a driver that reports its CQ
head through the shadow doorbell (rnvme) writes it by MMIO only now and then, so
`msix->cq_db` and `cq_db->next_sq_db` are over the cycles that had one (`with_cq_db=N`).
Admin queue events (queue or vector 0) are ignored. Prints one line per run:
  timeline marker=K cycles=N skipped=S with_cq_db=N <interval> <median> [<p10>-<p90>] ...
(microseconds). A cycle with an event missing or out of order is skipped (counted as
`skipped`); the figures are meaningful only for QD1 workloads.
"""
import re
import statistics
import sys

LINE = re.compile(r"^(\d+)@([\d.]+):(\S+)\s?(.*)$")
STEPS = ["sq_db", "io_cmd", "rw_cb", "msix"]
NAMES = ["sq_db->io_cmd", "io_cmd->rw_cb", "rw_cb->msix", "msix->next_sq_db"]
CQ_NAMES = ["msix->cq_db", "cq_db->next_sq_db"]


def field(args, key):
    """The integer after `key` in a trace line's arguments, or None."""
    m = re.search(r"\b" + key + r" (\d+)", args)
    return int(m.group(1)) if m else None


def step_of(event, args):
    """Which cycle step an I/O queue event is, or None."""
    if event == "pci_nvme_mmio_doorbell_sq" and (field(args, "sqid") or 0) > 0:
        return "sq_db"
    if event == "pci_nvme_io_cmd" and (field(args, "sqid") or 0) > 0:
        return "io_cmd"
    if event == "pci_nvme_rw_cb":
        return "rw_cb"
    if event == "pci_nvme_irq_msix" and (field(args, "vector") or 0) > 0:
        return "msix"
    if event == "pci_nvme_mmio_doorbell_cq" and (field(args, "cqid") or 0) > 0:
        return "cq_db"
    return None


def pct(v, q):
    """The q-quantile of sorted list v (nearest rank)."""
    return v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))]


def summary(name, v):
    v = sorted(v)
    return f"{name} {statistics.median(v):.1f} [{pct(v, 0.1):.0f}-{pct(v, 0.9):.0f}]"


def report(seg, cycles, cq, skipped):
    """One run's line. cycles: per cycle the NAMES intervals and the whole cycle; cq: per cycle
    with a CQ head doorbell, the CQ_NAMES intervals."""
    if not cycles:
        return f"timeline marker={seg} cycles=0 skipped={skipped} with_cq_db=0"
    out = [f"timeline marker={seg} cycles={len(cycles)} skipped={skipped} with_cq_db={len(cq)}"]
    out += [summary(name, [c[i] for c in cycles]) for i, name in enumerate(NAMES + ["cycle"])]
    out += [summary(name, [c[i] for c in cq]) for i, name in enumerate(CQ_NAMES) if cq]
    return " ".join(out)


def close_cycle(cur, t, cycles, cq):
    """Adds the cycle `cur` (step -> time) that the SQ doorbell at `t` ended; False if it is
    incomplete or out of order."""
    times = [cur.get(s) for s in STEPS]
    if "bad" in cur or None in times or times != sorted(times):
        return False
    cycles.append([b - a for a, b in zip(times, times[1:])] + [t - times[-1], t - times[0]])
    c = cur.get("cq_db")
    if c is not None and times[-1] <= c <= t:
        cq.append([c - times[-1], t - c])
    return True


def timelines(lines):
    """The report line of every run in the trace `lines`."""
    out = []
    seg, inrun = 0, False
    cur, cycles, cq, skipped = {}, [], [], 0
    for line in lines:
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        t = float(m.group(2)) * 1e6
        event, args = m.group(3), m.group(4)
        if event == "pci_nvme_mmio_read" and args.startswith("addr 0xc "):
            if inrun:
                out.append(report(seg, cycles, cq, skipped))
            seg += 1
            inrun = seg % 2 == 1
            cur, cycles, cq, skipped = {}, [], [], 0
            continue
        if not inrun:
            continue
        step = step_of(event, args)
        if step is None:
            continue
        if step == "sq_db":
            if cur and not close_cycle(cur, t, cycles, cq):
                skipped += 1
            cur = {"sq_db": t}
        elif cur and step not in cur:
            cur[step] = t
        elif cur:
            # A second event of one step within a cycle: more than one command in flight.
            cur["bad"] = True
    if inrun:
        out.append(report(seg, cycles, cq, skipped))
    return out


def self_test():
    """A hand-made trace whose figures are known: three cycles, the second with a CQ head
    doorbell, the fourth incomplete (no interrupt)."""
    cmd = "pci_nvme_io_cmd cid 1 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'"
    t = [
        "1@10.000000:pci_nvme_mmio_read addr 0xc size 4",
        "2@10.000100:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 1",
        f"3@10.000120:{cmd}",
        "3@10.000170:pci_nvme_rw_cb cid 1 blk 'drive'",
        "3@10.000180:pci_nvme_irq_msix raising MSI-X IRQ vector 1",
        # admin queue: ignored
        "2@10.000190:pci_nvme_mmio_doorbell_sq sqid 0 new_tail 3",
        "2@10.000300:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 2",
        f"3@10.000330:{cmd}",
        "3@10.000390:pci_nvme_rw_cb cid 1 blk 'drive'",
        "3@10.000400:pci_nvme_irq_msix raising MSI-X IRQ vector 1",
        "2@10.000430:pci_nvme_mmio_doorbell_cq cqid 1 new_head 2",
        "2@10.000600:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 3",
        f"3@10.000610:{cmd}",
        "3@10.000680:pci_nvme_rw_cb cid 1 blk 'drive'",
        "3@10.000690:pci_nvme_irq_msix raising MSI-X IRQ vector 1",
        "2@10.000800:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 4",
        f"3@10.000820:{cmd}",
        "2@10.000900:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 5",
        "1@10.001000:pci_nvme_mmio_read addr 0xc size 4",
        # between runs: ignored
        "2@10.002000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 6",
    ]
    got = timelines(t)
    # cycles (sq_db->io_cmd, io_cmd->rw_cb, rw_cb->msix, msix->next_sq_db, cycle):
    # (20, 50, 10, 120, 200), (30, 60, 10, 200, 300), (10, 70, 10, 110, 200); medians 20, 60,
    # 10, 120, 200 (p10 and p90 by nearest rank: the smallest and largest of three); the
    # second cycle's CQ head doorbell: msix->cq_db 30, cq_db->next_sq_db 170.
    want = ["timeline marker=1 cycles=3 skipped=1 with_cq_db=1 sq_db->io_cmd 20.0 [10-30] "
            "io_cmd->rw_cb 60.0 [50-70] rw_cb->msix 10.0 [10-10] msix->next_sq_db 120.0 [110-200] "
            "cycle 200.0 [200-300] msix->cq_db 30.0 [30-30] cq_db->next_sq_db 170.0 [170-170]"]
    assert got == want, got
    print("qemu_timeline self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], errors="replace") as f:
        for line in timelines(f):
            print(line)


if __name__ == "__main__":
    main()
