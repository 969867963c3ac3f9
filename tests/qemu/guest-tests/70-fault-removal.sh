#!/bin/sh
# Issue #10, surprise removal: the controller is unplugged through the QEMU monitor (device_del;
# ACPI PCI hotplug on QEMU's pc machine) while fio writes and reads on its disk. fio must get I/O
# errors and end (no hang), the disk and the PCI device must go away, nothing may leak; the
# controller plugged in again (device_add) must be probed by rnvme and pass a fio verify.
# Needs run-guest.sh --monitor and a hotplug=1 controller (--topology faults).
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

fault_setup || { fault_result removal 0; exit 1; }
dev=/sys/bus/pci/devices/$CTRL

# fio with I/O in flight on two jobs; it stops at the first error (the removal), long before its
# runtime unless nothing fails.
fault_fio removal 300 --ioengine=libaio --iodepth=16 --numjobs=2 --rw=randrw --bs=4k --size=32M
fault_fio_started && sleep 1
kill -0 "$FIO_PID" 2>/dev/null && pass "fault-removal-fio-running" || ffail "fault-removal-fio-running (fio ended before the removal)"
t0=$(cut -d. -f1 /proc/uptime)
if CHECK="[ ! -e $dev ]" qmp "device_del $SERIAL" "$WAIT_S"; then
    pass "fault-removal-device-gone ($(( $(cut -d. -f1 /proc/uptime) - t0 )) s)"
else
    ffail "fault-removal-device-gone ($dev still there after $WAIT_S s)"
fi
fault_fio_wait
[ ! -e /sys/block/$DISK ] && pass "fault-removal-disk-gone" || ffail "fault-removal-disk-gone (/sys/block/$DISK)"
[ ! -e /dev/$DISK ] && pass "fault-removal-dev-node-gone" || ffail "fault-removal-dev-node-gone (/dev/$DISK)"
[ "$FIO_ERRORS" -gt 0 ] && pass "fault-removal-io-errors ($FIO_ERRORS)" ||
    ffail "fault-removal-io-errors (fio saw none: the removal was not under load)"
errors=$FIO_ERRORS
dmesg | grep -E 'rnvme|pci 0000:00:1|acpiphp' | tail -n 15 | sed 's/^/dmesg: /'

fault_replug removal
fault_result removal "$errors"
