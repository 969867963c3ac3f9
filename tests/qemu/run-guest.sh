#!/usr/bin/env bash
# Boot the test kernel in QEMU with emulated NVMe controller(s) and run the
# guest tests in the initramfs. Exit 0 iff the guest reported success and the
# console log is clean.
#
#   tests/qemu/run-guest.sh [options] [-- extra qemu args]
#     -k, --kernel VARIANT   normal|debug (default normal)
#     -i, --initramfs FILE   initramfs (default: build one with mkinitramfs.sh for VARIANT)
#     -n, --nvme N           number of plain NVMe controllers, one namespace each on its own raw
#                            image (default 1, or 0 when --ctrl/--topology is given)
#         --nvme-size SIZE   plain controllers' image size (default 256M)
#         --ctrl SPEC        add a controller (repeatable): serial=S[,ns=LBS:SIZE[+LBS:SIZE...]][,qpairs=N][,mdts=N][,hotplug=1]
#                            e.g. serial=rnvme-a,ns=512:384M+4096:256M  serial=rnvme-q,qpairs=1
#                            (default ns=512:64M; qpairs sets QEMU's max_ioqpairs, mdts its Maximum
#                            Data Transfer Size, 2^N pages, 0 = no limit; QEMU's default 7 = 512 KiB). Namespace k is
#                            -device nvme-ns nsid=k with that logical = physical block size.
#                            hotplug=1 (one namespace): the image is a -blockdev node and the
#                            controller's own drive, so --monitor can unplug and re-plug it.
#         --topology NAME    a named set of --ctrl (see the case below): proof, chain, faults
#         --keep-images DIR  after QEMU exits, move the images into DIR (host-side checks);
#                            names: nvme<i>.img (plain), <serial>-n<nsid>.img (--ctrl)
#         --reuse-images DIR use DIR/<serial>-n<nsid>.img (kept by an earlier run's --keep-images)
#                            for the --ctrl namespaces instead of new empty images; left in DIR
#         --monitor          QMP socket + host-side watcher (tests/qemu/qmp-watch.py) executing the
#                            requests guest tests print on the console: '@@qmp SEQ device_del S',
#                            '@@qmp SEQ device_add S' (hotplug=1 controllers only), '@@qmp SEQ quit'.
#                            A run the guest ends with quit passes with PASS lines, no FAIL line,
#                            a clean log (no summary line: the guest was killed).
#         --iommu            an emulated IOMMU: QEMU's q35 machine with -device intel-iommu (DMA
#                            remapping only) and intel_iommu=on for the guest, so every DMA mapping
#                            is a real IOVA mapping (default: the pc machine, no IOMMU)
#         --smp N            CPUs (default 2)
#         --tcg-single       one host thread runs every vCPU in turn (-accel tcg,thread=single)
#                            instead of one thread each: for a boot whose guest changes the
#                            physical memory map (a BAR switched off) while other vCPUs run, which
#                            QEMU 7.2's multi-threaded TCG can crash on (tests/qemu/README.md says
#                            why)
#     -m, --mem SIZE         RAM (default 2G)
#     -t, --timeout SECS     hard host-side timeout (default 900, 2400 for debug)
#     -l, --log FILE         console log (default $RNVME_WORK/logs/guest-<variant>-<time>.log)
#         --append ARGS      extra kernel command line, e.g. 'rnvme_tests=10-*,30-*' (repeatable)
# --ctrl controllers sit at fixed PCI addresses 0000:00:<0x10+k>.0; the guest learns them from
# `rnvme_ctrls=SERIAL/BDF/QPAIRS/LBSxBYTES[+LBSxBYTES...][,...]` on its command line (QPAIRS 0 =
# QEMU's default), which the guest library (guest/lib.sh: nvme_ctrls, nvme_bind) reads.
# Env: RNVME_KVM=1 to try KVM (-cpu $RNVME_KVM_CPU, default max); falls back to TCG if a
#      paused probe VM fails (on the CI machines KVM is broken: -cpu max/host abort on an
#      MSR write; -cpu kvm64 and -cpu host,-arch-capabilities pass the probe, but the kernel's
#      decompressor has not finished after 400 s, its RIP still moving (QEMU monitor), where
#      TCG boots the whole kernel in 3 s; so the default stays TCG).
#      RNVME_ICOUNT=N (TCG only) runs with `-icount shift=N`: the guest's clocks, TSC included,
#      count executed instructions (2^N ns each), so time the driver measures with the TSC
#      (e.g. its submit-path counters) is an instruction count, free of the host's load. One
#      vCPU thread for all CPUs: slow, for measuring code paths, not throughput.
#      RNVME_QEMU=PATH runs that QEMU binary instead of qemu-system-x86_64 from PATH (e.g. the
#      profiling build of scripts/build-qemu-debug.sh).
# Exit codes: 0 pass, 1 guest/test failure or dirty log, 2 timeout, 3 usage/setup error,
# 4 QEMU itself died of a signal (an emulator crash, whatever the guest did; the host kernel's
# segfault line is printed when dmesg can be read).
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/lib.sh"

variant=normal
initramfs=""
nvme=""
nvme_size=256M
ctrls=()
keep_images=""
reuse_images=""
monitor=0
iommu=0
tcg_single=0
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
        --ctrl) ctrls+=("$2"); shift 2 ;;
        --topology)
            case "$2" in
                # Issue 7's proof topology. rnvme-a: the integrity target, two namespaces of
                # different logical block sizes (each driver in turn); rnvme-b/-c: two identical
                # controllers for the side-by-side fio comparison; rnvme-q: grants one I/O queue.
                proof) ctrls+=("serial=rnvme-a,ns=512:384M+4096:256M" "serial=rnvme-b,ns=512:256M"
                               "serial=rnvme-c,ns=512:256M" "serial=rnvme-q,qpairs=1,ns=512:64M") ;;
                # Chained PRP lists (scripts/test-driver.sh's second boot, 25-rnvme-chain.sh):
                # rnvme-m, MDTS 10 (4 MiB; every proof controller has QEMU's default MDTS 7,
                # 512 KiB). Not more: QEMU's controller fails a command of more than 1024 PRP
                # entries (IOV_MAX mappings, hw/nvme/ctrl.c nvme_map_addr()), so with mdts=0 both
                # drivers' 8 MiB commands would fail there.
                chain) ctrls+=("serial=rnvme-m,mdts=10,ns=512:96M") ;;
                # Issue 10's fault tests: one controller that QMP can unplug and plug in again.
                faults) ctrls+=("serial=rnvme-f,ns=512:64M,hotplug=1") ;;
                *) echo "unknown topology '$2' (proof, chain, faults)" >&2; exit 3 ;;
            esac
            shift 2 ;;
        --keep-images) keep_images="$2"; shift 2 ;;
        --reuse-images) reuse_images="$2"; shift 2 ;;
        --monitor) monitor=1; shift ;;
        --iommu) iommu=1; shift ;;
        --smp) smp="$2"; shift 2 ;;
        --tcg-single) tcg_single=1; shift ;;
        -m|--mem) mem="$2"; shift 2 ;;
        -t|--timeout) timeout_s="$2"; shift 2 ;;
        -l|--log) logf="$2"; shift 2 ;;
        --append) append="${append:+$append }$2"; shift 2 ;;
        --) shift; qemu_extra=("$@"); break ;;
        -h|--help) sed -n '2,/^# Exit codes/p' "$0"; exit 0 ;;
        *) echo "unknown argument '$1'" >&2; exit 3 ;;
    esac
done
qemu_bin=${RNVME_QEMU:-qemu-system-x86_64}
need_cmd "$qemu_bin" timeout
if [[ -z "$nvme" ]]; then
    if ((${#ctrls[@]})); then nvme=0; else nvme=1; fi
fi
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
# On exit: keep the images if asked (moved, so sparse files stay sparse), then drop the workdir.
cleanup() {
    if [[ -n "$keep_images" ]]; then
        mkdir -p "$keep_images"
        find "$workdir" -maxdepth 1 -name '*.img' -exec mv -f {} "$keep_images/" \;
    fi
    rm -rf "$workdir"
}
trap cleanup EXIT
mkdir -p "$RNVME_WORK/logs"
# Keep the newest 100 default-named console logs.
# Keep the newest 99 console logs. (No glob match on a fresh cache: nothing to prune, and the
# failing `ls` must not end the run under pipefail.)
shopt -s nullglob
old_logs=("$RNVME_WORK"/logs/guest-*.log)
shopt -u nullglob
if ((${#old_logs[@]} > 99)); then
    ls -1t "${old_logs[@]}" | tail -n +100 | xargs -r rm -f
fi
logf="${logf:-$RNVME_WORK/logs/guest-$variant-$(date +%Y%m%d-%H%M%S)-$$.log}"
mkdir -p "$(dirname "$logf")"

accel=(-accel tcg)
((tcg_single)) && accel=(-accel tcg,thread=single)
if [[ -n "${RNVME_ICOUNT:-}" ]]; then
    [[ "$RNVME_ICOUNT" =~ ^[0-9]+$ ]] || die "RNVME_ICOUNT must be a shift (0-10), not '$RNVME_ICOUNT'"
    accel+=(-icount "shift=$RNVME_ICOUNT,sleep=off")
    log "icount: shift=$RNVME_ICOUNT (clocks count instructions)"
fi
if [[ "${RNVME_KVM:-0}" == 1 ]]; then
    # Probe: a KVM VM that starts paused (-S) keeps running until the timeout (rc 124).
    kvm_rc=0
    if [[ -r /dev/kvm && -w /dev/kvm ]]; then
        timeout 5 "$qemu_bin" -accel kvm -cpu "${RNVME_KVM_CPU:-max}" -M pc -display none \
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

# Images are raw files in the workdir; discard=unmap makes a guest discard punch a hole, so the
# discarded range reads back as zeroes (what the integrity test checks).
devs=()
for ((i = 0; i < nvme; i++)); do
    img="$workdir/nvme$i.img"
    truncate -s "$nvme_size" "$img"
    devs+=(-drive "file=$img,if=none,id=nvm$i,format=raw,cache=unsafe,discard=unmap"
           -device "nvme,serial=rnvme$i,drive=nvm$i")
done

# to_bytes SIZE: 64M / 1G / 4096 -> bytes.
to_bytes() {
    local v="$1" n
    n="${v%[KkMmGg]}"
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "bad size '$v'" >&2; exit 3; }
    case "$v" in
        *[Kk]) echo $((n << 10)) ;; *[Mm]) echo $((n << 20)) ;; *[Gg]) echo $((n << 30)) ;;
        *) echo "$n" ;;
    esac
}
ctrl_map=()
hotplug_json=()
for ((k = 0; k < ${#ctrls[@]}; k++)); do
    serial="" nslist="512:64M" qpairs=0 mdts="" hotplug=0
    IFS=, read -r -a kvs <<<"${ctrls[$k]}"
    for kv in "${kvs[@]}"; do
        case "$kv" in
            serial=*) serial="${kv#serial=}" ;;
            ns=*) nslist="${kv#ns=}" ;;
            qpairs=*) qpairs="${kv#qpairs=}" ;;
            mdts=*) mdts="${kv#mdts=}" ;;
            hotplug=1) hotplug=1 ;;
            *) echo "--ctrl ${ctrls[$k]}: unknown field '$kv'" >&2; exit 3 ;;
        esac
    done
    [[ "$serial" =~ ^[A-Za-z0-9-]+$ ]] || { echo "--ctrl ${ctrls[$k]}: serial=[A-Za-z0-9-]+ needed" >&2; exit 3; }
    [[ "$qpairs" =~ ^[0-9]+$ ]] || { echo "--ctrl ${ctrls[$k]}: bad qpairs" >&2; exit 3; }
    slot=$((0x10 + k))
    ((slot < 32)) || { echo "too many --ctrl (at most 16)" >&2; exit 3; }
    bdf=$(printf '0000:00:%02x.0' "$slot")
    addr=$(printf '0x%02x' "$slot")
    opts="nvme,id=ctrl$k,serial=$serial,addr=$addr"
    ((qpairs > 0)) && opts+=",max_ioqpairs=$qpairs"
    if [[ -n "$mdts" ]]; then
        [[ "$mdts" =~ ^[0-9]+$ ]] && ((mdts < 256)) || { echo "--ctrl ${ctrls[$k]}: bad mdts" >&2; exit 3; }
        opts+=",mdts=$mdts"
    fi
    IFS=+ read -r -a nss <<<"$nslist"
    ((hotplug == 0 || ${#nss[@]} == 1)) ||
        { echo "--ctrl ${ctrls[$k]}: hotplug=1 takes one namespace" >&2; exit 3; }
    nsid=0 nsmap="" nsdevs=()
    for ns in "${nss[@]}"; do
        nsid=$((nsid + 1))
        lbs="${ns%%:*}" size="${ns#*:}"
        [[ "$lbs" =~ ^(512|1024|2048|4096)$ && "$ns" == *:* ]] ||
            { echo "--ctrl ${ctrls[$k]}: namespace '$ns' is not LBS:SIZE (LBS 512..4096)" >&2; exit 3; }
        bytes=$(to_bytes "$size")
        if [[ -n "$reuse_images" ]]; then
            # An earlier run's image (--keep-images), used in place.
            img="$reuse_images/$serial-n$nsid.img"
            [[ -f "$img" && $(stat -c %s "$img") == "$bytes" ]] ||
                { echo "--reuse-images: $img missing or not $bytes bytes" >&2; exit 3; }
        else
            img="$workdir/$serial-n$nsid.img"
            truncate -s "$bytes" "$img"
        fi
        if ((hotplug)); then
            # A -blockdev node outlives the device that uses it (a -drive is deleted with its
            # device), so the controller can be plugged in again on the same image; it is the
            # controller's own drive (namespace 1), so one device_add brings everything back.
            # cache.no-flush + write-cache=on = the -drive's cache=unsafe.
            devs+=(-blockdev "driver=file,node-name=ctrl$k-f,filename=$img,discard=unmap,cache.no-flush=on"
                   -blockdev "driver=raw,node-name=ctrl$k-n1,file=ctrl$k-f,discard=unmap,cache.no-flush=on")
            opts+=",drive=ctrl$k-n1,logical_block_size=$lbs,physical_block_size=$lbs,write-cache=on"
            j="{\"driver\": \"nvme\", \"id\": \"ctrl$k\", \"serial\": \"$serial\", \"addr\": \"$addr\","
            j+=" \"drive\": \"ctrl$k-n1\", \"logical_block_size\": $lbs, \"physical_block_size\": $lbs,"
            j+=" \"write-cache\": \"on\""
            ((qpairs == 0)) || j+=", \"max_ioqpairs\": $qpairs"
            j+="}"
            hotplug_json+=("\"$serial\": $j")
        else
            devs_ns=(-drive "file=$img,if=none,id=ctrl$k-n$nsid,format=raw,cache=unsafe,discard=unmap"
                     -device "nvme-ns,bus=ctrl$k,drive=ctrl$k-n$nsid,nsid=$nsid,logical_block_size=$lbs,physical_block_size=$lbs")
            nsdevs+=("${devs_ns[@]}")
        fi
        nsmap+="${nsmap:++}${lbs}x$bytes"
    done
    devs+=(-device "$opts" "${nsdevs[@]}")
    ctrl_map+=("$serial/$bdf/$qpairs/$nsmap")
done
if ((${#ctrl_map[@]})); then
    append="rnvme_ctrls=$(IFS=,; echo "${ctrl_map[*]}") $append"
fi

# acpi=noirq: PCI INTx routing from the BIOS table instead of ACPICA's _PRT method, which
# pci_enable_device() evaluates in every probe: under TCG the debug kernel's AML interpreter hits
# its 30 s loop timeout there (AE_AML_LOOP_TIMEOUT, 11 times in one debug proof run: 5.5 of its
# 15.7 minutes), and under injected allocation failures it corrupts memory (tests/qemu/README.md,
# fault tests). MSI-X, which every controller here uses, and ACPI hotplug are unchanged.
machine=()
if ((iommu)); then
    # The IOMMU comes first, before the PCI devices it translates for. Interrupt remapping is off
    # (the kernels have no CONFIG_IRQ_REMAP); DMA remapping is what the benchmarks measure.
    machine=(-M q35 -device intel-iommu,intremap=off)
    append="intel_iommu=on $append"
fi
# rcupdate.rcu_cpu_stall_suppress_at_boot=1: no RCU stall warnings before the kernel starts /init
# (kernel/rcu/rcu.h rcu_stall_is_suppressed_at_boot(), ended by init/main.c kernel_init() through
# rcu_end_inkernel_boot()). On a loaded host a TCG vCPU can go unscheduled for minutes during the
# debug kernel's boot: one debug fault run logged 'rcu_sched kthread starved for 106578 jiffies'
# with its stack dump ('Call Trace:') at 443 s, still inside the in-kernel boot, where no code of
# this project runs (our modules load from /init). Stalls after that are still reported.
cmdline="console=ttyS0 panic=-1 oops=panic loglevel=6 rdinit=/init acpi=noirq"
cmdline+=" rcupdate.rcu_cpu_stall_suppress_at_boot=1 $append"
qemu=("$qemu_bin" "${accel[@]}" "${machine[@]}" -smp "$smp" -m "$mem"
      -nographic -no-reboot -nodefaults -serial stdio -monitor none
      -kernel "$bzimage" -initrd "$initramfs" -append "$cmdline"
      -device isa-debug-exit,iobase=0xf4,iosize=0x04
      -device pvpanic -action panic=exit-failure
      "${devs[@]}")
qmp_log=""
if ((monitor)); then
    # The monitor channel: a QMP socket in the workdir and a watcher that follows the console
    # log and executes the allow-listed requests guest tests print (tests/qemu/qmp-watch.py).
    need_cmd python3
    qemu+=(-qmp "unix:$workdir/qmp.sock,server=on,wait=off")
    printf '{%s}\n' "$(IFS=,; echo "${hotplug_json[*]}")" > "$workdir/hotplug.json"
    qmp_log="$logf.qmp"
    : > "$qmp_log"
fi
qemu+=("${qemu_extra[@]}")
log "log: $logf"
log "qemu: ${qemu[*]}"

# The host kernel's lines about QEMU processes that crashed (comm is cut to 15 characters).
host_crash_lines() {
    local comm="${qemu_bin##*/}"
    dmesg 2>/dev/null | grep -aF "${comm:0:15}[" | grep -aE 'segfault|trap' || true
}
host_crashes=$(host_crash_lines | wc -l)

stage "boot + guest tests ($variant)"
: > "$logf"
watcher=""
if ((monitor)); then
    python3 "$here/qmp-watch.py" --console "$logf" --qmp "$workdir/qmp.sock" \
        --devices "$workdir/hotplug.json" --pid $$ --log "$qmp_log" &
    watcher=$!
fi
set +e
timeout -k 10 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | tee "$logf"
rc=${PIPESTATUS[0]}
set -e
if [[ -n "$watcher" ]]; then
    # Let it read the end of the log, then stop it.
    sleep 1
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    log "monitor requests ($qmp_log):"
    sed 's/^/  qmp: /' "$qmp_log" >&2
fi
stage_end

# ---- verdict -------------------------------------------------------------------
verdict=pass
reasons=()
# A guest test that asked for QMP quit (a kill without shutdown) ends the run with QEMU's exit 0
# and no summary line: then its PASS lines (at least one) and FAIL lines (none) decide.
quit_by_guest=0
if [[ -n "$qmp_log" ]] && grep -qE '#[0-9]+ quit ' "$qmp_log"; then quit_by_guest=1; fi
case "$rc" in
    33) ;;                                   # guest wrote 0x10 to isa-debug-exit
    0) if ((quit_by_guest)); then :; else verdict=fail; reasons+=("qemu exited 0 without a quit request"); fi ;;
    35) verdict=fail; reasons+=("guest reported failure") ;;
    124|137) verdict=timeout; reasons+=("timed out after ${timeout_s}s") ;;
    132|134|135|136|139)
        verdict=qemu-crash
        reasons+=("QEMU itself died of signal $((rc - 128)): an emulator crash, not a guest panic")
        crash=$(host_crash_lines | tail -n +$((host_crashes + 1)) | tail -n1)
        [[ -z "$crash" ]] || reasons+=("host kernel: $crash") ;;
    *) verdict=fail; reasons+=("qemu exited $rc (kernel panic/reboot/crash?)") ;;
esac
summary=$(grep -aE '^guest: [0-9]+ passed, [0-9]+ failed' "$logf" | tail -n1 | tr -d '\r' || true)
if ((quit_by_guest)) && [[ -z "$summary" ]]; then
    np=$(grep -acE '^PASS: ' "$logf" || true)
    nf=$(grep -acE '^FAIL: ' "$logf" || true)
    summary="guest ended by QMP quit: $np passed, $nf failed"
    if ((np == 0 || nf > 0)); then
        [[ "$verdict" == pass ]] && verdict=fail
        reasons+=("$summary")
    fi
elif [[ -z "$summary" ]]; then
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
[[ "$verdict" == qemu-crash ]] && exit 4
exit 1
exit
}
