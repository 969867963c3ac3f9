#!/usr/bin/env bash
# Long cargo-fuzz runs (issue #10): each target for a fixed number of executions, one after the
# other, at the lowest CPU priority, with a log and a one-line result per target.
#
#   scripts/fuzz-long.sh RUNS [TARGET...]
#
# RUNS is libFuzzer's -runs (executions, e.g. 10000000); FUZZ_MAX_SECONDS=N also bounds each
# target's time (-max_total_time), for machines too loaded to reach RUNS in the time there is. Without TARGETs every file in
# fuzz/fuzz_targets is run. The targets are built once up front (`cargo fuzz build`, release with
# debug assertions; FUZZ_SANITIZER=none|address, default address as in scripts/fuzz.sh), then each
# binary runs under `nice -n 19` on a scratch corpus seeded from the committed fuzz/corpus/<target>
# (never written to). Logs go to $FUZZ_LOGS (default a temp dir); a crash leaves the input in
# fuzz/artifacts/<target>/ and fails the script. Results (executions, exec/s, seconds, corpus size,
# outcome) are printed as `fuzz-long: <target> ...` lines for FUZZING.md.
set -euo pipefail

runs="${1:-}"
[[ "$runs" =~ ^[0-9]+$ ]] || { echo "usage: $0 RUNS [TARGET...]" >&2; exit 2; }
shift

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz="$repo/fuzz"
logs="${FUZZ_LOGS:-$(mktemp -d -t iovstack-fuzz-long.XXXXXX)}"
work="${FUZZ_WORK:-$logs/corpus}"
tdir="${CARGO_TARGET_DIR:-$fuzz/target}"
san="${FUZZ_SANITIZER:-address}"
limit=()
[[ -n "${FUZZ_MAX_SECONDS:-}" ]] && limit=(-max_total_time="$FUZZ_MAX_SECONDS")
mkdir -p "$logs" "$work"

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz not installed" >&2; exit 2; }

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for f in "$fuzz"/fuzz_targets/*.rs; do
        targets+=("$(basename "$f" .rs)")
    done
fi

cd "$fuzz"
# All binaries from one build of one source tree (with no TARGET, one `cargo fuzz build` for all).
if [[ $# -gt 0 ]]; then
    for t in "${targets[@]}"; do
        nice -n 19 cargo +nightly fuzz build -s "$san" --target-dir "$tdir" "$t" >/dev/null
    done
else
    nice -n 19 cargo +nightly fuzz build -s "$san" --target-dir "$tdir" >/dev/null
fi
triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bin_dir="$tdir/$triple/release"

failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "$fuzz/artifacts/$t"
    seeds=()
    [[ -d "$fuzz/corpus/$t" ]] && seeds=("$fuzz/corpus/$t")
    log="$logs/$t.log"
    echo "==> $t: $runs runs, log $log, load $(cut -d' ' -f1-3 /proc/loadavg)"
    start=$(date +%s)
    rc=0
    nice -n 19 "$bin_dir/$t" "$work/$t" "${seeds[@]}" -runs="$runs" "${limit[@]}" -print_final_stats=1 \
        -artifact_prefix="$fuzz/artifacts/$t/" >"$log" 2>&1 || rc=$?
    secs=$(( $(date +%s) - start ))
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    corpus="$(find "$work/$t" -type f | wc -l)"
    outcome="ok"
    if [[ $rc -ne 0 ]]; then
        outcome="CRASH (exit $rc, input in fuzz/artifacts/$t/)"
        failed+=("$t")
    fi
    echo "fuzz-long: $t executions=${execs:-?} exec/s=${rate:-?} seconds=$secs corpus=$corpus" \
        "load=$(cut -d' ' -f1-3 /proc/loadavg) outcome=$outcome"
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz-long failures: ${failed[*]}" >&2
    exit 1
fi
