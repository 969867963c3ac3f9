#!/usr/bin/env bash
# Where rnvme's time goes compared with the C driver (issue 9): boots the proof topology with
# tests/qemu/guest-tests/62-fio-profile.sh (4k randread QD1/QD32, 128k read QD8, each driver in
# turn on identical controllers) under QEMU's NVMe trace events, and prints per driver and
# workload: I/Os, interrupts per I/O (guest /proc/interrupts), MMIO doorbell writes (SQ tail, CQ
# head) and MSI-X interrupts per I/O (QEMU trace between the guest's INTMS-read markers), and the
# hottest kernel symbols of a guest `perf record -a` (cpu-clock) profile; also each run's
# per-CPU vector, BLOCK-softirq and IPI counts (fio-profile-cpu), fio's mean submission and
# completion latency (fio-profile-lat) and, with rnvme_prof_ips=1, the driver module's hottest
# instruction addresses (fio-profile-ip, offsets into .text for objdump -d of the .ko).
#
#   scripts/profile-fio.sh [--ko FILE] [--secs N] [--timeline] [--insns N] [--host-perf] [--iommu]
#                          [--phases]
#   --timeline: QEMU also traces command fetches and backend completions, with timestamps, and
#       benches/qemu_timeline.py prints each run's per-I/O intervals (fio-profile-timeline; QD1
#       workloads only: doorbell -> fetch -> backend done -> MSI-X -> CQ doorbell -> next), and
#       benches/qemu_batches.py the submission batches the device took per run, at any queue
#       depth (fio-profile-batches: commands fetched per MMIO SQ doorbell, the device's
#       reaction time to a doorbell, its stalls of over 1 ms).
#   --insns N: instead of the perf profile, every guest instruction is counted by the QEMU
#       plugin benches/qemu-plugin/tbcount.c (built here with cc); each run does exactly N I/Os
#       between two `sync` calls, the plugin's snapshot points, and benches/tb_profile.py prints
#       instructions per I/O by function for each run and the rnvme - C difference per function
#       (fio-insns, fio-insns-sym, fio-insns-diff lines), and by function the block ends that
#       leave the translated code for a jump-cache lookup (fio-exits lines). Counts include
#       interrupt handlers and interrupts-off code, which perf's cpu-clock samples cannot reach.
#       RNVME_PROF_TLB_BITS=B (with --insns): the plugin also models QEMU's soft TLB with 2^B
#       entries per vCPU and mode and counts its misses by function (fio-tlb, fio-tlb-sym,
#       fio-tlb-diff lines): under TCG a miss is a page-table walk of hundreds of nanoseconds,
#       so code that touches many distinct pages per I/O costs more than its instructions.
#   --host-perf: the host's perf samples every host CPU (cpu-clock), and benches/host_profile.py
#       prints per run the host CPU time per I/O of QEMU's vCPU threads, main loop and workers,
#       of everything else and the host's idle time, QEMU's hottest functions, and per I/O the
#       calls of the QEMU functions given uprobes (host-profile lines); the guest's perf is off.
#       RNVME_HOST_PROBES: the uprobes, one per line ('' for none: each hit costs the host
#       microseconds, so the timings of a run without probes are the undisturbed ones).
#       RNVME_HOST_CHAINS=1: call chains too, and benches/qemu_vcpu_chains.py prints per run
#       the vCPU threads' time on the CPU (MMIO writes and reads, jump-cache lookups,
#       translation, interrupts, the rest) and off it (waits for QEMU's global lock,
#       preemption), in and out of MMIO accesses (host-vcpu-on/off lines; needs a QEMU with
#       frame pointers: RNVME_QEMU=$(scripts/build-qemu-debug.sh)).
#       RNVME_HOST_SCHED=1 (with --timeline): the host's scheduler events too, and
#       benches/qemu_sched.py prints per run what the scheduler did with QEMU's main loop while
#       the NVMe model stalled (fio-profile-sched).
#   --phases: both drivers built with phase timers (rnvme.ko with RNVME_PHASES=1, unless --ko
#       gives one; the C driver by scripts/build-c-nvme-phases.sh), and benches/phases.py
#       prints per run the passthrough submit path's phases and the interrupt handler in ns per
#       I/O (fio-phases lines): use with RNVME_PROF_APPEND='rnvme_prof_engine=uring_cmd ...'.
#   RNVME_QEMU=$(scripts/build-qemu-debug.sh): QEMU with symbols, frame pointers and jump-cache
#       counters; benches/jump_cache.py prints per run the lookups and misses per I/O by code
#       region (fio-jc lines), and --host-perf names QEMU's own functions.
#   --iommu: QEMU's emulated IOMMU (run-guest.sh --iommu), so every DMA mapping is an IOVA
#       mapping (with --insns: what each driver's mapping calls cost there).
#   RNVME_PROF_KEEP_TRACE=1: keep QEMU's trace file (its path is printed).
#   RNVME_PROF_APPEND='rnvme_prof_rnvme_params=shadow_doorbells=0 rnvme_prof_callgraph=1' \
#       scripts/profile-fio.sh      # guest knobs (tests/qemu/guest-tests/62-fio-profile.sh)
#   RNVME_PROF_ADDS='SRC:DEST ...'  # extra initramfs files, e.g. another build of the C nvme.ko
#
# Needs the host's perf (apt linux-perf; copied into the guest with its libraries). TCG only:
# the numbers count emulated work; the profile's percentages are of guest CPU time.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ko="" secs=4 rc=0 timeline=0 insns="" host_perf=0 iommu=() phases=0
while (($#)); do
    case "$1" in
        --ko) ko="$2"; shift 2 ;;
        --secs) secs="$2"; shift 2 ;;
        --timeline) timeline=1; shift ;;
        --insns) insns="$2"; shift 2 ;;
        --host-perf) host_perf=1; shift ;;
        --iommu) iommu=(--iommu); shift ;;
        --phases) phases=1; shift ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
perf_bin=$(command -v perf) || die "no perf on the host (apt-get install linux-perf)"
if [[ -z "$ko" ]]; then
    if ((phases)); then
        ko=$(RNVME_MODULE_BUILD_DIR="$RNVME_WORK/module-build-phases/normal" \
            "$RNVME_REPO/scripts/build-module.sh" normal RNVME_PHASES=1 | grep '/rnvme\.ko$') ||
            die "rnvme.ko with phase timers did not build"
    else
        ko=$("$RNVME_REPO/scripts/build-module.sh" normal | grep '/rnvme\.ko$') || die "rnvme.ko did not build"
    fi
fi
q="$RNVME_REPO/tests/qemu"
adds=(--add "$ko:/lib/modules/extra/rnvme.ko" --add "$(readlink -f "$perf_bin"):/usr/bin/perf")
# Extra files for the initramfs, space-separated SRC:DEST (e.g. a C nvme.ko built otherwise,
# over /lib/modules/<release>/kernel/drivers/nvme/host/nvme.ko).
for a in ${RNVME_PROF_ADDS:-}; do
    adds+=(--add "$a")
done
if ((phases)); then
    cdir=$("$RNVME_REPO/scripts/build-c-nvme-phases.sh") || die "the timed C driver did not build"
    mdir="/lib/modules/$("$RNVME_REPO/scripts/kernel-path.sh" normal release)/kernel/drivers/nvme/host"
    adds+=(--add "$cdir/nvme-core.ko:$mdir/nvme-core.ko" --add "$cdir/nvme.ko:$mdir/nvme.ko")
fi
while read -r lib; do
    adds+=(--add "$(readlink -f "$lib"):$lib")
done < <(ldd "$perf_bin" | awk '/=> \// { print $3 }')
mkdir -p "$RNVME_WORK/logs" "$RNVME_WORK/initramfs"
stamp=$(date +%Y%m%d-%H%M%S)
logf="$RNVME_WORK/logs/fio-profile-$stamp.log"
tracef="$RNVME_WORK/logs/fio-profile-trace-$stamp.log"
img=$("$q/mkinitramfs.sh" -k normal --no-default-tests "${adds[@]}" \
    --test "$q/guest-tests/62-fio-profile.sh" -o "$RNVME_WORK/initramfs/fio-profile.cpio")
traces=(-trace "pci_nvme_mmio_doorbell_*" -trace pci_nvme_irq_msix -trace pci_nvme_mmio_read)
((timeline)) && traces+=(-trace pci_nvme_io_cmd -trace pci_nvme_rw_cb -msg timestamp=on)
plugin=() insn_append="" dumpf=""
if [[ -n "$insns" ]]; then
    [[ "$insns" =~ ^[1-9][0-9]*$ ]] || die "--insns takes a number of I/Os per run"
    smap="$("$RNVME_REPO/scripts/kernel-path.sh" normal build)/System.map"
    mark=$(awk '$3 == "__x64_sys_sync" { print $1 }' "$smap")
    [[ -n "$mark" ]] || die "no __x64_sys_sync in $smap"
    so="$RNVME_WORK/tbcount.so"
    cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$so" "$RNVME_REPO/benches/qemu-plugin/tbcount.c" -lpthread
    dumpf="$RNVME_WORK/logs/fio-profile-insns-$stamp.txt"
    tlb=""
    if [[ -n "${RNVME_PROF_TLB_BITS:-}" ]]; then
        [[ "$RNVME_PROF_TLB_BITS" =~ ^[0-9]+$ ]] || die "RNVME_PROF_TLB_BITS takes a number"
        tlb=",tlb=$RNVME_PROF_TLB_BITS"
    fi
    plugin=(-plugin "$so,out=$dumpf,mark=$mark,info=$dumpf.info$tlb")
    # nokaslr: the kernel's addresses are System.map's.
    insn_append="nokaslr rnvme_prof_perf=0 rnvme_prof_sync_marks=1 rnvme_prof_ios=$insns rnvme_prof_alternate=1"
fi
host_rec=() hostf=""
if ((host_perf)); then
    [[ -z "$insns" ]] || die "--host-perf and --insns measure different things: one at a time"
    # QEMU's trace is stamped with the host's wall clock (gettimeofday), perf's samples with
    # CLOCK_MONOTONIC (Debian 12's perf 6.1 takes no CLOCK_REALTIME here): the offset
    # between the two clocks, read now, converts one into the other.
    clock_off=$(python3 -c 'import time; print(time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC))')
    traces+=(-msg timestamp=on -name rnvme-prof,debug-threads=on)
    insn_append+=" rnvme_prof_perf=0"
    hostf="$RNVME_WORK/logs/fio-profile-host-$stamp.data"
    # Uprobes on QEMU functions that cost far more than an instruction: device register
    # accesses (MMIO and port I/O), translations, writes into translated code, soft-TLB
    # flushes, and takes of QEMU's global lock. Counted per I/O; removed again on exit.
    qemu_bin=$(readlink -f "$(command -v "${RNVME_QEMU:-qemu-system-x86_64}")")
    # scripts/build-qemu-debug.sh's wrapper: the binary it runs.
    [[ -x "$(dirname "$qemu_bin")/build/qemu-system-x86_64" ]] &&
        qemu_bin="$(dirname "$qemu_bin")/build/qemu-system-x86_64"
    # RNVME_HOST_PROBES replaces the list: one probe per line, a function QEMU exports and
    # optionally what to record (perf probe syntax), e.g. 'x86_cpu_tlb_fill addr=%si:u64'.
    mapfile -t probes <<< "${RNVME_HOST_PROBES-memory_region_dispatch_read
memory_region_dispatch_write
tb_gen_code
tb_flush
tb_phys_invalidate
tb_invalidate_phys_page_fast
tb_invalidate_phys_range
cpu_exec_step_atomic
x86_cpu_tlb_fill
tlb_flush
tlb_flush_page
tlb_flush_by_mmuidx
tlb_flush_all_cpus_synced
tlb_flush_page_all_cpus_synced
qemu_mutex_lock_iothread_impl}"
    "$perf_bin" probe -q -d 'probe_qemu:*' 2>/dev/null || true
    trap '"$perf_bin" probe -q -d "probe_qemu:*" 2>/dev/null || true' EXIT
    # One cpu-clock sample per 250 µs of a CPU; the analysis weighs each sample by it.
    host_period_us=250
    host_rec=("$perf_bin" record -q -a -k mono -e "cpu-clock/period=$((host_period_us * 1000))/")
    if [[ "${RNVME_HOST_SCHED:-0}" == 1 ]]; then
        ((timeline)) || die "RNVME_HOST_SCHED=1 needs --timeline (the stalls are found in its trace)"
        host_rec+=(-e sched:sched_switch -e sched:sched_wakeup)
    fi
    if [[ "${RNVME_HOST_CHAINS:-0}" == 1 ]]; then
        # Call chains of every sample and of every switch (a QEMU with frame pointers:
        # scripts/build-qemu-debug.sh, RNVME_QEMU).
        host_rec+=(-g)
        [[ "${RNVME_HOST_SCHED:-0}" == 1 ]] || host_rec+=(-e sched:sched_switch)
    fi
    for f in "${probes[@]}"; do
        [[ -n "$f" ]] || continue
        "$perf_bin" probe -q -x "$qemu_bin" --add "$f" || die "perf probe on QEMU's $f failed"
        host_rec+=(-e "probe_qemu:${f%% *}")
    done
    host_rec+=(-o "$hostf" --)
fi
log "host load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${host_rec[@]}" "$q/run-guest.sh" -k normal -i "$img" --topology proof "${iommu[@]}" -t 3600 -l "$logf" \
    --append "rnvme_prof_secs=$secs rnvme_test_timeout=3000 $insn_append ${RNVME_PROF_APPEND:-}" -- \
    "${traces[@]}" -D "$tracef" "${plugin[@]}" || rc=$?
log "host load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Segments of the trace between INTMS reads (addr 0xc): segment k (1-based) is marker k's run.
awk '
    /pci_nvme_mmio_read addr 0xc / { seg++; inrun = (seg % 2 == 1); next }
    inrun && /pci_nvme_mmio_doorbell_sq/ { sq[seg]++ }
    inrun && /pci_nvme_mmio_doorbell_cq/ { cq[seg]++ }
    inrun && /pci_nvme_irq_msix/ { irq[seg]++ }
    END { for (s = 1; s <= seg; s += 2) printf "trace %d %d %d %d\n", s, sq[s] + 0, cq[s] + 0, irq[s] + 0 }
' "$tracef" > "$tracef.counts"
tr -d '\r' < "$logf" | grep -aE '^fio-profile ' | while read -r _ wl dev ios irqs ipi marker _; do
    m=${marker#marker=}
    n=${ios#ios=}
    read -r _ _ sq cq mirq < <(awk -v m="$m" '$2 == m' "$tracef.counts") || true
    awk -v wl="$wl" -v d="${dev#dev=}" -v n="$n" -v sq="${sq:-0}" -v cq="${cq:-0}" -v mi="${mirq:-0}" -v g="${ipi#irqs_per_io=}" \
        'BEGIN { printf "fio-profile-counts %s %s: ios %d, per I/O: sq doorbells %.3f, cq doorbells %.3f, msi-x %.3f (guest irqs %s)\n", wl, d, n, sq / n, cq / n, mi / n, g }'
done
if ((timeline)); then
    python3 "$RNVME_REPO/benches/qemu_timeline.py" "$tracef" > "$tracef.timeline"
    tr -d '\r' < "$logf" | grep -aE '^fio-profile ' | while read -r _ wl dev _ _ _ marker _; do
        sed -n "s/^timeline ${marker} /fio-profile-timeline $wl ${dev#dev=}: /p" "$tracef.timeline"
    done
    rm -f "$tracef.timeline"
    # Submission batches as the device took them (any queue depth; benches/qemu_batches.py).
    python3 "$RNVME_REPO/benches/qemu_batches.py" "$tracef" > "$tracef.batches"
    tr -d '\r' < "$logf" | grep -aE '^fio-profile ' | while read -r _ wl dev _ _ _ marker _; do
        sed -n "s/^batches ${marker} /fio-profile-batches $wl ${dev#dev=}: /p" "$tracef.batches"
    done
    rm -f "$tracef.batches"
fi
tr -d '\r' < "$logf" | grep -aE '^fio-profile-(sym|batch|cpu|queue|dispatched|lat|ip) '
# The jump-cache counters of a QEMU built by scripts/build-qemu-debug.sh (RNVME_QEMU).
if grep -aq '^qemu-jc ' "$logf"; then
    python3 "$RNVME_REPO/benches/jump_cache.py" "$logf" || rc=1
fi
if ((phases)); then
    tr -d '\r' < "$logf" > "$logf.phases"
    python3 "$RNVME_REPO/benches/phases.py" "$logf.phases" || rc=1
    rm -f "$logf.phases"
fi
if [[ -n "$dumpf" ]]; then
    python3 "$RNVME_REPO/benches/tb_profile.py" --dump "$dumpf" --system-map "$smap" --log "$logf" \
        --info "$dumpf.info" || rc=1
    xz -f -T1 "$dumpf" "$dumpf.info"
    log "instruction counts: $dumpf.xz"
fi
if [[ -n "$hostf" ]]; then
    "$perf_bin" script -i "$hostf" -F pid,tid,comm,time,event,ip,sym,dso --ns 2>/dev/null > "$hostf.txt" || rc=1
    python3 "$RNVME_REPO/benches/host_profile.py" --trace "$tracef" --perf-script "$hostf.txt" --log "$logf" \
        --clock-offset "$clock_off" --period-us "$host_period_us" --cpus "$(nproc)" || rc=1
    rm -f "$hostf.txt"
    if [[ "${RNVME_HOST_CHAINS:-0}" == 1 ]]; then
        "$perf_bin" script -i "$hostf" -F comm,pid,tid,time,event,trace,ip,sym --ns 2>/dev/null \
            > "$hostf.chains" || rc=1
        python3 "$RNVME_REPO/benches/qemu_vcpu_chains.py" --trace "$tracef" --perf-script "$hostf.chains" \
            --log "$logf" --clock-offset "$clock_off" --period-us "$host_period_us" || rc=1
        rm -f "$hostf.chains"
    fi
    if [[ "${RNVME_HOST_SCHED:-0}" == 1 ]]; then
        "$perf_bin" script -i "$hostf" -F comm,pid,tid,cpu,time,event,trace --ns 2>/dev/null |
            grep -a 'sched:sched_' > "$hostf.sched" || true
        python3 "$RNVME_REPO/benches/qemu_sched.py" --trace "$tracef" --perf-script "$hostf.sched" \
            --clock-offset "$clock_off" > "$hostf.sched.out" || rc=1
        tr -d '\r' < "$logf" | grep -aE '^fio-profile ' | while read -r _ wl dev _ _ _ marker _; do
            sed -n "s/^sched ${marker} /fio-profile-sched $wl ${dev#dev=}: /p" "$hostf.sched.out"
        done
        rm -f "$hostf.sched" "$hostf.sched.out"
    fi
    log "host perf data: $hostf"
fi
[[ -n "${RNVME_PROF_KEEP_TRACE:-}" ]] && log "trace: $tracef" || rm -f "$tracef"
log "guest log: $logf"
# The counts of a failed run (e.g. a kernel-log report) are printed too, then the script fails.
((rc == 0)) || die "guest run failed (run-guest.sh exit $rc); log $logf"
