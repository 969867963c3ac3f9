#!/bin/sh
# Issue #10, surprise removal: the controller drops off the bus before anyone tells the driver.
# QEMU has no surprise hot-unplug (device_del is an orderly ACPI removal: 70-fault-removal.sh), so
# the guest turns the function's Memory Space and Bus Master enables off in its PCI command
# register, behind rnvme's back, while fio writes and reads on the disk: doorbell and register
# writes are dropped, the controller can neither fetch commands, post completions nor raise MSI-X
# interrupts, and register reads return 0 (QEMU 7.2 reads a disabled BAR as unassigned memory; a
# real device that is gone reads all ones, the case the simulated controller covers:
# tests/src/nvme_sim, `gone`). The commands in flight must time out (I/O timeout 1 s), the
# driver's recovery must end (abort, whose admin command times out, then a reset that cannot
# enable the controller, which is given up) and fio must end with I/O errors, no hang. Then the
# hotplug removal arrives (device_del): the driver's remove must finish on the dead device, the
# disk and the PCI device must go away, nothing may leak; the controller plugged in again
# (device_add) must be probed and pass a fio verify.
# QEMU 7.2 does not always finish deleting the dead device: in about one run of three its
# device_add is refused for good ('Permission conflict on node': the old device still holds the
# drive), so the device never reappears. That is reported, not failed (the driver has no part in
# it; 70-fault-removal.sh checks the re-plug every run), and this test runs last, in the second
# boot of scripts/test-faults.sh after 76-ack-check.sh, so no later test needs the controller.
# Needs run-guest.sh --monitor and a hotplug=1 controller (--topology faults); its boot in
# scripts/test-faults.sh runs with --tcg-single, because switching the BAR off under load can
# crash QEMU 7.2's multi-threaded TCG (scripts/qemu-mttcg-race.sh).
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

fault_setup || { fault_result surprise 0; exit 1; }
dev=/sys/bus/pci/devices/$CTRL
echo 1000 > /sys/block/$DISK/queue/io_timeout

fault_fio surprise 300 --ioengine=libaio --iodepth=16 --numjobs=2 --rw=randrw --bs=4k --size=32M
fault_fio_started && sleep 1
kill -0 "$FIO_PID" 2>/dev/null && pass "fault-surprise-fio-running" || ffail "fault-surprise-fio-running (fio ended before the fault)"

# PCI_COMMAND (config offset 4, 16 bits, little endian): clear PCI_COMMAND_MEMORY (bit 1) and
# PCI_COMMAND_MASTER (bit 2).
cmd=$(dd if=$dev/config bs=1 skip=4 count=2 2>/dev/null | od -An -tu2 | tr -d ' ')
new=$((cmd & ~6))
printf "\\$(printf %03o $((new & 255)))\\$(printf %03o $((new >> 8)))" |
    dd of=$dev/config bs=1 seek=4 count=2 conv=notrunc 2>/dev/null
now=$(dd if=$dev/config bs=1 skip=4 count=2 2>/dev/null | od -An -tu2 | tr -d ' ')
t0=$(cut -d. -f1 /proc/uptime)
if [ -n "$cmd" ] && [ $((now & 6)) = 0 ]; then
    pass "fault-surprise-gone (PCI command $cmd -> $now)"
else
    ffail "fault-surprise-gone (PCI command $cmd -> $now: the enables are still set)"
fi
fault_fio_wait
echo "fio ended $(( $(cut -d. -f1 /proc/uptime) - t0 )) s after the controller went away"
[ "$FIO_ERRORS" -gt 0 ] && pass "fault-surprise-io-errors ($FIO_ERRORS)" ||
    ffail "fault-surprise-io-errors (fio saw none: the fault was not under load)"
errors=$FIO_ERRORS
dmesg | grep -E 'rnvme' | tail -n 12 | sed 's/^/dmesg: /'

t0=$(cut -d. -f1 /proc/uptime)
if CHECK="[ ! -e $dev ]" qmp "device_del $SERIAL" "$WAIT_S"; then
    pass "fault-surprise-removed ($(( $(cut -d. -f1 /proc/uptime) - t0 )) s)"
else
    ffail "fault-surprise-removed ($dev still there after $WAIT_S s: the driver's remove did not end)"
fi
[ ! -e /sys/block/$DISK ] && pass "fault-surprise-disk-gone" || ffail "fault-surprise-disk-gone (/sys/block/$DISK)"

fault_replug surprise qemu-may-refuse
fault_result surprise "$errors"
