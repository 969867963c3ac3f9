#!/usr/bin/env bash
# The fio matrix (issue 9): rnvme.ko against the C nvme driver on two identical emulated
# controllers in one guest, with null_blk and rnull as the no-device ceiling
# (tests/qemu/guest-tests/61-fio-matrix.sh: randread/randwrite/read x 512 B..128 KiB x QD1/8/32
# x io_uring/libaio, every point repeated and the devices interleaved).
#
#   scripts/bench-fio.sh [--short] [--secs N] [--rounds N] [--bs LIST] [--rw LIST] [--qd LIST]
#                        [--engines LIST] [--devs LIST] [--nvme-param P] [--rnvme-param P]
#                        [--ko FILE | --aa] [--out DIR] [--no-plot] [--trace] [--smp N] [--iommu]
#                        [--legs c|b|cb|bc]
#
# Default: the long form (3 rounds of 1 s per point and device: 810 runs, 47 minutes under TCG
# at host load 20 on 2 cores). --short: the CI form (the headline points, 1 round; about 3 minutes).
# LIST is comma-separated (e.g. --bs 4k,128k). --ko FILE uses an already built rnvme.ko.
# --engines: io_uring, libaio (the block devices), uring_cmd, uring_cmd_fb (the passthrough char
# devices, rnvme's /dev/rng* against the C driver's /dev/ng*, fio io_uring_cmd with fixedbufs=0 /
# fixedbufs=1, the latter on rnvme's premapped DMA tags; issue 8). Default io_uring,libaio.
# --nvme-param / --rnvme-param P: module parameters for the C driver / rnvme.ko, comma-separated (e.g.
# --nvme-param io_queue_depth=256). --aa: no rnvme.ko, the C driver on both controllers (an A/A
# check that the two emulated controllers perform alike; the "rnvme" rows are then the C driver;
# default DIR $RNVME_WORK/fio-aa, never benches/results/).
# --legs: the emulated controller rnvme has in each leg of the run (the C driver has the other of
# rnvme-b and rnvme-c; default c). cb or bc: a crossover, half of every point's rounds with each
# arrangement, both controllers rebound between them, so a difference between the two
# controllers cancels in the paired ratios (benches/pool_runs.py prints it per arrangement).
# --smp N: the guest's CPUs (default 2, run-guest.sh's).
# --iommu: QEMU's emulated IOMMU (run-guest.sh --iommu: q35, intel-iommu, intel_iommu=on), where
# every per-I/O DMA mapping costs an IOVA and page-table writes (issue 8's second setting).
# --main-loop-nice N: once QEMU runs, its main-loop thread (the NVMe model's) gets nice N (e.g.
# -10; root), so the host's scheduler runs it before the vCPU threads (BENCHMARKS.md, "Why the
# device falls behind"); the vCPU and worker threads keep their nice.
# --trace also records QEMU's NVMe doorbell/interrupt trace events (much slower; counts only).
# Writes DIR/fio-matrix-runs.csv (one row per run), DIR/fio-matrix.csv (one row per point and
# device: median/min/max IOPS, bandwidth, guest CPU per I/O, ratio rnvme/C, host load before and
# after, commit) and, unless --no-plot, the PNGs of benches/plot_fio.py. Default DIR:
# benches/results/. Prints the `fio-compare` lines. Exit 0 iff the guest run passed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mode=long plot=1 ko="" guest_args=() trace=0 aa=0 smp=() main_nice="" iommu=()
out="$RNVME_REPO/benches/results"
while (($#)); do
    case "$1" in
        --short) mode=short; shift ;;
        --secs) guest_args+=("rnvme_fio_secs=$2"); shift 2 ;;
        --rounds) guest_args+=("rnvme_fio_rounds=$2"); shift 2 ;;
        --bs) guest_args+=("rnvme_fio_bs=$2"); shift 2 ;;
        --rw) guest_args+=("rnvme_fio_rw=$2"); shift 2 ;;
        --qd) guest_args+=("rnvme_fio_qd=$2"); shift 2 ;;
        --engines) guest_args+=("rnvme_fio_engines=$2"); shift 2 ;;
        --devs) guest_args+=("rnvme_fio_devs=$2"); shift 2 ;;
        --nvme-param) guest_args+=("rnvme_fio_nvme_params=$2"); shift 2 ;;
        --rnvme-param) guest_args+=("rnvme_fio_rnvme_params=$2"); shift 2 ;;
        --ko) ko="$2"; shift 2 ;;
        --aa) aa=1; shift ;;
        --out) out="$2"; shift 2 ;;
        --no-plot) plot=0; shift ;;
        --trace) trace=1; shift ;;
        --smp) smp=(--smp "$2"); shift 2 ;;
        --iommu) iommu=(--iommu); shift ;;
        --legs) guest_args+=("rnvme_fio_legs=$2"); shift 2 ;;
        --main-loop-nice) main_nice="$2"; shift 2 ;;
        -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
q="$RNVME_REPO/tests/qemu"

if ((aa)); then
    ko=""
    # A/A results are a check of the method, never the repository's matrix.
    [[ "$out" != "$RNVME_REPO/benches/results" ]] || out="$RNVME_WORK/fio-aa"
elif [[ -z "$ko" ]]; then
    stage "build rnvme.ko (normal)"
    ko=$("$RNVME_REPO/scripts/build-module.sh" normal | grep '/rnvme\.ko$') ||
        die "rnvme.ko did not build"
    stage_end
fi
((aa)) || [[ -f "$ko" ]] || die "no module $ko"

mkdir -p "$RNVME_WORK/logs" "$RNVME_WORK/initramfs" "$out"
stamp=$(date +%Y%m%d-%H%M%S)
logf="$RNVME_WORK/logs/fio-matrix-$mode-$stamp.log"
add=()
((aa)) || add=(--add "$ko:/lib/modules/extra/rnvme.ko")
img=$("$q/mkinitramfs.sh" -k normal --no-default-tests "${add[@]}" \
    --test "$q/guest-tests/61-fio-matrix.sh" -o "$RNVME_WORK/initramfs/fio-matrix.cpio")
qemu_extra=()
if ((trace)); then
    qemu_extra=(-- -trace "pci_nvme_mmio_doorbell_*" -trace pci_nvme_irq_msix -trace pci_nvme_mmio_read
        -D "$RNVME_WORK/logs/fio-matrix-trace-$stamp.log")
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')
stage "guest run: fio matrix ($mode ${guest_args[*]})"
rc=0
if [[ -n "$main_nice" ]]; then
    # QEMU's main thread has the process id (Linux sets a nice value per thread); the newest
    # QEMU process after this point is this run's.
    since=$(date +%s)
    (
        for _ in $(seq 1 300); do
            pid=$(pgrep -n -x qemu-system-x86 || pgrep -n -f qemu-system-x86_64) || pid=""
            if [[ -n "$pid" ]] && (($(stat -c %Y "/proc/$pid") >= since)); then
                renice -n "$main_nice" -p "$pid" >/dev/null && log "QEMU main loop $pid: nice $main_nice"
                exit 0
            fi
            sleep 0.2
        done
        log "WARNING: no QEMU process to renice"
    ) &
fi
"$q/run-guest.sh" -k normal -i "$img" --topology proof -t 7200 -l "$logf" \
    "${smp[@]}" "${iommu[@]}" --append "rnvme_fio_mode=$mode rnvme_test_timeout=7000 ${guest_args[*]}" "${qemu_extra[@]}" || rc=$?
load_after=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' '/')
stage_end
# A failed guest run still gets its CSVs (whatever points it measured), then the script fails.
grep -aq '^fio-point ' "$logf" || die "guest run failed (run-guest.sh exit $rc), no results; log $logf"

py=""
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
[[ -n "$py" ]] || die "no python3 with matplotlib (scripts/setup.sh installs python3-matplotlib)"
commit=$(git -C "$RNVME_REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
plot_args=()
((plot)) || plot_args=(--no-plot)
"$py" "$RNVME_REPO/benches/plot_fio.py" --log "$logf" --out "$out" --mode "$mode" \
    --commit "$commit" --load-before "$load_before" --load-after "$load_after" \
    --host-cpus "$(nproc)" "${plot_args[@]}"
grep -aE '^fio-compare ' "$logf" | tr -d '\r'
log "guest log: $logf"
((rc == 0)) || die "guest run failed (run-guest.sh exit $rc): $(grep -a '^FAIL' "$logf" | tr -d '\r' | head -n 3)"
finish
