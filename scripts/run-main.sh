#!/usr/bin/env bash
# Main QEMU job: setup (idempotent, tools + normal kernel), build iovstack_selftest.ko (and
# rnvme.ko when it builds) and the initramfs, boot the normal kernel with the proof topology (4 NVMe
# controllers, tests/qemu/proof.sh) and run every guest test (/tests/*.sh): the C NVMe driver with
# fio, null_blk and rnull, our crates inside the kernel (self-test on real pages, differential
# test against the kernel's iov_iter), the data-integrity and queue tests of the C driver and of
# rnvme (when built), and the fio comparison; then the host checks the kept images against what
# the guest wrote, and the integrity lines and the fio-compare table are printed.
#
#   scripts/run-main.sh [mkinitramfs options...]
#   e.g. scripts/run-main.sh --add rnvme/rnvme.ko:/lib/modules/extra/rnvme.ko --test tests/qemu/guest/extra/50-rnvme.sh
# Env: RNVME_SKIP_SETUP=1 skips scripts/setup.sh; RNVME_GUEST_ARGS passes extra
# options to tests/qemu/run-guest.sh (e.g. "--append rnvme_tests=10-*").
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$RNVME_REPO/tests/qemu/proof.sh"
export_kernel_pkg_version

if [[ "${RNVME_SKIP_SETUP:-0}" != 1 ]]; then
    stage "setup"
    RNVME_SETUP_KERNELS=normal RNVME_SETUP_FUZZ="${RNVME_SETUP_FUZZ:-0}" "$RNVME_REPO/scripts/setup.sh"
fi
stage "kernel (normal)"
"$RNVME_REPO/scripts/build-kernel.sh" normal >/dev/null
stage "module (iovstack_selftest.ko)"
selftest_initramfs_args normal
stage "module (rnvme.ko, if it builds) + proof tests"
proof_setup normal
stage "initramfs"
initramfs=$("$RNVME_REPO/tests/qemu/mkinitramfs.sh" -k normal -o "$RNVME_WORK/initramfs/main.cpio" \
    "${SELFTEST_ARGS[@]}" "${PROOF_INITRAMFS_ARGS[@]}" "$@")
stage "guest"
rc=0
logf="$RNVME_WORK/logs/guest-main-$(date +%Y%m%d-%H%M%S)-$$.log"
# shellcheck disable=SC2086
"$RNVME_REPO/tests/qemu/run-guest.sh" -k normal -i "$initramfs" "${PROOF_GUEST_ARGS[@]}" -l "$logf" \
    ${RNVME_GUEST_ARGS:-} || rc=$?
stage "host image check"
proof_host_check "$logf" || { [[ $rc -ne 0 ]] || rc=1; }
proof_cleanup
finish
proof_summary "$logf"
if [[ $rc -eq 0 ]]; then log "run-main: PASS"; else log "run-main: FAIL (run-guest exit $rc)"; fi
exit "$rc"
exit
}
