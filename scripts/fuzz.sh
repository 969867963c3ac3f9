#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/fuzz_targets for N seconds each (default 30) on nightly.
# Fails as soon as a target crashes (libFuzzer exits non-zero and leaves the input in
# fuzz/artifacts/<target>/).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# New inputs found while fuzzing go to a scratch corpus ($FUZZ_WORK, default a temp dir), so the
# committed seeds in fuzz/corpus/<target>/ are only read, never grown. Needs cargo-fuzz
# (`cargo install cargo-fuzz --locked`) and a nightly toolchain.
set -euo pipefail

secs="${1:-30}"
shift || true
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz="$repo/fuzz"
work="${FUZZ_WORK:-$(mktemp -d -t iovstack-fuzz.XXXXXX)}"

command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz not installed" >&2; exit 2; }

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for f in "$fuzz"/fuzz_targets/*.rs; do
        targets+=("$(basename "$f" .rs)")
    done
fi
[[ ${#targets[@]} -gt 0 ]] || { echo "no fuzz targets in $fuzz/fuzz_targets" >&2; exit 2; }

cd "$fuzz"
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    seeds=()
    [[ -d "$fuzz/corpus/$t" ]] && seeds=("$fuzz/corpus/$t")
    echo "==> fuzzing $t for ${secs}s (scratch corpus $work/$t)"
    if ! cargo +nightly fuzz run "$t" "$work/$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -print_final_stats=1; then
        echo "!!! $t crashed; reproducer in $fuzz/artifacts/$t/" >&2
        failed+=("$t")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz failures: ${failed[*]}" >&2
    exit 1
fi
echo "all ${#targets[@]} fuzz targets ran ${secs}s without a crash"
