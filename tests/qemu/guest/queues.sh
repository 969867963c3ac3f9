#!/bin/sh
# I/O queues and interrupt vectors of one NVMe driver (installed as /lib/rnvme/queues.sh).
#
#   sh /lib/rnvme/queues.sh DRIVER CTRL_MANY CTRL_ONE      e.g. nvme rnvme-a rnvme-q
#
# CTRL_MANY is a controller with QEMU's default queue count: the driver must give its first disk
# one blk-mq hardware queue per CPU, and I/O issued from each CPU in turn must raise that
# controller's MSI/MSI-X vectors on that very CPU (/proc/interrupts), i.e. every CPU has a vector
# of its own that fires, as with the C driver's managed affinity (pci_alloc_irq_vectors_affinity
# in drivers/nvme/host/pci.c). CTRL_ONE is a controller that grants one I/O queue pair (QEMU
# max_ioqpairs=1): the driver must still work with one hardware queue shared by every CPU
# (fio verify from two jobs, one per CPU). Every other controller is parked during the test.
. /lib/rnvme/lib.sh

driver="$1"
many="$2"
one="$3"
if [ -z "$driver" ] || [ -z "$many" ] || [ -z "$one" ]; then
    fail "queues-usage (queues.sh DRIVER CTRL_MANY CTRL_ONE)"
    exit 1
fi
ncpu=$(grep -c ^processor /proc/cpuinfo)
bm=$(nvme_bdf "$many") || { fail "$driver-queues ($many not found)"; exit 1; }
b1=$(nvme_bdf "$one") || { fail "$driver-queues ($one not found)"; exit 1; }

for b in $(nvme_pci_list); do
    [ "$b" = "$bm" ] || [ "$b" = "$b1" ] || nvme_park "$b"
done
check "$driver-queues-bind-$many" nvme_bind "$bm" "$driver"
check "$driver-queues-bind-$one" nvme_bind "$b1" "$driver"
if ! kmod_loaded "$driver"; then
    [ "$driver" = nvme ] && kmod_load nvme-core
    check "$driver-queues-load" kmod_load "$driver"
fi

# show_irqs BDF: the controller's vectors as /proc/interrupts has them.
show_irqs() {
    for q in $(nvme_irqs "$1"); do grep -E "^ *$q:" /proc/interrupts; done
}

# ---- one queue per CPU, vectors firing on every CPU ---------------------------------------------
if dm=$(nvme_wait_disks "$bm" 1 30); then
    dm=$(echo "$dm" | cut -d' ' -f1)
    nhw=$(ls "/sys/block/$dm/mq" | wc -l)
    irqs=$(nvme_irqs "$bm")
    nvec=$(echo $irqs | wc -w)
    echo "$many ($bm, $driver): disk $dm, $nhw hardware queues, $nvec vectors for $ncpu CPUs"
    if [ "$nhw" = "$ncpu" ]; then pass "$driver-queues-per-cpu ($dm: $nhw hardware queues for $ncpu CPUs)"
    else fail "$driver-queues-per-cpu ($dm: $nhw hardware queues for $ncpu CPUs)"; fi
    # shellcheck disable=SC2086
    if [ "$nvec" -ge "$ncpu" ] && [ -n "$(ls /sys/bus/pci/devices/$bm/msi_irqs 2>/dev/null)" ]; then
        pass "$driver-queues-msi ($nvec MSI/MSI-X vectors)"
    else
        fail "$driver-queues-msi ($nvec vectors, MSI: $(ls /sys/bus/pci/devices/$bm/msi_irqs 2>/dev/null | wc -l); want >= $ncpu MSI/MSI-X)"
    fi
    cpu=0
    while [ "$cpu" -lt "$ncpu" ]; do
        # shellcheck disable=SC2086
        irq_counts $irqs > /tmp/irq.before
        fio --name="irq-cpu$cpu" --filename="/dev/$dm" --cpus_allowed=$cpu --direct=1 --rw=randread \
            --bs=4k --ioengine=psync --size=16M --number_ios=256 > /tmp/irq.fio 2>&1 ||
            { cat /tmp/irq.fio; fail "$driver-irq-cpu$cpu (fio failed)"; }
        # shellcheck disable=SC2086
        irq_counts $irqs > /tmp/irq.after
        col=$((cpu + 2))
        delta=$(awk -v c="$col" 'NR == FNR { b[$1] = $c; next } { d += $c - b[$1] } END { print d + 0 }' \
            /tmp/irq.before /tmp/irq.after)
        if [ "$delta" -gt 0 ]; then pass "$driver-irq-cpu$cpu ($delta interrupts on CPU$cpu for 256 reads issued there)"
        else fail "$driver-irq-cpu$cpu (no interrupt of $many on CPU$cpu while it issued 256 reads)"; fi
        cpu=$((cpu + 1))
    done
    echo "--- /proc/interrupts, $many ($bm)"
    grep -E '^ +CPU' /proc/interrupts
    show_irqs "$bm"
else
    fail "$driver-queues-disk ($many has no disk)"
fi

# ---- a controller that grants one I/O queue ----------------------------------------------------
if d1=$(nvme_wait_disks "$b1" 1 30); then
    d1=$(echo "$d1" | cut -d' ' -f1)
    nhw=$(ls "/sys/block/$d1/mq" | wc -l)
    echo "$one ($b1, $driver, max_ioqpairs=$(nvme_ctrl_field "$b1" 3)): disk $d1, $nhw hardware queue(s)," \
        "$(nvme_irqs "$b1" | wc -l) vector(s)"
    if [ "$nhw" = 1 ]; then pass "$driver-one-queue ($d1: 1 hardware queue)"
    else fail "$driver-one-queue ($d1: $nhw hardware queues from a controller granting one)"; fi
    irqs=$(nvme_irqs "$b1")
    # shellcheck disable=SC2086
    irq_counts $irqs > /tmp/irq.before
    run_fio "$driver-one-queue-verify-$d1" --filename="/dev/$d1" --direct=1 --ioengine=io_uring \
        --iodepth=32 --numjobs=2 --cpus_allowed=0-$((ncpu - 1)) --cpus_allowed_policy=split \
        --rw=randwrite --bssplit=4k/50:16k/25:128k/25 --size=8M --offset_increment=8M \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting
    # shellcheck disable=SC2086
    irq_counts $irqs > /tmp/irq.after
    delta=$(awk 'NR == FNR { for (i = 2; i <= NF; i++) b += $i; next } { for (i = 2; i <= NF; i++) a += $i } END { print a - b }' \
        /tmp/irq.before /tmp/irq.after)
    if [ "$delta" -gt 0 ]; then pass "$driver-one-queue-irq ($delta interrupts)"
    else fail "$driver-one-queue-irq (no interrupt from $one during fio)"; fi
    echo "--- /proc/interrupts, $one ($b1)"
    show_irqs "$b1"
else
    fail "$driver-one-queue-disk ($one has no disk)"
fi

check "$driver-queues-unload" kmod_unload "$driver"
[ "$driver" = nvme ] && kmod_unload nvme-core
for b in $(nvme_pci_list); do nvme_release "$b"; done
