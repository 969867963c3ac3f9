#!/usr/bin/env bash
# Build rnvme.ko and run its basic guest test (tests/qemu/guest-tests/20-rnvme-basic.sh) in the
# QEMU guest; then two short boots: chained PRP lists (25-rnvme-chain.sh; RNVME_DRIVER_CHAIN=0
# skips it) and the driver behind an emulated IOMMU (26-rnvme-iommu.sh; RNVME_DRIVER_IOMMU=0
# skips it).
#
#   scripts/test-driver.sh [normal|debug] [run-guest.sh options, e.g. --nvme 1 or --ctrl SPEC]
#
# Default controllers: tests/qemu/run-guest.sh --topology proof (two namespaces of 512 and 4096
# byte blocks on one controller, a controller that grants one queue, ...), or two plain
# controllers where run-guest.sh has no topologies. Exit 0 iff every guest
# test passed and the console log is clean (no BUG/WARNING/KASAN/lockdep/kmemleak report).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant=normal
if [[ "${1:-}" == normal || "${1:-}" == debug ]]; then variant="$1"; shift; fi
q="$RNVME_REPO/tests/qemu"
if ((! $#)); then
    if grep -q -- '--topology' "$q/run-guest.sh"; then set -- --topology proof; else set -- --nvme 2; fi
fi
# The debug kernel (KASAN, lockdep, kmemleak, DMA-API debugging) is much slower under TCG:
# /init's default 300 s per test is not enough (at load 12, with acpi=noirq, 20-rnvme-basic took
# 620 s and 50-rnvme-passthru 569 s; before run-guest.sh passed acpi=noirq every probe also
# spent 30 s in ACPI), and ten load/unload cycles re-probing four controllers would add about
# 20 minutes. Debug runs get 2000 s per test, two cycles and a 5400 s guest bound (a later -t
# wins).
# The normal kernel's boot runs eight tests (about 6 minutes idle, 14 at load 5-14; it hit
# run-guest.sh's default 900 s at load 17, and 20-rnvme-basic's ten reload cycles /init's
# 300 s per test): a 2400 s guest bound and 900 s per test.
if [[ "$variant" == debug ]]; then
    set -- -t 5400 --append "rnvme_test_timeout=2000 rnvme_reload_cycles=2" "$@"
else
    set -- -t 2400 --append rnvme_test_timeout=900 "$@"
fi

stage "build rnvme.ko ($variant)"
driver_initramfs_args "$variant"
stage_end

img=$("$q/mkinitramfs.sh" -k "$variant" --no-default-tests "${DRIVER_ARGS[@]}" \
    -o "$RNVME_WORK/initramfs/rnvme-driver-$variant.cpio")
mkdir -p "$RNVME_WORK/logs"
logf="$RNVME_WORK/logs/rnvme-driver-$variant-$(date +%Y%m%d-%H%M%S).log"
rc=0
"$q/run-guest.sh" -k "$variant" -i "$img" -l "$logf" "$@" || rc=$?
grep -aE '^(PASS|FAIL): ' "$logf" | tr -d '\r' | sed 's/^/  /' >&2 || true
if ((rc == 0)); then
    log "rnvme driver test ($variant): PASS (log $logf)"
else
    log "rnvme driver test ($variant): FAIL, run-guest.sh exit $rc (log $logf)"
fi

# short_boot NAME WHAT TEST [--add SRC:DEST ...] -- [run-guest.sh options]: one more short boot
# of guest test TEST with rnvme.ko; its log is rnvme-NAME-<variant>-<time>.log, its summary lines
# those starting `rnvme-NAME: `. Returns run-guest.sh's exit status.
short_boot() {
    local name="$1" what="$2" test="$3" adds=() opts=() r=0
    shift 3
    while (($#)) && [[ "$1" != -- ]]; do adds+=("$1"); shift; done
    (($#)) && shift
    opts=("$@")
    [[ "$variant" == debug ]] && opts+=(-t 3600 --append "rnvme_test_timeout=2000")
    local img logb
    img=$("$q/mkinitramfs.sh" -k "$variant" --no-default-tests \
        --add "$DRIVER_KO:/lib/modules/extra/rnvme.ko" "${adds[@]}" \
        --test "$RNVME_REPO/tests/qemu/guest-tests/$test" \
        -o "$RNVME_WORK/initramfs/rnvme-$name-$variant.cpio")
    logb="$RNVME_WORK/logs/rnvme-$name-$variant-$(date +%Y%m%d-%H%M%S).log"
    "$q/run-guest.sh" -k "$variant" -i "$img" -l "$logb" "${opts[@]}" || r=$?
    grep -aE "^(PASS|FAIL): |^rnvme-$name: " "$logb" | tr -d '\r' | sed 's/^/  /' >&2 || true
    if ((r == 0)); then
        log "rnvme $what test ($variant): PASS (log $logb)"
    else
        log "rnvme $what test ($variant): FAIL, run-guest.sh exit $r (log $logb)"
    fi
    return "$r"
}

# Chained PRP lists: their own controller (QEMU mdts=10) in a second, short boot.
rc2=0
if [[ "${RNVME_DRIVER_CHAIN:-1}" == 1 ]]; then
    contig=$(guest_helper contig-dio) || exit 1
    short_boot chain "chained PRP list" 25-rnvme-chain.sh --add "$contig:/usr/bin/contig-dio" \
        -- --topology chain || rc2=$?
fi
# Behind an emulated IOMMU (every bus address a real IOVA; multi-segment requests mapped by one
# dma_map_sg call): the chain controller again, in a third short boot.
rc3=0
if [[ "${RNVME_DRIVER_IOMMU:-1}" == 1 ]]; then
    scatter=$(guest_helper scatter-pt) || exit 1
    short_boot iommu IOMMU 26-rnvme-iommu.sh --add "$scatter:/usr/bin/scatter-pt" \
        -- --topology chain --iommu || rc3=$?
fi
((rc == 0 && rc2 == 0 && rc3 == 0)) || die "rnvme driver tests ($variant): FAIL"
