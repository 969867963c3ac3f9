#!/bin/sh
# Helpers of the rnvme fault tests (guest-tests/7[0-5]-*.sh), installed as /lib/rnvme/faults.sh
# and sourced after /lib/rnvme/lib.sh. Issue #10: faults under fio load end in clean errors, no
# hang, no leak.
#
#   fault_setup              load rnvme.ko, bind the first controller to it (every other one
#                            parked), wait for its disk; sets CTRL (PCI address), SERIAL, DISK
#   fault_fio NAME SECS ARGS background fio on /dev/$DISK, O_DIRECT, for SECS seconds (time_based;
#                            0: until its job is done); sets FIO_PID
#   fault_fio_started        waits (bounded, 120 s) until the disk has completed I/O since fault_fio:
#                            fio (slow to start under TCG) really has it open; fails otherwise
#   fault_fio_wait           waits for it (bounded: runtime + 60 s, else FAIL and kill); sets
#                            FIO_ERRORS (I/O errors fio counted) and FIO_RC
#   qmp 'VERB [ARGS]' [SECS] print a monitor request for the host (run-guest.sh --monitor,
#                            tests/qemu/qmp-watch.py) until CHECK (a shell command in the
#                            environment) succeeds or SECS pass; returns CHECK's status (without
#                            CHECK: 2 s, then success)
#   leak_scan                kmemleak scan (twice, 5 s apart: objects younger than 5 s are not
#                            reported) where the kernel has kmemleak; sets LEAKS (count) or "n/a"
#   bounded SECS CMD...      runs CMD in the background and returns its status, or 124 if it still
#                            runs after SECS, having printed (`stuck:` lines) its state and wait
#                            channel and those of every task in uninterruptible sleep, with their
#                            kernel stacks where the kernel has /proc/PID/stack
#   fault_replug NAME [MAY]  plugs the unplugged controller in again (`device_add`), waits for
#                            rnvme to probe it and runs a fio verify on its disk (sets DISK);
#                            PASS/FAIL lines fault-NAME-device-back, -reprobed, -verify-after.
#                            MAY=qemu-may-refuse: a device that never reappears (QEMU refused
#                            the device_add: see the host's .qmp log) is reported, not failed
#   fault_result NAME ERRORS one line: `fault-NAME: survived, N I/O errors seen, 0 leaks` and PASS,
#                            or FAIL with the reason (leaks, or a failed check before it); on a
#                            kernel without kmemleak the line says `leaks not scanned`
# Kernel command line knob: rnvme_fault_secs=N (fio runtime under each fault, default 4).

ko=/lib/modules/extra/rnvme.ko
FAULT_SECS="${rnvme_fault_secs:-4}"
# The debug kernel (it has kmemleak) runs the same checks on less data: I/O there is ~10x slower
# under TCG. VMB: MiB of each fio write + verify run.
if [ -e /sys/kernel/debug/kmemleak ]; then DEBUG_KERNEL=1 VMB=2; else DEBUG_KERNEL=0 VMB=8; fi
# Seconds to wait for disks after a (re)load or (re)plug: the debug kernel spends tens of seconds
# in ACPI evaluation per device under TCG.
WAIT_S=90
FAULT_FAILED=0
_qmp_seq_file=/tmp/qmp-seq

ffail() { fail "$@"; FAULT_FAILED=1; }

fault_setup() {
    if [ ! -f "$ko" ]; then ffail "fault-setup ($ko missing)"; return 1; fi
    CTRL=$(nvme_pci_list | head -n1)
    [ -n "$CTRL" ] || { ffail "fault-setup (no NVMe controller)"; return 1; }
    SERIAL=$(nvme_serial "$CTRL")
    for _b in $(nvme_pci_list); do [ "$_b" = "$CTRL" ] || nvme_park "$_b"; done
    kmod_loaded rnvme || insmod "$ko" || { ffail "fault-setup (insmod)"; return 1; }
    nvme_bind "$CTRL" rnvme "$WAIT_S" || { ffail "fault-setup (bind $CTRL)"; return 1; }
    DISK=$(nvme_wait_disks "$CTRL" 1 "$WAIT_S" | cut -d' ' -f1) ||
        { ffail "fault-setup (no disk on $CTRL)"; return 1; }
    [ -n "$DISK" ] || { ffail "fault-setup (no disk on $CTRL)"; return 1; }
    echo "fault-setup: $CTRL ($SERIAL) -> $DISK"
}

# _fio_errors FILE: failed I/Os fio reported: "errors : total=N" (continue_on_error) or one
# "io_u error" line each; at least 1 if a job ended with an error (err=N).
_fio_errors() {
    _e=$(sed -n 's/.*errors *: total=\([0-9]*\).*/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }')
    _u=$(grep -c 'io_u error on file' "$1")
    [ "$_u" -gt "$_e" ] && _e=$_u
    if [ "$_e" = 0 ] && grep -qE 'err= *[1-9]' "$1"; then _e=1; fi
    echo "$_e"
}

fault_fio() {
    _fname="$1"; _secs="$2"; shift 2
    FIO_OUT=/tmp/fio-fault.$_fname
    echo "--- fio $_fname ($_secs s): $*"
    # allow_file_create=0: without the disk node fio must fail, not write a file in /dev.
    FIO_IOS0=$(_disk_ios)
    if [ "$_secs" = 0 ]; then
        fio --name="$_fname" --filename=/dev/$DISK --allow_file_create=0 --direct=1 "$@" \
            > "$FIO_OUT" 2>&1 &
        FIO_PID=$!
        FIO_SECS=120
    else
        fio --name="$_fname" --filename=/dev/$DISK --allow_file_create=0 --direct=1 \
            --time_based --runtime="$_secs" "$@" > "$FIO_OUT" 2>&1 &
        FIO_PID=$!
        FIO_SECS=$_secs
    fi
}

# _disk_ios: reads + writes completed on $DISK (0 if it is gone).
_disk_ios() { awk '{ print $1 + $5 }' /sys/block/$DISK/stat 2>/dev/null || echo 0; }

fault_fio_started() {
    _i=0
    while [ "$(_disk_ios)" -le "$FIO_IOS0" ]; do
        _i=$((_i + 1))
        if [ "$_i" -ge 1200 ] || ! kill -0 "$FIO_PID" 2>/dev/null; then
            ffail "fault-fio-started (no I/O completed on $DISK since fio started)"
            return 1
        fi
        sleep 0.1
    done
}

fault_fio_wait() {
    _i=0
    while kill -0 "$FIO_PID" 2>/dev/null; do
        _i=$((_i + 1))
        if [ "$_i" -gt $(( (FIO_SECS + 60) * 10 )) ]; then
            ffail "fault-fio-hang (fio still running $((FIO_SECS + 60)) s after start)"
            kill -9 "$FIO_PID" 2>/dev/null
            break
        fi
        sleep 0.1
    done
    wait "$FIO_PID"
    FIO_RC=$?
    grep -E 'err=|errors *:|^fio: |[Vv]erify|IOPS=' "$FIO_OUT" | head -n 20
    FIO_ERRORS=$(_fio_errors "$FIO_OUT")
    echo "fio exit $FIO_RC, $FIO_ERRORS I/O errors"
}

qmp() {
    _req="$1"; _secs="${2:-30}"
    _seq=$(( $(cat "$_qmp_seq_file" 2>/dev/null || echo 0) + 1 ))
    echo "$_seq" > "$_qmp_seq_file"
    _i=0
    while :; do
        # Printed again every 2 s: a console line garbled by kernel messages is not lost (the
        # watcher executes each SEQ once).
        if [ $((_i % 20)) = 0 ]; then echo "@@qmp $_seq $_req"; fi
        if [ -n "$CHECK" ]; then
            sh -c "$CHECK" 2>/dev/null && return 0
        elif [ "$_i" -ge 20 ]; then
            # Nothing to check in the guest: printed twice, 2 s for the watcher (it polls the
            # log every 0.1 s).
            return 0
        fi
        _i=$((_i + 1))
        [ "$_i" -ge $((_secs * 10)) ] && return 1
        sleep 0.1
    done
}

_stuck_report() {
    for _d in /proc/[0-9]*; do
        [ -r "$_d/status" ] || continue
        if [ "${_d#/proc/}" = "$1" ] || grep -q '^State:.*(disk sleep)' "$_d/status" 2>/dev/null; then
            echo "stuck: pid ${_d#/proc/} $(cat "$_d/comm" 2>/dev/null)" \
                "$(sed -n 's/^State:[[:space:]]*//p' "$_d/status" 2>/dev/null) wchan $(cat "$_d/wchan" 2>/dev/null)"
            [ -r "$_d/stack" ] && sed 's/^/stuck:   /' "$_d/stack" 2>/dev/null
        fi
    done
}

bounded() {
    _bsecs="$1"; shift
    "$@" &
    _bpid=$!
    _bend=$(( $(cut -d. -f1 /proc/uptime) + _bsecs ))
    while kill -0 "$_bpid" 2>/dev/null; do
        if [ "$(cut -d. -f1 /proc/uptime)" -ge "$_bend" ]; then
            _stuck_report "$_bpid"
            return 124
        fi
        sleep 0.1
    done
    wait "$_bpid"
}

leak_scan() {
    if [ ! -w /sys/kernel/debug/kmemleak ]; then LEAKS=n/a; return 0; fi
    _t0=$(cut -d. -f1 /proc/uptime)
    sleep 5
    echo scan > /sys/kernel/debug/kmemleak
    sleep 5
    echo scan > /sys/kernel/debug/kmemleak
    kmemleak_read /tmp/kmemleak.fault
    LEAKS=$(grep -c 'unreferenced object' /tmp/kmemleak.fault)
    # (Worded so that the harness's kernel-report patterns do not match this line.)
    echo "kmemleak scan: $LEAKS leak reports ($(( $(cut -d. -f1 /proc/uptime) - _t0 )) s)"
    if [ "$LEAKS" != 0 ]; then cat /tmp/kmemleak.fault; fi
    # Reported once: the next test (and /init's final scan) only see new leaks.
    echo clear > /sys/kernel/debug/kmemleak
}

fault_replug() {
    # A new device at the same address, no driver_override: rnvme (loaded, binds class
    # 0x010802) probes it.
    if CHECK="[ -e /sys/bus/pci/devices/$CTRL ]" qmp "device_add $SERIAL" "$WAIT_S"; then
        pass "fault-$1-device-back"
        if _d=$(nvme_wait_disks "$CTRL" 1 "$WAIT_S"); then
            DISK=$(echo $_d | cut -d' ' -f1)
            pass "fault-$1-reprobed ($(nvme_driver "$CTRL"), $DISK)"
            run_fio fault-$1-verify-after --filename=/dev/$DISK --allow_file_create=0 --direct=1 \
                --bs=4k --size=${VMB}M --ioengine=libaio --iodepth=8 --rw=randwrite \
                --verify=crc32c --do_verify=1 --verify_fatal=1 || FAULT_FAILED=1
        else
            ffail "fault-$1-reprobed (no disk on $CTRL, driver $(nvme_driver "$CTRL"))"
        fi
    elif [ "${2:-}" = qemu-may-refuse ]; then
        echo "fault-$1-device-back: /sys/bus/pci/devices/$CTRL absent after $WAIT_S s: QEMU did" \
            "not plug the controller in again (its reason is in the host's .qmp log)"
    else
        ffail "fault-$1-device-back (/sys/bus/pci/devices/$CTRL absent after $WAIT_S s)"
    fi
}

fault_result() {
    _n="$1"; _errs="$2"
    leak_scan
    _how=survived; [ "$FAULT_FAILED" = 0 ] || _how="FAILED (see FAIL lines)"
    if [ "$LEAKS" = n/a ]; then
        echo "fault-$_n: $_how, $_errs I/O errors seen, leaks not scanned (no kmemleak in this kernel)"
    else
        echo "fault-$_n: $_how, $_errs I/O errors seen, $LEAKS leaks"
    fi
    if [ "$LEAKS" != n/a ] && [ "$LEAKS" != 0 ]; then
        fail "fault-$_n ($LEAKS kmemleak reports)"
    elif [ "$FAULT_FAILED" != 0 ]; then
        fail "fault-$_n (a check above failed)"
    else
        pass "fault-$_n"
    fi
}
