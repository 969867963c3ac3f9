#!/usr/bin/env bash
# Boot the test kernel in QEMU with emulated NVMe controller(s) and run the
# guest tests in the initramfs. Exit 0 iff the guest reported success and the
# console log is clean.
#
#   tests/qemu/run-guest.sh [options] [-- extra qemu args]
#     -k, --kernel VARIANT   normal|debug (default normal)
#     -i, --initramfs FILE   initramfs (default: build one with mkinitramfs.sh for VARIANT)
#     -n, --nvme N           number of NVMe controllers (default 1), each on its own raw image
#         --nvme-size SIZE   image size (default 256M)
#         --smp N            CPUs (default 2)
#     -m, --mem SIZE         RAM (default 2G)
#     -t, --timeout SECS     hard host-side timeout (default 900, 2400 for debug)
#     -l, --log FILE         console log (default $RNVME_CACHE/logs/guest-<variant>-<time>.log)
#         --append ARGS      extra kernel command line, e.g. 'rnvme_tests=10-*,30-*'
# Env: RNVME_KVM=1 to try KVM (-cpu $RNVME_KVM_CPU, default max); falls back to TCG if a
#      paused probe VM fails (on the CI machines KVM is broken: -cpu max/host abort on an
#      MSR write, -cpu kvm64 passes the probe but hangs, so the default stays TCG).
# Exit codes: 0 pass, 1 guest/test failure or dirty log, 2 timeout, 3 usage/setup error.
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/lib.sh"

variant=normal
initramfs=""
nvme=1
nvme_size=256M
smp=2
mem=2G
timeout_s=""
logf=""
append=""
qemu_extra=()
while (($#)); do
    case "$1" in
        -k|--kernel) variant="$2"; shift 2 ;;
        -i|--initramfs) initramfs="$2"; shift 2 ;;
        -n|--nvme) nvme="$2"; shift 2 ;;
        --nvme-size) nvme_size="$2"; shift 2 ;;
        --smp) smp="$2"; shift 2 ;;
        -m|--mem) mem="$2"; shift 2 ;;
        -t|--timeout) timeout_s="$2"; shift 2 ;;
        -l|--log) logf="$2"; shift 2 ;;
        --append) append="$2"; shift 2 ;;
        --) shift; qemu_extra=("$@"); break ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "unknown argument '$1'" >&2; exit 3 ;;
    esac
done
need_cmd qemu-system-x86_64 timeout
if [[ -z "$timeout_s" ]]; then
    if [[ "$variant" == debug ]]; then timeout_s=2400; else timeout_s=900; fi
fi
bzimage=$("$RNVME_REPO/scripts/kernel-path.sh" "$variant" bzImage)
if [[ -z "$initramfs" ]]; then
    initramfs=$("$here/mkinitramfs.sh" -k "$variant")
fi
[[ -f "$initramfs" ]] || die "initramfs not found: $initramfs"

stage "prepare guest ($variant)"
workdir=$(mktemp -d "${TMPDIR:-/tmp}/rnvme-guest.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
mkdir -p "$RNVME_CACHE/logs"
# Keep the newest 100 default-named console logs.
# Keep the newest 99 console logs. (No glob match on a fresh cache: nothing to prune, and the
# failing `ls` must not end the run under pipefail.)
shopt -s nullglob
old_logs=("$RNVME_CACHE"/logs/guest-*.log)
shopt -u nullglob
if ((${#old_logs[@]} > 99)); then
    ls -1t "${old_logs[@]}" | tail -n +100 | xargs -r rm -f
fi
logf="${logf:-$RNVME_CACHE/logs/guest-$variant-$(date +%Y%m%d-%H%M%S)-$$.log}"
mkdir -p "$(dirname "$logf")"

accel=(-accel tcg)
if [[ "${RNVME_KVM:-0}" == 1 ]]; then
    # Probe: a KVM VM that starts paused (-S) keeps running until the timeout (rc 124).
    kvm_rc=0
    if [[ -r /dev/kvm && -w /dev/kvm ]]; then
        timeout 5 qemu-system-x86_64 -accel kvm -cpu "${RNVME_KVM_CPU:-max}" -M pc -display none \
            -nodefaults -monitor none -S \
            </dev/null >/dev/null 2>&1 || kvm_rc=$?
    fi
    if [[ "$kvm_rc" == 124 ]]; then
        accel=(-accel kvm -cpu "${RNVME_KVM_CPU:-max}")
        log "using KVM (-cpu ${RNVME_KVM_CPU:-max})"
    else
        warn "RNVME_KVM=1 but KVM is not usable here; using TCG"
    fi
fi

devs=()
for ((i = 0; i < nvme; i++)); do
    img="$workdir/nvme$i.img"
    truncate -s "$nvme_size" "$img"
    devs+=(-drive "file=$img,if=none,id=nvm$i,format=raw,cache=unsafe"
           -device "nvme,serial=rnvme$i,drive=nvm$i")
done

cmdline="console=ttyS0 panic=-1 oops=panic loglevel=6 rdinit=/init $append"
qemu=(qemu-system-x86_64 "${accel[@]}" -smp "$smp" -m "$mem"
      -nographic -no-reboot -nodefaults -serial stdio -monitor none
      -kernel "$bzimage" -initrd "$initramfs" -append "$cmdline"
      -device isa-debug-exit,iobase=0xf4,iosize=0x04
      -device pvpanic -action panic=exit-failure
      "${devs[@]}" "${qemu_extra[@]}")
log "log: $logf"
log "qemu: ${qemu[*]}"

stage "boot + guest tests ($variant)"
set +e
timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | tee "$logf"
rc=${PIPESTATUS[0]}
set -e
stage_end

# ---- verdict -------------------------------------------------------------------
verdict=pass
reasons=()
case "$rc" in
    33) ;;                                   # guest wrote 0x10 to isa-debug-exit
    35) verdict=fail; reasons+=("guest reported failure") ;;
    124|137) verdict=timeout; reasons+=("timed out after ${timeout_s}s") ;;
    *) verdict=fail; reasons+=("qemu exited $rc (kernel panic/reboot/crash?)") ;;
esac
summary=$(grep -aE '^guest: [0-9]+ passed, [0-9]+ failed' "$logf" | tail -n1 | tr -d '\r' || true)
if [[ -z "$summary" ]]; then
    [[ "$verdict" == pass ]] && verdict=fail
    reasons+=("no guest summary line")
elif ! [[ "$summary" =~ ^guest:\ [1-9][0-9]*\ passed,\ 0\ failed ]]; then
    [[ "$verdict" == pass ]] && verdict=fail
    reasons+=("$summary")
fi
# Kernel-side problems (KASAN, lockdep, kmemleak, WARN/BUG, panic) fail the run.
bad_re='BUG: |WARNING: |Oops|Kernel panic|KASAN|possible circular locking|possible recursive locking|inconsistent lock state|sleeping function called from invalid context|unreferenced object|UBSAN'
if grep -aE "$bad_re" "$logf" > "$workdir/bad"; then
    [[ "$verdict" == pass ]] && verdict=fail
    reasons+=("kernel log: $(head -n1 "$workdir/bad" | tr -d '\r')")
fi
grep -aE '^FAIL: ' "$logf" | tr -d '\r' | sed 's/^/  /' >&2 || true
finish
if [[ "$verdict" == pass ]]; then
    log "RESULT: PASS ($variant) -- ${summary}"
    exit 0
fi
log "RESULT: ${verdict^^} ($variant) -- $(IFS=';'; echo "${reasons[*]}")"
log "console log: $logf"
[[ "$verdict" == timeout ]] && exit 2
exit 1
exit
}
