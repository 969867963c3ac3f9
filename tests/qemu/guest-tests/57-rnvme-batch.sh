#!/bin/sh
# Batched submissions (queue_rqs) and batched completions (io_comp_batch) of rnvme.ko (issue 9):
# fio over io_uring at QD32 (randwrite with crc32c verify, then randread) on an rnvme disk, with
# rnvme's debugfs counters (/sys/kernel/debug/rnvme/rnvme<C>/batch) read before and after:
# requests must have been started by queue_rqs (a plugged list handed over at once) and
# completed into a completion batch, and every request the block layer accounted on the disk
# (/sys/block/<disk>/stat: reads, writes, flushes completed) must have been completed exactly
# once by the driver (batched + single). Then IOPOLL: rnvme loaded with poll_queues=1, fio
# io_uring hipri=1 on the block device must verify with its completions batched by poll (the
# batch io_uring passes to blk_poll), none timed out. Between them, fio io_uring_cmd on the
# namespace's char device: passthrough completions batched too. Completion queue head doorbells
# (counters cq_head_reports / cq_head_mmio): with defer_cq_doorbell=1 (default) the CQs are deeper
# than the SQs (probe line "CQ depth") and a head is reported once per many completions; reloaded
# with defer_cq_doorbell=0 at the end, equal depths and a report after every drain (the C
# driver's rule), data verified either way. Prints
#   rnvme-batch: <n> I/Os, <s> started by queue_rqs in <b> doorbell batches, <c> completions batched
#   rnvme-batch cq-head: <n> completions, <r> head reports (<m> MMIO)
# Works on any topology (controller rnvme-b when there is one, else the first NVMe controller).
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "batch-ko-present ($ko missing)"; exit 1; }
b=$(nvme_bdf rnvme-b 2>/dev/null) || b=$(nvme_pci_list | head -n1)
[ -n "$b" ] || { fail "batch-controller (no NVMe controller)"; exit 1; }
kmod_loaded rnvme || check batch-load-rnvme insmod "$ko"
[ "$(nvme_driver "$b")" = rnvme ] || check batch-bind-rnvme nvme_bind "$b" rnvme

# setup: the first disk of the controller, its counters; sets d, stats.
setup() {
    ds=$(nvme_wait_disks "$b" 1 60) || { fail "batch-rnvme-disk$1"; exit 1; }
    d=$(echo $ds | cut -d' ' -f1)
    ri=$(echo "$d" | sed -n 's/^rnvme\([0-9]*\)n[0-9]*$/\1/p')
    stats=/sys/kernel/debug/rnvme/rnvme$ri/batch
    [ -r "$stats" ] && pass "batch-counters$1 $stats" || { fail "batch-counters$1 ($stats missing)"; exit 1; }
}
counter() { sed -n "s/^$1 //p" "$stats"; }
snap() { # PREFIX: every counter as PREFIX_<name>, and PREFIX_ios: requests the disk completed
    while read -r _k _v; do eval "$1_$_k=$_v"; done < "$stats"
    # /sys/block/<disk>/stat: field 1 reads, 5 writes, 12 discards, 16 flushes completed.
    set -- "$1" $(cat /sys/block/$d/stat)
    eval "$1_ios=$(( $2 + $6 + ${13:-0} + ${17:-0} ))"
}
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
setup ""

snap before
run_fio batch-qd32-randwrite-verify --filename=/dev/$d --ioengine=io_uring --direct=1 \
    --bs=4k --iodepth=32 --size=16M --rw=randwrite --verify=crc32c --do_verify=1 \
    --verify_fatal=1
run_fio batch-qd32-randread --filename=/dev/$d --ioengine=io_uring --direct=1 --bs=4k \
    --iodepth=32 --size=16M --rw=randread --time_based=1 --runtime=3
run_fio batch-qd8-read-128k --filename=/dev/$d --ioengine=io_uring --direct=1 --bs=128k \
    --iodepth=8 --size=16M --rw=read
snap after
cat "$stats" | sed 's/^/  /'
ios=$((after_ios - before_ios))
started=$((after_queue_rqs_started - before_queue_rqs_started))
sqb=$((after_sq_batches - before_sq_batches))
cb=$((after_completions_batched - before_completions_batched))
cs=$((after_completions_single - before_completions_single))
echo "rnvme-batch: $ios I/Os, $started started by queue_rqs in $sqb doorbell batches, $cb completions batched"
[ "$started" -gt 0 ] && [ "$sqb" -gt 0 ] && [ "$started" -le "$ios" ] &&
    pass "batch-queue-rqs ($started of $ios requests in $sqb batches)" ||
    fail "batch-queue-rqs ($started of $ios requests started by queue_rqs in $sqb batches)"
[ "$cb" -gt 0 ] && pass "batch-completions ($cb of $ios batched)" ||
    fail "batch-completions ($cb of $ios batched)"
# Each request the disk accounted was completed once by the driver, batched or not.
[ $((cb + cs)) = "$ios" ] && pass "batch-completions-once ($cb batched + $cs single = $ios)" ||
    fail "batch-completions-once ($cb batched + $cs single, the disk completed $ios)"

# The interrupt handler's counter: the completions above came through handler calls, each of
# which completed at least one request (its time is measured only by a RNVME_PHASES=1 build).
ih=$((after_irq_handled - before_irq_handled))
[ "$ih" -gt 0 ] && [ "$ih" -le $((cb + cs)) ] &&
    pass "batch-irq-counted ($ih handler calls for $((cb + cs)) completions)" ||
    fail "batch-irq-counted ($ih handler calls for $((cb + cs)) completions)"

# cq_heads DEFER: head reports of the run between the snapshots against its completions. With a
# deferral (the probe line's interrupt CQ deeper than depth + 16) at most one report per
# cq_depth - depth - 15 completions per queue (2 queues: one more report each, rounding); without,
# one per drain of at most 16 entries, so at least completions / 16.
cq_heads() {
    _c=$((after_completions_batched - before_completions_batched + after_completions_single - before_completions_single))
    _r=$((after_cq_head_reports - before_cq_head_reports))
    _m=$((after_cq_head_mmio - before_cq_head_mmio))
    _line=$(dmesg | grep "rnvme$ri: .*queues of depth" | tail -n 1)
    _sq=$(echo "$_line" | sed -n 's/.* of depth \([0-9]*\), CQ depth \([0-9]*\)\/.*/\1/p')
    _cq=$(echo "$_line" | sed -n 's/.* of depth \([0-9]*\), CQ depth \([0-9]*\)\/.*/\2/p')
    echo "rnvme-batch cq-head$1: $_c completions, $_r head reports ($_m MMIO); SQ depth $_sq, CQ depth $_cq"
    [ -n "$_sq" ] && [ -n "$_cq" ] || { fail "batch-cq-head$1-probe-line ($_line)"; return; }
    [ "$_m" -le "$_r" ] && pass "batch-cq-head$1-mmio ($_m of $_r)" || fail "batch-cq-head$1-mmio ($_m MMIO > $_r reports)"
    if [ "$2" = defer ]; then
        [ "$_cq" -gt $((_sq + 16)) ] && pass "batch-cq-head$1-deeper ($_cq > $_sq + 16)" ||
            { fail "batch-cq-head$1-deeper (CQ depth $_cq, SQ depth $_sq)"; return; }
        _per=$((_cq - _sq - 15))
        [ "$_r" -ge 1 ] && [ "$_r" -le $((_c / _per + 2)) ] &&
            pass "batch-cq-head$1-deferred ($_r reports for $_c completions, one per $_per)" ||
            fail "batch-cq-head$1-deferred ($_r reports for $_c completions; want 1..$((_c / _per + 2)))"
    else
        [ "$_cq" = "$_sq" ] && pass "batch-cq-head$1-equal ($_cq)" ||
            fail "batch-cq-head$1-equal (CQ depth $_cq, SQ depth $_sq)"
        [ "$_r" -ge $((_c / 16)) ] && [ "$_r" -le "$_c" ] &&
            pass "batch-cq-head$1-every-drain ($_r reports for $_c completions)" ||
            fail "batch-cq-head$1-every-drain ($_r reports for $_c completions; want $((_c / 16))..$_c)"
    fi
}
if [ "$(cat /sys/module/rnvme/parameters/defer_cq_doorbell)" = 1 ]; then
    cq_heads "" defer
fi

# ---- passthrough: io_uring_cmd completions are batched too ---------------------------------------
# As in the C driver (nvme_handle_cqe(): blk_mq_add_to_batch() takes passthrough requests), the
# requests of rnvme's char device that succeed are completed in batches; fio verifies their data
# (premapped registered buffers, fixedbufs=1). Passthrough requests are not in the disk's stat.
ng=/dev/rng${ri}n1
if [ -c "$ng" ]; then
    snap before
    run_fio batch-passthru-qd32-randwrite-verify --filename=$ng --ioengine=io_uring_cmd \
        --cmd_type=nvme --fixedbufs=1 --bs=4k --iodepth=32 --size=8M --offset=32M \
        --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
    snap after
    cb=$((after_completions_batched - before_completions_batched))
    cs=$((after_completions_single - before_completions_single))
    echo "rnvme-batch passthrough: $cb completions batched, $cs single"
    # 8 MiB written and read back in 4 KiB commands: 4096 completions, most of them batched.
    [ "$cb" -gt 2048 ] && [ $((cb + cs)) -ge 4096 ] &&
        pass "batch-passthru-completions ($cb batched, $cs single)" ||
        fail "batch-passthru-completions ($cb batched, $cs single; want > 2048 batched of >= 4096)"
else
    fail "batch-passthru-chardev ($ng missing)"
fi

# ---- IOPOLL: poll's batch ----------------------------------------------------------------------
if [ "$(cat /sys/module/rnvme/parameters/poll_queues)" = 0 ]; then
    check batch-rmmod rmmod rnvme
    check batch-load-poll insmod "$ko" poll_queues=1
    [ "$(nvme_driver "$b")" = rnvme ] || check batch-bind-poll nvme_bind "$b" rnvme
    setup "-poll"
fi
snap before
t0=$(dmesg | grep -c "timed out")
run_fio batch-hipri-randwrite-verify --filename=/dev/$d --ioengine=io_uring --direct=1 \
    --hipri=1 --bs=4k --iodepth=16 --size=4M --rw=randwrite --verify=crc32c --do_verify=1 \
    --verify_fatal=1
snap after
cb=$((after_completions_batched - before_completions_batched))
ios=$((after_ios - before_ios))
echo "rnvme-batch hipri: $ios I/Os, $cb completions batched"
[ "$cb" -gt 0 ] && pass "batch-poll-completions ($cb of $ios batched)" ||
    fail "batch-poll-completions ($cb of $ios batched)"
[ "$(dmesg | grep -c "timed out")" = "$t0" ] && pass "batch-poll-no-timeout" ||
    fail "batch-poll-no-timeout (an I/O timed out)"

# ---- the C driver's head doorbell rule: defer_cq_doorbell=0 --------------------------------------
check batch-rmmod-nodefer rmmod rnvme
check batch-load-nodefer insmod "$ko" defer_cq_doorbell=0
[ "$(nvme_driver "$b")" = rnvme ] || check batch-bind-nodefer nvme_bind "$b" rnvme
setup "-nodefer"
snap before
run_fio batch-nodefer-qd32-randwrite-verify --filename=/dev/$d --ioengine=io_uring --direct=1 \
    --bs=4k --iodepth=32 --size=8M --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
snap after
cq_heads "-nodefer" every
# Later tests get the module with its default parameters again.
check batch-rmmod-restore rmmod rnvme
check batch-load-restore insmod "$ko"
[ "$(nvme_driver "$b")" = rnvme ] || check batch-bind-restore nvme_bind "$b" rnvme
nvme_wait_disks "$b" 1 60 >/dev/null || fail "batch-restore-disk"
