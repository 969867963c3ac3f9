# Guest-side helpers for rnvme QEMU tests (busybox ash). Installed as /lib/rnvme/lib.sh.
# Test scripts in /tests/NN-name.sh source this and report with `pass`/`fail`.
# The /init runner counts lines beginning with "PASS: " / "FAIL: ".

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; RNVME_FAILED=1; }

# check NAME CMD...: run CMD, PASS/FAIL NAME by its exit status.
check() {
    _name="$1"; shift
    if "$@"; then pass "$_name"; else fail "$_name (exit $?: $*)"; fi
}

# Find a module file by name (accepts - or _), searching /lib/modules.
kmod_path() {
    _m1=$(echo "$1" | tr - _); _m2=$(echo "$1" | tr _ -)
    find /lib/modules -name "$_m1.ko" -o -name "$_m2.ko" 2>/dev/null | head -n1
}

kmod_loaded() { grep -q "^$(echo "$1" | tr - _) " /proc/modules; }

# kmod_load NAME [PARAMS...]: insmod a module by name (no-op if already loaded),
# first loading its dependencies listed in modules.dep (if it is listed there).
kmod_load() {
    _mod="$1"; shift
    kmod_loaded "$_mod" && return 0
    _p=$(kmod_path "$_mod")
    if [ -z "$_p" ]; then echo "kmod_load: module $_mod not found under /lib/modules" >&2; return 1; fi
    _mdir=/lib/modules/$(uname -r)
    _rel=${_p#$_mdir/}
    if [ -f "$_mdir/modules.dep" ]; then
        # Dependencies are listed deepest-last; load them in reverse order.
        for _d in $(grep "^$_rel:" "$_mdir/modules.dep" | cut -d: -f2 | tr ' ' '\n' | sed '/^$/d' | sed -n '1!G;h;$p'); do
            _dn=$(basename "$_d" .ko)
            kmod_loaded "$_dn" || insmod "$_mdir/$_d" || return 1
        done
    fi
    insmod "$_p" "$@"
}

kmod_unload() { kmod_loaded "$1" || return 0; rmmod "$(echo "$1" | tr - _)"; }

# wait_for PATH [SECONDS]: wait until PATH exists.
wait_for() {
    _i=0; _max=$(( ${2:-10} * 10 ))
    while [ ! -e "$1" ]; do
        _i=$((_i + 1)); [ "$_i" -ge "$_max" ] && return 1
        sleep 0.1
    done
}

# run_fio NAME FIO-ARGS...: run fio, print its output, PASS/FAIL NAME.
# Fails on non-zero exit or any job reporting err!=0.
run_fio() {
    _name="$1"; shift
    run_fio_jobs "$_name" --name="$_name" "$@"
}

# run_fio_jobs NAME FIO-ARGS...: as run_fio, but FIO-ARGS name the job(s) themselves (global
# options first, then one --name=JOB section per job).
run_fio_jobs() {
    _name="$1"; shift
    echo "--- fio $_name: fio $*"
    fio "$@" > /tmp/fio.$$.out 2>&1
    _rc=$?
    if [ "$_rc" -ne 0 ] || [ -n "$RNVME_FIO_VERBOSE" ]; then
        cat /tmp/fio.$$.out
    else
        # Summary only: per-job status, bandwidth/IOPS lines, run status, errors.
        grep -E 'err=|^ +(read|write|trim): |^ +(READ|WRITE|TRIM): |[Vv]erify|[Ee]rror|^fio: ' /tmp/fio.$$.out
    fi
    if [ "$_rc" -ne 0 ]; then fail "$_name (fio exit $_rc)"; return 1; fi
    if grep -E 'err= *[1-9]' /tmp/fio.$$.out >/dev/null; then fail "$_name (fio job error)"; return 1; fi
    if grep -E '^(fio: )?verify|verify failed|bad magic' /tmp/fio.$$.out >/dev/null; then
        fail "$_name (fio verify error)"; return 1
    fi
    pass "$_name"
}

# ---- NVMe controllers, drivers and disks ----------------------------------------------------------
# tests/qemu/run-guest.sh --ctrl/--topology puts its controllers at fixed PCI addresses and tells
# the guest about them on the kernel command line (the kernel hands unknown name=value parameters
# to /init as environment variables):
#   rnvme_ctrls=SERIAL/BDF/QPAIRS/LBSxBYTES[+LBSxBYTES...][,...]     (QPAIRS 0 = QEMU's default)
# A controller argument (CTRL) is a PCI address (0000:00:10.0) or a serial (rnvme-a).
# Binding uses the PCI core's driver_override (drivers/pci/pci-driver.c: a device with an
# override only ever matches the driver of that name), then the driver's sysfs bind file.

# nvme_pci_list: PCI addresses of every NVMe controller (class 0x010802), sorted.
nvme_pci_list() {
    for _d in /sys/bus/pci/devices/*; do
        [ "$(cat "$_d/class" 2>/dev/null)" = 0x010802 ] && basename "$_d"
    done | sort
}

# _ctrl_entry KEY: the rnvme_ctrls entry whose serial or address is KEY (empty if none).
_ctrl_entry() {
    echo "$rnvme_ctrls" | tr ',' '\n' | awk -F/ -v k="$1" '$1 == k || $2 == k { print; exit }'
}

# nvme_ctrl_field CTRL N: field N of the controller's rnvme_ctrls entry (1 serial, 2 address,
# 3 max_ioqpairs, 4 namespaces as LBSxBYTES+...).
nvme_ctrl_field() { _ctrl_entry "$1" | cut -d/ -f"$2"; }

# nvme_driver BDF: name of the driver bound to the controller, or "-".
nvme_driver() {
    if [ -e "/sys/bus/pci/devices/$1/driver" ]; then
        basename "$(readlink "/sys/bus/pci/devices/$1/driver")"
    else
        echo -
    fi
}

# nvme_serial BDF: serial from rnvme_ctrls, else from the C driver's sysfs, else "?".
nvme_serial() {
    _s=$(nvme_ctrl_field "$1" 1)
    if [ -z "$_s" ]; then
        _s=$(cat /sys/bus/pci/devices/"$1"/nvme/nvme*/serial 2>/dev/null | head -n1 | tr -d ' ')
    fi
    echo "${_s:-?}"
}

# nvme_bdf CTRL: PCI address of a controller given by address or serial; fails if unknown.
nvme_bdf() {
    if [ -e "/sys/bus/pci/devices/$1/class" ]; then echo "$1"; return 0; fi
    _b=$(nvme_ctrl_field "$1" 2)
    if [ -z "$_b" ]; then
        for _b in $(nvme_pci_list); do
            [ "$(nvme_serial "$_b")" = "$1" ] && break
            _b=""
        done
    fi
    if [ -z "$_b" ] || [ ! -e "/sys/bus/pci/devices/$_b" ]; then
        echo "nvme_bdf: no NVMe controller '$1'" >&2
        return 1
    fi
    echo "$_b"
}

# nvme_ctrls: one line per NVMe controller: address, driver, serial, override, I/O queue pairs
# granted by QEMU (0 = default) and namespaces (LBSxBYTES+...) as the host configured them.
nvme_ctrls() {
    for _b in $(nvme_pci_list); do
        _o=$(cat "/sys/bus/pci/devices/$_b/driver_override" 2>/dev/null)
        echo "$_b driver=$(nvme_driver "$_b") serial=$(nvme_serial "$_b") override=${_o:-(none)}" \
            "qpairs=$(nvme_ctrl_field "$_b" 3) namespaces=$(nvme_ctrl_field "$_b" 4)"
    done
}

# nvme_bind CTRL DRIVER [SECONDS]: make DRIVER (and only DRIVER) drive the controller: set its
# driver_override, unbind another driver, and bind DRIVER if it is registered (otherwise it binds
# when its module loads). Waits up to SECONDS (default 20) for the binding.
nvme_bind() {
    _b=$(nvme_bdf "$1") || return 1
    _dev=/sys/bus/pci/devices/$_b
    echo "$2" > "$_dev/driver_override" || return 1
    _cur=$(nvme_driver "$_b")
    [ "$_cur" = "$2" ] && return 0
    if [ "$_cur" != - ]; then echo "$_b" > "$_dev/driver/unbind" || return 1; fi
    [ -d "/sys/bus/pci/drivers/$2" ] || return 0
    echo "$_b" > "/sys/bus/pci/drivers/$2/bind" || { echo "nvme_bind: $2 did not bind $_b" >&2; return 1; }
    _i=0
    while [ "$(nvme_driver "$_b")" != "$2" ]; do
        _i=$((_i + 1))
        [ "$_i" -ge $(( ${3:-20} * 10 )) ] && { echo "nvme_bind: $_b not bound to $2" >&2; return 1; }
        sleep 0.1
    done
}

# nvme_park CTRL: unbind the controller and keep every driver off it (override "none").
nvme_park() {
    _b=$(nvme_bdf "$1") || return 1
    echo none > "/sys/bus/pci/devices/$_b/driver_override" || return 1
    [ "$(nvme_driver "$_b")" = - ] || echo "$_b" > "/sys/bus/pci/devices/$_b/driver/unbind"
}

# nvme_park_idle_except CTRL: park every controller no driver has and nobody overrode, but CTRL
# (so loading the C driver binds only what a test wants); prints the parked ones, for
# nvme_release.
nvme_park_idle_except() {
    for _o in $(nvme_pci_list); do
        [ "$_o" = "$1" ] && continue
        if [ "$(nvme_driver "$_o")" = - ] &&
            [ -z "$(cat "/sys/bus/pci/devices/$_o/driver_override")" ]; then
            nvme_park "$_o" && echo "$_o"
        fi
    done
}

# queue_limits DISK: "max_hw_sectors_kb max_segments" of the disk's queue.
queue_limits() {
    echo "$(cat "/sys/block/$1/queue/max_hw_sectors_kb") $(cat "/sys/block/$1/queue/max_segments")"
}

# nvme_release CTRL: clear the controller's driver_override (it stays bound as it is).
nvme_release() {
    _b=$(nvme_bdf "$1") || return 1
    echo > "/sys/bus/pci/devices/$_b/driver_override"
}

# disk_nsid DISK: namespace id of a disk: its sysfs `nsid` attribute where the driver has one (the
# C driver: its disk names count namespaces in scan order, which is not the nsid), else the name's
# trailing n<NSID> (rnvme<C>n<NSID>).
disk_nsid() {
    if [ -r "/sys/block/$1/nsid" ]; then cat "/sys/block/$1/nsid"
    else echo "$1" | sed -n 's/.*[0-9]n\([0-9][0-9]*\)$/\1/p'; fi
}

# disk_by_nsid NSID DISK...: the one of DISK... with that namespace id.
disk_by_nsid() {
    _n="$1"; shift
    for _d in "$@"; do [ "$(disk_nsid "$_d")" = "$_n" ] && { echo "$_d"; return 0; }; done
    return 1
}

# nvme_disks CTRL: the controller's disks (names), by namespace id. A disk belongs to the
# controller when its sysfs path runs through the PCI device; a driver whose disks have no parent
# device (virtual) is handled when it drives exactly one controller: then its <driver>*n* disks.
nvme_disks() {
    _b=$(nvme_bdf "$1") || return 1
    _found=""
    for _d in /sys/block/*; do
        case "$(readlink -f "$_d")" in */"$_b"/*) _found="$_found $(basename "$_d")" ;; esac
    done
    if [ -z "$_found" ]; then
        _drv=$(nvme_driver "$_b")
        if [ "$_drv" != - ] && [ "$(ls -d /sys/bus/pci/drivers/"$_drv"/0000:* 2>/dev/null | wc -l)" = 1 ]; then
            for _d in /sys/block/"$_drv"[0-9]*n[0-9]*; do
                [ -e "$_d" ] && _found="$_found $(basename "$_d")"
            done
        fi
    fi
    for _d in $_found; do echo "$(disk_nsid "$_d") $_d"; done | sort -n | awk '{ print $2 }'
}

# nvme_wait_disks CTRL COUNT [SECONDS]: wait (default 20 s) until the controller has COUNT disks
# with their /dev nodes; prints them. Fails on timeout.
nvme_wait_disks() {
    _i=0; _max=$(( ${3:-20} * 10 ))
    while :; do
        _ds=$(nvme_disks "$1")
        _n=0; _ok=1
        for _d in $_ds; do _n=$((_n + 1)); [ -b "/dev/$_d" ] || _ok=0; done
        if [ "$_n" -ge "$2" ] && [ "$_ok" = 1 ]; then echo $_ds; return 0; fi
        _i=$((_i + 1))
        if [ "$_i" -ge "$_max" ]; then
            echo "nvme_wait_disks: $1 has '$_ds', wanted $2 disks" >&2
            return 1
        fi
        sleep 0.1
    done
}

# nvme_irqs CTRL: Linux IRQ numbers of the controller's MSI/MSI-X vectors (or its INTx line).
nvme_irqs() {
    _b=$(nvme_bdf "$1") || return 1
    if [ -d "/sys/bus/pci/devices/$_b/msi_irqs" ] && [ -n "$(ls "/sys/bus/pci/devices/$_b/msi_irqs")" ]; then
        ls "/sys/bus/pci/devices/$_b/msi_irqs" | sort -n
    else
        cat "/sys/bus/pci/devices/$_b/irq"
    fi
}

# irq_counts IRQ...: one line per IRQ: the number, then its count on each CPU (/proc/interrupts).
irq_counts() {
    _n=$(grep -c ^processor /proc/cpuinfo)
    for _q in "$@"; do
        awk -v q="$_q:" -v n="$_n" '$1 == q { printf "%s", $1; for (i = 2; i <= n + 1; i++) printf " %s", $i; print "" }' /proc/interrupts
    done
}

# drop_caches: write back dirty pages, then drop clean ones, so the next read reaches the device.
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# kmemleak_read OUT: the current kmemleak report (/sys/kernel/debug/kmemleak) without the leaks
# of a known Linux 6.12 bug, written to OUT; prints one `known kernel leak:` line per object
# left out. Callers count 'unreferenced object' in OUT.
# The known bug: block/blk-map.c bio_map_user_iov() lets iov_iter_extract_pages() allocate the
# page array (want_pages_array(), when the buffer spans more than UIO_FASTIOV pages) and, when
# the extraction then fails (a bad user address: -EFAULT), jumps to out_unmap without
# kvfree(pages). Every passthrough command whose data pointer faults leaks that array, in the C
# driver (nvme_map_user_request() -> blk_rq_map_user_io()) exactly as in rnvme, which calls the
# same function; 50-rnvme-passthru's hostile ioctls do this on both drivers' devices. Only
# objects whose backtrace has want_pages_array <- iov_iter_extract_pages <-
# blk_rq_map_user_iov are left out.
kmemleak_read() {
    awk -v out="$1" '
        BEGIN { printf "" > out }
        function flush() {
            if (blk == "") return
            if (blk ~ /want_pages_array/ && blk ~ /iov_iter_extract_pages/ && blk ~ /blk_rq_map_user_iov/)
                printf "known kernel leak: %s (bio_map_user_iov page array, block/blk-map.c)\n", head
            else
                printf "%s", blk > out
            blk = ""
        }
        # (The line it prints leaves out the words the host-side log check looks for.)
        /^unreferenced object/ { flush(); head = $0; sub(/^unreferenced object /, "object ", head) }
        { blk = blk $0 "\n" }
        END { flush() }
    ' /sys/kernel/debug/kmemleak
}
