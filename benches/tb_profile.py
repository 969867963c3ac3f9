#!/usr/bin/env python3
"""Guest instructions per I/O by function, from the tbcount QEMU plugin (issue 9).

`scripts/profile-fio.sh --insns` boots the profile guest with `benches/qemu-plugin/tbcount.c`
loaded into QEMU; the guest (`tests/qemu/guest-tests/62-fio-profile.sh`,
`rnvme_prof_sync_marks=1 rnvme_prof_ios=N`) runs each fio workload on each driver for exactly N
I/Os between two `sync` calls, and the plugin writes, at each sync, the instructions executed
since the previous one, by translation-block start address. This script names the addresses
(the kernel's System.map, the modules' symbols the guest printed) and prints per run:

  fio-insns <workload> dev=<d>: ios <n>, instructions per I/O: kernel <k> (modules <m>), user <u>
  fio-insns-sym <workload> dev=<d> <instructions per I/O> <symbol>      (hottest first)
  fio-insns-diff <workload> <symbol> rnvme <a> c <b> diff <a - b>       (largest |diff| first)

Every instruction the emulated CPUs executed is counted, whatever the context (hard interrupt
handlers and interrupts-off sections too, which a cpu-clock profile cannot sample), so two
drivers doing the same N I/Os can be compared function by function. Instructions, not time:
under TCG an MMIO access or a locked instruction costs far more than an add.

With --info (the plugin's info= file: per translated block its memory-operand instructions
and its last instruction), also per run and mode (kernel, user, and each module apart: `[rnvme]`,
`[nvme]`, ... for the blocks in the module's own functions), per I/O:

  fio-insns-tb <workload> dev=<d> <mode>: blocks <b> insns <i> memops <m> ends <class>=<n> ...

Block ends by class: `ret`; direct `call`/`jmp`/`jcc` to the same guest page as the block
(`-page`) or another (`-xpage`: QEMU 7.2 chains translated blocks only within a page, so these
leave the translated code for a jump-cache lookup, as `ret` and `indirect` do); `irqon`
(sti, popf: TCG leaves the translated code to look for interrupts), `sys` (syscall, sysret,
iret, swapgs, wrmsr, rdmsr, mov to a control register, hlt, pause, rdtsc, port I/O), `other`
(a block cut by a page end or the block size limit). A module's `jcc-xpage` and `jmp-xpage`
ends are mostly jumps inside one of its functions across a page boundary: where the linker put
the code, not what the code does. And by function, the block ends after
which QEMU looks the next block up in the vCPU's jump cache (`ret`, `indirect`, `*-xpage`; a
miss there costs a hash-table lookup and a code-TLB probe):
  fio-exits <workload> dev=<d>: ios <n>, block ends with a jump-cache lookup per I/O: kernel <k>
      (modules <m>), user <u>
  fio-exits-sym / fio-exits-diff                                          (as for fio-insns)

  python3 benches/tb_profile.py --dump D --system-map S --log L [--info I] [--top N] [--diff-top N]
  python3 benches/tb_profile.py --self-test
"""

import argparse
import bisect
import collections
import re
import sys

KERNEL_START = 0xFFFF800000000000


class Symbols:
    """Address -> function name, from System.map and /proc/kallsyms-style lines."""

    def __init__(self):
        self.entries = []  # (addr, name)

    def add(self, addr, kind, name, module=None):
        if kind.lower() not in ("t", "w"):
            return
        self.entries.append((addr, f"{name} [{module}]" if module else name))

    def finish(self):
        self.entries.sort()
        self.addrs = [a for a, _ in self.entries]

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return "[unknown]"
        return self.entries[i][1]


def read_system_map(path, syms):
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                syms.add(int(parts[0], 16), parts[1], parts[2])


def parse_log(path, syms):
    """The module symbols and the runs (workload, driver, I/Os, sync mark) of a guest log."""
    runs = []
    ksym = re.compile(r"^fio-profile-ksym ([0-9a-f]+) (\w) (\S+)\s+\[(\w+)\]")
    run = re.compile(r"^fio-profile (\S+) dev=(\S+) ios=(\d+) .*smark=(\d+)")
    with open(path, errors="replace") as f:
        for line in f:
            line = line.replace("\r", "").rstrip("\n")
            m = ksym.match(line)
            if m:
                syms.add(int(m.group(1), 16), m.group(2), m.group(3), m.group(4))
                continue
            m = run.match(line)
            if m:
                runs.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return runs


PAGE = 4096
BRANCH = re.compile(r"^(call|jmp|j[a-z]+)[lqw]?\s+(\*?)(0x[0-9a-f]+)?")
# Mnemonics (AT&T, with or without a size suffix) after which TCG leaves the translated code.
SYS = re.compile(r"^(syscall|sysret[lq]?|iret[lqw]?|swapgs|wrmsr|rdmsr|hlt|pause|rdtscp?|cpuid"
                 r"|invlpg|int3?|(in|out)s?[bwl]?)$")


def end_class(vaddr, last):
    """The class of the instruction that ends a block at `vaddr` (see the module doc)."""
    op = last.split()[0] if last.split() else "?"
    if op.startswith("ret"):
        return "ret"
    if op in ("sti", "popf", "popfq", "popfl", "popfw"):
        return "irqon"
    if SYS.match(op) or (op.startswith("mov") and "%cr" in last.split(",")[-1]):
        return "sys"
    m = BRANCH.match(last)
    if m:
        kind = "jcc" if m.group(1) not in ("call", "jmp") else m.group(1)
        if m.group(2) or not m.group(3):
            return "indirect"
        same = int(m.group(3), 16) // PAGE == vaddr // PAGE
        return f"{kind}-{'page' if same else 'xpage'}"
    return "other"


def parse_info(path):
    """(block address, instructions) -> (memory-operand instructions, end class)."""
    info = {}
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if len(parts) < 4:
                continue
            addr, n = int(parts[0], 16), int(parts[1])
            info[(addr, n)] = (int(parts[2]), end_class(addr, parts[3]))
    return info


def block_mode(addr, syms):
    """`kernel` or `user` for the whole-mode lines, and the module's `[name]` for a block in a
    module's function (else None)."""
    mode = "kernel" if addr >= KERNEL_START else "user"
    name = syms.name(addr) if mode == "kernel" else ""
    module = name[name.rindex(" [") + 1:] if name.endswith("]") and " [" in name else None
    return mode, module


def block_report(wl, dev, ios, blocks, info, syms):
    """The fio-insns-tb lines of one run: kernel, user, then each module in the kernel part."""
    modes = collections.defaultdict(list)
    for (addr, size), execs in blocks.items():
        mode, module = block_mode(addr, syms)
        modes[mode].append((addr, size, execs))
        if module:
            modes[module].append((addr, size, execs))
    lines = []
    for mode in ["kernel", "user"] + sorted(m for m in modes if m.startswith("[")):
        n = insns = memops = 0
        ends = collections.Counter()
        for addr, size, execs in modes.get(mode, ()):
            mem, cls = info.get((addr, size), (0, "unknown"))
            n += execs
            insns += size * execs
            memops += mem * execs
            ends[cls] += execs
        classes = " ".join(f"{c}={v / ios:.1f}" for c, v in sorted(ends.items()))
        lines.append(f"fio-insns-tb {wl} dev={dev} {mode}: blocks {n / ios:.1f} "
                     f"insns {insns / ios:.1f} memops {memops / ios:.1f} ends {classes}")
    return lines


def parse_dump(path, misses=None):
    """mark number -> {(block address, instructions): executions since the previous mark};
    the modelled soft-TLB misses by block go into `misses` (same shape) when the plugin ran
    with tlb= ("t" lines)."""
    marks = {}
    cur = cur_t = None
    with open(path) as f:
        for line in f:
            if line.startswith("mark "):
                parts = line.split()
                cur = collections.Counter()
                cur_t = collections.Counter()
                marks[int(parts[1])] = cur
                if misses is not None:
                    misses[int(parts[1])] = cur_t
                if "table-full" in parts:
                    print("tb-profile: warning: the plugin's table filled up; counts incomplete",
                          file=sys.stderr)
                continue
            if line.startswith("t "):
                _, addr, insns, n = line.split()
                cur_t[(int(addr, 16), int(insns))] += int(n)
                continue
            addr, insns, execs = line.split()
            cur[(int(addr, 16), int(insns))] += int(execs)
    return marks


def by_symbol(blocks, syms, weight=True):
    """Instructions by function (all user-space code as one entry); with `weight` False, the
    counts as they are (soft-TLB misses)."""
    out = collections.Counter()
    for (addr, insns), n in blocks.items():
        out["[user]" if addr < KERNEL_START else syms.name(addr)] += insns * n if weight else n
    return out


# Block ends after which QEMU 7.2 looks the next block up (`helper_lookup_tb_ptr`: the vCPU's
# jump cache, and on a miss the global hash table) instead of jumping to a chained block.
LOOKUP_ENDS = ("ret", "indirect", "call-xpage", "jmp-xpage", "jcc-xpage")


def exits_by_symbol(blocks, syms, info):
    """Per function, executions of its blocks that end in a jump-cache lookup (a `jcc-xpage`
    block counts whether or not its branch was taken: an upper bound)."""
    out = collections.Counter()
    for (addr, insns), n in blocks.items():
        if info.get((addr, insns), (0, ""))[1] in LOOKUP_ENDS:
            out["[user]" if addr < KERNEL_START else syms.name(addr)] += n
    return out


def report(tag, what, runs, per_run, top, diff_top):
    """The per-run totals, top functions and rnvme - C differences of one measure."""
    for (wl, dev), per_io in per_run.items():
        user = per_io.get("[user]", 0.0)
        kernel = sum(v for s, v in per_io.items() if s != "[user]")
        modules = sum(v for s, v in per_io.items() if s.endswith("]") and s != "[user]")
        print(f"{tag} {wl} dev={dev}: ios {runs[(wl, dev)]}, {what} per I/O: kernel {kernel:.0f} "
              f"(modules {modules:.0f}), user {user:.0f}")
        for s, v in sorted(per_io.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{tag}-sym {wl} dev={dev} {v:.1f} {s}")
    workloads = []
    for wl, _ in per_run:
        if wl not in workloads:
            workloads.append(wl)
    for wl in workloads:
        r, c = per_run.get((wl, "rnvme")), per_run.get((wl, "nvme"))
        if r is None or c is None:
            continue
        names = set(r) | set(c)
        diffs = sorted(names, key=lambda s: -abs(r.get(s, 0.0) - c.get(s, 0.0)))
        tr = sum(v for s, v in r.items() if s != "[user]")
        tc = sum(v for s, v in c.items() if s != "[user]")
        print(f"{tag}-diff {wl} [kernel total] rnvme {tr:.1f} c {tc:.1f} diff {tr - tc:+.1f}")
        for s in diffs[:diff_top]:
            x, y = r.get(s, 0.0), c.get(s, 0.0)
            print(f"{tag}-diff {wl} {s} rnvme {x:.1f} c {y:.1f} diff {x - y:+.1f}")


def self_test():
    """Block-end classes and the per-module lines on hand-made blocks."""
    syms = Symbols()
    syms.add(0xFFFFFFFF81000000, "T", "kfunc")
    syms.add(0xFFFFFFFFA0000000, "t", "modf", "rmod")
    syms.add(0xFFFFFFFFA0001000, "t", "modg", "rmod")
    syms.finish()
    # (block address, instructions) -> (memory operands, last instruction), as the plugin's
    # info file gives them; 2 I/Os.
    raw = {
        (0x401000, 3): (1, "ret"),
        (0xFFFFFFFF81000000, 4): (2, "call 0xffffffff81002000"),    # call-xpage
        (0xFFFFFFFFA0000ff0, 2): (0, "jne 0xffffffffa0001008"),     # jcc-xpage (layout)
        (0xFFFFFFFFA0000f00, 5): (1, "jmp 0xffffffffa0000f40"),     # jmp-page
        (0xFFFFFFFFA0001008, 1): (0, "retq"),                       # ret
        (0xFFFFFFFFA0001010, 2): (0, "popfq"),                      # irqon
        (0xFFFFFFFFA0001020, 1): (0, "call *%rax"),                 # indirect
    }
    info = {k: (mem, end_class(k[0], last)) for k, (mem, last) in raw.items()}
    blocks = {k: 2 for k in raw}
    blocks[(0xFFFFFFFFA0000ff0, 2)] = 4
    got = block_report("wl", "rnvme", 2, blocks, info, syms)
    want = [
        "fio-insns-tb wl dev=rnvme kernel: blocks 7.0 insns 17.0 memops 3.0 ends call-xpage=1.0 "
        "indirect=1.0 irqon=1.0 jcc-xpage=2.0 jmp-page=1.0 ret=1.0",
        "fio-insns-tb wl dev=rnvme user: blocks 1.0 insns 3.0 memops 1.0 ends ret=1.0",
        "fio-insns-tb wl dev=rnvme [rmod]: blocks 6.0 insns 13.0 memops 1.0 ends indirect=1.0 "
        "irqon=1.0 jcc-xpage=2.0 jmp-page=1.0 ret=1.0",
    ]
    if got != want:
        print("tb_profile self-test FAILED:\n got  " + "\n      ".join(got) + "\n want " +
              "\n      ".join(want), file=sys.stderr)
        return 1
    print(f"tb_profile self-test: {len(want)} block-end lines as expected")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", required=True)
    ap.add_argument("--system-map", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--info")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--diff-top", type=int, default=40)
    a = ap.parse_args()

    syms = Symbols()
    read_system_map(a.system_map, syms)
    runs = parse_log(a.log, syms)
    syms.finish()
    misses = {}
    marks = parse_dump(a.dump, misses)
    info = parse_info(a.info) if a.info else None
    if not runs:
        sys.exit("tb-profile: no fio-profile lines with smark= in the log")

    per_run, per_run_tlb, ios_of = {}, {}, {}
    for wl, dev, ios, smark in runs:
        if smark not in marks:
            sys.exit(f"tb-profile: the dump has no mark {smark} (run {wl} {dev})")
        ios_of[(wl, dev)] = ios
        per_run[(wl, dev)] = {s: n / ios for s, n in by_symbol(marks[smark], syms).items()}
        if misses.get(smark):
            counts = by_symbol(misses[smark], syms, weight=False)
            per_run_tlb[(wl, dev)] = {s: n / ios for s, n in counts.items()}
    report("fio-insns", "instructions", ios_of, per_run, a.top, a.diff_top)
    if info is not None:
        for wl, dev, ios, smark in runs:
            print("\n".join(block_report(wl, dev, ios, marks[smark], info, syms)))
        per_run_exits = {
            (wl, dev): {s: n / ios for s, n in exits_by_symbol(marks[smark], syms, info).items()}
            for wl, dev, ios, smark in runs
        }
        report("fio-exits", "block ends with a jump-cache lookup", ios_of, per_run_exits, a.top, a.diff_top)
    if per_run_tlb:
        report("fio-tlb", "modelled soft-TLB misses", ios_of, per_run_tlb, a.top, a.diff_top)

if __name__ == "__main__":
    main()
