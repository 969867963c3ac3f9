#!/usr/bin/env bash
# Build iovstack_selftest.ko and run it in the QEMU guest.
#
#   scripts/test-module.sh [normal|debug] [--no-inject|--inject-only] [--seed N] [--cases N]
#                          [--timeout SECS]
#
#   1. normal run: tests/qemu/guest-tests/[0-9]*.sh (smoke + differential test) must pass
#      (--seed/--cases choose the random cases; defaults in rnvme/selftest/params.c; --timeout
#      raises run-guest.sh's host-side limit and the guest's per-test limit for long runs, e.g.
#      --cases 1000000);
#   2. fault-injection run (skipped with --no-inject): the module loaded with inject_fault=1
#      (tests/qemu/guest-tests/selftest/90-iovstack-inject-fault.sh) must make the run FAIL,
#      and the console log must show why: a non-zero mismatch count, FAIL lines for the iov,
#      the bio and the batch differential, and `selftest: FAIL`.
#      This proves a mismatch reaches the harness as a failure.
# Uses tests/qemu/mkinitramfs.sh and tests/qemu/run-guest.sh; logs under $RNVME_WORK/logs/.
# Exit 0 iff both runs behaved as required.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant=normal
inject=1
normal_run=1
append=""
timeout_args=()
while (($#)); do
    case "$1" in
        normal|debug) variant="$1"; shift ;;
        --no-inject) inject=0; shift ;;
        --inject-only) normal_run=0; shift ;;
        --seed) append+=" iovstack_seed=$2"; shift 2 ;;
        --cases) append+=" iovstack_cases=$2"; shift 2 ;;
        --timeout) timeout_args=(-t "$2"); append+=" rnvme_test_timeout=$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
q="$RNVME_REPO/tests/qemu"
gt="$q/guest-tests"

stage "build module ($variant)"
ko=$("$RNVME_REPO/scripts/build-module.sh" "$variant" | grep '/iovstack_selftest\.ko$')
[[ -f "$ko" ]] || die "iovstack_selftest.ko not built"
stage_end

common=(-k "$variant" --no-default-tests
        --add "$ko:/lib/modules/extra/iovstack_selftest.ko"
        --add "$gt/iovstack-check.sh:/lib/rnvme/iovstack-check.sh")
tests=()
# Only the self-test's own guest tests (guest-tests/ also holds the driver's and the harness's).
for t in "$gt"/1[0-9]-iovstack-*.sh; do tests+=(--test "$t"); done
mkdir -p "$RNVME_WORK/logs"
stamp=$(date +%Y%m%d-%H%M%S)

failed=0
if ((normal_run)); then
log1="$RNVME_WORK/logs/iovstack-$variant-$stamp.log"
img=$("$q/mkinitramfs.sh" "${common[@]}" "${tests[@]}" -o "$RNVME_WORK/initramfs/iovstack-$variant.cpio")
rc=0
"$q/run-guest.sh" -k "$variant" -i "$img" --nvme 0 -l "$log1" --append "$append" "${timeout_args[@]}" \
    || rc=$?
summary=$(grep -aE '(^|[ :])differential: [0-9]+ cases, [0-9]+ mismatches' "$log1" | tail -n1 | tr -d '\r' || true)
if [[ $rc -eq 0 ]]; then
    log "normal run: PASS -- ${summary:-no summary line}"
else
    log "normal run: FAIL (run-guest.sh exit $rc) -- ${summary:-no summary line}; log $log1"
    failed=1
fi
fi

if ((inject)); then
    log2="$RNVME_WORK/logs/iovstack-inject-$variant-$stamp.log"
    img=$("$q/mkinitramfs.sh" "${common[@]}" --test "$gt/selftest/90-iovstack-inject-fault.sh" \
        -o "$RNVME_WORK/initramfs/iovstack-inject-$variant.cpio")
    rc=0
    "$q/run-guest.sh" -k "$variant" -i "$img" --nvme 0 -l "$log2" || rc=$?
    isummary=$(grep -aE '(^|[ :])differential: [0-9]+ cases, [0-9]+ mismatches' "$log2" | tail -n1 | tr -d '\r' || true)
    why=()
    [[ $rc -eq 1 ]] || why+=("run-guest.sh exited $rc, expected 1")
    [[ "$isummary" =~ differential:\ [0-9]+\ cases,\ [1-9][0-9]*\ mismatches ]] ||
        why+=("no non-zero mismatch count in the log")
    grep -aqE '^FAIL: iovstack-differential' "$log2" || why+=("no 'FAIL: iovstack-differential' line")
    grep -aqE '^FAIL: iovstack-bio-differential' "$log2" ||
        why+=("no 'FAIL: iovstack-bio-differential' line")
    grep -aqE '^FAIL: iovstack-batch-differential' "$log2" ||
        why+=("no 'FAIL: iovstack-batch-differential' line")
    grep -aqE 'iovstack: selftest: FAIL' "$log2" || why+=("no 'selftest: FAIL' line")
    if ((${#why[@]})); then
        log "fault-injection run: FAIL ($(IFS=';'; echo "${why[*]}")); log $log2"
        failed=1
    else
        log "fault-injection run: PASS (mismatch detected and reported as failure) -- $isummary"
    fi
fi
finish
exit "$failed"
