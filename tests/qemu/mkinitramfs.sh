#!/usr/bin/env bash
# Build the guest initramfs (uncompressed newc cpio).
#
#   tests/qemu/mkinitramfs.sh [options]
#     -k, --kernel VARIANT     kernel variant whose modules to include (normal|debug; default normal)
#     -o, --output FILE        output (default $RNVME_WORK/initramfs/<variant>.cpio)
#     -a, --add SRC[:DEST]     add a file or directory (DEST defaults to /extra/<basename>);
#                              repeatable. e.g. --add rnvme/rnvme.ko:/lib/modules/extra/rnvme.ko
#     -t, --test FILE          add a guest test script as /tests/<basename> (repeatable);
#                              name it NN-name.sh, tests run in lexical order
#         --no-default-tests   do not include tests/qemu/guest/tests/*.sh
# Contents: busybox-static, fio, mkfs.ext4, e2fsck, util-linux blkdiscard (+ every
# library from ldd + the loader), the kernel's staged modules (nvme, nvme-core,
# null_blk, rnull_mod, ...), /init, /lib/rnvme/lib.sh (guest helpers),
# /lib/rnvme/{integrity,queues}.sh (test helpers) and /tests/*.sh.
# Prints the output path on stdout.
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/lib.sh"

variant=normal
out=""
adds=()
tests=()
default_tests=1
while (($#)); do
    case "$1" in
        -k|--kernel) variant="$2"; shift 2 ;;
        -o|--output) out="$2"; shift 2 ;;
        -a|--add) adds+=("$2"); shift 2 ;;
        -t|--test) tests+=("$2"); shift 2 ;;
        --no-default-tests) default_tests=0; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) die "unknown argument '$1'" ;;
    esac
done
need_cmd busybox fio cpio ldd
out="${out:-$RNVME_WORK/initramfs/$variant.cpio}"
mkdir -p "$(dirname "$out")"

stage "initramfs ($variant)"
modroot=$("$RNVME_REPO/scripts/kernel-path.sh" "$variant" modules)
root=$(mktemp -d "${TMPDIR:-/tmp}/rnvme-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,lib/rnvme,proc,sys,dev,tmp,run,root,etc,tests,extra,mnt}

# busybox: one static binary + a symlink per applet.
cp "$(command -v busybox)" "$root/bin/busybox"
for applet in $(busybox --list); do
    [[ "$applet" == busybox ]] && continue
    [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done

# copy_with_libs BIN DEST: binary plus its shared libraries (same paths as on the host).
copy_with_libs() {
    local bin="$1" dest="$2" lib
    install -D -m 755 "$bin" "$root$dest"
    while read -r lib; do
        [[ -n "$lib" && -e "$lib" ]] || continue
        [[ -e "$root$lib" ]] || install -D -m 755 "$(readlink -f "$lib")" "$root$lib"
    done < <(ldd "$bin" | awk '/=> \// { print $3 } /^[ \t]*\/[^ ]+ \(/ { print $1 }')
}
copy_with_libs "$(command -v fio)" /usr/bin/fio
# The integrity test (guest/integrity.sh): e2fsprogs' mkfs.ext4 and e2fsck, and util-linux's
# blkdiscard for `blkdiscard -z` (BLKZEROOUT; busybox's applet only discards). Debian has them
# under /sbin (= /usr/sbin); they go to /sbin and /usr/sbin, after busybox's /bin in PATH.
for tool in mkfs.ext4:/sbin/mkfs.ext4 e2fsck:/sbin/e2fsck blkdiscard:/usr/sbin/blkdiscard; do
    src=$(PATH="$PATH:/sbin:/usr/sbin" command -v "${tool%%:*}") ||
        die "missing ${tool%%:*} (apt packages e2fsprogs, util-linux; run scripts/setup.sh)"
    copy_with_libs "$src" "${tool#*:}"
done
# nvme-cli (apt nvme-cli) for the passthrough tests (guest-tests/50-rnvme-passthru.sh).
if nvme_bin=$(PATH="$PATH:/sbin:/usr/sbin" command -v nvme); then
    copy_with_libs "$nvme_bin" /usr/sbin/nvme
fi
[[ -f /etc/mke2fs.conf ]] && install -D -m 644 /etc/mke2fs.conf "$root/etc/mke2fs.conf"

# Kernel modules (whole staged tree; it is small with our config).
cp -a "$modroot/lib/modules" "$root/lib/"

# init + guest helpers + tests
install -m 755 "$here/guest/init" "$root/init"
install -m 644 "$here/guest/lib.sh" "$root/lib/rnvme/lib.sh"
# Guest test helpers run by the tests in guest-tests/ (integrity.sh, queues.sh).
for h in "$here"/guest/*.sh; do
    [[ "$h" == */lib.sh ]] || install -m 755 "$h" "$root/lib/rnvme/$(basename "$h")"
done
if ((default_tests)); then
    for t in "$here"/guest/tests/*.sh; do install -m 755 "$t" "$root/tests/"; done
fi
for t in "${tests[@]}"; do
    [[ -f "$t" ]] || die "test script not found: $t"
    install -m 755 "$t" "$root/tests/$(basename "$t")"
done
for a in "${adds[@]}"; do
    src="${a%%:*}"
    if [[ "$a" == *:* ]]; then dest="${a#*:}"; else dest="/extra/$(basename "$src")"; fi
    [[ -e "$src" ]] || die "--add: not found: $src"
    mkdir -p "$(dirname "$root$dest")"
    cp -a "$src" "$root$dest"
done
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"
# e2fsck and mount look for mounted filesystems in /etc/mtab.
ln -sf /proc/mounts "$root/etc/mtab"

# Write to a unique temporary name, then rename: concurrent runs never see a partial file.
tmpout=$(mktemp "$out.XXXXXX")
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner=0:0 --quiet) > "$tmpout"
chmod 644 "$tmpout"
mv -f "$tmpout" "$out"
log "initramfs: $out ($(du -h "$out" | cut -f1)); tests: $(cd "$root/tests" && ls | tr '\n' ' ')"
finish
echo "$out"
exit
}
