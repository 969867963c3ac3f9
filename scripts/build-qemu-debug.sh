#!/usr/bin/env bash
# A QEMU for looking inside the emulator (issue 9): Debian's own qemu source package, the
# version installed here, built for x86_64 with symbols and frame pointers (host `perf` then
# names QEMU's functions and unwinds through them; Debian's binary is stripped) and with
# benches/qemu-patches/jump-cache-stats.patch (per vCPU, the jump-cache lookups and misses by
# guest code region, printed as `qemu-jc` lines at each run marker of the profile guest; read by
# benches/jump_cache.py). Prints the path of a `qemu-system-x86_64` wrapper that runs it with
# Debian's firmware; use it with RNVME_QEMU=<path> (tests/qemu/run-guest.sh), e.g.
#
#   RNVME_QEMU=$(scripts/build-qemu-debug.sh) scripts/profile-fio.sh --host-perf
#
# Cached under $RNVME_CACHE/qemu-debug/<source version>-<patch and recipe hash>/. The source
# comes through a private apt configuration (deb-src entries for the system's own suites), so
# the system's apt sources are not changed. About 4 minutes of build on 2 idle cores (15 when
# sharing them with guest runs). For profiling
# only: the measured figures of BENCHMARKS.md come from Debian's binary unless a section says
# otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

patchf="$RNVME_REPO/benches/qemu-patches/jump-cache-stats.patch"
ver=$(dpkg-query -W -f '${source:Version}' qemu-system-x86 2>/dev/null) ||
    die "qemu-system-x86 is not installed (run scripts/setup.sh)"
key="${ver//:/_}-$(cat "$patchf" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)"
out="$RNVME_CACHE/qemu-debug/$key"
if [[ -x "$out/qemu-system-x86_64" && -x "$out/build/qemu-system-x86_64" ]]; then
    echo "$out/qemu-system-x86_64"
    exit 0
fi
SUDO=""
((EUID == 0)) || SUDO=sudo
log "build dependencies"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    dpkg-dev meson ninja-build pkg-config libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev \
    libaio-dev >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/rnvme-qemu.XXXXXX")
trap 'rm -rf "$work"' EXIT
# deb-src lines for the suites the system's deb lines name, in a private apt state.
mkdir -p "$work/lists/partial" "$work/src"
apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2>/dev/null |
    sort -u | grep -i debian | awk '{ printf "deb-src %s %s main\n", $1, $2 }' > "$work/sources.list"
[[ -s "$work/sources.list" ]] || die "no apt suites found for the qemu source package"
apto=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
      -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
log "qemu $ver source"
apt-get "${apto[@]}" update -q >&2
(cd "$work/src" && apt-get "${apto[@]}" source -q --download-only "qemu=$ver" >&2 &&
    dpkg-source -x ./*.dsc tree >&2)
patch -d "$work/src/tree" -p1 < "$patchf" >&2
log "configure and build (x86_64 TCG, -O2 -g, frame pointers)"
mkdir "$work/src/tree/b"
(cd "$work/src/tree/b" && ../configure --target-list=x86_64-softmmu --enable-plugins \
    --enable-linux-aio --disable-docs --disable-werror --disable-strip --disable-gtk \
    --disable-sdl --disable-vnc --disable-opengl --disable-xen --enable-trace-backends=log \
    --extra-cflags="-g -O2 -fno-omit-frame-pointer" >&2 &&
    nice ninja -j"$(nproc)" qemu-system-x86_64 >&2)
mkdir -p "$out/build"
cp "$work/src/tree/b/qemu-system-x86_64" "$out/build/"
# Debian's firmware (bios-256k.bin in /usr/share/seabios, option ROMs in /usr/share/qemu).
cat > "$out/qemu-system-x86_64" <<WRAP
#!/bin/sh
exec "$out/build/qemu-system-x86_64" -L /usr/share/seabios -L /usr/share/qemu "\$@"
WRAP
chmod +x "$out/qemu-system-x86_64"
"$out/qemu-system-x86_64" --version >&2
echo "$out/qemu-system-x86_64"
