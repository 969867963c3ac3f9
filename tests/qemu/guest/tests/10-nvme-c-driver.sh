#!/bin/sh
# Smoke test of the in-tree C NVMe driver against QEMU's emulated controller(s):
# module load, namespace block devices, MSI-X queues, fio with verification.
. /lib/rnvme/lib.sh

ncpu=$(grep -c ^processor /proc/cpuinfo)
check nvme-core-load kmod_load nvme-core
check nvme-load kmod_load nvme

if wait_for /dev/nvme0n1 20; then pass nvme0n1-present; else fail nvme0n1-present; ls /dev; exit 1; fi
devs=$(ls /dev/nvme*n1)
echo "namespaces: $devs"
for d in $devs; do
    n=$(basename "$d")
    echo "$n: $(cat /sys/block/$n/size) sectors, model '$(cat /sys/block/$n/device/model 2>/dev/null | tr -s ' ')'"
done

# MSI-X: the C driver allocates one admin queue vector plus one I/O queue per CPU.
echo "--- /proc/interrupts (nvme)"
grep -E 'CPU|nvme' /proc/interrupts
ioq=$(grep -cE 'nvme0q[1-9]' /proc/interrupts)
msix=$(grep -E 'nvme0q' /proc/interrupts | grep -c 'MSI')
if [ "$ioq" -eq "$ncpu" ]; then pass "nvme-io-queues ($ioq I/O queues for $ncpu CPUs)"
else fail "nvme-io-queues ($ioq I/O queue vectors, expected $ncpu)"; fi
if [ "$msix" -ge 2 ] && [ "$msix" -eq "$(grep -cE 'nvme0q' /proc/interrupts)" ]; then pass "nvme-msix ($msix MSI vectors)"
else fail "nvme-msix ($msix of $(grep -cE 'nvme0q' /proc/interrupts) nvme0 vectors are MSI)"; fi

dev=/dev/nvme0n1
common="--filename=$dev --direct=1 --bs=4k --size=32M --group_reporting"
run_fio nvme-randwrite-verify-io_uring $common --ioengine=io_uring --iodepth=16 --rw=randwrite \
    --verify=crc32c --do_verify=1 --verify_fatal=1
run_fio nvme-randread-libaio $common --ioengine=libaio --iodepth=16 --rw=randread \
    --time_based --runtime=3
run_fio nvme-seqwrite-verify-psync --filename=$dev --direct=1 --bs=64k --size=16M --offset=64M \
    --ioengine=psync --rw=write --verify=crc32c --do_verify=1 --verify_fatal=1
run_fio nvme-randrw-io_uring-2jobs $common --ioengine=io_uring --iodepth=8 --rw=randrw \
    --numjobs=2 --time_based --runtime=3

# Any further controllers: a quick verified write each.
for d in $devs; do
    [ "$d" = "$dev" ] && continue
    run_fio "$(basename $d)-randwrite-verify" --filename=$d --direct=1 --bs=4k --size=8M \
        --ioengine=io_uring --iodepth=8 --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
done

check nvme-unload kmod_unload nvme
check nvme-core-unload kmod_unload nvme-core
