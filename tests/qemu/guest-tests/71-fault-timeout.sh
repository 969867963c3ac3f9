#!/bin/sh
# Issue #10, timeouts under fio load with fail_io_timeout (CONFIG_FAIL_IO_TIMEOUT: the disk's
# io-timeout-fail + debugfs fail_io_timeout), which drops completions of requests while fio
# writes and verifies: the requests must still end after the (lowered, 1 s) I/O timeout, through
# the driver's timeout handler; fio sees errors or its verify passes (never a mismatch). The
# injection counter (`times`) proves timeouts were injected. Afterwards the driver must serve I/O:
# a fio verify on the same disk passes. Real timeouts (commands the controller holds):
# 72-fault-timeout-real.sh.
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

fault_setup || { fault_result timeout 0; exit 1; }
errors=0
q=/sys/block/$DISK/queue
old_to=$(cat $q/io_timeout)

# verify_after NAME: the driver serves I/O (fio write + verify, 8 MiB).
verify_after() {
    run_fio "fault-timeout-$1-io-after" --filename=/dev/$DISK --allow_file_create=0 --direct=1 --bs=4k --size=${VMB}M \
        --offset=32M --ioengine=libaio --iodepth=8 --rw=randwrite --verify=crc32c --do_verify=1 \
        --verify_fatal=1 || FAULT_FAILED=1
}

# no_mismatch: fio's output has no verify failure (errors are allowed, wrong data never).
no_mismatch() {
    if grep -qE 'verify failed|bad magic|bad header|crc32c: verify' "$FIO_OUT"; then
        ffail "fault-timeout-$1-data (fio verify mismatch)"; grep -E 'verify|bad' "$FIO_OUT" | head
    else
        pass "fault-timeout-$1-data (no verify mismatch)"
    fi
}

fi_dir=/sys/kernel/debug/fail_io_timeout
if [ -d "$fi_dir" ] && [ -e /sys/block/$DISK/io-timeout-fail ]; then
    times=12; [ "$DEBUG_KERNEL" = 1 ] && times=6
    echo 1000 > $q/io_timeout
    echo 0 > $fi_dir/verbose; echo 0 > $fi_dir/space; echo 1 > $fi_dir/interval
    echo 5 > $fi_dir/probability; echo $times > $fi_dir/times
    echo 1 > /sys/block/$DISK/io-timeout-fail
    # Not time_based: fio writes the data, then reads it back and verifies it.
    FIO_OUT=/tmp/fio-fault.timeout-inject
    echo "--- fio timeout-inject: $((VMB / 2)) MiB randwrite + verify, QD 8, 5% of completions dropped (at most $times)"
    t0=$(cut -d. -f1 /proc/uptime)
    timeout 300 fio --name=timeout-inject --filename=/dev/$DISK --allow_file_create=0 --direct=1 --bs=4k --size=$((VMB / 2))M \
        --ioengine=libaio --iodepth=8 --rw=randwrite --verify=crc32c --do_verify=1 \
        --continue_on_error=io > "$FIO_OUT" 2>&1
    FIO_RC=$?
    t1=$(cut -d. -f1 /proc/uptime)
    echo 0 > /sys/block/$DISK/io-timeout-fail; echo 0 > $fi_dir/probability
    left=$(cat $fi_dir/times)
    echo 1 > $fi_dir/times
    echo "$old_to" > $q/io_timeout
    grep -E 'err=|errors *:|IOPS=' "$FIO_OUT"
    injected=$((times - left))
    e=$(_fio_errors "$FIO_OUT")
    echo "fail_io_timeout: $injected timeouts injected, fio exit $FIO_RC after $((t1 - t0)) s, $e I/O errors"
    [ "$FIO_RC" != 124 ] && pass "fault-timeout-inject-no-hang ($((t1 - t0)) s)" ||
        ffail "fault-timeout-inject-no-hang (fio killed after 300 s)"
    # Provoked: timeouts injected, and the run took at least one I/O timeout (1 s) longer.
    [ "$injected" -gt 0 ] && [ $((t1 - t0)) -ge 1 ] && pass "fault-timeout-inject-provoked ($injected)" ||
        ffail "fault-timeout-inject-provoked ($injected timeouts injected in $((t1 - t0)) s)"
    no_mismatch inject
    errors=$((errors + e))
    verify_after inject
else
    ffail "fault-timeout-inject (no fail_io_timeout in this kernel)"
fi

fault_result timeout "$errors"
