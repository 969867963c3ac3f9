# shellcheck shell=bash
# The rnvme proof run (issue 7), shared by scripts/test-qemu.sh and scripts/run-main.sh. Source it
# after scripts/lib.sh; do not run it.
#
#   proof_setup VARIANT   sets PROOF_INITRAMFS_ARGS (mkinitramfs options: the guest tests and,
#                         when scripts/build-module.sh builds it, rnvme.ko), PROOF_GUEST_ARGS
#                         (run-guest.sh options: the proof topology, images kept in a fresh
#                         PROOF_WORK directory, sizes for VARIANT)
#   proof_host_check LOG [--self-test]
#                         compares the kept images with the regions the guest reported
#   proof_cleanup         removes PROOF_WORK (the kept images)
#   proof_summary LOG     prints the integrity lines, the fio-compare table and the headline
#                         rnvme/C ratios (issue 9's goal points)
#
# Guest tests (tests/qemu/guest-tests/): 50-integrity-<driver>.sh, 55-queues-<driver>.sh for the
# C driver and, when rnvme.ko is in the initramfs, for rnvme; 61-fio-matrix.sh in its short form
# (normal kernel only: timing under the debug kernel means nothing; the long form is
# scripts/bench-fio.sh). The debug kernel (KASAN, lockdep, kmemleak,
# DMA API debugging) runs several times slower under TCG, so its integrity test writes and
# verifies 48 MiB of fio data per driver instead of 264 MiB.
# Env: RNVME_PROOF_RNVME=0 leaves rnvme.ko and its tests out even when it builds (C driver only;
# fio-compare then runs the C driver on both sides).

PROOF_DIR="$RNVME_REPO/tests/qemu"

proof_setup() {
    local variant=$1 gt="$RNVME_REPO/tests/qemu/guest-tests" kos ko rnvme_ko=""
    kos=$("$RNVME_REPO/scripts/build-module.sh" "$variant") || die "module build ($variant) failed"
    for ko in $kos; do [[ "$ko" == */rnvme.ko ]] && rnvme_ko="$ko"; done
    PROOF_INITRAMFS_ARGS=(--test "$gt/50-integrity-nvme.sh" --test "$gt/55-queues-nvme.sh")
    if [[ -n "$rnvme_ko" && "${RNVME_PROOF_RNVME:-1}" != 0 ]]; then
        log "proof: rnvme.ko built ($rnvme_ko): the integrity and queue tests run on rnvme too"
        PROOF_INITRAMFS_ARGS+=(--add "$rnvme_ko:/lib/modules/extra/rnvme.ko"
            --test "$gt/51-integrity-rnvme.sh" --test "$gt/56-queues-rnvme.sh")
    else
        log "proof: C driver only (rnvme.ko ${rnvme_ko:-not built}; RNVME_PROOF_RNVME=${RNVME_PROOF_RNVME:-1}): fio-compare runs nvme on both sides"
    fi
    mkdir -p "$RNVME_WORK/proof"
    PROOF_WORK=$(mktemp -d "$RNVME_WORK/proof/$variant.XXXXXX")
    PROOF_GUEST_ARGS=(--topology proof --keep-images "$PROOF_WORK/images")
    # Per-test timeouts: a few times the usual duration (normal: integrity ~2 min per driver on
    # an idle machine), so a hung driver fails its test instead of the whole run's time limit.
    if [[ "$variant" == debug ]]; then
        PROOF_GUEST_ARGS+=(-t 2400 --append "rnvme_integrity_mib=48 rnvme_test_timeout=900")
    else
        PROOF_INITRAMFS_ARGS+=(--test "$gt/61-fio-matrix.sh")
        PROOF_GUEST_ARGS+=(-t 1500 --append "rnvme_test_timeout=420")
    fi
}

proof_host_check() {
    local logf=$1
    shift
    # Nothing to compare when no integrity test ran (e.g. rnvme_tests= selected other tests).
    if ! grep -aqE '^=== RUN 5[0-9]-integrity' "$logf"; then
        log "proof: no integrity test ran; host image check skipped"
        return 0
    fi
    "$PROOF_DIR/check-images.sh" "$@" "$logf" "$PROOF_WORK/images"
}

proof_cleanup() {
    [[ -n "${PROOF_WORK:-}" ]] && rm -rf "$PROOF_WORK"
    return 0
}

proof_summary() {
    local logf=$1
    echo "=== integrity (rnvme-integrity: bytes read back and compared, failed checks)"
    grep -aE '^rnvme-integrity: [0-9]+ bytes' "$logf" | tr -d '\r' || echo "(no integrity line)"
    echo "=== fio comparison (IOPS, TCG: relative numbers only)"
    grep -aE '^fio-compare' "$logf" | tr -d '\r' || echo "(no fio-compare lines)"
    echo "=== headline rnvme/C ratios (issue 9 goal: >= 1.00; TCG, one 2 s run per point; host load $(cut -d' ' -f1-3 /proc/loadavg))"
    # The goal points are the block devices' (io_uring and libaio); the passthrough points
    # (uring_cmd*) are printed above.
    tr -d '\r' < "$logf" | awk '$1 == "fio-compare" && $2 ~ /^(randread-4k-qd(1|32)|read-128k-qd[0-9]+)-(io_uring|libaio):$/ {
        sub(":", "", $2); n++; if ($8 + 0 < 1.0) below++
        printf "headline %-28s rnvme/C %s\n", $2, $8 }
        END { if (n) printf "headline: %d of %d goal points at >= 1.00\n", n - below, n; else print "(no headline points)" }'
}
