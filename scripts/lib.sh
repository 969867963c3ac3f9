# shellcheck shell=bash
# Shared helpers for the rnvme kernel/QEMU pipeline. Source it; do not run it.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Provides: logging with per-stage timings, cache layout, toolchain pins and
# the kernel cache key.

# ---- pins -------------------------------------------------------------------
RNVME_RUST_TOOLCHAIN="${RNVME_RUST_TOOLCHAIN:-1.85.0}"
RNVME_BINDGEN_VERSION="${RNVME_BINDGEN_VERSION:-0.69.5}"
RNVME_KERNEL_PKG="${RNVME_KERNEL_PKG:-linux-source-6.12}"
# Bump when the build recipe changes in a way that must invalidate cached kernels.
RNVME_RECIPE_VERSION=3

# ---- paths ------------------------------------------------------------------
RNVME_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RNVME_CACHE="${RNVME_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnvme}"
RNVME_CONFIG_DIR="${RNVME_CONFIG_DIR:-$RNVME_REPO/kernel-glue/config}"
# Per-run outputs (initramfs images, guest logs, disk images, module build trees). Point it
# elsewhere to run two checkouts side by side without clobbering each other; the kernels
# and downloads stay in $RNVME_CACHE.
RNVME_WORK="${RNVME_WORK:-$RNVME_CACHE}"
export PATH="$HOME/.cargo/bin:$PATH"

# ---- logging ----------------------------------------------------------------
_rnvme_t0=$(date +%s.%N)
_rnvme_stage=""
_rnvme_stage_t0=""
# Stage timings are appended here as "<script> <stage> <seconds>" lines.
RNVME_TIMINGS_FILE="${RNVME_TIMINGS_FILE:-$RNVME_CACHE/timings.log}"

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

_elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# stage <name>: ends the previous stage (printing its duration) and starts a new one.
stage() {
    stage_end
    _rnvme_stage="$1"
    _rnvme_stage_t0=$(date +%s.%N)
    log "==> stage: $_rnvme_stage"
}

stage_end() {
    if [[ -n "$_rnvme_stage" ]]; then
        local dt
        dt=$(_elapsed "$_rnvme_stage_t0")
        log "<== stage: $_rnvme_stage done in ${dt}s"
        mkdir -p "$(dirname "$RNVME_TIMINGS_FILE")"
        printf '%s %s %s %s\n' "$(date -u +%FT%TZ)" "$(basename "$0")" "${_rnvme_stage// /_}" "$dt" \
            >> "$RNVME_TIMINGS_FILE" 2>/dev/null || true
        _rnvme_stage=""
    fi
}

# finish: close the last stage and print total time. Call at the end of a script.
finish() {
    stage_end
    log "total: $(_elapsed "$_rnvme_t0")s ($(basename "$0"))"
}

need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || die "missing command '$c' (run scripts/setup.sh)"
    done
}

# ---- toolchain --------------------------------------------------------------
rust_rustc() { rustup which --toolchain "$RNVME_RUST_TOOLCHAIN" rustc; }

# Make variables every kernel (and out-of-tree module) build must use.
kernel_make_vars() {
    local rustc
    rustc=$(rust_rustc)
    printf '%s\n' LLVM=1 ARCH=x86_64 "RUSTC=$rustc" "HOSTRUSTC=$rustc" "BINDGEN=$(command -v bindgen)" \
        "RUSTFMT=$(dirname "$rustc")/rustfmt"
}

toolchain_fingerprint() {
    {
        "$(rust_rustc)" --version
        bindgen --version
        clang --version | head -n1
        ld.lld --version | head -n1
    } 2>/dev/null
}

# ---- kernel source / cache key ----------------------------------------------
# Version of the linux-source package we would download (candidate version).
kernel_pkg_version() {
    if [[ -n "${RNVME_KERNEL_PKGVER:-}" ]]; then
        printf '%s\n' "$RNVME_KERNEL_PKGVER"
        return
    fi
    local v
    v=$(apt-cache policy "$RNVME_KERNEL_PKG" 2>/dev/null | awk '/Candidate:/ { print $2 }')
    if [[ -z "$v" || "$v" == "(none)" ]]; then
        # Fall back to whatever is already downloaded into the cache.
        local deb
        deb=$(ls -1 "$RNVME_CACHE"/downloads/"${RNVME_KERNEL_PKG}"_*_all.deb 2>/dev/null | sort -V | tail -n1 || true)
        [[ -n "$deb" ]] || die "cannot determine $RNVME_KERNEL_PKG version (apt-get update?)"
        v=$(dpkg-deb -f "$deb" Version)
    fi
    printf '%s\n' "$v"
}

# Resolve the package version once and export it (apt-cache is slow; child scripts inherit it).
export_kernel_pkg_version() {
    RNVME_KERNEL_PKGVER=$(kernel_pkg_version)
    export RNVME_KERNEL_PKGVER
}

# Fragment files for a variant, in merge order.
kernel_fragments() {
    case "$1" in
        normal) printf '%s\n' "$RNVME_CONFIG_DIR/rnvme.config" ;;
        debug)  printf '%s\n' "$RNVME_CONFIG_DIR/rnvme.config" "$RNVME_CONFIG_DIR/debug.config" ;;
        *) die "unknown kernel variant '$1' (normal|debug)" ;;
    esac
}

# Cache key = variant + package version + fragment contents + toolchain + recipe.
kernel_key() {
    local variant="$1" pkgver h
    pkgver=$(kernel_pkg_version)
    h=$({
        echo "recipe $RNVME_RECIPE_VERSION"
        echo "pkg $pkgver"
        kernel_fragments "$variant" | xargs cat
        toolchain_fingerprint
    } | sha256sum | cut -c1-16)
    printf '%s-%s-%s\n' "$variant" "${pkgver//[^A-Za-z0-9.]/_}" "$h"
}

kernel_dir() { printf '%s/kernel/%s\n' "$RNVME_CACHE" "$(kernel_key "$1")"; }

# Builds iovstack_selftest.ko and iovstack_bench.ko for variant $1 and sets the array
# SELFTEST_ARGS to the mkinitramfs options that put them into a guest with their guest tests
# (smoke test + differential test against the kernel's iov_iter; the short form of the in-kernel
# iov benchmark, which fails only on a missing result line or a wrong copy). Runs in the
# caller's shell, so a failed build stops the caller.
selftest_initramfs_args() {
    local variant=$1 kos ko bench gt="$RNVME_REPO/tests/qemu/guest-tests"
    kos=$("$RNVME_REPO/scripts/build-module.sh" "$variant") || die "modules ($variant) did not build"
    ko=$(grep '/iovstack_selftest\.ko$' <<<"$kos") || die "iovstack_selftest.ko ($variant) did not build"
    bench=$(grep '/iovstack_bench\.ko$' <<<"$kos") || die "iovstack_bench.ko ($variant) did not build"
    SELFTEST_ARGS=(--add "$ko:/lib/modules/extra/iovstack_selftest.ko"
        --add "$gt/iovstack-check.sh:/lib/rnvme/iovstack-check.sh"
        --test "$gt/10-iovstack-selftest.sh"
        --add "$bench:/lib/modules/extra/iovstack_bench.ko" --test "$gt/40-iov-bench.sh")
}

# Builds the static guest helper tests/qemu/guest-tests/$1.c into $RNVME_WORK/$1 (guests have
# no libc of their own) and prints its path.
guest_helper() {
    local out="$RNVME_WORK/$1"
    cc -static -O2 -Wall -Werror -o "$out" "$RNVME_REPO/tests/qemu/guest-tests/$1.c" ||
        die "$1.c did not build (needs a static libc: libc6-dev)"
    printf '%s\n' "$out"
}

# Builds rnvme.ko for variant $1 and sets the array DRIVER_ARGS to the mkinitramfs options that
# put it into a guest (/lib/modules/extra/rnvme.ko) with its guest tests
# (tests/qemu/guest-tests/20-rnvme-basic.sh, 50-rnvme-passthru.sh, 52-rnvme-premap.sh,
# 53-rnvme-stress.sh, 54-rnvme-fuzz.sh) and their static helpers. Runs in the caller's shell, like
# selftest_initramfs_args.
driver_initramfs_args() {
    local variant=$1 ko gt="$RNVME_REPO/tests/qemu/guest-tests"
    ko=$("$RNVME_REPO/scripts/build-module.sh" "$variant" | grep '/rnvme\.ko$') ||
        die "rnvme.ko ($variant) did not build"
    DRIVER_KO=$ko
    DRIVER_ARGS=(--add "$ko:/lib/modules/extra/rnvme.ko" --test "$gt/20-rnvme-basic.sh")
    # Passthrough char devices (issue 8): the test and its static helper for hostile ioctls.
    local probe uprobe
    probe=$(guest_helper passthru-probe) || exit 1
    # io_uring commands whose answers the C driver's ABI fixes (uring-probe.c, raw-uring.h).
    uprobe=$(guest_helper uring-probe) || exit 1
    DRIVER_ARGS+=(--add "$probe:/usr/bin/passthru-probe" --add "$uprobe:/usr/bin/uring-probe"
        --test "$gt/50-rnvme-passthru.sh")
    # Premapped DMA tags for registered buffers (issue 8): fio with fixedbufs=0/1 and the
    # debugfs counters that say which path each I/O took; premap-reuse (one buffer registered
    # again and again, several open files).
    DRIVER_ARGS+=(--test "$gt/52-rnvme-premap.sh")
    # Registered-buffer stress (issue 8) and char-device fuzzing (issue 10): static helpers on
    # raw io_uring system calls (raw-uring.h) and their tests.
    local h out
    for h in premap-reuse premap-stress chardev-fuzz; do
        out=$(guest_helper "$h") || exit 1
        DRIVER_ARGS+=(--add "$out:/usr/bin/$h")
    done
    DRIVER_ARGS+=(--test "$gt/53-rnvme-stress.sh" --test "$gt/54-rnvme-fuzz.sh")
    # Batched submissions (queue_rqs) and completions (io_comp_batch) under fio QD32 and IOPOLL
    # (issue 9), checked with the driver's debugfs counters and the disk's own statistics.
    DRIVER_ARGS+=(--test "$gt/57-rnvme-batch.sh")
    # The admin queue (issue 7): completions by interrupt, a reset after an admin timeout.
    out=$(guest_helper admin-latency) || exit 1
    DRIVER_ARGS+=(--add "$out:/usr/bin/admin-latency" --test "$gt/58-rnvme-admin-irq.sh")
}
