#!/bin/sh
# Character-device fuzzing (issue 10): chardev-fuzz (chardev-fuzz.c) sends random ioctls and
# io_uring commands (random ioctl numbers and cmd_ops, opcodes, nsids, flags, cdws, data and
# metadata pointers, lengths, timeouts, fixed buffers and bad buffer indexes; as root and as uid
# 65534) to rnvme's controller and namespace character devices for rnvme_fuzz_secs (default 60).
# Afterwards the device must still answer (nvme id-ctrl / id-ns through the character devices)
# and a fio verify run on rnvme's block device must pass; the harness checks the kernel log.
# Then a short run with the same seed and a fixed number of calls goes to rnvme and to the C
# driver (rnvme-c) with a trace, and the results that differ are listed (information: both
# drivers survive them; differences are for the report, not a failure).
# QEMU may print "aio failed: Operation not permitted" on its own stderr for fuzzed commands its
# image backend refuses; the command then ends with an NVMe error status (as on the C driver).
# Knobs: rnvme_fuzz_secs (default 60, debug kernel 40), rnvme_fuzz_seed,
# rnvme_fuzz_compare_calls (default 2000, debug kernel 0; 0 = none).
. /lib/rnvme/lib.sh

# The debug kernel (kmemleak present) is several times slower: a shorter run and no comparison
# with the C driver (information only), so the test stays within the guest's per-test timeout.
if [ -e /sys/kernel/debug/kmemleak ]; then dsecs=40; dcalls=0; else dsecs=60; dcalls=2000; fi
secs=${rnvme_fuzz_secs:-$dsecs}
seed=${rnvme_fuzz_seed:-$(date +%s)}
ccalls=${rnvme_fuzz_compare_calls:-$dcalls}
ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "fuzz-ko-present ($ko missing)"; exit 1; }
command -v chardev-fuzz >/dev/null || { fail "fuzz-helper (chardev-fuzz not in the initramfs)"; exit 1; }
rb=$(nvme_bdf rnvme-b) && cb=$(nvme_bdf rnvme-c) ||
    { fail "fuzz-topology (needs run-guest.sh --topology proof)"; exit 1; }

nvme_park "$rb"
kmod_loaded rnvme || check fuzz-load-rnvme insmod "$ko"
check fuzz-bind-rnvme nvme_bind "$rb" rnvme
rd=$(nvme_wait_disks "$rb" 1 60) || { fail "fuzz-rnvme-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
rctrl=/dev/rnvme$ri; rns=/dev/rng${ri}n1
wait_for "$rns" 10 || { fail "fuzz-chardev ($rns missing)"; exit 1; }
lbs=$(cat "/sys/block/$rd/queue/logical_block_size")
echo "rnvme: $rd $rctrl $rns, $lbs B blocks, seed $seed"

# ---- the fuzz run -----------------------------------------------------------------------------
chardev-fuzz "$seed" "$secs" 100000000 "$lbs" "$rctrl" "$rns" > /tmp/fuzz.out 2>&1
rc=$?
cat /tmp/fuzz.out
sumline=$(grep '^chardev-fuzz: [0-9]* calls, [0-9]* distinct errnos, seed ' /tmp/fuzz.out)
if [ "$rc" = 0 ] && [ -n "$sumline" ]; then
    pass "fuzz-rnvme (${sumline#chardev-fuzz: })"
else
    fail "fuzz-rnvme (exit $rc; reproduce with rnvme_fuzz_seed=$seed)"
fi

# ---- the device still works -------------------------------------------------------------------
check fuzz-id-ctrl-after sh -c "nvme id-ctrl $rctrl | grep -q '^vid '"
check fuzz-id-ns-after sh -c "nvme id-ns -n 1 $rns | grep -q '^nsze '"
run_fio "fuzz-fio-verify-after" --filename="/dev/$rd" --ioengine=io_uring --direct=1 \
    --bs=4k --bsrange=4k-64k --iodepth=16 --offset=32M --size=32M --rw=randwrite \
    --verify=crc32c --do_verify=1 --verify_fatal=1
run_fio "fuzz-fio-chardev-after" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bs=16k --iodepth=8 --offset=96M --size=4M --rw=randwrite --verify=crc32c \
    --do_verify=1 --verify_fatal=1

# ---- the same calls on both drivers -----------------------------------------------------------
if [ "$ccalls" -gt 0 ]; then
    kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
    check fuzz-bind-nvme nvme_bind "$cb" nvme
    if cd_=$(nvme_wait_disks "$cb" 1 60); then
        ci=$(echo "$cd_" | sed -n 's/^nvme\([0-9]*\)n1$/\1/p')
        cctrl=/dev/nvme$ci; cns=/dev/ng${ci}n1
        wait_for "$cns" 10
        chardev-fuzz "$seed" 100000 "$ccalls" "$lbs" "$rctrl" "$rns" /tmp/trace.r > /tmp/cmp.r 2>&1
        rrc=$?
        chardev-fuzz "$seed" 100000 "$ccalls" "$lbs" "$cctrl" "$cns" /tmp/trace.c > /tmp/cmp.c 2>&1
        crc=$?
        grep -h '^chardev-fuzz: ' /tmp/cmp.r /tmp/cmp.c | sed 's/^/  /'
        # What rnvme answered, by kind of call (ioctl number, or ring and cmd_op).
        awk '{ split($3, a, ":"); print ($2 == 1 ? "root" : "uid65534"), a[1] ":" a[2] ":" a[3], $4 }' \
            /tmp/trace.r | sort | uniq -c | sort -nr | head -40 | sed 's/^/  rnvme /'
        [ "$rrc" = 0 ] && [ "$crc" = 0 ] && pass "fuzz-compare-runs ($ccalls calls each)" ||
            fail "fuzz-compare-runs (exit rnvme $rrc, nvme $crc)"
        # Trace lines are "<n> <root 1/0> <what> <result>" (what: ioctl:DEV:NUMBER:opOP:fdMODE
        # or uringRING:DEV:CMD_OP:opOP:fFLAGS:bINDEX, ring 0 = SQE128+CQE32, 1 = SQE128, 2 =
        # 64-byte SQEs); the calls that differ, grouped by kind and the two results.
        paste -d ' ' /tmp/trace.r /tmp/trace.c > /tmp/trace.rc
        echo "fuzz-compare: $(awk '$4 != $8' /tmp/trace.rc | wc -l) of $(wc -l < /tmp/trace.rc) calls differ"
        awk '$4 != $8 { split($3, a, ":")
                        print ($2 == 1 ? "root" : "uid65534"), a[1] ":" a[2] ":" a[3], "rnvme", $4, "nvme", $8 }' \
            /tmp/trace.rc | sort | uniq -c | sort -nr | head -40
    else
        fail "fuzz-nvme-disk"
    fi
    nvme_release "$cb"
fi

nvme_park "$rb"
check fuzz-unload rmmod rnvme
nvme_release "$rb"
