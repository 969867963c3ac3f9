#!/bin/sh
# Issue #10, acknowledged writes survive a kill, first boot: /usr/bin/ackwrite (ackwrite.c)
# overwrites 256 blocks of 4 KiB through rnvme, generation after generation, alternately with
# FUA (O_DSYNC) and with plain writes + flush (fdatasync), printing `ack-write: block=B gen=G`
# only once a write is acknowledged. After a few seconds of it the guest asks the host for QMP
# quit (run-guest.sh --monitor): QEMU ends at once, no shutdown, writes in flight. The host
# (scripts/test-faults.sh) keeps the image, collects the acknowledged generations from the
# console log and boots again on the same image with 76-ack-check.sh.
# Must be the last test of its boot. Knob: rnvme_ack_run=N (the run id, same in both boots).
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

run="${rnvme_ack_run:-1}"
fault_setup || exit 1
# The kill skips /init's final checks: report earlier kernel problems now (same patterns).
bad='BUG:|WARNING:|Oops|KASAN|possible circular locking|possible recursive locking|inconsistent lock state|sleeping function called from invalid context|UBSAN|Call Trace:'
if dmesg | grep -qE "$bad"; then
    # With the lines before each report (its header: a hung task, a stall, an allocation
    # failure...), which the console's log level hides.
    dmesg | grep -B 12 -A 24 -E "$bad" | head -n 150 | sed 's/^/dmesg: /'
    fail "ack-write-kernel-log-before-kill"
fi
# Blocks [10240, 10496) = [40 MiB, 41 MiB) of the 64 MiB namespace.
echo "ack-write: disk $DISK, run $run, blocks 10240..10495"
ackwrite write /dev/$DISK 10240 256 "$run" 300 &
w=$!
sleep "$FAULT_SECS"
kill -0 $w 2>/dev/null && pass "ack-write-running" || fail "ack-write-running (ackwrite ended early)"
# Nothing in the guest can see the kill: the request is printed until QEMU is gone.
CHECK=false qmp "quit" 60
fail "ack-write-killed (QEMU still runs 60 s after the quit request)"
