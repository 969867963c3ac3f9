#!/usr/bin/env bash
# Builds the C NVMe driver of the cached normal test kernel (nvme-core.ko, nvme.ko) with the
# same phase timers as rnvme.ko built with RNVME_PHASES=1 (rnvme/driver/phases.rs), so
# scripts/profile-fio.sh --phases can time both drivers' passthrough submit path and interrupt
# handler phase by phase in one boot.
#
#   scripts/build-c-nvme-phases.sh      # prints the directory holding nvme-core.ko and nvme.ko
#
# The kernel's drivers/nvme/host is copied out of the cached source and built out of tree
# against the cached build (same configuration, so the modules load in the test kernel), after
# benches/c_nvme_phases.py has inserted the timers: time-stamp counter reads around the phases
# of nvme_ns_uring_cmd()/nvme_uring_cmd_io() (drivers/nvme/host/ioctl.c) and around nvme_irq()
# (drivers/nvme/host/pci.c), summed into read-only module parameters
# (/sys/module/nvme_core/parameters/phase_*, /sys/module/nvme/parameters/phase_irq_*).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export_kernel_pkg_version

kbuild=$("$RNVME_REPO/scripts/kernel-path.sh" normal build)
mapfile -t makevars < <("$RNVME_REPO/scripts/kernel-path.sh" normal make-vars)
src="$RNVME_CACHE/src/${RNVME_KERNEL_PKGVER//[^A-Za-z0-9.]/_}/drivers/nvme/host"
[[ -f "$src/ioctl.c" ]] || die "no kernel source at $src (scripts/build-kernel.sh normal)"
out="$RNVME_WORK/c-nvme-phases"
rm -rf "$out"
mkdir -p "$out"
cp -r "$src/." "$out/"
python3 "$RNVME_REPO/benches/c_nvme_phases.py" "$out"
make -C "$kbuild" M="$out" "${makevars[@]}" -j"$(nproc)" modules >"$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log" >&2; die "the timed C driver did not build ($out/build.log)"; }
[[ -f "$out/nvme-core.ko" && -f "$out/nvme.ko" ]] || die "no nvme-core.ko/nvme.ko in $out"
echo "$out"
