#!/bin/sh
# rnvme's NVMe generic character devices (issue 8): on --topology proof, the identical
# controllers rnvme-b (bound to rnvme) and rnvme-c (bound to the C nvme driver) are compared
# through nvme-cli (id-ctrl, id-ns, smart-log, get-feature print the same fields), then fio's
# io_uring_cmd engine (cmd_type=nvme, verify=crc32c, fixedbufs=0/1, QD1/QD32, 4K..128K) runs on
# both drivers' namespace devices, and bad commands (unknown opcode, wrong nsid, huge length,
# unprivileged caller) get the same errors from both while the device keeps working; a user
# command's data pointer takes the form the C driver gives it (an SGL on QEMU's controller).
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "passthru-ko-present ($ko missing)"; exit 1; }
command -v nvme >/dev/null || { fail "passthru-nvme-cli (nvme-cli not in the initramfs)"; exit 1; }
rb=$(nvme_bdf rnvme-b) && cb=$(nvme_bdf rnvme-c) ||
    { fail "passthru-topology (needs run-guest.sh --topology proof)"; exit 1; }

nvme_park "$rb"
kmod_loaded rnvme || check passthru-load-rnvme insmod "$ko"
check passthru-bind-rnvme nvme_bind "$rb" rnvme
kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
check passthru-bind-nvme nvme_bind "$cb" nvme
rd=$(nvme_wait_disks "$rb" 1 20) || { fail "passthru-rnvme-disk"; exit 1; }
cd_=$(nvme_wait_disks "$cb" 1 20) || { fail "passthru-nvme-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
ci=$(echo "$cd_" | sed -n 's/^nvme\([0-9]*\)n1$/\1/p')
rctrl=/dev/rnvme$ri; rns=/dev/rng${ri}n1
cctrl=/dev/nvme$ci; cns=/dev/ng${ci}n1
echo "rnvme: $rd $rctrl $rns; nvme: $cd_ $cctrl $cns"
for dev in $rctrl $rns $cctrl $cns; do
    wait_for "$dev" 10 && test -c "$dev" && pass "passthru-chardev $dev" || fail "passthru-chardev $dev missing"
done
ls -l /dev/rnvme* /dev/rng* 2>&1 | sed 's/^/  /'

# ---- nvme-cli on both drivers' devices -----------------------------------------------------
# Fields that legitimately differ between the two controllers (serial, NQN with the serial)
# or between runs (counters, temperatures, timestamps) are left out of the value comparison;
# their names must still match.
volatile='^(sn|subnqn|eui64|nguid|uuid) |^(temperature|data_units_|host_read_|host_write_|controller_busy|power_cycles|power_on_hours|unsafe_shutdowns|Temperature Sensor|Thermal)'
compare() { # NAME CMD-ARGS-WITH-@DEV@ (run on rnvme's and the C driver's device)
    _n=$1; _r=$2; _c=$3; shift 3
    _ro=$(nvme "$@" "$_r" 2>&1); _rs=$?
    _co=$(nvme "$@" "$_c" 2>&1); _cs=$?
    echo "$_ro" | sed "s/^/  rnvme $_n: /" | head -40
    if [ "$_rs" != 0 ] || [ "$_cs" != 0 ]; then
        fail "passthru-cli-$_n (exit rnvme $_rs, nvme $_cs)"; echo "$_co" | sed 's/^/  nvme: /' | head; return
    fi
    _rk=$(echo "$_ro" | sed -n 's/^\([^:]*[^ :]\) *:.*/\1/p')
    _ck=$(echo "$_co" | sed -n 's/^\([^:]*[^ :]\) *:.*/\1/p')
    _rv=$(echo "$_ro" | grep -Ev "$volatile" | sed "s#$_r#DEV#g; s#${_r#/dev/}#DEV#g")
    _cv=$(echo "$_co" | grep -Ev "$volatile" | sed "s#$_c#DEV#g; s#${_c#/dev/}#DEV#g")
    if [ -n "$_rk" ] && [ "$_rk" = "$_ck" ] && [ "$_rv" = "$_cv" ]; then
        pass "passthru-cli-$_n ($(echo "$_rk" | wc -l) fields equal)"
    else
        fail "passthru-cli-$_n (outputs differ)"
        echo "$_rv" > /tmp/r.txt; echo "$_cv" > /tmp/c.txt; diff /tmp/c.txt /tmp/r.txt | head -20
    fi
}
compare id-ctrl "$rctrl" "$cctrl" id-ctrl
compare id-ctrl-ns "$rns" "$cns" id-ctrl
compare id-ns "$rns" "$cns" id-ns -n 1
compare smart-log "$rctrl" "$cctrl" smart-log
compare get-feature-arb "$rctrl" "$cctrl" get-feature -f 1 -H
compare get-feature-temp "$rctrl" "$cctrl" get-feature -f 4 -H
compare get-feature-vwc "$rns" "$cns" get-feature -f 6 -H
compare error-log "$rctrl" "$cctrl" error-log -e 4

# ---- ioctl I/O path: write then read back through NVME_IOCTL_IO64_CMD ------------------------
dd if=/dev/urandom of=/tmp/pt.w bs=8192 count=1 2>/dev/null
for dev in $rns $cns; do
    # 16 blocks of 512 B at LBA 0x1000 (cdw12 = NLB - 1).
    nvme io-passthru "$dev" -o 1 -n 1 -l 8192 -w -i /tmp/pt.w --cdw10=0x1000 --cdw12=15 >/dev/null 2>&1 &&
        nvme io-passthru "$dev" -o 2 -n 1 -l 8192 -r -b --cdw10=0x1000 --cdw12=15 > /tmp/pt.r 2>/dev/null &&
        cmp /tmp/pt.w /tmp/pt.r && pass "passthru-ioctl-rw ${dev#/dev/}" || fail "passthru-ioctl-rw ${dev#/dev/}"
done

# ---- fio io_uring_cmd, verify ----------------------------------------------------------------
fio_uring() { # NAME DEV FIXEDBUFS BS QD OFFSET
    run_fio "passthru-fio-$1" --filename="$2" --ioengine=io_uring_cmd --cmd_type=nvme \
        --fixedbufs="$3" --bs="$4" --iodepth="$5" --offset="$6" --size=8M --rw=randwrite \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --sqthread_poll=0
}
off=0
for fb in 0 1; do
    for qd in 1 32; do
        for bs in 4k 128k; do
            fio_uring "rnvme-fb$fb-qd$qd-$bs" "$rns" $fb $bs $qd ${off}M
            fio_uring "nvme-fb$fb-qd$qd-$bs" "$cns" $fb $bs $qd ${off}M
            off=$((off + 8))
        done
    done
done
run_fio "passthru-fio-rnvme-bsrange" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bsrange=4k-128k --iodepth=32 --offset=${off}M --size=16M --rw=randwrite \
    --verify=crc32c --do_verify=1 --verify_fatal=1

# ---- bad commands: same errors on both drivers, device still works ---------------------------
same_err() { # NAME ARGS... (run on the namespace devices)
    _n=$1; shift
    _ro=$(nvme "$@" "$rns" 2>&1); _rs=$?
    _co=$(nvme "$@" "$cns" 2>&1); _cs=$?
    _rm=$(echo "$_ro" | sed "s#$rns#DEV#g; s#${rns#/dev/}#DEV#g" | tail -1)
    _cm=$(echo "$_co" | sed "s#$cns#DEV#g; s#${cns#/dev/}#DEV#g" | tail -1)
    echo "  $_n: rnvme exit $_rs '$_rm'; nvme exit $_cs '$_cm'"
    [ "$_rs" = "$_cs" ] && [ "$_rm" = "$_cm" ] && pass "passthru-bad-$_n" || fail "passthru-bad-$_n"
}
same_err unknown-io-opcode io-passthru -o 0x7e -n 1 -r
same_err unknown-admin-opcode admin-passthru -o 0xbf -r
same_err wrong-nsid io-passthru -o 2 -n 7 -l 4096 -r --cdw10=0 --cdw12=7
same_err read-past-end io-passthru -o 2 -n 1 -l 4096 -r --cdw10=0xfffffff0 --cdw12=7
same_err huge-length io-passthru -o 2 -n 1 -l 67108864 -r --cdw12=7
same_err flags-set io-passthru -o 2 -n 1 -f 0x40 -l 4096 -r --cdw12=7
same_err metadata-on-plain-ns io-passthru -o 2 -n 1 -l 4096 -m 64 -r --cdw12=7
same_err identify-bad-cns admin-passthru -o 6 --cdw10=0xfe -l 4096 -r
# Hostile ioctls from a small static program (passthru-probe.c): bad command and data pointers,
# read-only and partly unmapped buffers, zero/huge lengths, wrong nsid, unknown ioctl, then the
# same as uid 65534. Both drivers must give the same result line by line.
if command -v passthru-probe >/dev/null; then
    chmod 666 "$rns" "$cns"
    passthru-probe "$rns" 1 > /tmp/probe.r 2>&1; _rs=$?
    passthru-probe "$cns" 1 > /tmp/probe.c 2>&1; _cs=$?
    chmod 600 "$rns" "$cns"
    paste /tmp/probe.c /tmp/probe.r | awk '{ printf "  %-24s nvme %-6s rnvme %s\n", $1, $2, $4 }'
    while read -r _case _c; do
        _r=$(awk -v k="$_case" '$1 == k { print $2 }' /tmp/probe.r)
        [ "$_r" = "$_c" ] && pass "passthru-probe-$_case ($_r)" || fail "passthru-probe-$_case (rnvme $_r, nvme $_c)"
    done < /tmp/probe.c
    [ "$_rs" = 0 ] && [ "$_cs" = 0 ] && [ "$(wc -l < /tmp/probe.r)" -ge 20 ] &&
        pass "passthru-probe-complete" || fail "passthru-probe-complete (exit $_rs/$_cs)"
else
    fail "passthru-probe (helper not in the initramfs)"
fi
# The form of a user command's data pointer, `nvme_map_data()`'s choice (nvme::SglPolicy::layout;
# debugfs prp counters sgl_simple, sgl_lists, prp_lists): with SGLs (QEMU's controller has them)
# a 16 KiB read is one SGL command whatever pages nvme-cli's buffer got (one descriptor for one
# physical segment, a list for more) and never a PRP list; without SGLs it needs a PRP list.
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
pstats=/sys/kernel/debug/rnvme/rnvme$ri/prp
pc() { sed -n "s/^$1 //p" "$pstats"; }
if [ -r "$pstats" ] && [ -n "$(pc sgl_simple)" ]; then
    _sgls=$(nvme id-ctrl "$rctrl" | sed -n 's/^sgls *: *//p')
    _s0=$(( $(pc sgl_simple) + $(pc sgl_lists) )); _p0=$(pc prp_lists)
    nvme io-passthru "$rns" -o 2 -n 1 -l 16384 -r --cdw12=31 > /dev/null 2>&1; _st=$?
    _s=$(( $(pc sgl_simple) + $(pc sgl_lists) - _s0 )); _p=$(( $(pc prp_lists) - _p0 ))
    echo "  16 KiB user read: sgls=$_sgls, status $_st, SGL commands +$_s, PRP lists +$_p"
    case "$_sgls" in
        0|0x0) _want="0 1" ;;
        *) _want="1 0" ;;
    esac
    [ "$_st" = 0 ] && [ "$_s $_p" = "$_want" ] && pass "passthru-data-layout (sgls=$_sgls)" ||
        fail "passthru-data-layout (sgls=$_sgls: status $_st, SGL +$_s, PRP lists +$_p, want $_want)"
else
    fail "passthru-data-layout ($pstats without sgl counters)"
fi
# io_uring commands whose answers the C driver's ABI fixes (uring-probe.c): an admin command on
# a namespace's device and an I/O command on the controller's (ENOTTY), rings without 128-byte
# SQEs or 32-byte CQEs (EOPNOTSUPP), admin data in a registered buffer (Identify equal to a
# plain one; Set/Get Features Timestamp through it both ways), outside it or past its end
# (EFAULT). Both drivers must give the same lines.
if command -v uring-probe >/dev/null; then
    _lbs=$(cat "/sys/block/$rd/queue/logical_block_size")
    uring-probe "$rctrl" "$rns" 1 "$_lbs" > /tmp/uprobe.r 2>&1; _rs=$?
    uring-probe "$cctrl" "$cns" 1 "$_lbs" > /tmp/uprobe.c 2>&1; _cs=$?
    sed 's/^/  nvme:  /' /tmp/uprobe.c; sed 's/^/  rnvme: /' /tmp/uprobe.r
    while read -r _case _c; do
        _r=$(awk -v k="$_case" '$1 == k { $1 = ""; print substr($0, 2) }' /tmp/uprobe.r)
        [ "$_r" = "$_c" ] && pass "uring-probe-$_case ($_r)" || fail "uring-probe-$_case (rnvme '$_r', nvme '$_c')"
    done < /tmp/uprobe.c
    grep -q '^ctrl-admin-fixed 0 same$' /tmp/uprobe.r && grep -q '^ctrl-admin-fixed-timestamp 0 0 ok$' /tmp/uprobe.r &&
        pass "uring-probe-fixed-admin-data" || fail "uring-probe-fixed-admin-data"
    [ "$_rs" = 0 ] && [ "$_cs" = 0 ] && [ "$(wc -l < /tmp/uprobe.r)" -ge 10 ] &&
        pass "uring-probe-complete" || fail "uring-probe-complete (exit $_rs/$_cs)"
else
    fail "uring-probe (helper not in the initramfs)"
fi
if id nobody >/dev/null 2>&1 && chmod 666 "$rns" "$cns" "$rctrl" "$cctrl"; then
    for args in "get-log -i 2 -l 512" "id-ctrl"; do
        _ro=$(su nobody -s /bin/sh -c "nvme $args $rctrl" 2>&1); _rs=$?
        _co=$(su nobody -s /bin/sh -c "nvme $args $cctrl" 2>&1); _cs=$?
        echo "  unprivileged $args: rnvme $_rs, nvme $_cs"
        [ "$_rs" = "$_cs" ] && pass "passthru-unpriv-${args%% *}" || fail "passthru-unpriv-${args%% *} ($_ro / $_co)"
    done
    chmod 600 "$rns" "$cns" "$rctrl" "$cctrl"
else
    echo "  (no 'nobody' user: unprivileged checks skipped)"
fi
run_fio "passthru-fio-after-bad" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bs=16k --iodepth=8 --offset=0 --size=4M --rw=randwrite --verify=crc32c \
    --do_verify=1 --verify_fatal=1

# Processes killed with I/O in flight (registered buffers, 4 jobs x QD32), then the device still
# verifies.
fio --name=kill --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme --fixedbufs=1 \
    --bs=64k --iodepth=32 --numjobs=4 --offset=128M --size=32M --rw=randrw --time_based \
    --runtime=30 > /tmp/fio-kill.out 2>&1 &
fpid=$!
sleep 2
# Kill the parent and every job process (fio forks one per job), until none is left.
_i=0
while _p=$(pidof fio) && [ "$_i" -lt 100 ]; do kill -9 $_p 2>/dev/null; sleep 0.1; _i=$((_i + 1)); done
wait $fpid 2>/dev/null
pidof fio >/dev/null && fail "passthru-kill (fio processes left)" || pass "passthru-kill (fio killed with I/O in flight)"
run_fio "passthru-fio-after-kill" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bs=32k --iodepth=16 --offset=0 --size=4M --rw=randwrite --verify=crc32c \
    --do_verify=1 --verify_fatal=1

# The controller removed while a process holds its namespace device open: calls on the held
# file get ENODEV, nothing crashes; after rebinding, new devices work.
if command -v passthru-probe >/dev/null; then
    exec 8<>"$rns"
    echo "$rb" > /sys/bus/pci/drivers/rnvme/unbind
    passthru-probe fd:8 1 > /tmp/held.out 2>&1
    sed 's/^/  /' /tmp/held.out
    exec 8<&-
    grep -qx "held-id -19" /tmp/held.out && grep -qx "held-identify -19" /tmp/held.out &&
        pass "passthru-removed-while-open (ENODEV)" || fail "passthru-removed-while-open"
    check passthru-rebind nvme_bind "$rb" rnvme
    rd=$(nvme_wait_disks "$rb" 1 20) || fail "passthru-rebind-disk"
    ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
    rctrl=/dev/rnvme$ri; rns=/dev/rng${ri}n1
    wait_for "$rns" 10 && check passthru-rebind-id-ctrl sh -c "nvme id-ctrl $rctrl >/dev/null"
    run_fio "passthru-fio-after-rebind" --filename="$rns" --ioengine=io_uring_cmd \
        --cmd_type=nvme --fixedbufs=1 --bs=16k --iodepth=8 --offset=0 --size=4M --rw=randwrite \
        --verify=crc32c --do_verify=1 --verify_fatal=1
fi

# An open character device keeps the module: rmmod refused while open; after close, unbinding
# removes the devices.
exec 9<"$rns"
if rmmod rnvme 2>/dev/null; then fail "passthru-rmmod-refused-while-open"; else pass "passthru-rmmod-refused-while-open"; fi
exec 9<&-
check passthru-unload rmmod rnvme
[ -e "$rctrl" ] && fail "passthru-chardev-removed ($rctrl still there)" || pass "passthru-chardev-removed"
nvme_release "$rb"; nvme_release "$cb"
