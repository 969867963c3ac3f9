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
    echo "--- fio $_name: fio $*"
    fio --name="$_name" "$@" > /tmp/fio.$$.out 2>&1
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
