#!/usr/bin/env bash
# Reproduces the QEMU 7.2 crash that scripts/test-faults.sh avoids with run-guest.sh --tcg-single,
# and shows that the option avoids it. No driver is involved: in each boot (normal kernel, the
# faults topology's one controller, no driver bound) tests/qemu/guest-tests/mmio-race.c reads the
# local APIC from user space on CPU 1 while CPU 0 switches the controller's Memory Space enable
# off and on (98-mttcg-race.sh). Boots alternate between one host thread per vCPU (QEMU's
# default) and one thread for all (--tcg-single); a boot in which QEMU died of a signal
# (run-guest.sh exit 4) counts as a crash.
#
#   scripts/qemu-mttcg-race.sh [--runs N] [--toggles T]     (defaults 4 and 50000)
#
# Prints `qemu-mttcg-race: <mode>: C of N boots crashed QEMU` for both modes. Exit 0 iff no boot
# with --tcg-single crashed and every boot ended either in a pass or in a QEMU crash. Seen on
# 2026-11-30 (QEMU 7.2.22, Debian 12, 2 host CPUs): per-vCPU threads 6 of 6 crashed, each
# before 2000 toggles; one thread 0 of 6 in 50000 toggles each. The crash is a segfault in
# memory_region_dispatch_read() with a NULL region: softmmu/physmem.c tcg_commit() points every
# vCPU at the new dispatch table at once but flushes another vCPU's TLB only later, so a read
# through a stale entry looks its old section index up in the new table.
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=4
toggles=50000
while (($#)); do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --toggles) toggles="$2"; shift 2 ;;
        *) die "unknown argument '$1' (--runs N, --toggles T)" ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ && "$toggles" =~ ^[1-9][0-9]*$ ]] ||
    die "--runs and --toggles take N > 0"

q="$RNVME_REPO/tests/qemu"
helper=$(guest_helper mmio-race) || exit 1
img=$("$q/mkinitramfs.sh" -k normal --no-default-tests --add "$helper:/usr/bin/mmio-race" \
    --test "$q/guest-tests/98-mttcg-race.sh" -o "$RNVME_WORK/initramfs/mttcg-race.cpio")
mkdir -p "$RNVME_WORK/logs"
declare -A crashed=([per-vcpu]=0 [single]=0)
other=0
for ((i = 1; i <= runs; i++)); do
    for mode in per-vcpu single; do
        opt=()
        [[ "$mode" == single ]] && opt=(--tcg-single)
        logf="$RNVME_WORK/logs/mttcg-race-$mode-$(date +%Y%m%d-%H%M%S)-$i.log"
        rc=0
        "$q/run-guest.sh" -k normal --topology faults -m 1G --append no_timer_check \
            --append "rnvme_race_toggles=$toggles" -i "$img" -l "$logf" "${opt[@]}" \
            >"$logf.host" 2>&1 || rc=$?
        case "$rc" in
            0) what="survived $toggles toggles" ;;
            4) line=$(grep -a 'host kernel:' "$logf.host" | tail -n1 || true)
               line=${line#*host kernel: }
               what="QEMU crashed: ${line%%;*}"
               crashed[$mode]=$((crashed[$mode] + 1)) ;;
            *) what="failed otherwise (run-guest.sh exit $rc, $logf.host)"; other=$((other + 1)) ;;
        esac
        progress=$(tr -d '\r' < "$logf" | grep -a '^mmio-race: [0-9]* toggles' | tail -n1 || true)
        log "boot $i, $mode: $what${progress:+ (last: ${progress#mmio-race: })}"
    done
done
for mode in per-vcpu single; do
    echo "qemu-mttcg-race: $mode: ${crashed[$mode]} of $runs boots crashed QEMU"
done
((crashed[single] == 0 && other == 0))
exit
}
