#!/bin/sh
# The fio matrix (issue 9): rnvme against the C nvme driver on two identical controllers in one
# boot (rnvme-c: rnvme, rnvme-b: nvme), with null_blk and rnull (the kernel's Rust null block
# sample) as the no-device ceiling. O_DIRECT (block devices); per point one fio job of
# rnvme_fio_secs seconds; every point is run rnvme_fio_rounds times, the four devices one after
# another in an order that rotates per round and per point (each device runs first, second, ...
# equally often), so noise from the (shared) host hits every device alike.
#
# Kernel command line knobs (lists comma-separated):
#   rnvme_fio_mode=short|long  preset (default short: the CI form, ~3 minutes)
#   rnvme_fio_secs=N rnvme_fio_rounds=N rnvme_fio_rw=randread,randwrite,read
#   rnvme_fio_bs=512,4k,...  rnvme_fio_qd=1,8,32
#   rnvme_fio_engines=io_uring,libaio,uring_cmd,uring_cmd_fb: the block devices through fio's
#   io_uring and libaio engines, or the NVMe generic char devices (issue 8: rnvme's
#   /dev/rng<C>n<N> against the C driver's /dev/ng<X>n<N>) through fio's io_uring_cmd engine
#   (cmd_type=nvme) with fixedbufs=0 (uring_cmd: every I/O mapped per I/O) or fixedbufs=1
#   (uring_cmd_fb: registered buffers, on rnvme premapped DMA tags); null_blk and rnull have
#   no char device and are skipped for those two
#   rnvme_fio_devs=rnvme,nvme,null_blk,rnull
#   rnvme_fio_nvme_params, rnvme_fio_rnvme_params: module parameters of the C driver and of
#   rnvme.ko (comma-separated on the kernel command line, e.g.
#   rnvme_fio_rnvme_params=queue_depth=1024,defer_cq_doorbell=0)
#   rnvme_fio_legs=c|b|cb|bc: the controller rnvme sits on in each leg of the run, in order
#   (default c: rnvme on rnvme-c, the C driver on rnvme-b, as the earlier runs had it). With two
#   legs the run is a crossover: the rounds of every point are split in two halves, and between
#   them both controllers are rebound to the other driver (driver_override, unbind, bind), so
#   any difference between the two emulated controllers (their slot, their place in QEMU's
#   main loop) hits each driver for half the rounds and cancels in the paired ratios.
# Short preset: randread 4k QD1/QD32, read 128k QD1/QD8/QD32, randwrite 4k QD8 (the issue's
# headline points plus one write), both block engines and the passthrough char devices with
# registered buffers (uring_cmd_fb), 1 round of 2 s. Long preset: randread, randwrite, read x
# 512 B, 4k, 32k, 128k x QD1/8/32 x io_uring/libaio, 3 rounds of 1 s.
#
# Per run: `fio-point <workload> dev=<d> round=<r> iops=<i> bw_kib=<b> ios=<n> runtime_ms=<t>
# sys_ticks=<k> busy_ticks=<k> irq_ticks=<k> err=<e> ctrl=<serial>` (ticks: guest /proc/stat
# USER_HZ, all CPUs, taken by fio's exec_prerun/exec_postrun right around the job:
# system+irq+softirq, that plus user+nice, and irq+softirq alone; ctrl: the emulated controller
# the device's driver had in that round, - for null_blk and rnull).
# Per workload (medians over the rounds): `fio-compare <workload>: rnvme <iops> c <iops> ratio
# <rnvme/c>`. rnull has 4096 B blocks: points below 4k skip it (`fio-point ... skipped`). Without
# /lib/modules/extra/rnvme.ko the rnvme side runs the C driver (a line says so). Numbers are
# reported, never asserted (TCG timing is not a hardware measurement); the test fails only when a
# fio run fails or does no I/O.
. /lib/rnvme/lib.sh

mode="${rnvme_fio_mode:-short}"
if [ "$mode" = long ]; then
    secs=1 rounds=3 rws=randread,randwrite,read bss=512,4k,32k,128k qds=1,8,32
    engines=io_uring,libaio
else
    secs=2 rounds=1 rws="" bss="" qds="" engines=io_uring,libaio,uring_cmd_fb
fi
secs="${rnvme_fio_secs:-$secs}"
rounds="${rnvme_fio_rounds:-$rounds}"
rws="${rnvme_fio_rw:-$rws}"
bss="${rnvme_fio_bs:-$bss}"
qds="${rnvme_fio_qd:-$qds}"
engines="${rnvme_fio_engines:-$engines}"
devs="${rnvme_fio_devs:-rnvme,nvme,null_blk,rnull}"
legs="${rnvme_fio_legs:-c}"
case "$legs" in
    c|b|cb|bc) ;;
    *) fail "fio-matrix-legs (rnvme_fio_legs: c, b, cb or bc, not '$legs')"; exit 1 ;;
esac
nlegs=${#legs}
if [ -f /lib/modules/extra/rnvme.ko ]; then rdrv=rnvme; else rdrv=nvme; fi

# The points: "rw bs qd" lines.
points() {
    if [ -z "$rws" ]; then
        printf '%s\n' "randread 4k 1" "randread 4k 32" "read 128k 1" "read 128k 8" "read 128k 32" \
            "randwrite 4k 8"
        return
    fi
    for _rw in $(echo "$rws" | tr , ' '); do
        for _bs in $(echo "$bss" | tr , ' '); do
            for _qd in $(echo "$qds" | tr , ' '); do echo "$_rw $_bs $_qd"; done
        done
    done
}

# bind_leg L: the drivers' controllers for one leg: rnvme (or, without rnvme.ko, the C driver
# standing in for it) on controller rnvme-L, the C driver on the other one of rnvme-b and
# rnvme-c (PCI addresses b_b and b_c). Sets ctrl_r/ctrl_c and br/bc; fails when a bind fails.
bind_leg() {
    ctrl_r=rnvme-$1
    if [ "$1" = c ]; then ctrl_c=rnvme-b br=$b_c bc=$b_b; else ctrl_c=rnvme-c br=$b_b bc=$b_c; fi
    # The C driver's side first: when the two swap, its controller is the one rnvme had.
    nvme_bind "$bc" nvme && nvme_bind "$br" "$rdrv" || {
        fail "fio-matrix-bind-$1 (nvme on $ctrl_c, $rdrv on $ctrl_r)"
        return 1
    }
}
# disks_leg: the leg's disks dr (rnvme's) and dc (the C driver's), once they are there.
disks_leg() {
    dc=$(nvme_wait_disks "$bc" 1 30 | cut -d' ' -f1)
    dr=$(nvme_wait_disks "$br" 1 30 | cut -d' ' -f1)
    if [ -z "$dc" ] || [ -z "$dr" ]; then
        fail "fio-matrix-disks (c: '$dc' on $ctrl_c, rnvme: '$dr' on $ctrl_r)"
        nvme_ctrls
        return 1
    fi
    if [ "$rdrv" = rnvme ]; then
        echo "fio-matrix: rnvme on $ctrl_r ($br, /dev/$dr), c (nvme) on $ctrl_c ($bc, /dev/$dc)"
    else
        echo "fio-matrix: rnvme.ko absent: BOTH sides run the C driver (plumbing check):" \
            "'rnvme' side nvme on $ctrl_r ($br, /dev/$dr), c on $ctrl_c ($bc, /dev/$dc)"
    fi
}

b_b=$(nvme_bdf rnvme-b) && b_c=$(nvme_bdf rnvme-c) || {
    fail "fio-matrix-controllers (needs rnvme-b and rnvme-c: run-guest.sh --topology proof)"
    exit 1
}
for b in $(nvme_pci_list); do
    [ "$b" = "$b_b" ] || [ "$b" = "$b_c" ] || nvme_park "$b"
done
bind_leg "$(echo "$legs" | cut -c1)" || exit 1
# shellcheck disable=SC2086
kmod_loaded nvme || { kmod_load nvme-core; check fio-matrix-load-nvme kmod_load nvme $(echo "$rnvme_fio_nvme_params" | tr , ' '); }
# shellcheck disable=SC2086
kmod_loaded "$rdrv" || check "fio-matrix-load-$rdrv" kmod_load "$rdrv" $(echo "$rnvme_fio_rnvme_params" | tr , ' ')
# null_blk: 512 B blocks (every block size), multi-queue, completion in the submitter's context
# (irqmode=0, as rnull's queue_rq ends the request at once).
kmod_loaded null_blk || check fio-matrix-load-null_blk kmod_load null_blk nr_devices=1 queue_mode=2 \
    irqmode=0 gb=1 bs=512
kmod_loaded rnull_mod || check fio-matrix-load-rnull kmod_load rnull_mod
disks_leg || exit 1
if ! wait_for /dev/nullb0 10 || ! wait_for /dev/rnullb0 10; then
    fail "fio-matrix-disks (nullb0, rnullb0)"
    exit 1
fi
echo "fio-matrix: mode $mode, $rounds round(s) of ${secs}s per point, devices $devs, engines $engines," \
    "legs $legs"
echo "fio-matrix: iommu groups $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)," \
    "rnvme's domain $(cat "/sys/bus/pci/devices/$br/iommu_group/type" 2>/dev/null || echo none)," \
    "c's domain $(cat "/sys/bus/pci/devices/$bc/iommu_group/type" 2>/dev/null || echo none)"

# The generic char device of a namespace: rnvme0n1 -> rng0n1, nvme1n1 -> ng1n1.
char_of() { echo "/dev/$(echo "$1" | sed 's/nvme/ng/')"; }
# dev_path DEV ENGINE: the file fio opens, empty when the device has none for the engine.
dev_path() {
    case "$2" in
        uring_cmd*)
            case "$1" in
                rnvme) char_of "$dr" ;;
                nvme) char_of "$dc" ;;
            esac
            return ;;
    esac
    case "$1" in
        rnvme) echo "/dev/$dr" ;;
        nvme) echo "/dev/$dc" ;;
        null_blk) echo /dev/nullb0 ;;
        rnull) echo /dev/rnullb0 ;;
    esac
}
# fio's engine options per engine name (a char device takes no O_DIRECT: it has no page cache).
engine_args() {
    case "$1" in
        uring_cmd) echo "--ioengine=io_uring_cmd --cmd_type=nvme --fixedbufs=0" ;;
        uring_cmd_fb) echo "--ioengine=io_uring_cmd --cmd_type=nvme --fixedbufs=1" ;;
        *) echo "--direct=1 --ioengine=$1" ;;
    esac
}
bytes_of() {
    case "$1" in
        *k) echo $((${1%k} * 1024)) ;;
        *) echo "$1" ;;
    esac
}
# ticks FILE: "system+irq+softirq user+nice+system+irq+softirq irq+softirq" from a /proc/stat
# cpu line (interrupt time is measured, not sampled: CONFIG_IRQ_TIME_ACCOUNTING).
ticks() { awk '$1 == "cpu" { print $4 + $7 + $8, $2 + $3 + $4 + $7 + $8, $7 + $8 }' "$1"; }

set -- $(echo "$devs" | tr , ' ')
ndev=$#
mkdir -p /tmp/fm && cd /tmp/fm || exit 1
# fio runs exec_prerun/exec_postrun with system(3), output to <job>.{pre,post}run.txt here.
printf '#!/bin/sh\nexec head -n1 /proc/stat\n' > /tmp/fm/stat && chmod +x /tmp/fm/stat
: > /tmp/fm/points
# ctrl_of DEV: the controller serial of the device in this leg (- for the null devices).
ctrl_of() {
    case "$1" in
        rnvme) echo "$ctrl_r" ;;
        nvme) echo "$ctrl_c" ;;
        *) echo - ;;
    esac
}
: > /tmp/fm/wls
failed=0
leg=0
while [ "$leg" -lt "$nlegs" ]; do
    l=$(echo "$legs" | cut -c$((leg + 1)))
    if [ "$leg" -gt 0 ]; then
        # Both controllers change drivers; the null devices stay.
        { bind_leg "$l" && disks_leg; } || { failed=1; break; }
    fi
    # This leg's rounds [r0, r1): the rounds of every point split in contiguous blocks.
    r0=$((rounds * leg / nlegs)) r1=$((rounds * (leg + 1) / nlegs))
    pi=0
    for engine in $(echo "$engines" | tr , ' '); do
        points > /tmp/fm/list
        while read -r rw bs qd; do
            wl="$rw-$bs-qd$qd-$engine"
            r=$r0
            while [ "$r" -lt "$r1" ]; do
                # Rotate the device order by round + point index.
                k=$(((r + pi) % ndev))
                order=$(echo "$devs" | tr , '\n' | awk -v k="$k" -v n="$ndev" \
                    '{ d[NR - 1] = $0 } END { for (i = 0; i < n; i++) print d[(i + k) % n] }')
                jobs=""
                for d in $order; do
                    if [ "$d" = rnull ] && [ "$(bytes_of "$bs")" -lt 4096 ]; then
                        echo "fio-point $wl dev=$d round=$r skipped (4096 B blocks)"
                        continue
                    fi
                    f=$(dev_path "$d" "$engine")
                    if [ -z "$f" ]; then
                        echo "fio-point $wl dev=$d round=$r skipped (no char device)"
                        continue
                    fi
                    jobs="$jobs --name=$d --stonewall --filename=$f --exec_prerun=/tmp/fm/stat --exec_postrun=/tmp/fm/stat"
                done
                rm -f ./*.txt
                # shellcheck disable=SC2086
                if ! fio $(engine_args "$engine") --rw="$rw" --bs="$bs" --iodepth="$qd" \
                    --time_based --runtime="$secs" --size=128M --output-format=terse \
                    --terse-version=3 $jobs > /tmp/fm/out 2>&1; then
                    cat /tmp/fm/out
                    fail "fio-matrix-$wl-round$r (fio exit status)"
                    failed=1
                fi
                # Terse v3: 3 job name, 5 error, 6/47 read/write KiB, 7/48 KiB/s, 8/49 IOPS,
                # 9/50 runtime ms.
                for d in $order; do
                    line=$(grep "^3;[^;]*;$d;" /tmp/fm/out) || continue
                    pre=$(ticks "$d.prerun.txt" 2>/dev/null)
                    post=$(ticks "$d.postrun.txt" 2>/dev/null)
                    echo "$line" | awk -F';' -v wl="$wl" -v d="$d" -v r="$r" -v b="$(bytes_of "$bs")" \
                        -v pre="$pre" -v post="$post" -v c="$(ctrl_of "$d")" '{
                        split(pre, a, " "); split(post, z, " ")
                        kib = $6 + $47; ms = $9 > $50 ? $9 : $50
                        printf "fio-point %s dev=%s round=%d iops=%d bw_kib=%d ios=%d runtime_ms=%d sys_ticks=%d busy_ticks=%d irq_ticks=%d err=%d ctrl=%s\n",
                            wl, d, r, $8 + $49, $7 + $48, kib * 1024 / b, ms, z[1] - a[1], z[2] - a[2], z[3] - a[3], $5, c
                    }'
                done | tee -a /tmp/fm/points
                r=$((r + 1))
            done
            pi=$((pi + 1))
            grep -qx "$wl" /tmp/fm/wls || echo "$wl" >> /tmp/fm/wls
        done < /tmp/fm/list
    done
    leg=$((leg + 1))
done

# Medians over the rounds that did I/O. A point fails when a run has a fio error, or when a
# device did no I/O in any round (a single empty run is reported and left out of the median: on
# a heavily loaded host a 1 s job can end before its first completion).
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%d\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
while read -r wl; do
    bad=$(awk -v w="$wl" '$1 == "fio-point" && $2 == w && $0 ~ / err=[1-9]/ { n++ } END { print n + 0 }' /tmp/fm/points)
    got=$(awk -v w="$wl" '$1 == "fio-point" && $2 == w && $0 !~ /skipped/ { n++ } END { print n + 0 }' /tmp/fm/points)
    dead=$(awk -v w="$wl" '$1 == "fio-point" && $2 == w && $0 !~ /skipped/ { sub("dev=", "", $3); t[$3]++; if ($0 !~ / iops=0 /) ok[$3]++ }
        END { for (d in t) if (!ok[d]) printf "%s ", d }' /tmp/fm/points)
    empty=$(awk -v w="$wl" '$1 == "fio-point" && $2 == w && $0 ~ / iops=0 / { n++ } END { print n + 0 }' /tmp/fm/points)
    if [ "$bad" -gt 0 ] || [ "$got" -eq 0 ] || [ -n "$dead" ]; then
        fail "fio-matrix-$wl ($bad runs with errors, no I/O at all on: ${dead:-none}, of $got runs)"
        failed=1
        continue
    fi
    med() { awk -v w="$wl" -v d="$1" '$1 == "fio-point" && $2 == w && $3 == "dev=" d && $0 !~ / iops=0 / { sub("iops=", "", $5); print $5 }' /tmp/fm/points | median; }
    ir=$(med rnvme)
    ic=$(med nvme)
    ratio=$(awk -v a="$ir" -v b="$ic" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
    case ",$devs," in *,rnvme,*nvme,*|*,nvme,*rnvme,*)
        echo "fio-compare $wl: rnvme $ir c $ic ratio $ratio" ;;
    esac
    pass "fio-matrix-$wl ($got runs, $empty without I/O)"
done < /tmp/fm/wls
cd / || true
# Which path rnvme's passthrough I/Os took (issue 8's counters): uring_cmd_fb runs on premapped
# tags, uring_cmd runs mapped per I/O.
pm=/sys/kernel/debug/rnvme/$(echo "$dr" | sed 's/n[0-9]*$//')/premap
case ",$engines," in *,uring_cmd*)
    [ "$rdrv" = rnvme ] && [ -r "$pm" ] &&
        echo "fio-matrix: rnvme premap counters: $(awk '{ printf "%s=%s ", $1, $2 }' "$pm")" ;;
esac

kmod_unload rnull_mod
kmod_unload null_blk
kmod_unload "$rdrv"
kmod_unload nvme
kmod_unload nvme-core
for b in $(nvme_pci_list); do nvme_release "$b"; done
[ "$failed" = 0 ]
