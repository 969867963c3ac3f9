#!/usr/bin/env bash
# Issue 9's goal points (fio io_uring, rnvme.ko against the C driver on identical emulated
# controllers: 4k randread and 128k read, QD1 and QD32) measured in N runs, each run one
# sample. Whole runs of the same driver code scatter by more than their own rounds' intervals
# under TCG (BENCHMARKS.md, "What the goal-point runs can resolve"), so only many runs resolve a
# difference of about 1%: 20-112 per point on the 2-core machine of BENCHMARKS.md.
#
#   scripts/bench-goal.sh [--runs N] [--sizes LIST] [--qd LIST] [--rounds-4k N]
#                         [--rounds-128k N] [--secs N] [--ko FILE | --aa] [--out DIR]
#                         [--crossover] [--include RUNS.csv]...
#
# Each run is one scripts/bench-fio.sh boot per block size (LIST: 4k, 128k; default both),
# into DIR/<run>-<size>/. At the end benches/pool_runs.py pools every run in DIR with the
# --include'd per-round CSVs of earlier runs (e.g. benches/results/fio-paired-*-4k-runs.csv)
# and prints its `pool` lines (every round pooled, each run as one sample, runs to resolve 1%),
# also kept in DIR/pool.txt. Defaults: 4 runs, QD 1,32, 48 rounds at 4k and 24 at 128k of 2 s
# each (about 12.5 minutes per run of both sizes), DIR $RNVME_WORK/goal-<time>.
# --ko FILE: a built rnvme.ko (default: built once now, and copied into DIR so every run uses
# the same module). --aa: the C driver on both controllers (the method's A/A check).
# --crossover: every run is a crossover (bench-fio.sh --legs): half of its rounds with rnvme on
# controller rnvme-c, half on rnvme-b, the first half on rnvme-c in odd runs and on rnvme-b in
# even ones, so a difference between the two emulated controllers cancels, and pool.txt also
# has its size (pool_runs.py's `position` lines). Without it rnvme stays on rnvme-c, as in the
# runs before 2026-12-01.
# Exit 0 iff every run passed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=4 sizes=4k,128k qd=1,32 rounds_4k=48 rounds_128k=24 secs=2 ko="" aa=0 out="" includes=()
cross=0
while (($#)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --qd) qd=$2; shift 2 ;;
        --rounds-4k) rounds_4k=$2; shift 2 ;;
        --rounds-128k) rounds_128k=$2; shift 2 ;;
        --secs) secs=$2; shift 2 ;;
        --ko) ko=$2; shift 2 ;;
        --aa) aa=1; shift ;;
        --crossover) cross=1; shift ;;
        --out) out=$2; shift 2 ;;
        --include) includes+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number, not '$runs'"
out=${out:-$RNVME_WORK/goal-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

side=()
if ((aa)); then
    side=(--aa)
else
    if [[ -z "$ko" ]]; then
        stage "build rnvme.ko (normal)"
        ko=$("$RNVME_REPO/scripts/build-module.sh" normal | grep '/rnvme\.ko$') ||
            die "rnvme.ko did not build"
        stage_end
    fi
    [[ -f "$ko" ]] || die "no module $ko"
    cp "$ko" "$out/rnvme.ko"
    side=(--ko "$out/rnvme.ko")
fi

IFS=, read -r -a size_list <<<"$sizes"
IFS=, read -r -a qd_list <<<"$qd"
# Each size's fio pattern and rounds, as the goal points define them.
declare -A rw_of=([4k]=randread [128k]=read) rounds_of=([4k]=$rounds_4k [128k]=$rounds_128k)
workloads=()
for s in "${size_list[@]}"; do
    [[ -n "${rw_of[$s]:-}" ]] || die "--sizes: 4k or 128k, not '$s'"
    for d in "${qd_list[@]}"; do workloads+=(--workload "${rw_of[$s]}-$s-qd$d-io_uring"); done
done

# --crossover: even runs start with rnvme on rnvme-b, odd ones on rnvme-c.
cross_legs=(bc cb)
failed=0
for ((i = 1; i <= runs; i++)); do
    for s in "${size_list[@]}"; do
        rw=${rw_of[$s]} rounds=${rounds_of[$s]} legs=c
        ((cross)) && legs=${cross_legs[i % 2]}
        log "run $i of $runs: $s ($rw, QD $qd, $rounds rounds of ${secs}s, rnvme on $legs)"
        "$RNVME_REPO/scripts/bench-fio.sh" --rw "$rw" --bs "$s" --qd "$qd" --engines io_uring \
            --devs rnvme,nvme --rounds "$rounds" --secs "$secs" --legs "$legs" --no-plot \
            "${side[@]}" --out "$out/$i-$s" >"$out/$i-$s.log" 2>&1 || {
            log "run $i $s FAILED (log $out/$i-$s.log)"
            failed=1
        }
    done
done

csvs=("${includes[@]}")
for f in "$out"/*/fio-matrix-runs.csv; do [[ -f "$f" ]] && csvs+=("$f"); done
((${#csvs[@]})) || die "no run produced results (logs in $out)"
python3 "$RNVME_REPO/benches/pool_runs.py" "${workloads[@]}" "${csvs[@]}" | tee "$out/pool.txt"
log "runs and pool in $out"
exit "$failed"
