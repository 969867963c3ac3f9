#!/bin/sh
# QEMU 7.2 multi-threaded TCG race (scripts/qemu-mttcg-race.sh, not a driver test): no driver
# holds the controller; mmio-race reads the local APIC on CPU 1 while CPU 0 switches the
# controller's Memory Space enable off and on. With one host thread per vCPU QEMU segfaults
# within seconds (the run ends without this script's PASS line); with one thread for all it
# survives. Knob: rnvme_race_toggles=N (default 50000).
. /lib/rnvme/lib.sh

ctrl=$(nvme_pci_list | head -n1)
[ -n "$ctrl" ] || { fail "mttcg-race (no NVMe controller)"; exit 1; }
for b in $(nvme_pci_list); do nvme_park "$b"; done
if /usr/bin/mmio-race "$ctrl" "${rnvme_race_toggles:-50000}" 0xfee00030; then
    pass "mttcg-race-survived"
else
    fail "mttcg-race (mmio-race failed)"
fi
