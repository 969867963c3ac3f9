#!/usr/bin/env python3
"""Inserts phase timers into a copy of Linux 6.12's drivers/nvme/host (issue 9).

Usage: benches/c_nvme_phases.py DIR       (DIR: the copy; edited in place)
       benches/c_nvme_phases.py --self-test

The timers match rnvme's (rnvme/driver/phases.rs): time-stamp counter cycles of the passthrough
submit path's phases, per io_uring I/O command, and of the I/O interrupt handler, summed into
read-only module parameters:

  nvme_core: phase_entry (nvme_ns_uring_cmd()'s checks to before the request allocation), phase_alloc
             (nvme_alloc_user_request()), phase_data (nvme_map_user_request() and the rest up to
             execution), phase_exec (blk_execute_rq_nowait()), phase_ios (commands timed)
  nvme:      phase_irq_cycles (nvme_irq(), summed over calls), phase_irq_calls,
             phase_queue_rq_cycles (nvme_queue_rq(), summed), phase_queue_rq_calls,
             phase_sq_cycles (nvme_queue_rq()'s section under sq_lock: ring write, doorbell),
             phase_doorbell_cycles and phase_doorbell_writes (the MMIO SQ tail doorbell writes
             of nvme_write_sq_db(), summed, and their number)

Each timer goes in next to a statement found by its text; a statement not found exactly once
fails the edit, so a kernel whose driver changed is not timed wrongly. Only lines of our own are
added: the kernel's code is not copied.
"""
import sys

# Declarations added after the last #include of ioctl.c / pci.c.
IOCTL_DECLS = r"""
/* Phase timers (benches/c_nvme_phases.py). */
#include <linux/moduleparam.h>
#include <linux/percpu.h>
static unsigned long phase_entry, phase_alloc, phase_data, phase_exec, phase_ios;
module_param(phase_entry, ulong, 0444);
module_param(phase_alloc, ulong, 0444);
module_param(phase_data, ulong, 0444);
module_param(phase_exec, ulong, 0444);
module_param(phase_ios, ulong, 0444);
static DEFINE_PER_CPU(u64, phase_stamp);
static inline void phase_end(unsigned long *sum)
{
	u64 now = rdtsc();

	__atomic_fetch_add(sum, (unsigned long)(now - raw_cpu_read(phase_stamp)), __ATOMIC_RELAXED);
	raw_cpu_write(phase_stamp, now);
}
"""

PCI_DECLS = r"""
/* Phase timers (benches/c_nvme_phases.py). */
#include <linux/moduleparam.h>
static unsigned long phase_irq_cycles, phase_irq_calls;
static unsigned long phase_queue_rq_cycles, phase_queue_rq_calls, phase_sq_cycles;
static unsigned long phase_doorbell_cycles, phase_doorbell_writes;
module_param(phase_irq_cycles, ulong, 0444);
module_param(phase_irq_calls, ulong, 0444);
module_param(phase_queue_rq_cycles, ulong, 0444);
module_param(phase_queue_rq_calls, ulong, 0444);
module_param(phase_sq_cycles, ulong, 0444);
module_param(phase_doorbell_cycles, ulong, 0444);
module_param(phase_doorbell_writes, ulong, 0444);
"""

# (file, anchor, text inserted before it, text inserted after it)
EDITS = [
    ("ioctl.c", "\tBUILD_BUG_ON(sizeof(struct nvme_uring_cmd_pdu) > sizeof(ioucmd->pdu));\n",
     "", "\traw_cpu_write(phase_stamp, rdtsc());\n"),
    ("ioctl.c", "\treq = nvme_alloc_user_request(q, &c, rq_flags, blk_flags);\n",
     "\tphase_end(&phase_entry);\n", "\tphase_end(&phase_alloc);\n"),
    ("ioctl.c", "\tblk_execute_rq_nowait(req, false);\n\treturn -EIOCBQUEUED;\n",
     "\tphase_end(&phase_data);\n",
     None),
    ("pci.c", "static irqreturn_t nvme_irq(int irq, void *data)\n{\n", None, None),
]


def insert_after_includes(text, decls):
    """`text` with `decls` after its last top-level #include line."""
    lines = text.split("\n")
    last = max(i for i, l in enumerate(lines) if l.startswith("#include"))
    return "\n".join(lines[: last + 1] + decls.split("\n") + lines[last + 1:])


def once(text, anchor, name):
    n = text.count(anchor)
    if n != 1:
        raise SystemExit(f"c_nvme_phases: {name}: anchor found {n} times: {anchor!r}")
    return text.index(anchor)


def edit_ioctl(text):
    text = insert_after_includes(text, IOCTL_DECLS)
    for f, anchor, before, after in EDITS:
        if f != "ioctl.c":
            continue
        i = once(text, anchor, f)
        if after is None:
            # The execution: time it, count the command, then return as before.
            body = ("\tblk_execute_rq_nowait(req, false);\n\tphase_end(&phase_exec);\n"
                    "\t__atomic_fetch_add(&phase_ios, 1, __ATOMIC_RELAXED);\n"
                    "\treturn -EIOCBQUEUED;\n")
            text = text[:i] + before + body + text[i + len(anchor):]
        else:
            text = text[:i] + before + anchor + after + text[i + len(anchor):]
    return text


def wrap(text, name, ret, params, args, cycles, calls):
    """`name` (signature `ret name(params)`, called as `name(args)`) renamed to name_untimed
    and wrapped by a timed function of the original name."""
    anchor = f"static {ret} {name}({params})\n{{\n"
    i = once(text, anchor, name)
    wrapper = (f"static {ret} {name}_untimed({params});\n"
               f"static {ret} {name}({params})\n{{\n"
               "\tu64 t0 = rdtsc();\n"
               f"\t{ret} ret = {name}_untimed({args});\n\n"
               f"\t__atomic_fetch_add(&{cycles}, (unsigned long)(rdtsc() - t0), __ATOMIC_RELAXED);\n"
               f"\t__atomic_fetch_add(&{calls}, 1, __ATOMIC_RELAXED);\n"
               "\treturn ret;\n}\n\n"
               f"static {ret} {name}_untimed({params})\n{{\n")
    return text[:i] + wrapper + text[i + len(anchor):]


SQ_SECTION = ("\tspin_lock(&nvmeq->sq_lock);\n\tnvme_sq_copy_cmd(nvmeq, &iod->cmd);\n"
              "\tnvme_write_sq_db(nvmeq, bd->last);\n\tspin_unlock(&nvmeq->sq_lock);\n")


DOORBELL = "\t\twritel(nvmeq->sq_tail, nvmeq->q_db);\n"


def edit_pci(text):
    """nvme_irq() and nvme_queue_rq() wrapped by timed functions; nvme_queue_rq()'s ring write
    and doorbell, and the MMIO doorbell write itself, timed in place."""
    text = insert_after_includes(text, PCI_DECLS)
    i = once(text, DOORBELL, "pci.c")
    timed = ("\t{\n\t\tu64 t_db = rdtsc();\n\n" + DOORBELL +
             "\t\t__atomic_fetch_add(&phase_doorbell_cycles, (unsigned long)(rdtsc() - t_db), "
             "__ATOMIC_RELAXED);\n"
             "\t\t__atomic_fetch_add(&phase_doorbell_writes, 1, __ATOMIC_RELAXED);\n\t}\n")
    text = text[:i] + timed + text[i + len(DOORBELL):]
    text = wrap(text, "nvme_irq", "irqreturn_t", "int irq, void *data", "irq, data",
                "phase_irq_cycles", "phase_irq_calls")
    text = wrap(text, "nvme_queue_rq", "blk_status_t",
                "struct blk_mq_hw_ctx *hctx,\n\t\t\t const struct blk_mq_queue_data *bd",
                "hctx, bd", "phase_queue_rq_cycles", "phase_queue_rq_calls")
    i = once(text, SQ_SECTION, "pci.c")
    timed = ("\t{\n\tu64 t_sq = rdtsc();\n\n" + SQ_SECTION +
             "\t__atomic_fetch_add(&phase_sq_cycles, (unsigned long)(rdtsc() - t_sq), "
             "__ATOMIC_RELAXED);\n\t}\n")
    return text[:i] + timed + text[i + len(SQ_SECTION):]


def main(d):
    for name, fn in (("ioctl.c", edit_ioctl), ("pci.c", edit_pci)):
        p = f"{d}/{name}"
        with open(p) as f:
            text = f.read()
        with open(p, "w") as f:
            f.write(fn(text))


def self_test():
    """The edits on a hand-made file with the anchors (not the kernel's text)."""
    ioctl = ("#include <a.h>\n#include \"b.h\"\nstatic int x;\n"
             "int f(void)\n{\n"
             "\tBUILD_BUG_ON(sizeof(struct nvme_uring_cmd_pdu) > sizeof(ioucmd->pdu));\n"
             "\tret = nvme_uring_cmd_checks(issue_flags);\n"
             "\treq = nvme_alloc_user_request(q, &c, rq_flags, blk_flags);\n"
             "\tmap();\n\tblk_execute_rq_nowait(req, false);\n\treturn -EIOCBQUEUED;\n}\n")
    out = edit_ioctl(ioctl)
    order = ["#include \"b.h\"", "module_param(phase_ios", "static int x;", "BUILD_BUG_ON",
             "raw_cpu_write(phase_stamp, rdtsc());", "nvme_uring_cmd_checks",
             "phase_end(&phase_entry);", "nvme_alloc_user_request", "phase_end(&phase_alloc);",
             "map();", "phase_end(&phase_data);", "blk_execute_rq_nowait",
             "phase_end(&phase_exec);", "&phase_ios, 1", "return -EIOCBQUEUED;"]
    pos = [out.index(s) for s in order]
    assert pos == sorted(pos), (pos, out)
    pci = ("#include <c.h>\nstatic void db(void)\n{\n\tif (x)\n" + DOORBELL + "}\n"
           "static irqreturn_t nvme_irq(int irq, void *data)\n{\n"
           "\treturn IRQ_NONE;\n}\n"
           "static blk_status_t nvme_queue_rq(struct blk_mq_hw_ctx *hctx,\n"
           "\t\t\t const struct blk_mq_queue_data *bd)\n{\n\tprep();\n" + SQ_SECTION +
           "\treturn BLK_STS_OK;\n}\n")
    out = edit_pci(pci)
    assert out.count("static irqreturn_t nvme_irq(int irq, void *data)\n{\n") == 1
    assert "static irqreturn_t nvme_irq_untimed(int irq, void *data)\n{\n\treturn IRQ_NONE;" in out
    assert out.index("module_param(phase_irq_calls") < out.index("nvme_irq_untimed")
    assert "\tblk_status_t ret = nvme_queue_rq_untimed(hctx, bd);" in out
    order = ["nvme_queue_rq_untimed(struct", "prep();", "u64 t_sq = rdtsc();", "spin_lock(",
             "nvme_write_sq_db", "spin_unlock(", "&phase_sq_cycles", "return BLK_STS_OK;"]
    pos = [out.index(x, out.index("static blk_status_t nvme_queue_rq_untimed(struct blk_mq_hw_ctx *hctx,\n\t\t\t const struct blk_mq_queue_data *bd)\n{")) for x in order]
    assert pos == sorted(pos), pos
    # The doorbell write, braced under its if, timed and counted.
    order = ["\tif (x)\n\t{", "u64 t_db = rdtsc();", "writel(nvmeq->sq_tail", "&phase_doorbell_cycles",
             "&phase_doorbell_writes, 1", "\t}\n}"]
    pos = [out.index(x) for x in order]
    assert pos == sorted(pos), pos
    # A missing or repeated anchor fails.
    for bad in (ioctl.replace("blk_execute_rq_nowait", "x"), ioctl + ioctl):
        try:
            edit_ioctl(bad)
        except SystemExit:
            continue
        raise AssertionError("a bad anchor was accepted")
    print("c_nvme_phases self-test: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
