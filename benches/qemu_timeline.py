#!/usr/bin/env python3
"""Per-I/O timeline of a QD1 fio run from QEMU's timestamped NVMe trace.

Usage: benches/qemu_timeline.py TRACE_LOG

TRACE_LOG is QEMU's `-D` log of a `scripts/profile-fio.sh --timeline` boot (`-msg timestamp=on`,
lines `TID@SECONDS:EVENT ARGS`). The guest test 62-fio-profile.sh reads the controller's INTMS
register (offset 0xc) before and after each fio run, so the trace splits into segments at those
reads; segment k (1-based, odd) is the run with `marker=k`.

Within a run each I/O queue command (one in flight: QD1) is a cycle of five events:
  SQ tail doorbell MMIO write (guest vCPU) -> `pci_nvme_io_cmd` (QEMU fetched the command) ->
  `pci_nvme_rw_cb` (the backend finished the read or write) -> `pci_nvme_irq_msix` (interrupt
  raised) -> CQ head doorbell MMIO write (the guest's interrupt handler) -> next SQ doorbell.
The last interval is the guest's completion, the application's turn and the next submission.
Admin queue events (queue or vector 0) are ignored. Prints one line per run:
  timeline marker=K cycles=N <interval> <median> [<p10>-<p90>] ... (microseconds)
A cycle with an event missing or out of order is skipped (counted as `skipped`); the figures are
meaningful only for QD1 workloads.
"""
import re
import statistics
import sys

LINE = re.compile(r"^(\d+)@([\d.]+):(\S+)\s?(.*)$")
STEPS = ["sq_db", "io_cmd", "rw_cb", "msix", "cq_db"]
NAMES = ["sq_db->io_cmd", "io_cmd->rw_cb", "rw_cb->msix", "msix->cq_db", "cq_db->next_sq_db"]


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


def report(seg, cycles, skipped):
    if not cycles:
        print(f"timeline marker={seg} cycles=0 skipped={skipped}")
        return
    out = [f"timeline marker={seg} cycles={len(cycles)} skipped={skipped}"]
    for i, name in enumerate(NAMES + ["cycle"]):
        v = sorted(c[i] for c in cycles)
        out.append(f"{name} {statistics.median(v):.1f} [{pct(v, 0.1):.0f}-{pct(v, 0.9):.0f}]")
    print(" ".join(out))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    seg, inrun = 0, False
    cur, cycles, skipped = {}, [], 0
    with open(sys.argv[1], errors="replace") as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            t = float(m.group(2)) * 1e6
            event, args = m.group(3), m.group(4)
            if event == "pci_nvme_mmio_read" and args.startswith("addr 0xc "):
                if inrun:
                    report(seg, cycles, skipped)
                seg += 1
                inrun = seg % 2 == 1
                cur, cycles, skipped = {}, [], 0
                continue
            if not inrun:
                continue
            step = step_of(event, args)
            if step is None:
                continue
            if step == "sq_db":
                if cur:
                    times = [cur.get(s) for s in STEPS]
                    if "bad" in cur or None in times or times != sorted(times):
                        skipped += 1
                    else:
                        d = [b - a for a, b in zip(times, times[1:])] + [t - times[-1]]
                        cycles.append(d + [t - times[0]])
                cur = {"sq_db": t}
            elif cur and step not in cur:
                cur[step] = t
            elif cur:
                # A second event of one step within a cycle: more than one command in flight.
                cur["bad"] = True
    if inrun:
        report(seg, cycles, skipped)


if __name__ == "__main__":
    main()
