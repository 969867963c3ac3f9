#!/bin/sh
# iovstack_bench.ko: the iov crate against the kernel's own iov_iter, in the kernel (module docs
# in rnvme/bench/lib.rs). Loads the module and checks that it printed one result line and one
# spread line per copy kind and per iterator operation, and no error; the numbers themselves
# are not judged: in a shared TCG guest a few milliseconds of wall clock are dominated by host
# preemption. scripts/bench-kernel.sh runs the long form on an instruction-counting clock.
# Short form by default (4 MiB x 3 samples per kind: a few seconds); kernel command line knobs
# iovbench_size_mib=N iovbench_samples=N iovbench_table_mib=N (the long form: 256 and 16);
# iovbench_inject=1 loads it with inject_fault=1, and then this test must fail.
. /lib/rnvme/lib.sh

mod=iovstack_bench
ko=$(kmod_path "$mod")
if [ -z "$ko" ]; then
    fail "iov-bench-module-present ($mod.ko not in the initramfs)"
    exit 1
fi
kmod_unload "$mod" 2>/dev/null

params="size_mib=${iovbench_size_mib:-4} samples=${iovbench_samples:-3} table_mib=${iovbench_table_mib:-1024}"
params="$params${iovbench_inject:+ inject_fault=$iovbench_inject}"
marker="iov-bench-check: start $$ $(cut -d' ' -f1 /proc/uptime)"
echo "$marker" > /dev/kmsg
echo "--- insmod $ko $params"
# shellcheck disable=SC2086
insmod "$ko" $params
rc=$?
dmesg | sed -n "/$marker/,\$p" | sed 's/^\[[^]]*\] //' | grep -E '^iovstack_bench: ' \
    | sed 's/^iovstack_bench: //' > /tmp/iov-bench.log
cat /tmp/iov-bench.log
kmod_unload "$mod" 2>/dev/null

if [ "$rc" -eq 0 ]; then
    pass "iov-bench-load ($params)"
else
    fail "iov-bench-load (insmod exit $rc)"
fi
if grep -q '^iov-bench error:' /tmp/iov-bench.log; then
    fail "iov-bench-errors ($(grep -c '^iov-bench error:' /tmp/iov-bench.log) error lines)"
fi
num='[0-9]+(\.[0-9]+)?'
for kind in ubuf iovec kvec bvec bvec_split page_list iter_init iter_init_advance npages fixed_io_128k; do
    line=$(grep -E "^iov-bench $kind: rust $num c $num ratio [0-9]+\.([0-9]{3}|[0-9]{6})$" /tmp/iov-bench.log | tail -n1)
    spread=$(grep -E "^iov-bench-spread $kind: rust min $num p10 $num p90 $num max $num c min $num p10 $num p90 $num max $num$" /tmp/iov-bench.log | tail -n1)
    if [ -n "$line" ] && [ -n "$spread" ]; then
        # The clock (instructions or wall time) is chosen by how QEMU runs: not known here.
        pass "iov-bench-$kind ($params: ${line#iov-bench "$kind": })"
    else
        fail "iov-bench-$kind (result or spread line missing)"
    fi
done
if grep -qx 'iov-bench: done' /tmp/iov-bench.log; then
    pass "iov-bench-done"
else
    fail "iov-bench-done (no 'iov-bench: done' line)"
fi
