#!/usr/bin/env bash
# QEMU test matrix:
#   1. normal kernel, all guest tests, plus iovstack_selftest.ko (our crates on real pages and
#      the differential test against the kernel's iov_iter) and the rnvme proof (tests/qemu/
#      proof.sh): 4 NVMe controllers (run-guest.sh --topology proof), the data-integrity test
#      (264 MiB fio verify, discard/write zeroes, ext4, unload/reload) and queue/interrupt test
#      for the C driver and, when scripts/build-module.sh builds rnvme.ko, for rnvme; the fio
#      comparison; then the host compares the kept images with what the guest wrote (and proves
#      that comparison fails on a flipped byte)
#   2. debug kernel (KASAN, lockdep, kmemleak, atomic-sleep, DMA API debugging), the same tests
#      without the proof; any report fails the run. RNVME_PROOF_DEBUG=1 adds the proof (48 MiB
#      integrity run, queue test, no fio comparison): not on by default yet, as it has not been
#      timed on the debug kernel (a normal-kernel integrity run takes 2-3 min; the debug kernel
#      under TCG is 5-10x slower)
#   3. harness self-test: normal kernel + (a) a deliberately failing guest test,
#      (b) a simulated KASAN report in the kernel log; run-guest.sh must exit 1
#      for each, otherwise this script fails; (c) iovstack_selftest.ko with inject_fault=1:
#      the differential test must report the mismatch as a failure (scripts/test-module.sh);
#      (d) the integrity test with data overwritten behind fio's back must report errors
#
#   scripts/test-qemu.sh [normal] [debug] [selftest]   (default: all three)
# Env: RNVME_SKIP_SETUP=1 to skip scripts/setup.sh; RNVME_PROOF_RNVME=0 leaves rnvme.ko out of
# the proof (tests/qemu/proof.sh); RNVME_PROOF_DEBUG=1 runs the proof on the debug kernel too.
# Extra mkinitramfs options (e.g. --add/--test for the rnvme module) can be
# passed via RNVME_INITRAMFS_ARGS (word-split).
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$RNVME_REPO/tests/qemu/proof.sh"
export_kernel_pkg_version

jobs=("$@")
((${#jobs[@]})) || jobs=(normal debug selftest)
q="$RNVME_REPO/tests/qemu"
# shellcheck disable=SC2206
extra=(${RNVME_INITRAMFS_ARGS:-})

need_debug=0
for j in "${jobs[@]}"; do [[ "$j" == debug ]] && need_debug=1; done
if [[ "${RNVME_SKIP_SETUP:-0}" != 1 ]]; then
    stage "setup"
    kernels=normal; ((need_debug)) && kernels="normal debug"
    RNVME_SETUP_KERNELS="$kernels" RNVME_SETUP_FUZZ="${RNVME_SETUP_FUZZ:-0}" "$RNVME_REPO/scripts/setup.sh"
fi

declare -A result=()
for j in "${jobs[@]}"; do
    case "$j" in
        normal)
            stage "job normal"
            "$RNVME_REPO/scripts/build-kernel.sh" normal >/dev/null
            selftest_initramfs_args normal
            proof_setup normal
            img=$("$q/mkinitramfs.sh" -k normal -o "$RNVME_WORK/initramfs/test-normal.cpio" "${SELFTEST_ARGS[@]}" \
                "${PROOF_INITRAMFS_ARGS[@]}" "${extra[@]}")
            logf="$RNVME_WORK/logs/guest-normal-$(date +%Y%m%d-%H%M%S)-$$.log"
            result[$j]=PASS
            "$q/run-guest.sh" -k normal -i "$img" "${PROOF_GUEST_ARGS[@]}" -l "$logf" || result[$j]=FAIL
            proof_host_check "$logf" --self-test || result[$j]=FAIL
            proof_cleanup
            proof_summary "$logf"
            ;;
        debug)
            stage "job debug"
            "$RNVME_REPO/scripts/build-kernel.sh" debug >/dev/null
            selftest_initramfs_args debug
            if [[ "${RNVME_PROOF_DEBUG:-0}" == 1 ]]; then
                proof_setup debug
                img=$("$q/mkinitramfs.sh" -k debug -o "$RNVME_WORK/initramfs/test-debug.cpio" "${SELFTEST_ARGS[@]}" \
                    "${PROOF_INITRAMFS_ARGS[@]}" "${extra[@]}")
                logf="$RNVME_WORK/logs/guest-debug-$(date +%Y%m%d-%H%M%S)-$$.log"
                result[$j]=PASS
                "$q/run-guest.sh" -k debug -i "$img" "${PROOF_GUEST_ARGS[@]}" -l "$logf" || result[$j]=FAIL
                proof_host_check "$logf" || result[$j]=FAIL
                proof_cleanup
                proof_summary "$logf"
            else
                img=$("$q/mkinitramfs.sh" -k debug -o "$RNVME_WORK/initramfs/test-debug.cpio" "${SELFTEST_ARGS[@]}" "${extra[@]}")
                if "$q/run-guest.sh" -k debug -i "$img"; then result[$j]=PASS; else result[$j]=FAIL; fi
            fi
            ;;
        selftest)
            # Each deliberately broken guest run must make run-guest.sh exit 1.
            stage "job selftest (deliberately failing guest runs)"
            "$RNVME_REPO/scripts/build-kernel.sh" normal >/dev/null
            result[$j]=PASS
            for t in 99-deliberate-fail 98-fake-kernel-report; do
                img=$("$q/mkinitramfs.sh" -k normal -o "$RNVME_WORK/initramfs/test-selftest-$t.cpio" \
                    --no-default-tests --test "$q/guest/selftest/$t.sh")
                rc=0
                "$q/run-guest.sh" -k normal -i "$img" --nvme 0 -t 300 || rc=$?
                if [[ $rc -eq 1 ]]; then
                    log "selftest $t: run-guest.sh correctly reported failure (exit 1)"
                else
                    log "selftest $t: run-guest.sh exited $rc for a failing guest run (expected 1)"
                    result[$j]=FAIL
                fi
            done
            # The integrity test must notice data changed behind fio's back (4 KiB overwritten
            # after fio wrote it and before it is read back from the device after the driver reload).
            img=$("$q/mkinitramfs.sh" -k normal -o "$RNVME_WORK/initramfs/test-selftest-integrity.cpio" \
                --no-default-tests --test "$q/guest-tests/50-integrity-nvme.sh")
            logf="$RNVME_WORK/logs/guest-selftest-integrity-$(date +%Y%m%d-%H%M%S)-$$.log"
            rc=0
            "$q/run-guest.sh" -k normal -i "$img" --topology proof -t 600 -l "$logf" \
                --append "rnvme_integrity_mib=24 rnvme_integrity_corrupt=1" || rc=$?
            if [[ $rc -eq 1 ]] && grep -aqE '^rnvme-integrity: [0-9]+ bytes verified, [1-9][0-9]* errors' "$logf" &&
                grep -aqE '^FAIL: nvme-fio-verify-after-reload' "$logf"; then
                log "selftest integrity-corrupt: the overwritten data was reported (verify failure, errors > 0)"
            else
                log "selftest integrity-corrupt: run-guest.sh exited $rc; the corruption was not reported as expected"
                result[$j]=FAIL
            fi
            if "$RNVME_REPO/scripts/test-module.sh" normal --inject-only; then
                log "selftest inject_fault: the differential mismatch was reported as a failure"
            else
                log "selftest inject_fault: a deliberately broken differential case was not reported"
                result[$j]=FAIL
            fi
            ;;
        *) die "unknown job '$j' (normal|debug|selftest)" ;;
    esac
done
finish

fails=0
echo "=== test-qemu summary"
for j in "${jobs[@]}"; do
    echo "  $j: ${result[$j]}"
    [[ "${result[$j]}" == PASS ]] || fails=$((fails + 1))
done
((fails == 0)) || { echo "test-qemu: $fails job(s) failed"; exit 1; }
echo "test-qemu: all ${#jobs[@]} job(s) passed"
exit
}
