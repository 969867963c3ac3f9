#!/usr/bin/env bash
# Reproduces the QEMU 7.2 crash that rnvme avoids by deleting its I/O queues before a reset
# disables the controller (rnvme/driver/delete_queues.rs), and shows that the deletion avoids it.
# In each boot (normal kernel, the faults topology's one controller bound to rnvme)
# tests/qemu/guest-tests/99-reset-race.sh lets R Asynchronous Event Requests time out while fio
# writes on the disk; each timeout disables and resets the controller. Boots alternate between
# rnvme.ko delete_queues_before_disable=0 (disable at once) and =1 (the default); a boot in which
# QEMU died of a signal (run-guest.sh exit 4) counts as a crash.
#
#   scripts/qemu-nvme-reset-race.sh [--runs N] [--rounds R]     (defaults 4 and 20)
#
# Prints `qemu-nvme-reset-race: delete_queues_before_disable=<0|1>: C of N boots crashed QEMU`.
# Exit 0 iff no boot with =1 crashed and every boot ended either in a pass or in a QEMU crash.
# The crash is a segfault in nvme_rw_complete_cb() (hw/nvme/ctrl.c): nvme_ctrl_reset() drains
# the namespaces, the drain runs the submission queues' pending bottom halves, which fetch more
# commands; the drained block backend holds their I/O, restarts it when the drain ends, and it
# completes after nvme_free_sq() freed the request (tests/qemu/README.md).
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=4
rounds=20
while (($#)); do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        *) die "unknown argument '$1' (--runs N, --rounds R)" ;;
    esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
    die "--runs and --rounds take N > 0"

q="$RNVME_REPO/tests/qemu"
ko=$("$RNVME_REPO/scripts/build-module.sh" normal | grep '/rnvme\.ko$') ||
    die "rnvme.ko (normal) did not build"
img=$("$q/mkinitramfs.sh" -k normal --no-default-tests --add "$ko:/lib/modules/extra/rnvme.ko" \
    --test "$q/guest-tests/99-reset-race.sh" -o "$RNVME_WORK/initramfs/reset-race.cpio")
mkdir -p "$RNVME_WORK/logs"
declare -A crashed=([0]=0 [1]=0)
other=0
for ((i = 1; i <= runs; i++)); do
    for del in 0 1; do
        logf="$RNVME_WORK/logs/reset-race-$del-$(date +%Y%m%d-%H%M%S)-$i.log"
        rc=0
        "$q/run-guest.sh" -k normal --topology faults -m 1G --append no_timer_check \
            --append "rnvme_reset_race_delete=$del rnvme_reset_race_rounds=$rounds" \
            -i "$img" -l "$logf" >"$logf.host" 2>&1 || rc=$?
        case "$rc" in
            0) what="survived $rounds timeouts" ;;
            4) line=$(grep -a 'host kernel:' "$logf.host" | tail -n1 || true)
               line=${line#*host kernel: }
               what="QEMU crashed: ${line%%;*}"
               crashed[$del]=$((crashed[$del] + 1)) ;;
            *) what="failed otherwise (run-guest.sh exit $rc, $logf.host)"; other=$((other + 1)) ;;
        esac
        progress=$(tr -d '\r' < "$logf" | grep -a '^reset-race: round' | tail -n1 || true)
        log "boot $i, delete_queues_before_disable=$del: $what${progress:+ (last: ${progress#reset-race: })}"
    done
done
for del in 0 1; do
    echo "qemu-nvme-reset-race: delete_queues_before_disable=$del: ${crashed[$del]} of $runs boots crashed QEMU"
done
((crashed[1] == 0 && other == 0))
exit
}
