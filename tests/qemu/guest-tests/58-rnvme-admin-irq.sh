#!/bin/sh
# rnvme's admin queue (issue 7): completions by interrupt, and a controller reset after an admin
# command timeout. On --topology proof, rnvme-b is bound to rnvme and rnvme-c to the C nvme
# driver.
#
# 1. Interrupt: N `nvme get-feature` calls on rnvme's controller device must each complete by the
#    admin queue's interrupt: the count of vector 0 in /proc/interrupts rises by at least N, and
#    rnvme's debugfs counters (rnvme/rnvme<C>/admin) count N more irq_completions. Then the
#    round trip of K admin ioctls (admin-latency.c; K = rnvme_admin_latency on the kernel
#    command line, default 200, 0 skips it) on both drivers, pinned to each CPU in turn, so the
#    waiter is woken once on the interrupt's CPU and once on the other: `admin-latency` lines
#    (information, never asserted: a time under TCG).
# 2. Admin timeout: an Asynchronous Event Request (held by QEMU's controller until an event
#    happens) is sent with a 500 ms timeout on both drivers, on rnvme while fio writes on its
#    disk. Both must fail the same way (the C driver: nvme_timeout() for the admin queue
#    cancels it, nvme_execute_rq() returns -EINTR) and both reset their controller; for rnvme the
#    kernel log must say so ("resetting the controller after an admin command timeout", "controller
#    reset N done"), the debugfs counters resets_after_admin_timeout and
#    queues_deleted_before_disable must rise by one (the I/O queues are deleted before the
#    disable, as nvme_dev_disable() does: without that QEMU 7.2 itself crashed here, see below),
#    the fio run must end without an error (its requests cancelled by the reset are sent again),
#    admin commands must work again (by interrupt), a new fio verify must pass, and rmmod must
#    work (the harness fails on any kernel report; the debug kernel's kmemleak scan and DMA-API
#    debugging see a leaked or mapped buffer).
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "admin-ko-present ($ko missing)"; exit 1; }
command -v nvme >/dev/null || { fail "admin-nvme-cli (nvme-cli not in the initramfs)"; exit 1; }
rb=$(nvme_bdf rnvme-b) && cb=$(nvme_bdf rnvme-c) ||
    { fail "admin-topology (needs run-guest.sh --topology proof)"; exit 1; }
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug

[ "$(nvme_driver "$rb")" = rnvme ] || {
    nvme_park "$rb"
    kmod_loaded rnvme || check admin-load-rnvme insmod "$ko"
    check admin-bind-rnvme nvme_bind "$rb" rnvme
}
[ "$(nvme_driver "$cb")" = nvme ] || {
    kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
    check admin-bind-nvme nvme_bind "$cb" nvme
}
rd=$(nvme_wait_disks "$rb" 1 20) || { fail "admin-rnvme-disk"; exit 1; }
cd_=$(nvme_wait_disks "$cb" 1 20) || { fail "admin-nvme-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
ci=$(echo "$cd_" | sed -n 's/^nvme\([0-9]*\)n1$/\1/p')
rctrl=/dev/rnvme$ri; cctrl=/dev/nvme$ci
wait_for "$rctrl" 10 && wait_for "$cctrl" 10 || { fail "admin-chardevs ($rctrl $cctrl)"; exit 1; }
echo "rnvme: $rd $rctrl; nvme: $cd_ $cctrl"

counters=/sys/kernel/debug/rnvme/rnvme$ri/admin
ctr() { awk -v k="$1" '$1 == k { print $2 }' "$counters"; }
[ -r "$counters" ] && pass "admin-counters ($counters)" || { fail "admin-counters ($counters missing)"; exit 1; }
sed 's/^/  /' "$counters"

# Vector 0 is the admin queue's (with more than one vector it is its alone).
irq0=$(nvme_irqs "$rb" | head -1)
irqsum() { irq_counts "$irq0" | awk '{ s = 0; for (i = 2; i <= NF; i++) s += $i; print s + 0 }'; }
grep -E "^ *$irq0:" /proc/interrupts | sed 's/^/irq: /'
grep -qE "^ *$irq0:.*rnvme" /proc/interrupts && pass "admin-irq-registered ($irq0)" ||
    fail "admin-irq-registered (vector 0 = IRQ $irq0 has no rnvme handler)"

# admin_calls CTRL N: N get-feature (Number of Queues) calls; prints how many failed.
admin_calls() {
    _f=0
    for _i in $(seq "$2"); do nvme get-feature "$1" -f 7 > /dev/null 2>&1 || _f=$((_f + 1)); done
    echo "$_f"
}

# interrupt_check NAME: N calls, each completed by the interrupt.
n=20
interrupt_check() {
    i0=$(irqsum); c0=$(ctr irq_completions); p0=$(ctr polled_completions)
    f=$(admin_calls "$rctrl" $n)
    i1=$(irqsum); c1=$(ctr irq_completions); p1=$(ctr polled_completions)
    echo "$1: $n get-feature calls, $f failed; IRQ $irq0 +$((i1 - i0)), irq_completions +$((c1 - c0)), polled_completions +$((p1 - p0))"
    if [ "$f" = 0 ] && [ $((i1 - i0)) -ge $n ] && [ $((c1 - c0)) -ge $n ]; then
        pass "$1 ($n calls: +$((i1 - i0)) interrupts, +$((c1 - c0)) irq completions, +$((p1 - p0)) polled)"
    else
        fail "$1 ($n calls, $f failed: +$((i1 - i0)) interrupts, +$((c1 - c0)) irq completions)"
    fi
}
interrupt_check admin-by-interrupt

# Round trip of K admin ioctls per driver and CPU, each timed alone (admin-latency.c); the
# admin queue's interrupt is vector 0's, on the CPU its effective affinity names. Information.
k=${rnvme_admin_latency:-200}
if [ "$k" -gt 0 ] 2>/dev/null && command -v admin-latency > /dev/null; then
    cirq0=$(nvme_irqs "$cb" | head -1)
    echo "admin-latency: interrupt CPU rnvme $(cat /proc/irq/$irq0/effective_affinity_list)," \
        "nvme $(cat /proc/irq/$cirq0/effective_affinity_list); load $(cut -d' ' -f1-3 /proc/loadavg)"
    for cpu in $(seq 0 $(($(nproc) - 1))); do
        for dev in "$rctrl" "$cctrl"; do
            echo "admin-latency cpu$cpu $(taskset -c "$cpu" admin-latency "$dev" "$k" 2>&1)"
        done
    done
fi

# ---- admin command timeout -> controller reset -----------------------------------------------
resets_done() { dmesg | grep -c "rnvme.*controller reset [0-9]* done"; }
after_timeout() { dmesg | grep -c "resetting the controller after an admin command timeout"; }
r0=$(ctr resets_after_admin_timeout); t0=$(ctr timeouts); d0=$(resets_done); a0=$(after_timeout)
q0=$(ctr queues_deleted_before_disable)
# Under I/O: fio writes (QD 16, two jobs) while the command times out, so the disable meets
# commands in the I/O queues. Before rnvme deleted its I/O queues first, QEMU 7.2 segfaulted in
# about one such timeout in twenty (nvme_ctrl_reset() in hw/nvme/ctrl.c frees requests whose
# I/O is still running; rnvme/driver/delete_queues.rs, tests/qemu/README.md).
fio --name=aer-load --filename=/dev/$rd --direct=1 --bs=4k --size=32M --offset=64M \
    --ioengine=io_uring --iodepth=16 --numjobs=2 --rw=randwrite --time_based --runtime=4 \
    > /tmp/aer-fio.out 2>&1 &
fpid=$!
sleep 1
timeout 60 nvme admin-passthru "$rctrl" --opcode=0x0c --timeout=500 > /tmp/aer-r.out 2>&1
rrc=$?
wait "$fpid"
frc=$?
grep -E 'err=|^ +WRITE: ' /tmp/aer-fio.out | sed 's/^/aer fio: /'
if [ "$frc" = 0 ] && ! grep -qE 'err= *[1-9]' /tmp/aer-fio.out; then
    pass "admin-timeout-under-io (fio exit 0, no I/O error across the reset)"
else
    fail "admin-timeout-under-io (fio exit $frc)"; cat /tmp/aer-fio.out
fi
if [ -e /sys/kernel/debug/kmemleak ]; then
    # Debug kernel: the C driver's side is left out. Its admin timeout freezes the namespaces'
    # queues from blk-mq's timeout work (nvme_timeout() -> nvme_dev_disable() ->
    # nvme_start_freeze(), drivers/nvme/host/core.c, which in 6.12 calls the owner variant
    # blk_freeze_queue_start(): blk_freeze_acquire_lock() in block/blk-mq.c) and its reset work
    # unfreezes them, so lockdep reports "BUG: workqueue leaked atomic, lock or RCU" for the
    # C driver. rnvme's result is compared with the one the C driver gave on the normal kernel.
    echo "aer nvme: not run on the debug kernel (6.12's nvme_start_freeze() from the timeout work trips lockdep)"
    printf 'passthru: Interrupted system call\n' > /tmp/aer-c.out
    crc=1
else
    timeout 60 nvme admin-passthru "$cctrl" --opcode=0x0c --timeout=500 > /tmp/aer-c.out 2>&1
    crc=$?
fi
sed "s/^/aer rnvme (exit $rrc): /" /tmp/aer-r.out
sed "s/^/aer nvme (exit $crc): /" /tmp/aer-c.out
dmesg | grep -E 'admin command 0xc|admin command timeout|resetting the controller|reset [0-9]* (done|failed)|QID 0 timeout' |
    tail -8 | sed 's/^/dmesg: /'
# Same exit code and message (device names masked), and not success, not killed by timeout(1).
mr=$(sed "s#$rctrl#DEV#g" /tmp/aer-r.out); mc=$(sed "s#$cctrl#DEV#g" /tmp/aer-c.out)
if [ "$rrc" != 0 ] && [ "$rrc" != 124 ] && [ "$rrc" = "$crc" ] && [ "$mr" = "$mc" ]; then
    pass "admin-timeout-errno-as-c ($mr)"
else
    fail "admin-timeout-errno-as-c (rnvme exit $rrc '$mr', nvme exit $crc '$mc')"
fi
r1=$(ctr resets_after_admin_timeout); t1=$(ctr timeouts); d1=$(resets_done); a1=$(after_timeout)
q1=$(ctr queues_deleted_before_disable)
[ $((q1 - q0)) = 1 ] && pass "admin-timeout-queues-deleted-first (queues_deleted_before_disable $q0 -> $q1)" ||
    fail "admin-timeout-queues-deleted-first (queues_deleted_before_disable $q0 -> $q1)"
[ $((t1 - t0)) = 1 ] && pass "admin-timeout-counted" || fail "admin-timeout-counted (timeouts $t0 -> $t1)"
[ $((r1 - r0)) = 1 ] && [ $((a1 - a0)) = 1 ] && [ $((d1 - d0)) -ge 1 ] &&
    pass "admin-timeout-reset (resets_after_admin_timeout $r0 -> $r1, log: $((a1 - a0)) started, $((d1 - d0)) done)" ||
    fail "admin-timeout-reset (resets_after_admin_timeout $r0 -> $r1, log: $((a1 - a0)) started, $((d1 - d0)) done)"
interrupt_check admin-by-interrupt-after-reset
run_fio admin-fio-verify-after-reset --filename=/dev/$rd --direct=1 --bs=4k --size=8M \
    --offset=32M --ioengine=io_uring --iodepth=16 --rw=randwrite --verify=crc32c --do_verify=1 \
    --verify_fatal=1
sed 's/^/  /' "$counters"

# Unbind and unload: every buffer and the interrupt released (kernel reports fail the run).
nvme_release "$rb"
check admin-rmmod rmmod rnvme
[ ! -e "$counters" ] && pass "admin-counters-removed" || fail "admin-counters-removed ($counters still there)"
