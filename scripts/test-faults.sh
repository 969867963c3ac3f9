#!/usr/bin/env bash
# Issue #10: rnvme.ko under faults, in two QEMU boots on one image (tests/qemu/run-guest.sh
# --topology faults: one controller the QEMU monitor can unplug and plug in again).
#
#   scripts/test-faults.sh [normal|debug] [run-guest.sh options for both boots, e.g.
#                                          --append 'rnvme_tests=74-*,75-*,76-*']
#
# Boot 1 (--monitor: guest tests ask the host for QMP commands on the console, --keep-images):
#   70-fault-removal       device_del under fio, device_add, reprobe + verify
#   71-fault-timeout       fail_io_timeout under fio verify, I/O afterwards
#   72-fault-timeout-real  real timeouts (image throttled by QMP): abort + controller reset, I/O
#                          afterwards (RNVME_FAULTS_RESET=0 leaves it out: for a driver
#                          without the controller reset, whose io-after check then fails)
#   73-fault-alloc         failslab / fail_page_alloc during probe (budget sweep) and during I/O
#                          (its I/O phase can turn the debug kernel's DMA-API debugging off for
#                          the rest of the boot, see the test)
#   74-fault-unload        rmmod refused while open / under fio, succeeds after close, 3 rounds
#   75-ack-write           FUA and flush writes acknowledged on the console, then QMP quit
# Each fault test prints `fault-<name>: survived, <n> I/O errors seen, <k> leaks` (kmemleak scan
# on the debug kernel; the normal kernel has none and says so).
# Boot 2 (--reuse-images: the same image, --monitor):
#   76-ack-check           reads back every acknowledged block
#                          (`ack-survive: N acknowledged blocks checked, 0 lost`)
#   77-fault-surprise      the controller's PCI enables cleared under fio (it vanishes without
#                          notice), then device_del and device_add; last, because QEMU does not
#                          always plug that controller in again (see the test)
# Boot 2 runs its vCPUs on one host thread (run-guest.sh --tcg-single): 77 switches the BAR off
# under load, which QEMU 7.2's multi-threaded TCG can crash on (the race, and
# scripts/qemu-mttcg-race.sh that reproduces it: tests/qemu/README.md, run-guest.sh's options).
# Both boots use acpi=noirq (run-guest.sh adds it to every guest): ACPICA's _PRT evaluation, run
# by pci_enable_device() in every probe, corrupts memory when an allocation fails inside it (a
# kernel bug outside rnvme, seen as a NULL dereference in free_to_partial_list under
# 73-fault-alloc); without it the IRQ routing comes from the BIOS table and the injected failures
# reach the driver's own code. MSI-X is unchanged.
# Exit 0 iff both boots pass (PASS lines, no FAIL, clean kernel log, no timeout).
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant=normal
if [[ "${1:-}" == normal || "${1:-}" == debug ]]; then variant="$1"; shift; fi
q="$RNVME_REPO/tests/qemu"
gt="$q/guest-tests"

stage "build rnvme.ko + ackwrite ($variant)"
ko=$("$RNVME_REPO/scripts/build-module.sh" "$variant" | grep '/rnvme\.ko$') ||
    die "rnvme.ko ($variant) did not build"
ackw=$(guest_helper ackwrite) || exit 1
stage_end

dir=$(mktemp -d "$RNVME_WORK/faults-$variant.XXXXXX")
trap 'rm -rf "$dir"' EXIT
run=$((RANDOM * 32768 + RANDOM + 1))
common=(--add "$ko:/lib/modules/extra/rnvme.ko" --add "$ackw:/usr/bin/ackwrite")
mkdir -p "$RNVME_WORK/logs"
stamp=$(date +%Y%m%d-%H%M%S)
log1="$RNVME_WORK/logs/rnvme-faults-$variant-$stamp-1.log"
log2="$RNVME_WORK/logs/rnvme-faults-$variant-$stamp-2.log"
# Per-test timeout 900 s (the guest's default is 300): a debug-kernel probe spends tens of
# seconds in the kernel under TCG, and 73-fault-alloc probes several times.
# 1 GiB of guest memory: kmemleak's scans (debug kernel, after every fault) walk every page's
# struct page, so their time grows with the guest's memory (the default is 2 GiB).
# no_timer_check: on a loaded host the kernel's early IO-APIC timer check can fail under TCG and
# panic ("IO-APIC + timer doesn't work!", seen at load 20).
guest=(-k "$variant" --topology faults -m 1G --append no_timer_check
       --append "rnvme_ack_run=$run"
       --append rnvme_test_timeout=900 "$@")

tests1=(--test "$gt/70-fault-removal.sh" --test "$gt/71-fault-timeout.sh")
if [[ "${RNVME_FAULTS_RESET:-1}" == 1 ]]; then tests1+=(--test "$gt/72-fault-timeout-real.sh"); fi
tests1+=(--test "$gt/73-fault-alloc.sh" --test "$gt/74-fault-unload.sh" --test "$gt/75-ack-write.sh")
img1=$("$q/mkinitramfs.sh" -k "$variant" --no-default-tests "${common[@]}" "${tests1[@]}" \
    -o "$RNVME_WORK/initramfs/rnvme-faults-$variant-1.cpio")
rc1=0
"$q/run-guest.sh" "${guest[@]}" -i "$img1" -l "$log1" --monitor --keep-images "$dir" || rc1=$?

# The newest acknowledged generation of each block, from the console of boot 1.
tr -d '\r' < "$log1" | sed -n 's/^ack-write: block=\([0-9]*\) gen=\([0-9]*\)$/\1 \2/p' |
    awk '{ if ($2 > g[$1]) g[$1] = $2 } END { for (b in g) print b, g[b] }' | sort -n > "$dir/acked"
log "boot 1: $(wc -l < "$dir/acked") blocks with acknowledged writes"

rc2="not run"
if ((rc1 == 0)); then
    rc2=0
    img2=$("$q/mkinitramfs.sh" -k "$variant" --no-default-tests "${common[@]}" \
        --add "$dir/acked:/lib/rnvme/acked" --test "$gt/76-ack-check.sh" \
        --test "$gt/77-fault-surprise.sh" -o "$RNVME_WORK/initramfs/rnvme-faults-$variant-2.cpio")
    # 77-fault-surprise last: its controller may not come back (the test says why).
    # --tcg-single: see the header.
    "$q/run-guest.sh" "${guest[@]}" -i "$img2" -l "$log2" --monitor --reuse-images "$dir" \
        --tcg-single || rc2=$?
fi

grep -ahE '^(fault-[a-z]+: |ack-survive: |FAIL: )' "$log1" ${log2:+"$log2"} 2>/dev/null |
    tr -d '\r' | sed 's/^/  /' >&2 || true
if [[ "$rc1" == 0 && "$rc2" == 0 ]]; then
    log "rnvme fault tests ($variant): PASS (logs $log1 $log2)"
else
    die "rnvme fault tests ($variant): FAIL, boot 1 exit $rc1, boot 2 exit $rc2 (logs $log1 $log2)"
fi
exit
}
