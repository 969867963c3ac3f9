#!/bin/sh
# Issue #10, real timeouts under fio load: the host throttles the controller's image to 2
# requests/s (QMP block_set_io_throttle through run-guest.sh --monitor) under a QD 16 fio, so
# commands stay in the controller past the 1 s I/O timeout. The driver's timeout handler must
# run (its "timed out" log lines prove the fault was provoked): Abort (QEMU refuses it), then
# the controller reset; fio ends with errors or retried successes, no hang, no leak. Afterwards
# the driver must serve I/O again on the same disk (fio verify), which needs the controller reset
# + resume (drivers/nvme/host/pci.c nvme_reset_work()); a driver that only disables the
# controller fails that check. Whatever the outcome, the controller is rebound at the end so the
# tests after this one get a live controller.
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

fault_setup || { fault_result timeout-real 0; exit 1; }
errors=0
q=/sys/block/$DISK/queue
old_to=$(cat $q/io_timeout)

# verify_after NAME: the driver serves I/O (fio write + verify, 8 MiB).
verify_after() {
    run_fio "fault-timeout-$1-io-after" --filename=/dev/$DISK --allow_file_create=0 --direct=1 --bs=4k --size=${VMB}M \
        --offset=32M --ioengine=libaio --iodepth=8 --rw=randwrite --verify=crc32c --do_verify=1 \
        --verify_fatal=1 || FAULT_FAILED=1
}

before=$(dmesg | grep -c 'timed out')
echo 1000 > $q/io_timeout
qmp "throttle $SERIAL 2"
fault_fio timeout-real 4 --ioengine=libaio --iodepth=16 --rw=randread --bs=4k --size=32M \
    --continue_on_error=all
fault_fio_wait
qmp "throttle $SERIAL 0"
echo "$old_to" > $q/io_timeout
after=$(dmesg | grep -c 'timed out')
dmesg | grep -E 'rnvme' | tail -n 12 | sed 's/^/dmesg: /'
echo "real timeouts: $((after - before)) 'timed out' lines, fio exit $FIO_RC, $FIO_ERRORS I/O errors"
[ $((after - before)) -gt 0 ] && pass "fault-timeout-real-provoked ($((after - before)) timed out)" ||
    ffail "fault-timeout-real-provoked (no timeout logged: the throttle did not hold commands)"
errors=$((errors + FIO_ERRORS))
verify_after real
# A live controller for the next tests, whatever happened.
echo "$CTRL" > /sys/bus/pci/drivers/rnvme/unbind 2>/dev/null
nvme_bind "$CTRL" rnvme "$WAIT_S" && nvme_wait_disks "$CTRL" 1 "$WAIT_S" >/dev/null ||
    ffail "fault-timeout-real-rebind"
fault_result timeout-real "$errors"
