#!/usr/bin/env bash
# The in-kernel iov benchmark, long form: iovstack_bench.ko (rnvme/bench/) in the QEMU guest,
# the iov crate against the kernel's own iov_iter over the same memory in the same boot (256 MiB
# per sample, 16 samples per kind and side, construction/advance/npages on a 1 GiB table).
#
#   scripts/bench-kernel.sh [normal|debug] [--size-mib N] [--samples N] [--table-mib N]
#                           [--wall] [--ko FILE] [--out DIR] [--no-plot]
#
# --ko FILE uses an already built iovstack_bench.ko instead of running scripts/build-module.sh.
# Clock: by default QEMU runs with `-icount shift=0,sleep=off`: the guest clock advances by one
# nanosecond per emulated guest instruction (each iteration of a `rep movs` counts as one), so
# every "ns" is an instruction count, deterministic and independent of the host's load (on the
# shared 2-core CI hosts wall-clock samples of the same copy vary 5x). --wall runs plain TCG
# and times in host wall-clock time instead. Neither is real-hardware timing: both measure
# emulated instruction cost.
#
# Writes DIR/kernel_iov.csv (default DIR: benches/results/; one row per kind: medians, ratio,
# min/p10/p90/max of both sides, parameters, host load before/after, commit) and renders
# DIR/kernel_iov_ratio.png with benches/plot_kernel_iov.py. The guest log is kept under
# $RNVME_WORK/logs/. Exit 0 iff the guest run passed and every kind has a result.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant=normal size=256 samples=16 table=1024 plot=1 clock=icount ko=""
out="$RNVME_REPO/benches/results"
while (($#)); do
    case "$1" in
        normal|debug) variant="$1"; shift ;;
        --size-mib) size="$2"; shift 2 ;;
        --samples) samples="$2"; shift 2 ;;
        --table-mib) table="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-plot) plot=0; shift ;;
        --wall) clock=wall; shift ;;
        --ko) ko="$2"; shift 2 ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
q="$RNVME_REPO/tests/qemu"

if [[ -z "$ko" ]]; then
    stage "build iovstack_bench.ko ($variant)"
    ko=$("$RNVME_REPO/scripts/build-module.sh" "$variant" | grep '/iovstack_bench\.ko$') ||
        die "iovstack_bench.ko ($variant) did not build"
    stage_end
fi
[[ -f "$ko" ]] || die "no module $ko"

mkdir -p "$RNVME_WORK/logs" "$out"
logf="$RNVME_WORK/logs/iov-bench-$variant-$(date +%Y%m%d-%H%M%S).log"
img=$("$q/mkinitramfs.sh" -k "$variant" --no-default-tests \
    --add "$ko:/lib/modules/extra/iovstack_bench.ko" --test "$q/guest-tests/40-iov-bench.sh" \
    -o "$RNVME_WORK/initramfs/iov-bench-$variant.cpio")
load_before=$(cut -d' ' -f1 /proc/loadavg)
stage "guest run: ${size} MiB x $samples samples, ${table} MiB table, clock $clock"
qemu_extra=()
[[ "$clock" == wall ]] || qemu_extra=(-- -icount shift=0,sleep=off)
rc=0
"$q/run-guest.sh" -k "$variant" -i "$img" --nvme 0 -t 3600 -l "$logf" \
    --append "iovbench_size_mib=$size iovbench_samples=$samples iovbench_table_mib=$table" \
    "${qemu_extra[@]}" || rc=$?
load_after=$(cut -d' ' -f1 /proc/loadavg)
stage_end
((rc == 0)) || die "guest run failed (run-guest.sh exit $rc); log $logf"

csv="$out/kernel_iov.csv"
commit=$(git -C "$RNVME_REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
accel=tcg
[[ "$clock" == wall ]] || accel="tcg-icount"
[[ -z "${RNVME_KVM:-}" || "$clock" != wall ]] || accel="kvm-if-working"
{
    echo "kind,unit,rust_median,c_median,ratio,rust_min,rust_p10,rust_p90,rust_max,c_min,c_p10,c_p90,c_max,size_mib,samples,table_mib,variant,accel,host_cpus,load_before,load_after,commit,date"
    for kind in ubuf iovec kvec bvec bvec_split page_list iter_init iter_init_advance npages fixed_io_128k; do
        unit="ns per ${size} MiB"
        [[ "$kind" == iter_* || "$kind" == npages || "$kind" == fixed_io_* ]] && unit="ns per op"
        line=$(tr -d '\r' < "$logf" | grep -aE "^iov-bench $kind: " | tail -n1)
        spread=$(tr -d '\r' < "$logf" | grep -aE "^iov-bench-spread $kind: " | tail -n1)
        [[ -n "$line" && -n "$spread" ]] || die "no result for $kind in $logf"
        read -r -a l <<<"$line"
        read -r -a s <<<"$spread"
        # iov-bench K: rust R c C ratio X
        # iov-bench-spread K: rust min a p10 b p90 c max d c min e p10 f p90 g max h
        echo "$kind,$unit,${l[3]},${l[5]},${l[7]},${s[4]},${s[6]},${s[8]},${s[10]},${s[13]},${s[15]},${s[17]},${s[19]},$size,$samples,$table,$variant,$accel,$(nproc),$load_before,$load_after,$commit,$(date -u +%Y-%m-%dT%H:%MZ)"
    done
} > "$csv.tmp"
mv "$csv.tmp" "$csv"
log "wrote $csv"
column -s, -t < "$csv" | cut -c1-150 >&2
if ((plot)); then
    # Debian's python3-matplotlib (scripts/setup.sh) is for the system python, which a pyenv
    # or venv python3 earlier in PATH does not see.
    py=""
    for p in /usr/bin/python3 python3; do
        if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
    done
    [[ -n "$py" ]] || die "no python3 with matplotlib (scripts/setup.sh installs python3-matplotlib)"
    "$py" "$RNVME_REPO/benches/plot_kernel_iov.py" "$csv" "$out/kernel_iov_ratio.png"
    log "wrote $out/kernel_iov_ratio.png"
fi
finish
