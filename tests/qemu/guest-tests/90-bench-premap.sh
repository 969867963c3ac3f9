#!/bin/sh
# Benchmark (not a test, not run by CI; issue #8): fio io_uring_cmd (cmd_type=nvme) random reads
# on rnvme's namespace char device with fixedbufs=1 (premapped DMA tags) and fixedbufs=0 (mapped
# per I/O), and on the C driver's /dev/ng<X>n1 with fixedbufs=1 and 0, on two identical
# controllers (--topology proof: rnvme-b on rnvme, rnvme-c on nvme). Points: 4K, 16K, 64K, 128K at
# QD1 and QD32. Per round and point, the four variants run back to back as the stonewalled jobs of
# one fio run, their order rotating by round and point, so load drifts hit them alike.
#
# Per run, around each job (fio exec_prerun/exec_postrun): guest /proc/stat and rnvme's premap
# counters (/sys/kernel/debug/rnvme/rnvme<C>/premap). One line per run:
#   bench-premap: round=<r> point=<bs>-qd<qd> dev=<rnvme|c> fixedbufs=<fb> iops=<i> ios=<n>
#     cpu_us_per_io=<(system+irq+softirq) / ios> busy_us_per_io=<(+user+nice) / ios>
#     [rnvme: submit_ns_per_io=<ns> path=<premapped|mapped> path_ios=<n> other_path_ios=<n>
#      tags_created=<n> create_ns=<ns>]
# submit_ns_per_io: the driver's submit-path nanoseconds of the I/Os of the path the variant
# should take (premapped for fixedbufs=1, mapped for fixedbufs=0), including making the tags
# (create_ns, the first I/O on each registered buffer); the summary also gives it without them.
# Then per point the medians over the rounds:
#   bench-premap-summary <point>: iops rnvme fb1 <i> fb0 <i> c fb1 <i> fb0 <i>
#     cpu_us_per_io rnvme fb1 .. fb0 .. c fb1 .. fb0 .. submit_ns rnvme fb1 <ns> (steady <ns>)
#     fb0 <ns> ratio <fb1/fb0> (steady <ratio>)
# Knobs (kernel command line): rnvme_bench_rounds=N (3), rnvme_bench_secs=N (3),
# rnvme_bench_bs=4k,16k,64k,128k rnvme_bench_qd=1,32.
# Run by hand (BENCHMARKS.md): mkinitramfs.sh --no-default-tests --add <rnvme.ko>:/lib/modules/extra/rnvme.ko
#   -t tests/qemu/guest-tests/90-bench-premap.sh, then run-guest.sh --topology proof [--iommu].
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
rounds=${rnvme_bench_rounds:-3}
secs=${rnvme_bench_secs:-3}
bss=$(echo "${rnvme_bench_bs:-4k,16k,64k,128k}" | tr , ' ')
qds=$(echo "${rnvme_bench_qd:-1,32}" | tr , ' ')

rb=$(nvme_bdf rnvme-b) && cb=$(nvme_bdf rnvme-c) || { fail "bench-premap-topology"; exit 1; }
for b in $(nvme_pci_list); do
    [ "$b" = "$rb" ] || [ "$b" = "$cb" ] || nvme_park "$b"
done
check bench-premap-bind-rnvme nvme_bind "$rb" rnvme
check bench-premap-bind-nvme nvme_bind "$cb" nvme
kmod_loaded rnvme || check bench-premap-load insmod "$ko"
kmod_loaded nvme || { kmod_load nvme-core; check bench-premap-load-nvme kmod_load nvme; }
rd=$(nvme_wait_disks "$rb" 1 60) || { fail "bench-premap-disk"; exit 1; }
cdk=$(nvme_wait_disks "$cb" 1 60) || { fail "bench-premap-c-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
ci=$(echo "$cdk" | sed -n 's/^nvme\([0-9]*\)n1$/\1/p')
rns=/dev/rng${ri}n1
cns=/dev/ng${ci}n1
counters=/sys/kernel/debug/rnvme/rnvme$ri/premap
wait_for "$rns" 10 && wait_for "$cns" 10 || { fail "bench-premap-chardev ($rns, $cns)"; exit 1; }
echo "bench-premap: rnvme $rns (rnvme-b $rb), c $cns (rnvme-c $cb); $rounds rounds of ${secs}s jobs"
echo "bench-premap: kernel $(uname -r), cmdline $(cat /proc/cmdline)"
echo "bench-premap: iommu groups $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)," \
    "rnvme-b domain $(cat /sys/bus/pci/devices/$rb/iommu_group/type 2>/dev/null || echo none)," \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
# Data to read: the first 64 MiB of each namespace, written once.
for dev in "$rns" "$cns"; do
    fio --name=fill --filename="$dev" --ioengine=io_uring_cmd --cmd_type=nvme --bs=128k \
        --iodepth=16 --size=64M --rw=write > /dev/null 2>&1 || { fail "bench-premap-fill $dev"; exit 1; }
done

mkdir -p /tmp/bp && cd /tmp/bp || exit 1
# fio runs exec_prerun/exec_postrun with system(3), output to <job>.{pre,post}run.txt here.
printf '#!/bin/sh\nhead -n1 /proc/stat\ncat %s\n' "$counters" > /tmp/bp/snap
chmod +x /tmp/bp/snap
# val FILE NAME: counter NAME in a snapshot ("cpu" line: system+irq+softirq and + user+nice).
val() { awk -v n="$2" '$1 == n { print $2; exit }' "$1"; }
ticks() { awk '$1 == "cpu" { print $4 + $7 + $8, $2 + $3 + $4 + $7 + $8; exit }' "$1"; }
hz=100
: > /tmp/bp/runs
failed=0
r=1
pi=0
while [ "$r" -le "$rounds" ]; do
    for bs in $bss; do
        for qd in $qds; do
            k=$(((r + pi) % 4))
            order=$(printf 'r1\nr0\nc1\nc0\n' | awk -v k="$k" '{ d[NR - 1] = $0 } END { for (i = 0; i < 4; i++) print d[(i + k) % 4] }')
            jobs=""
            for j in $order; do
                case $j in r*) f=$rns ;; c*) f=$cns ;; esac
                jobs="$jobs --name=$j --stonewall --filename=$f --fixedbufs=${j#?}"
                jobs="$jobs --exec_prerun=/tmp/bp/snap --exec_postrun=/tmp/bp/snap"
            done
            rm -f ./*.txt
            # shellcheck disable=SC2086
            if ! fio --ioengine=io_uring_cmd --cmd_type=nvme --rw=randread --bs="$bs" \
                --iodepth="$qd" --size=64M --time_based --runtime="$secs" \
                --output-format=terse --terse-version=3 $jobs > /tmp/bp/out 2>&1; then
                cat /tmp/bp/out
                fail "bench-premap-fio round $r $bs qd$qd"
                failed=1
            fi
            b=$(echo "$bs" | awk '{ v = $1; m = 1; if (v ~ /k$/) { sub("k", "", v); m = 1024 } print v * m }')
            for j in $order; do
                line=$(grep "^3;[^;]*;$j;" /tmp/bp/out) || continue
                dev=c; [ "${j%?}" = r ] && dev=rnvme
                fb=${j#?}
                pre=$(ticks "$j.prerun.txt"); post=$(ticks "$j.postrun.txt")
                extra=""
                if [ "$dev" = rnvme ]; then
                    if [ "$fb" = 1 ]; then p=premapped o=mapped; else p=mapped o=premapped; fi
                    d() { echo $(($(val "$j.postrun.txt" "$1") - $(val "$j.prerun.txt" "$1"))); }
                    sns=$(d submit_ns_$p); sios=$(d submit_ios_$p); oios=$(d submit_ios_$o)
                    cns_=$(d tag_create_ns); tc=$(d tags_created)
                    per=$(awk -v a="$sns" -v n="$sios" 'BEGIN { if (n > 0) printf "%d", a / n; else print "nan" }')
                    extra=" submit_ns_per_io=$per path=$p path_ios=$sios other_path_ios=$oios tags_created=$tc create_ns=$cns_ submit_ns=$sns"
                fi
                echo "$line" | awk -F';' -v r="$r" -v pt="$bs-qd$qd" -v dev="$dev" -v fb="$fb" \
                    -v b="$b" -v pre="$pre" -v post="$post" -v hz="$hz" -v extra="$extra" '{
                    split(pre, a, " "); split(post, z, " ")
                    ios = $6 * 1024 / b
                    cpu = ios > 0 ? (z[1] - a[1]) * 1e6 / hz / ios : 0
                    busy = ios > 0 ? (z[2] - a[2]) * 1e6 / hz / ios : 0
                    printf "bench-premap: round=%d point=%s dev=%s fixedbufs=%s iops=%d ios=%d cpu_us_per_io=%.1f busy_us_per_io=%.1f err=%d%s\n",
                        r, pt, dev, fb, $8, ios, cpu, busy, $5, extra
                }' | tee -a /tmp/bp/runs
            done
            pi=$((pi + 1))
        done
    done
    r=$((r + 1))
done

# Medians over the rounds.
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field POINT DEV FB KEY: that key's values over the rounds.
field() {
    awk -v p="point=$1" -v d="dev=$2" -v f="fixedbufs=$3" -v k="$4=" '$3 == p && $4 == d && $5 == f {
        for (i = 6; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }' /tmp/bp/runs
}
# steady POINT FB: per-I/O submit ns without the time spent making tags, per round.
steady() {
    awk -v p="point=$1" -v f="fixedbufs=$2" '$3 == p && $4 == "dev=rnvme" && $5 == f {
        for (i = 6; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["path_ios"] > 0) printf "%d\n", (v["submit_ns"] - v["create_ns"]) / v["path_ios"] }' /tmp/bp/runs
}
for bs in $bss; do
    for qd in $qds; do
        pt=$bs-qd$qd
        m() { field "$pt" "$1" "$2" "$3" | median; }
        s1=$(m rnvme 1 submit_ns_per_io); s0=$(m rnvme 0 submit_ns_per_io)
        st1=$(steady "$pt" 1 | median); st0=$(steady "$pt" 0 | median)
        ratio=$(awk -v a="$s1" -v b="$s0" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
        sratio=$(awk -v a="$st1" -v b="$st0" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
        echo "bench-premap-summary $pt: iops rnvme fb1 $(m rnvme 1 iops) fb0 $(m rnvme 0 iops)" \
            "c fb1 $(m c 1 iops) fb0 $(m c 0 iops)" \
            "cpu_us_per_io rnvme fb1 $(m rnvme 1 cpu_us_per_io) fb0 $(m rnvme 0 cpu_us_per_io)" \
            "c fb1 $(m c 1 cpu_us_per_io) fb0 $(m c 0 cpu_us_per_io)" \
            "submit_ns rnvme fb1 $s1 (steady $st1) fb0 $s0 ratio $ratio (steady $sratio)"
    done
done
cd / || true
sed 's/^/  /' "$counters"
# Every run did I/O on the path its variant names (fixedbufs=1: none mapped per I/O).
bad=$(awk '$1 == "bench-premap:" && ($0 ~ / err=[1-9]/ || $0 ~ / ios=0 / || $0 ~ / other_path_ios=[1-9]/) { n++ } END { print n + 0 }' /tmp/bp/runs)
if [ "$failed" = 0 ] && [ "$bad" = 0 ]; then
    pass "bench-premap-done ($(wc -l < /tmp/bp/runs) runs)"
else
    fail "bench-premap-done ($bad runs with errors, no I/O or I/O on the other path)"
fi
