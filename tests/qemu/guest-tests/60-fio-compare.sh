#!/bin/sh
# Side-by-side fio comparison of rnvme and the C nvme driver on two identical controllers in one
# boot (rnvme-b: C driver, rnvme-c: rnvme), workloads interleaved between the two:
#   4k-randread-qd1, 4k-randread-qd32, 128k-seqread (QD 8); O_DIRECT, io_uring, each run
#   rnvme_compare_secs seconds (default 3), rnvme_compare_rounds rounds (default 2; the order of
#   the two drivers alternates per round), IOPS averaged over the rounds.
# Prints `fio-compare <workload>: rnvme <iops> c <iops> ratio <rnvme/c>` per workload.
# Without /lib/modules/extra/rnvme.ko both controllers run the C driver (the plumbing is the same;
# a line says so). The numbers are reported, never asserted (TCG timing is not a performance
# measurement); a run fails only if a fio run fails or reports no I/O.
. /lib/rnvme/lib.sh

ctrl_c=rnvme-b
ctrl_r=rnvme-c
secs="${rnvme_compare_secs:-3}"
rounds="${rnvme_compare_rounds:-2}"
if [ -f /lib/modules/extra/rnvme.ko ]; then rdrv=rnvme; else rdrv=nvme; fi

bc=$(nvme_bdf "$ctrl_c") && br=$(nvme_bdf "$ctrl_r") || {
    fail "fio-compare-controllers (needs $ctrl_c and $ctrl_r: run-guest.sh --topology proof)"
    exit 1
}
for b in $(nvme_pci_list); do
    [ "$b" = "$bc" ] || [ "$b" = "$br" ] || nvme_park "$b"
done
check fio-compare-bind-c nvme_bind "$bc" nvme
check fio-compare-bind-rnvme nvme_bind "$br" "$rdrv"
kmod_loaded nvme || { kmod_load nvme-core; check fio-compare-load-nvme kmod_load nvme; }
kmod_loaded "$rdrv" || check "fio-compare-load-$rdrv" kmod_load "$rdrv"
dc=$(nvme_wait_disks "$bc" 1 30 | cut -d' ' -f1)
dr=$(nvme_wait_disks "$br" 1 30 | cut -d' ' -f1)
if [ -z "$dc" ] || [ -z "$dr" ]; then
    fail "fio-compare-disks (c: '$dc', rnvme: '$dr')"
    nvme_ctrls
    exit 1
fi
if [ "$rdrv" = rnvme ]; then
    echo "fio-compare: rnvme on $ctrl_r ($br, /dev/$dr), c (nvme) on $ctrl_c ($bc, /dev/$dc)"
else
    echo "fio-compare: rnvme.ko absent: BOTH sides run the C driver (plumbing check):" \
        "'rnvme' side nvme on $ctrl_r ($br, /dev/$dr), c on $ctrl_c ($bc, /dev/$dc)"
fi

workloads="4k-randread-qd1 4k-randread-qd32 128k-seqread"
# job SIDE DISK WORKLOAD: one fio job section; stonewall makes the jobs of a run one after another.
job() {
    case "$3" in
        4k-randread-qd1) _w="--rw=randread --bs=4k --iodepth=1" ;;
        4k-randread-qd32) _w="--rw=randread --bs=4k --iodepth=32" ;;
        128k-seqread) _w="--rw=read --bs=128k --iodepth=8" ;;
    esac
    echo "--name=$1-$3 --stonewall --filename=/dev/$2 $_w"
}

echo "fio-compare: $rounds round(s) of ${secs}s per driver and workload (order alternating), IOPS averaged"
# One fio run per round, its jobs interleaving the drivers: c r c r c r, then r c r c r c.
r=0
: > /tmp/cmp.all
while [ "$r" -lt "$rounds" ]; do
    if [ $((r % 2)) = 0 ]; then order="c r"; else order="r c"; fi
    jobs=""
    for w in $workloads; do
        for side in $order; do
            if [ "$side" = c ]; then jobs="$jobs $(job c "$dc" $w)"; else jobs="$jobs $(job r "$dr" $w)"; fi
        done
    done
    # shellcheck disable=SC2086
    if fio --direct=1 --ioengine=io_uring --time_based --runtime="$secs" --size=128M \
        --output-format=terse --terse-version=3 $jobs > /tmp/cmp.out 2>&1; then
        cat /tmp/cmp.out >> /tmp/cmp.all
    else
        cat /tmp/cmp.out
        fail "fio-compare-round$r (fio exit status)"
    fi
    r=$((r + 1))
done

# Terse v3: field 3 job name, 5 error, 8 read IOPS.
printf '%-18s %10s %10s %7s\n' workload rnvme c ratio
for w in $workloads; do
    ic=$(awk -F';' -v j="c-$w" -v n="$rounds" '$1 == 3 && $3 == j && $5 == 0 { s += $8; k++ } END { if (k == n) printf "%d", s / n }' /tmp/cmp.all)
    ir=$(awk -F';' -v j="r-$w" -v n="$rounds" '$1 == 3 && $3 == j && $5 == 0 { s += $8; k++ } END { if (k == n) printf "%d", s / n }' /tmp/cmp.all)
    ratio=$(awk -v a="${ir:-0}" -v b="${ic:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
    echo "fio-compare $w: rnvme ${ir:-0} c ${ic:-0} ratio $ratio"
    if [ "${ic:-0}" -gt 0 ] && [ "${ir:-0}" -gt 0 ]; then pass "fio-compare-$w (rnvme $ir IOPS, c $ic IOPS)"
    else fail "fio-compare-$w (a fio job failed or did no I/O)"; fi
done

kmod_unload "$rdrv"
kmod_unload nvme
kmod_unload nvme-core
for b in $(nvme_pci_list); do nvme_release "$b"; done
