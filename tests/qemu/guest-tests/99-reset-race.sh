#!/bin/sh
# QEMU 7.2 controller-reset use-after-free (scripts/qemu-nvme-reset-race.sh, not a driver test):
# rnvme binds the faults topology's controller with delete_queues_before_disable from
# rnvme_reset_race_delete (0 or 1) and, rnvme_reset_race_rounds times (default 20), lets an
# Asynchronous Event Request time out (500 ms) while fio writes on the disk: the timeout disables
# the controller and resets it. With 0 the disable meets commands waiting in the submission
# queues and QEMU segfaults in about one timeout in fifteen (the run ends without this script's
# PASS line); with 1 the queues are deleted first and it survives.
. /lib/rnvme/lib.sh

del=${rnvme_reset_race_delete:-1}
rounds=${rnvme_reset_race_rounds:-20}
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
ctrl=$(nvme_pci_list | head -n1)
[ -n "$ctrl" ] || { fail "reset-race (no NVMe controller)"; exit 1; }
nvme_park "$ctrl"
insmod /lib/modules/extra/rnvme.ko delete_queues_before_disable="$del" ||
    { fail "reset-race (insmod)"; exit 1; }
nvme_bind "$ctrl" rnvme || { fail "reset-race (bind)"; exit 1; }
disk=$(nvme_wait_disks "$ctrl" 1 20) || { fail "reset-race (no disk)"; exit 1; }
i=${disk#rnvme}; i=${i%%n*}
for r in $(seq "$rounds"); do
    fio --name=w --filename=/dev/$disk --direct=1 --bs=4k --size=32M --ioengine=io_uring \
        --iodepth=16 --numjobs=2 --rw=randwrite --time_based --runtime=3 > /tmp/race-fio.out 2>&1 &
    fp=$!
    sleep 1
    timeout 60 nvme admin-passthru "/dev/rnvme$i" --opcode=0x0c --timeout=500 > /dev/null 2>&1
    wait "$fp"
    echo "reset-race: round $r of $rounds done (delete_queues_before_disable=$del)"
done
sed 's/^/reset-race admin: /' "/sys/kernel/debug/rnvme/rnvme$i/admin"
pass "reset-race-survived ($rounds timeouts, delete_queues_before_disable=$del)"
