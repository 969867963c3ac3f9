#!/usr/bin/env bash
# Build (or reuse from cache) the Linux 6.12 + Rust kernel used by the QEMU tests.
#
#   scripts/build-kernel.sh [normal|debug]
#
# Source: Debian's linux-source-6.12 package (apt-get download).
# Config: tinyconfig + kernel-glue/config/rnvme.config (+ debug.config for "debug").
# Result: $RNVME_CACHE/kernel/<variant>-<pkgver>-<hash>/
#           build/            O= build tree (use for out-of-tree modules: make -C build M=...)
#           bzImage           kernel image
#           modules/          staged modules (INSTALL_MOD_PATH), lib/modules/<release>/...
#           kernelrelease     `make kernelrelease`
#           .complete         stamp; present => cache hit
# The build dir path is printed on stdout (everything else goes to stderr).
# Env: RNVME_JOBS (default nproc), RNVME_FORCE_REBUILD=1 to ignore the stamp.
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant="${1:-normal}"
kernel_fragments "$variant" >/dev/null
need_cmd rustup bindgen clang ld.lld make flex bison bc cpio dpkg-deb apt-get
jobs="${RNVME_JOBS:-$(nproc)}"

mkdir -p "$RNVME_CACHE"/{downloads,src,kernel}

stage "resolve cache key ($variant)"
export_kernel_pkg_version
pkgver=$(kernel_pkg_version)
kdir=$(kernel_dir "$variant")
log "package $RNVME_KERNEL_PKG $pkgver; cache dir $kdir"

cache_hit() {
    [[ -f "$kdir/.complete" && "${RNVME_FORCE_REBUILD:-0}" != 1 ]] || return 1
    log "cache hit: $kdir"
    ln -sfn "$(basename "$kdir")" "$RNVME_CACHE/kernel/$variant"
    finish
    echo "$kdir/build"
    exit 0
}
cache_hit || true
# Serialise kernel builds/extraction (two variants share one source tree).
exec 9>"$RNVME_CACHE/.build-kernel.lock"
if ! flock -n 9; then
    log "another kernel build is running; waiting for the lock"
    flock 9
fi
cache_hit || true
log "cache miss: building $variant kernel"

# ---- download ----------------------------------------------------------------
deb="$RNVME_CACHE/downloads/${RNVME_KERNEL_PKG}_${pkgver//:/%3a}_all.deb"
if [[ ! -f "$deb" ]]; then
    stage "download $RNVME_KERNEL_PKG"
    tmpd=$(mktemp -d "$RNVME_CACHE/downloads/tmp.XXXXXX")
    chmod 755 "$tmpd"
    (cd "$tmpd" && apt-get download "${RNVME_KERNEL_PKG}=${pkgver}") >&2
    mv "$tmpd"/*.deb "$deb"
    rmdir "$tmpd"
else
    log "using downloaded $deb"
fi

# ---- extract -----------------------------------------------------------------
srcdir="$RNVME_CACHE/src/${pkgver//[^A-Za-z0-9.]/_}"
if [[ ! -f "$srcdir/.extracted" ]]; then
    stage "extract kernel source"
    rm -rf "$srcdir" "$srcdir.tmp"
    mkdir -p "$srcdir.tmp/deb"
    dpkg-deb -x "$deb" "$srcdir.tmp/deb"
    tarball=$(ls "$srcdir.tmp"/deb/usr/src/linux-source-*.tar.xz)
    mkdir -p "$srcdir.tmp/tree"
    tar -xf "$tarball" -C "$srcdir.tmp/tree" --strip-components=1
    mv "$srcdir.tmp/tree" "$srcdir"
    rm -rf "$srcdir.tmp"
    touch "$srcdir/.extracted"
fi
log "kernel source: $srcdir"

# ---- configure ---------------------------------------------------------------
stage "configure ($variant)"
mapfile -t makevars < <(kernel_make_vars)
kmake() { make -C "$srcdir" O="$kdir/build" "${makevars[@]}" "$@"; }
mkdir -p "$kdir/build"
rm -f "$kdir/.complete"
kmake rustavailable >&2 || die "Rust toolchain not usable by the kernel (see above)"
cfglog="$kdir/configure.log"
mapfile -t frags < <(kernel_fragments "$variant")
if ! { kmake tinyconfig &&
       (cd "$kdir/build" && "$srcdir/scripts/kconfig/merge_config.sh" -m -O "$kdir/build" \
            "$kdir/build/.config" "${frags[@]}") &&
       kmake olddefconfig; } > "$cfglog" 2>&1; then
    cat "$cfglog" >&2
    die "kernel configuration failed (log: $cfglog)"
fi
log "tinyconfig + ${frags[*]##*/} merged (details: $cfglog)"

# Verify: the last setting of each symbol across the fragments must survive.
missing=()
declare -A want=()
order=()
for f in "${frags[@]}"; do
    while IFS= read -r line; do
        if [[ "$line" =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
            sym=${BASH_REMATCH[1]}; val=${BASH_REMATCH[2]}
        elif [[ "$line" =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set ]]; then
            sym=${BASH_REMATCH[1]}; val=n
        else
            continue
        fi
        [[ -n "${want[$sym]+x}" ]] || order+=("$sym")
        want[$sym]=$val
    done < "$f"
done
for sym in "${order[@]}"; do
    val=${want[$sym]}
    got=$(grep -E "^${sym}=" "$kdir/build/.config" | cut -d= -f2- || true)
    if [[ "$val" == n ]]; then
        [[ -z "$got" || "$got" == n ]] || missing+=("$sym: want n, got $got")
    elif [[ "$got" != "$val" ]]; then
        missing+=("$sym: want $val, got ${got:-<unset>}")
    fi
done
if ((${#missing[@]})); then
    printf '  %s\n' "${missing[@]}" >&2
    die "${#missing[@]} requested config option(s) missing from the final .config (see above)"
fi
log "config verified: ${#order[@]} requested options present"

# ---- build -------------------------------------------------------------------
stage "build bzImage+modules ($variant, -j$jobs)"
kmake -j"$jobs" bzImage modules >&2

stage "stage modules ($variant)"
rm -rf "$kdir/modules"
kmake INSTALL_MOD_PATH="$kdir/modules" modules_install >&2
cp "$kdir/build/arch/x86/boot/bzImage" "$kdir/bzImage"
kmake -s kernelrelease > "$kdir/kernelrelease"
kernel_make_vars > "$kdir/make-vars"
[[ -f "$kdir/build/rust/libkernel.rmeta" ]] || die "rust/libkernel.rmeta missing: Rust not built?"
touch "$kdir/.complete"
ln -sfn "$(basename "$kdir")" "$RNVME_CACHE/kernel/$variant"
log "built kernel $(cat "$kdir/kernelrelease") in $kdir"
finish
echo "$kdir/build"
exit
}
