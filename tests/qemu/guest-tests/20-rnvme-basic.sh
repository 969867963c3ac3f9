#!/bin/sh
# rnvme.ko basics: load, bind every NVMe controller to rnvme (driver_override + bind), disks
# named rnvme<C>n<N> with the sizes and logical block sizes QEMU was given, interrupts, a short
# fio verify on each disk, discard/write-zeroes reading back zeroes, rmmod refused while a disk
# is open, unload + reload (data survives), and ten load/unload cycles.
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
if [ ! -f "$ko" ]; then fail "rnvme-ko-present ($ko missing)"; exit 1; fi

# Seconds to wait for a controller's disks after a (re)load: probing includes ACPI IRQ routing,
# which takes tens of seconds per device under the debug kernel in TCG.
wait_s=60

ctrls=$(nvme_pci_list)
if [ -z "$ctrls" ]; then fail "rnvme-controllers (no NVMe controller)"; exit 1; fi
nctrl=$(echo $ctrls | wc -w)

# Expected namespaces of a controller: the LBSxBYTES list from the host, or one of any size.
expected_ns() { _e=$(nvme_ctrl_field "$1" 4); echo "${_e:-0x0}" | tr '+' ' '; }
expected_count() { echo $(expected_ns "$1") | wc -w; }

# Every controller is kept off other drivers before rnvme loads, then bound to rnvme.
for b in $ctrls; do nvme_park "$b"; done
check rnvme-load insmod "$ko"
for b in $ctrls; do check "rnvme-bind-$b" nvme_bind "$b" rnvme; done
nvme_ctrls
dmesg | grep -E 'rnvme[0-9]*: ' | sed 's/^/dmesg: /'

disks=""
for b in $ctrls; do
    n=$(expected_count "$b")
    if ds=$(nvme_wait_disks "$b" "$n" "$wait_s"); then
        pass "rnvme-disks-$b ($ds)"
    else
        fail "rnvme-disks-$b (wanted $n)"; continue
    fi
    i=1
    for spec in $(expected_ns "$b"); do
        d=$(echo $ds | cut -d' ' -f$i); i=$((i + 1))
        case "$d" in rnvme[0-9]*n[0-9]*) pass "rnvme-name-$d" ;; *) fail "rnvme-name ($d)" ;; esac
        lbs=${spec%x*}; bytes=${spec#*x}
        got_lbs=$(cat /sys/block/$d/queue/logical_block_size)
        got_bytes=$(( $(cat /sys/block/$d/size) * 512 ))
        echo "$d: $got_bytes bytes, logical block size $got_lbs (host: $spec)"
        if [ "$lbs" = 0 ]; then
            [ "$got_bytes" -gt 0 ] && pass "rnvme-size-$d" || fail "rnvme-size-$d (empty)"
        else
            [ "$got_lbs" = "$lbs" ] && pass "rnvme-lbs-$d" || fail "rnvme-lbs-$d ($got_lbs, want $lbs)"
            [ "$got_bytes" = "$bytes" ] && pass "rnvme-size-$d" || fail "rnvme-size-$d ($got_bytes, want $bytes)"
        fi
        disks="$disks $d"
    done
done
[ -n "$disks" ] || { fail "rnvme-no-disks"; exit 1; }

echo "--- /proc/interrupts (rnvme)"
grep -E 'CPU|rnvme' /proc/interrupts
ncpu=$(grep -c ^processor /proc/cpuinfo)
for b in $ctrls; do
    # The admin queue's vector and one I/O queue vector per CPU (requested), fewer when the
    # controller grants fewer queue pairs (qpairs from the host).
    q=$(nvme_ctrl_field "$b" 3); want=$ncpu
    [ -n "$q" ] && [ "$q" != 0 ] && [ "$q" -lt "$ncpu" ] && want=$q
    n=$(irq_counts $(nvme_irqs "$b") | wc -l)
    [ "$n" = $((want + 1)) ] && pass "rnvme-vectors-$b ($n vectors: admin + $want I/O queues)" ||
        fail "rnvme-vectors-$b ($n vectors in use, want $((want + 1)): admin + $want I/O queues)"
done

for d in $disks; do
    lbs=$(cat /sys/block/$d/queue/logical_block_size)
    bs=4k; [ "$lbs" -gt 4096 ] && bs=$lbs
    run_fio "rnvme-$d-randwrite-verify" --filename=/dev/$d --direct=1 --bs=$bs --size=16M \
        --ioengine=io_uring --iodepth=16 --rw=randwrite --verify=crc32c --do_verify=1 \
        --verify_fatal=1
    run_fio "rnvme-$d-mixed-verify-libaio" --filename=/dev/$d --direct=1 --bsrange=$lbs-256k \
        --size=16M --offset=16M --ioengine=libaio --iodepth=8 --rw=randwrite --verify=crc32c \
        --do_verify=1 --verify_fatal=1
done

d=$(echo $disks | cut -d' ' -f1)
# Discard and write-zeroes: write a pattern, clear it, read back zeroes.
zero_check() {
    _name=$1; shift
    dd if=/dev/urandom of=/dev/$d bs=64k count=16 seek=512 oflag=direct 2>/dev/null
    if ! "$@"; then fail "rnvme-$_name ($* failed)"; return 1; fi
    drop_caches
    _nz=$(dd if=/dev/$d bs=64k count=16 skip=512 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)
    _len=$(dd if=/dev/$d bs=64k count=16 skip=512 iflag=direct 2>/dev/null | wc -c)
    if [ "$_len" = 1048576 ] && [ "$_nz" = 0 ]; then
        pass "rnvme-$_name-reads-zero"
    else
        fail "rnvme-$_name-reads-zero ($_nz non-zero bytes of $_len)"
    fi
}
if [ "$(cat /sys/block/$d/queue/discard_max_bytes)" -gt 0 ] && command -v blkdiscard >/dev/null; then
    zero_check discard blkdiscard -o $((512 * 65536)) -l 1048576 /dev/$d
fi
# util-linux blkdiscard (BLKZEROOUT); busybox's applet has no -z.
if [ "$(cat /sys/block/$d/queue/write_zeroes_max_bytes)" -gt 0 ] && [ -x /usr/sbin/blkdiscard ]; then
    zero_check write-zeroes /usr/sbin/blkdiscard -z -o $((512 * 65536)) -l 1048576 /dev/$d
else
    echo "write-zeroes check not run (no write zeroes support or no util-linux blkdiscard)"
fi

# A pattern that must survive unload and reload.
dd if=/dev/urandom of=/tmp/pattern bs=64k count=16 2>/dev/null
# At the middle of the disk (in 64 KiB blocks), wherever the disk is large enough.
pat=$(( $(cat /sys/block/$d/size) / 128 / 2 ))
dd if=/tmp/pattern of=/dev/$d bs=64k seek=$pat oflag=direct conv=fsync 2>/dev/null ||
    fail "rnvme-pattern-write ($d at $pat x 64 KiB)"
sum_before=$(md5sum < /tmp/pattern | cut -d' ' -f1)

# rmmod must be refused while a disk is open.
exec 3< /dev/$d
if rmmod rnvme 2>/dev/null; then fail "rnvme-rmmod-refused-while-open"; else pass "rnvme-rmmod-refused-while-open"; fi
exec 3<&-

check rnvme-unload rmmod rnvme
[ ! -e /sys/block/$d ] && pass "rnvme-disks-gone" || fail "rnvme-disks-gone ($d still there)"
check rnvme-reload insmod "$ko"
b0=$(echo $ctrls | cut -d' ' -f1)
if nvme_wait_disks "$b0" 1 "$wait_s" >/dev/null && wait_for /dev/$d 10; then
    sum_after=$(dd if=/dev/$d bs=64k skip=$pat count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)
    [ "$sum_after" = "$sum_before" ] && pass "rnvme-data-survives-reload" ||
        fail "rnvme-data-survives-reload (md5 $sum_after, written $sum_before)"
else
    fail "rnvme-reload-disks"
fi

# Load/unload cycles: ten (rnvme_reload_cycles=N on the kernel command line changes it: each
# cycle probes every controller again, about 30 s each under the debug kernel).
cycles=${rnvme_reload_cycles:-10}
ok=1
i=0
while [ "$i" -lt "$cycles" ]; do
    i=$((i + 1))
    rmmod rnvme || { ok=0; echo "cycle $i: rmmod failed"; break; }
    insmod "$ko" || { ok=0; echo "cycle $i: insmod failed"; break; }
    nvme_wait_disks "$b0" 1 "$wait_s" >/dev/null || { ok=0; echo "cycle $i: no disk"; break; }
    dd if=/dev/$d of=/dev/null bs=4k count=16 iflag=direct 2>/dev/null || { ok=0; echo "cycle $i: read failed"; break; }
done
[ "$ok" = 1 ] && pass "rnvme-reload-$cycles-cycles" || fail "rnvme-reload-$cycles-cycles"

# Timeouts: fail_io_timeout drops the completion of one read; the request must still end (the
# timeout handler finds the command completed and ends it with its status) and later I/O works.
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
fi_dir=/sys/kernel/debug/fail_io_timeout
if [ -d "$fi_dir" ] && [ -e /sys/block/$d/io-timeout-fail ]; then
    old_to=$(cat /sys/block/$d/queue/io_timeout)
    echo 2000 > /sys/block/$d/queue/io_timeout
    echo 100 > $fi_dir/probability; echo 1 > $fi_dir/times; echo 0 > $fi_dir/verbose
    echo 1 > /sys/block/$d/io-timeout-fail
    t0=$(cut -d. -f1 /proc/uptime)
    if timeout 60 dd if=/dev/$d of=/dev/null bs=4k count=1 skip=7 iflag=direct 2>/dev/null; then
        rc=0
    else
        rc=$?
    fi
    t1=$(cut -d. -f1 /proc/uptime)
    echo 0 > /sys/block/$d/io-timeout-fail; echo 0 > $fi_dir/probability
    echo "$old_to" > /sys/block/$d/queue/io_timeout
    echo "timed-out read: exit $rc after $((t1 - t0)) s"
    [ "$rc" = 0 ] && [ $((t1 - t0)) -ge 1 ] && pass "rnvme-timeout-completes ($((t1 - t0)) s)" ||
        fail "rnvme-timeout-completes (dd exit $rc after $((t1 - t0)) s)"
    dd if=/dev/$d of=/dev/null bs=4k count=16 iflag=direct 2>/dev/null && pass "rnvme-io-after-timeout" ||
        fail "rnvme-io-after-timeout"
else
    echo "timeout check not run (no fail_io_timeout in this kernel)"
fi

# Controller reset under load (issue 7): while fio writes and verifies, the controller stops
# answering: bus mastering is cleared in its PCI command register for two seconds, so QEMU's
# controller can neither fetch commands nor post completions or interrupts (it sets CSTS.CFS),
# and what was in flight stays there after bus mastering is back. With a 3 s request timeout the
# driver reaps (nothing), sends an Abort (QEMU refuses it), then resets the controller: quiesce,
# disable, cancel (host-aborted, requeued), enable, queues again, unquiesce. fio must see no
# error and verify every block, the reset must be logged, and the same disk must keep serving
# verified I/O afterwards, without unbind/bind.
resets_done() { dmesg | grep -c 'controller reset [0-9]* done'; }
cfg=/sys/bus/pci/devices/$b0/config
if [ -e /sys/block/$d/queue/io_timeout ] && [ -w "$cfg" ]; then
    old_to=$(cat /sys/block/$d/queue/io_timeout)
    echo 3000 > /sys/block/$d/queue/io_timeout
    r0=$(resets_done)
    cmd=$(od -An -tu1 -j4 -N1 "$cfg" | tr -d ' ')
    fio --name=rnvme-reset-load --filename=/dev/$d --direct=1 --bs=4k --size=24M --offset=8M \
        --ioengine=libaio --iodepth=16 --rw=randwrite --verify=crc32c --do_verify=1 \
        --verify_fatal=1 --loops=2 > /tmp/reset-fio.out 2>&1 &
    fpid=$!
    # Bus mastering goes off only once fio's writes are flowing (on the debug kernel fio can
    # take seconds to start; with nothing in flight there is nothing to get stuck).
    w0=$(awk '{print $5}' /sys/block/$d/stat)
    n=0
    while [ "$(awk '{print $5}' /sys/block/$d/stat)" = "$w0" ] && kill -0 "$fpid" 2>/dev/null &&
        [ "$n" -lt 600 ]; do
        usleep 100000; n=$((n + 1))
    done
    printf "\\$(printf '%03o' $((cmd & ~4)))" | dd of="$cfg" bs=1 seek=4 count=1 conv=notrunc 2>/dev/null
    echo "bus mastering off ($b0: command byte $cmd -> $((cmd & ~4)))"
    sleep 2
    printf "\\$(printf '%03o' "$cmd")" | dd of="$cfg" bs=1 seek=4 count=1 conv=notrunc 2>/dev/null
    echo "bus mastering back ($(od -An -tu1 -j4 -N1 "$cfg" | tr -d ' '))"
    if wait $fpid; then frc=0; else frc=$?; fi
    echo "$old_to" > /sys/block/$d/queue/io_timeout
    grep -E 'err=|verify|error' /tmp/reset-fio.out | head -5 | sed 's/^/fio: /'
    r1=$(resets_done)
    dmesg | grep -E 'timed out|abort|resetting|reset [0-9]* (done|failed)|disabling' | tail -6 |
        sed 's/^/dmesg: /'
    [ "$frc" = 0 ] && pass "rnvme-reset-under-load-fio-verify" ||
        fail "rnvme-reset-under-load-fio-verify (fio exit $frc)"
    [ "$r1" -gt "$r0" ] && pass "rnvme-reset-logged ($((r1 - r0)) resets)" ||
        fail "rnvme-reset-logged (no 'controller reset N done' in the kernel log)"
    run_fio "rnvme-$d-verify-after-reset" --filename=/dev/$d --direct=1 --bs=4k --size=8M \
        --offset=40M --ioengine=io_uring --iodepth=16 --rw=randwrite --verify=crc32c \
        --do_verify=1 --verify_fatal=1
fi

# Poll queues and SGLs: reload with poll_queues=1 and sgl_threshold=512 (every data transfer an
# SGL: QEMU's controller supports them); io_uring IOPOLL (fio --hipri) must work (the poll
# queues' completion queues have no interrupt: only blk-mq's poll callback completes them), and
# a mixed block size verify must pass with SGLs.
rmmod rnvme
check rnvme-load-poll-sgl insmod "$ko" poll_queues=1 sgl_threshold=512
if nvme_wait_disks "$b0" 1 "$wait_s" >/dev/null && wait_for /dev/$d 10; then
    [ "$(cat /sys/block/$d/queue/io_poll)" = 1 ] && pass "rnvme-io_poll-$d" || fail "rnvme-io_poll-$d (not set)"
    run_fio "rnvme-$d-iopoll-verify" --filename=/dev/$d --direct=1 --bs=4k --size=8M \
        --ioengine=io_uring --hipri --iodepth=8 --rw=randwrite --verify=crc32c --do_verify=1 \
        --verify_fatal=1
    lbs=$(cat /sys/block/$d/queue/logical_block_size)
    run_fio "rnvme-$d-sgl-mixed-verify" --filename=/dev/$d --direct=1 --bsrange=$lbs-1m \
        --size=16M --offset=48M --ioengine=libaio --iodepth=16 --rw=randwrite --verify=crc32c \
        --do_verify=1 --verify_fatal=1
else
    fail "rnvme-reload-poll-disks"
fi

# A user admin command that times out (issue 7): an Asynchronous Event Request, which QEMU's
# controller holds until an event happens, with a 500 ms timeout. The driver must disable the
# controller before it frees the command's buffers (nvme_timeout() for the admin queue), report
# the failure (EINTR, as the C driver), reset the controller, and nothing may hang afterwards:
# I/O on the disk ends, rmmod works. (The debug kernel's DMA-API debugging and kmemleak scan see
# any buffer leaked or freed while mapped; 58-rnvme-admin-irq.sh checks the reset itself.)
c=/dev/${d%n*}
if command -v nvme >/dev/null 2>&1 && [ -c "$c" ]; then
    n0=$(dmesg | grep -c 'admin command 0xc timed out')
    t0=$(cut -d. -f1 /proc/uptime)
    if timeout 60 nvme admin-passthru "$c" --opcode=0x0c --timeout=500 > /tmp/aer.out 2>&1; then
        rc=0
    else
        rc=$?
    fi
    t1=$(cut -d. -f1 /proc/uptime)
    sed 's/^/aer: /' /tmp/aer.out
    n1=$(dmesg | grep -c 'admin command 0xc timed out')
    dmesg | grep -E 'admin command 0xc|disabling the controller|rnvme.*reset' | tail -5 | sed 's/^/dmesg: /'
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$n1" -gt "$n0" ]; then
        pass "rnvme-admin-timeout-reported (exit $rc after $((t1 - t0)) s)"
    else
        fail "rnvme-admin-timeout-reported (exit $rc after $((t1 - t0)) s, kernel reports $n0 -> $n1)"
    fi
    timeout 60 dd if=/dev/$d of=/dev/null bs=4k count=16 iflag=direct 2>/dev/null
    rc=$?
    [ "$rc" != 124 ] && pass "rnvme-io-ends-after-admin-timeout (dd exit $rc)" ||
        fail "rnvme-io-ends-after-admin-timeout (dd hung)"
else
    echo "admin timeout check not run (no nvme-cli or no $c)"
fi

check rnvme-final-unload rmmod rnvme
for b in $ctrls; do nvme_release "$b"; done
