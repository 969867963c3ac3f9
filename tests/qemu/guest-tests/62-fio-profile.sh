#!/bin/sh
# Profile of rnvme and the C nvme driver on the same workloads (scripts/profile-fio.sh): the
# proof topology's identical controllers (rnvme-c: rnvme, rnvme-b: nvme), one driver after the
# other per workload; per run, interrupts of the controller's vectors per I/O (/proc/interrupts)
# and a `perf record -a` cpu-clock profile of the whole guest (TCG has no PMU: the kernel's
# hrtimer-driven software clock samples), reported as the hottest kernel symbols. Before and
# after each run the guest reads the controller's INTMS register (BAR0 + 0xc), which no driver
# reads: the host splits QEMU's NVMe trace (doorbell writes, MSI-X interrupts) at those reads.
#
# Lines: `fio-profile <workload> dev=<d> ios=<n> irqs=<k> irqs_per_io=<x> marker=<m>`,
# `fio-profile-batch <workload> <counter> <value> ...` (rnvme's debugfs batch counters),
# `fio-profile-cputime <workload> dev=<d> user <u> system <s> irq <i> softirq <q> idle <z> us/io`
# (guest /proc/stat, all CPUs, per I/O), `fio-profile-sym <workload> dev=<d> <percent> <symbol>`. Knobs: rnvme_prof_secs (default 4),
# rnvme_prof_top (symbols per run, default 25), rnvme_prof_wl (RW:BS:QD,... default
# randread:4k:1,randread:4k:32,read:128k:8), rnvme_prof_callgraph=1 (perf -g, call chains as
# `fio-profile-cg` lines), rnvme_prof_children=1 (with rnvme_prof_callgraph=1: per symbol,
# the share of all samples taken in fio's threads with it on the stack, and its own share,
# `fio-profile-incl` lines), rnvme_prof_rnvme_params (rnvme.ko parameters, e.g.
# shadow_doorbells=0; a kernel command line value holds one), rnvme_prof_ips=1 (the driver
# module's hottest instruction addresses; rnvme_prof_ips_top=N of them, default 40), rnvme_prof_batch=N (fio
# iodepth_batch_submit=N and iodepth_batch_complete_min=N: fio reaps N completions and then
# submits N I/Os per io_uring_enter, so io_uring plugs them and blk-mq hands them to queue_rqs as
# one list; with fio's defaults (1) a full queue submits one I/O per call),
# rnvme_prof_engine=uring_cmd (fio io_uring_cmd passthrough on the namespaces' char devices,
# rnvme's /dev/rng<C>n1 and the C driver's /dev/ng<X>n1, with fixedbufs=rnvme_prof_fixedbufs,
# default 1: premapped DMA tags on rnvme), rnvme_prof_perf=0 (no perf record: fio alone),
# rnvme_prof_ios=N (each run does exactly N I/Os instead of running for rnvme_prof_secs, so
# both drivers do the same work), rnvme_prof_sync_marks=1 (a `sync` right before and right
# after each fio run: the QEMU plugin of `scripts/profile-fio.sh --insns` snapshots its
# instruction counts at each sync, and `fio-profile` lines carry smark=<n>, the number of the
# sync that ended the run; the modules' symbols are printed as `fio-profile-ksym` lines),
# rnvme_prof_alternate=1 (the driver that runs first alternates by workload).
# Reported, never asserted.
. /lib/rnvme/lib.sh

secs="${rnvme_prof_secs:-4}"
top="${rnvme_prof_top:-25}"
bc=$(nvme_bdf rnvme-b) && br=$(nvme_bdf rnvme-c) || { fail "fio-profile-controllers"; exit 1; }
for b in $(nvme_pci_list); do
    [ "$b" = "$bc" ] || [ "$b" = "$br" ] || nvme_park "$b"
done
check fio-profile-bind-c nvme_bind "$bc" nvme
check fio-profile-bind-rnvme nvme_bind "$br" rnvme
kmod_loaded nvme || { kmod_load nvme-core; check fio-profile-load-nvme kmod_load nvme; }
# shellcheck disable=SC2086
kmod_loaded rnvme || check fio-profile-load-rnvme kmod_load rnvme $rnvme_prof_rnvme_params
dc=$(nvme_wait_disks "$bc" 1 30 | cut -d' ' -f1)
dr=$(nvme_wait_disks "$br" 1 30 | cut -d' ' -f1)
[ -n "$dc" ] && [ -n "$dr" ] || { fail "fio-profile-disks"; exit 1; }
dmesg | grep -E 'rnvme.*queues of depth' | tail -n 2
# The time-stamp counter's rate, for the phase timers' cycles (the guest's TSC is the host's).
echo "fio-profile-tsc-khz $(awk -F': ' '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)"
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
smarks=0
smark() {
    [ -n "$rnvme_prof_sync_marks" ] || return 0
    sync
    smarks=$((smarks + 1))
}
if [ -n "$rnvme_prof_sync_marks" ]; then
    # The drivers' module symbols, for the host to name the addresses the plugin counted.
    grep -E '\[(rnvme|nvme|nvme_core)\]' /proc/kallsyms | sed 's/^/fio-profile-ksym /'
fi

# irq_total BDF: interrupts of every vector of the controller, all CPUs.
irq_total() {
    # shellcheck disable=SC2046
    irq_counts $(nvme_irqs "$1") | awk '{ for (i = 2; i <= NF; i++) s += $i } END { print s + 0 }'
}
# cpu_counts BDF: per vector of the controller, its interrupts on each CPU ("irq:c0/c1 ..."),
# then the BLOCK softirqs and function-call IPIs (CAL) of each CPU: what a run adds shows where
# completions ran (in the vector's interrupt, through the block softirq, or by IPI).
cpu_counts() {
    # shellcheck disable=SC2046
    irq_counts $(nvme_irqs "$1") | awk '{ printf "%s", $1; for (i = 2; i <= NF; i++) printf "%s%s", (i == 2 ? "" : "/"), $i; printf " " }'
    awk '$1 == "BLOCK:" { printf "block:"; for (i = 2; i <= NF; i++) printf "%s%s", (i == 2 ? "" : "/"), $i; printf " " }' /proc/softirqs
    awk '$1 == "CAL:" { printf "cal:"; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) printf "%s%s", (i == 2 ? "" : "/"), $i; printf " " }' /proc/interrupts
}
bar0() { awk 'NR == 1 { print $1 }' "/sys/bus/pci/devices/$1/resource"; }
marker=0
mark() { devmem $(($(bar0 "$1") + 12)) 32 > /dev/null; marker=$((marker + 1)); }

cd /tmp || exit 1
wls="${rnvme_prof_wl:-randread:4k:1,randread:4k:32,read:128k:8}"
wi=0
for d in "$dr" "$dc"; do
    echo "fio-profile-queue /dev/$d: scheduler $(cat /sys/block/"$d"/queue/scheduler)," \
        "nr_requests $(cat /sys/block/"$d"/queue/nr_requests), hw queues $(ls -d /sys/block/"$d"/mq/* | wc -l)"
done
for w in $(echo "$wls" | tr , ' '); do
    set -- $(echo "$w" | tr : ' ')
    wl="$1-$2-qd$3"
    # rnvme_prof_alternate=1: the driver that goes first alternates by workload, so what a
    # first run in a boot pays (e.g. the page cache's first activation of fio's pages) does
    # not always land on the same driver.
    sides="rnvme nvme"
    if [ -n "$rnvme_prof_alternate" ] && [ $((wi % 2)) = 1 ]; then sides="nvme rnvme"; fi
    wi=$((wi + 1))
    for side in $sides; do
        if [ "$side" = rnvme ]; then b=$br d=$dr; else b=$bc d=$dc; fi
        i0=$(irq_total "$b")
        c0=$(cpu_counts "$b")
        s0=$(head -n1 /proc/stat)
        mark "$b"
        m=$marker
        if [ "$rnvme_prof_engine" = uring_cmd ]; then
            target=/dev/$(echo "$d" | sed 's/^rnvme/rng/; s/^nvme/ng/')
            engine="--ioengine=io_uring_cmd --cmd_type=nvme --fixedbufs=${rnvme_prof_fixedbufs:-1}"
        else
            target=/dev/$d engine="--direct=1 --ioengine=io_uring"
        fi
        if [ -n "$rnvme_prof_ios" ]; then
            # Exactly rnvme_prof_ios I/Os (fio wraps around the 128 MiB region if needed).
            amount="--io_size=$(($rnvme_prof_ios * $(echo "$2" | sed 's/k$/*1024/')))"
        else
            amount="--time_based --runtime=$secs"
        fi
        if [ "${rnvme_prof_perf:-1}" = 0 ]; then
            profiler=""
        else
            profiler="perf record -q -a ${rnvme_prof_callgraph:+-g} -F 997 -o /tmp/perf.$side.$wl --"
        fi
        smark
        # shellcheck disable=SC2086
        $profiler fio --name="$side" \
            --filename="$target" $engine --rw="$1" --bs="$2" \
            --iodepth="$3" ${rnvme_prof_batch:+--iodepth_batch_submit=$rnvme_prof_batch \
            --iodepth_batch_complete_min=$rnvme_prof_batch} \
            $amount --size=128M --output-format=terse \
            --terse-version=3 > /tmp/prof.out 2>/tmp/prof.err
        smark
        mark "$b"
        s1=$(head -n1 /proc/stat)
        i1=$(irq_total "$b")
        c1=$(cpu_counts "$b")
        echo "fio-profile-cpu $wl dev=$side before: $c0"
        echo "fio-profile-cpu $wl dev=$side after: $c1"
        # rnvme's batching counters (cumulative since load; absent on rnvme.ko before issue 9's
        # queue_rqs): `fio-profile-batch <workload> <name> <value> ...`.
        if [ "$side" = rnvme ]; then
            for f in /sys/kernel/debug/rnvme/rnvme*/batch; do
                [ -r "$f" ] && echo "fio-profile-batch $wl $(tr '\n' ' ' < "$f")"
            done
        fi
        # Phase timers (profile-fio.sh --phases): the timed builds' cumulative cycles, the C
        # driver's in module parameters, rnvme's per controller in debugfs.
        if [ -r /sys/module/nvme_core/parameters/phase_ios ]; then
            echo "fio-profile-phases $wl dev=$side c $(for f in /sys/module/nvme_core/parameters/phase_* /sys/module/nvme/parameters/phase_*; do printf '%s %s ' "${f##*/}" "$(cat "$f")"; done)"
        fi
        for f in /sys/kernel/debug/rnvme/rnvme*/phases; do
            [ -r "$f" ] && echo "fio-profile-phases $wl dev=$side rnvme $(tr '\n' ' ' < "$f")"
        done
        ios=$(awk -F';' '$1 == 3 { print $6 + $47 }' /tmp/prof.out)
        case "$2" in *k) ios=$((ios / ${2%k})) ;; *) ios=$((ios * 1024 / $2)) ;; esac
        # fio's own view of the run (terse v3, read side): mean submission, completion and
        # total latency in µs, then fio's user and system CPU % and context switches.
        awk -F';' -v w="$wl" -v d="$side" '$1 == 3 { printf "fio-profile-lat %s dev=%s slat %s clat %s lat %s usr %s sys %s ctx %s\n", w, d, $12, $16, $40, $88, $89, $90 }' /tmp/prof.out
        if [ "${ios:-0}" -gt 0 ]; then
            echo "fio-profile $wl dev=$side ios=$ios irqs=$((i1 - i0)) irqs_per_io=$(awk -v a=$((i1 - i0)) -v b="$ios" 'BEGIN { printf "%.3f", a / b }') marker=$m smark=$smarks"
            # Guest CPU time per I/O by kind, all CPUs (/proc/stat, USER_HZ ticks; hard and
            # soft interrupt time is measured at each entry and exit, CONFIG_IRQ_TIME_ACCOUNTING):
            # what the completion interrupts cost, which the cpu-clock samples cannot show.
            echo "$s0
$s1" | awk -v w="$wl" -v d="$side" -v n="$ios" -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" '
                { for (i = 2; i <= 8; i++) v[NR, i] = $i }
                END { u = 1e6 / hz / n
                      printf "fio-profile-cputime %s dev=%s user %.2f system %.2f irq %.2f softirq %.2f idle %.2f us/io\n", w, d,
                          (v[2,2] + v[2,3] - v[1,2] - v[1,3]) * u, (v[2,4] - v[1,4]) * u, (v[2,7] - v[1,7]) * u,
                          (v[2,8] - v[1,8]) * u, (v[2,5] + v[2,6] - v[1,5] - v[1,6]) * u }'
            pass "fio-profile-$wl-$side"
        else
            cat /tmp/prof.out /tmp/prof.err
            fail "fio-profile-$wl-$side (no I/O)"
        fi
        [ -f "/tmp/perf.$side.$wl" ] && perf report -q -i "/tmp/perf.$side.$wl" --stdio --no-children -g none --sort sym 2>/dev/null |
            grep '%' | head -n "$top" | awk -v w="$wl" -v d="$side" '{ p = $1; $1 = ""; $2 = ""; print "fio-profile-sym " w " dev=" d " " p $0 }'
        # Where in the driver's own code the samples fall: the hottest instruction addresses of
        # the driver's modules (rnvme; the C driver's nvme and nvme_core), as offsets into the
        # module's .text (objdump -d of the .ko on the host maps them to instructions):
        # `fio-profile-ip <workload> dev=<d> <samples> <sym> ip=0x<ip> text=<base> mod=<module>`.
        if [ -n "$rnvme_prof_ips" ]; then
            if [ "$side" = rnvme ]; then mods=rnvme; else mods="nvme nvme_core"; fi
            perf script -i "/tmp/perf.$side.$wl" -F ip,sym,dso 2>/dev/null > /tmp/perf.script
            for mod in $mods; do
                base=$(cat "/sys/module/$mod/sections/.text" 2>/dev/null)
                # perf names a module's samples `[<module>]`, or by its file when it finds it.
                f="/$(echo "$mod" | tr _ -).ko"
                awk -v m="[$mod]" -v f="$f" -v w="$wl" -v d="$side" -v b="${base:-0x0}" -v mo="$mod" '
                    index($0, m) || index($0, f) { c[$1 " " $2]++ }
                    END { for (k in c) { split(k, a, " "); printf "fio-profile-ip %s dev=%s %d %s ip=0x%s text=%s mod=%s\n", w, d, c[k], a[2], a[1], b, mo } }' \
                    /tmp/perf.script | sort -k4 -n -r | head -n "${rnvme_prof_ips_top:-40}"
            done
            rm -f /tmp/perf.script
        fi
        if [ -n "$rnvme_prof_callgraph" ]; then
            perf report -q -i "/tmp/perf.$side.$wl" --stdio --no-children --percent-limit 2 \
                -g caller,0.5,callee,function,percent 2>/dev/null | grep -v '^$' | head -n 150 |
                sed "s/^/fio-profile-cg $wl dev=$side /"
        fi
        # Inclusive time in fio's own threads: per symbol, the samples taken in fio with the
        # symbol anywhere on the sampled stack, then those in the symbol itself, both as a share
        # of all the run's samples (`fio-profile-incl <workload> dev=<d> <children%> <self%>
        # <symbol>`). The normal kernel's unwinder is UNWINDER_GUESS, which reports every kernel
        # text address left on the stack, so the first figure can over-count (a stale return
        # address); the second is exact. Both drivers are counted the same way.
        if [ -n "$rnvme_prof_children" ]; then
            perf report -q -i "/tmp/perf.$side.$wl" --stdio --children --comm fio -g none \
                --sort sym --percent-limit 0.5 2>/dev/null | grep '%' | head -n 80 |
                awk -v w="$wl" -v d="$side" '{ c = $1; s = $2; $1 = ""; $2 = ""; $3 = ""; print "fio-profile-incl " w " dev=" d " " c " " s $0 }'
            # The same run's samples in fio's threads by the symbol they were taken in
            # (`fio-profile-self <workload> dev=<d> <self%> <symbol>`, share of all samples).
            perf report -q -i "/tmp/perf.$side.$wl" --stdio --no-children --comm fio -g none \
                --sort sym --percent-limit 0.1 2>/dev/null | grep '%' | head -n 120 |
                awk -v w="$wl" -v d="$side" '{ p = $1; $1 = ""; $2 = ""; print "fio-profile-self " w " dev=" d " " p $0 }'
        fi
        for h in /sys/kernel/debug/block/"$d"/hctx*; do
            [ -f "$h/dispatched" ] && echo "fio-profile-dispatched $wl dev=$side $(basename "$h"):" \
                "$(tr '\n' ' ' < "$h/dispatched")"
        done
        rm -f "/tmp/perf.$side.$wl"
    done
done
cd / || true
kmod_unload rnvme
kmod_unload nvme
kmod_unload nvme-core
for b in $(nvme_pci_list); do nvme_release "$b"; done
