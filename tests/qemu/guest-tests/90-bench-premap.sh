#!/bin/sh
# Benchmark (not a test, not run by CI): fio io_uring_cmd on rnvme's namespace char device with
# fixedbufs=1 (premapped DMA tags) against fixedbufs=0 (mapped per I/O), paired and interleaved:
# each round runs both variants of 4K QD1 and of 128K QD32 random reads back to back, so machine
# load drifts hit both alike. One line per run:
#   bench-premap: round <r> <bs> qd<qd> fixedbufs=<fb> iops <iops>
# Run by hand: tests/qemu/mkinitramfs.sh --no-default-tests --add <rnvme.ko>:/lib/modules/extra/rnvme.ko
#   -t tests/qemu/guest-tests/90-bench-premap.sh, then run-guest.sh --topology proof (TCG numbers).
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
rb=$(nvme_bdf rnvme-b) || { fail "bench-premap-topology"; exit 1; }
kmod_loaded rnvme || check bench-premap-load insmod "$ko"
[ "$(nvme_driver "$rb")" = rnvme ] || check bench-premap-bind nvme_bind "$rb" rnvme
rd=$(nvme_wait_disks "$rb" 1 60) || { fail "bench-premap-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
rns=/dev/rng${ri}n1
wait_for "$rns" 10 || { fail "bench-premap-chardev"; exit 1; }
# Data to read: the first 64 MiB written once.
fio --name=fill --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme --bs=128k \
    --iodepth=16 --size=64M --rw=write > /dev/null 2>&1 || { fail "bench-premap-fill"; exit 1; }
rounds=${BENCH_ROUNDS:-3}
r=1
while [ "$r" -le "$rounds" ]; do
    for job in "4k 1" "128k 32"; do
        set -- $job
        for fb in 1 0; do
            out=$(fio --name=b --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
                --fixedbufs=$fb --bs=$1 --iodepth=$2 --size=64M --rw=randread --time_based \
                --runtime=5 --ramp_time=1 --output-format=terse --terse-version=3 2>&1)
            # Terse v3: field 8 is the read IOPS.
            iops=$(echo "$out" | tail -1 | cut -d';' -f8)
            echo "bench-premap: round $r $1 qd$2 fixedbufs=$fb iops $iops"
        done
    done
    r=$((r + 1))
done
cat /sys/kernel/debug/rnvme/rnvme$ri/premap | sed 's/^/  /'
pass "bench-premap-done"
