#!/usr/bin/env bash
# Print paths of the cached test kernel (fails if it has not been built).
#
#   scripts/kernel-path.sh [normal|debug] [build|bzImage|modules|dir|release|make-vars]
#
#   build      O= build tree: make -C "$(scripts/kernel-path.sh)" M=$PWD/rnvme $(scripts/kernel-path.sh normal make-vars)
#   bzImage    kernel image
#   modules    staged modules root (contains lib/modules/<release>)
#   dir        the cache entry itself
#   release    `make kernelrelease`
#   make-vars  make variables (LLVM=1 RUSTC=... etc.), one per line
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

variant="${1:-normal}"
what="${2:-build}"
export_kernel_pkg_version
kdir=$(kernel_dir "$variant")
[[ -f "$kdir/.complete" ]] || die "$variant kernel not built ($kdir); run scripts/build-kernel.sh $variant"
case "$what" in
    build)     echo "$kdir/build" ;;
    bzImage)   echo "$kdir/bzImage" ;;
    modules)   echo "$kdir/modules" ;;
    dir)       echo "$kdir" ;;
    release)   cat "$kdir/kernelrelease" ;;
    make-vars) cat "$kdir/make-vars" ;;
    *) die "unknown item '$what'" ;;
esac
exit
}
