#!/usr/bin/env python3
"""Submission batches as QEMU's NVMe device saw them, from its timestamped trace (issue 9).

Usage: benches/qemu_batches.py TRACE_LOG
       benches/qemu_batches.py --self-test

TRACE_LOG is QEMU's `-D` log of a `scripts/profile-fio.sh --timeline` boot (`-msg timestamp=on`,
lines `TID@SECONDS:EVENT ARGS`), split into runs at the guest's INTMS reads as
`benches/qemu_timeline.py` does (segment k, 1-based and odd, is the run with `marker=k`).

With shadow doorbells (Doorbell Buffer Config) a driver writes the MMIO SQ tail doorbell only
when the device's event index asks for it, that is when the device had fetched everything
before; commands written while the device is still fetching are picked up without one. So per
I/O queue, the commands fetched (`pci_nvme_io_cmd`) between two MMIO doorbell writes
(`pci_nvme_mmio_doorbell_sq`) are one submission batch as the device took it. Prints per run:

  batches marker=K ios=N sq_mmio_per_io=X irq_per_io=Y batch_mean=B \
      share 0=.. 1=.. 2=.. 3-4=.. 5+=.. ios_in 5+=.. react_us p50=.. p90=.. stalls_1ms=..

`share` is the fraction of doorbells by batch size (0: the queue's next doorbell came before the
device fetched anything, or the device had already fetched what the doorbell announced), `ios_in
5+` the fraction of I/Os that went in batches of 5 or more, `react_us` the time from a doorbell
to the device's first fetch after it (only for doorbells followed by a fetch before the queue's
next doorbell), `stalls_1ms` the doorbells the device took more than 1 ms to react to.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qemu_timeline import LINE, field, pct  # noqa: E402


def runs(lines):
    """Per run (odd INTMS segment), its I/O queue events as (time, kind, queue)."""
    out, cur, seg = [], None, 0
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        t, ev, args = float(m.group(2)), m.group(3), m.group(4)
        if ev == "pci_nvme_mmio_read" and re.search(r"\baddr 0xc\b", args):
            seg += 1
            cur = [] if seg % 2 == 1 else None
            if cur is not None:
                out.append((seg, cur))
            continue
        if cur is None:
            continue
        if ev == "pci_nvme_mmio_doorbell_sq" and (field(args, "sqid") or 0) > 0:
            cur.append((t, "db", field(args, "sqid")))
        elif ev == "pci_nvme_io_cmd" and (field(args, "sqid") or 0) > 0:
            cur.append((t, "cmd", field(args, "sqid")))
        elif ev == "pci_nvme_irq_msix" and (field(args, "vector") or 0) > 0:
            cur.append((t, "irq", field(args, "vector")))
    return out


def quantile(v, q):
    """Nearest-rank q-quantile of v (nan if empty)."""
    return pct(sorted(v), q) if v else float("nan")


def batches(events):
    """Per MMIO SQ doorbell, in time order: (doorbell time, time of the device's first fetch
    on that queue before the queue's next doorbell or None, commands fetched in that span)."""
    out, open_ = [], {}  # queue -> index into out
    for t, kind, q in sorted(events):
        if kind == "db":
            open_[q] = len(out)
            out.append([t, None, 0])
        elif kind == "cmd" and q in open_:
            b = out[open_[q]]
            if b[1] is None:
                b[1] = t
            b[2] += 1
    return [tuple(b) for b in out]


def analyse(events):
    """The batch figures of one run's events."""
    ios = sum(1 for e in events if e[1] == "cmd")
    irqs = sum(1 for e in events if e[1] == "irq")
    bs = batches(events)
    dbs = len(bs)
    sizes = [n for _, _, n in bs]
    react = [(f - t) * 1e6 for t, f, _ in bs if f is not None]
    buckets = {"0": 0, "1": 0, "2": 0, "3-4": 0, "5+": 0}
    for n in sizes:
        buckets["0" if n == 0 else "1" if n == 1 else "2" if n == 2 else "3-4" if n <= 4 else "5+"] += 1
    big = sum(n for n in sizes if n >= 5)
    return {
        "ios": ios,
        "sq_mmio_per_io": dbs / ios if ios else float("nan"),
        "irq_per_io": irqs / ios if ios else float("nan"),
        "batch_mean": sum(sizes) / len(sizes) if sizes else float("nan"),
        "share": {k: (v / len(sizes) if sizes else float("nan")) for k, v in buckets.items()},
        "ios_in_5plus": big / ios if ios else float("nan"),
        "react_p50": quantile(react, 0.5),
        "react_p90": quantile(react, 0.9),
        "stalls_1ms": sum(1 for r in react if r > 1000),
    }


def line(seg, a):
    share = " ".join(f"{k}={v:.3f}" for k, v in a["share"].items())
    return (f"batches marker={seg} ios={a['ios']} sq_mmio_per_io={a['sq_mmio_per_io']:.3f} "
            f"irq_per_io={a['irq_per_io']:.3f} batch_mean={a['batch_mean']:.2f} share {share} "
            f"ios_in 5+={a['ios_in_5plus']:.3f} react_us p50={a['react_p50']:.0f} "
            f"p90={a['react_p90']:.0f} stalls_1ms={a['stalls_1ms']}")


def self_test():
    """A hand-made trace whose figures are known."""
    t = [
        "1@10.000000:pci_nvme_mmio_read addr 0xc size 4",
        # queue 1: doorbell, fetch 20 us later (batch 1)
        "2@10.000100:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 1",
        "3@10.000120:pci_nvme_io_cmd cid 1 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.000130:pci_nvme_irq_msix raising MSI-X IRQ vector 1",
        # queue 1: doorbell, the device stalls 2 ms, then fetches 5 (batch 5)
        "2@10.001000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 2",
        "3@10.003000:pci_nvme_io_cmd cid 2 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.003010:pci_nvme_io_cmd cid 3 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.003020:pci_nvme_io_cmd cid 4 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.003030:pci_nvme_io_cmd cid 5 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.003040:pci_nvme_io_cmd cid 6 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.003050:pci_nvme_irq_msix raising MSI-X IRQ vector 1",
        # admin queue events are ignored
        "2@10.003100:pci_nvme_mmio_doorbell_sq sqid 0 new_tail 3",
        "3@10.003110:pci_nvme_irq_msix raising MSI-X IRQ vector 0",
        # queue 2: two doorbells before any fetch (batch 0), then one fetch (batch 1)
        "2@10.004000:pci_nvme_mmio_doorbell_sq sqid 2 new_tail 1",
        "2@10.004010:pci_nvme_mmio_doorbell_sq sqid 2 new_tail 2",
        "3@10.004050:pci_nvme_io_cmd cid 7 nsid 0x1 sqid 2 opc 0x2 opname 'NVME_NVM_CMD_READ'",
        "3@10.004060:pci_nvme_irq_msix raising MSI-X IRQ vector 2",
        "1@10.005000:pci_nvme_mmio_read addr 0xc size 4",
        # between runs: ignored
        "2@10.006000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 3",
    ]
    (seg, ev), = runs(t)
    a = analyse(ev)
    assert seg == 1, seg
    assert a["ios"] == 7, a
    assert abs(a["sq_mmio_per_io"] - 4 / 7) < 1e-9, a
    assert abs(a["irq_per_io"] - 3 / 7) < 1e-9, a
    assert a["share"] == {"0": 0.25, "1": 0.5, "2": 0.0, "3-4": 0.0, "5+": 0.25}, a
    assert abs(a["batch_mean"] - 7 / 4) < 1e-9, a
    assert abs(a["ios_in_5plus"] - 5 / 7) < 1e-9, a
    # reactions: 20 us, 2000 us, 40 us (the second doorbell of queue 2 reopened its batch)
    assert round(a["react_p50"]) == 40 and round(a["react_p90"]) == 2000, a
    assert a["stalls_1ms"] == 1, a
    print("qemu_batches self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], errors="replace") as f:
        for seg, ev in runs(f):
            print(line(seg, analyse(ev)))


if __name__ == "__main__":
    main()
