#!/bin/sh
# Issue #10, acknowledged writes survive a kill, second boot on the image of the first
# (75-ack-write.sh, killed by QMP quit): every block whose write was acknowledged before the kill
# (/lib/rnvme/acked, "BLOCK GEN" lines the host collected from the first boot's console) is read
# back through rnvme and must hold that generation or the next one, every byte.
# Prints `ack-survive: N acknowledged blocks checked, L lost`.
. /lib/rnvme/lib.sh
. /lib/rnvme/faults.sh

run="${rnvme_ack_run:-1}"
acked=/lib/rnvme/acked
[ -s "$acked" ] || { fail "ack-check (no acknowledged writes from the first boot: $acked empty)"; exit 1; }
fault_setup || exit 1
echo "ack-check: $(wc -l < $acked) acknowledged blocks from the first boot, newest generation $(awk '{ if ($2 > m) m = $2 } END { print m }' $acked)"
if ackwrite check /dev/$DISK 10240 256 "$run" "$acked"; then
    pass "ack-survive"
else
    fail "ack-survive"
fi
