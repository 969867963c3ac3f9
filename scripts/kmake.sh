#!/usr/bin/env bash
# Run make against the cached test kernel's build tree with the right toolchain.
#
#   scripts/kmake.sh [--variant normal|debug] ARGS...
#   e.g. scripts/kmake.sh M=$PWD/rnvme modules
#        scripts/kmake.sh --variant debug M=$PWD/rnvme modules
# Equivalent to: make -C "$(scripts/kernel-path.sh VARIANT)" $(scripts/kernel-path.sh VARIANT make-vars) ARGS...
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
variant=normal
if [[ "${1:-}" == --variant ]]; then variant="$2"; shift 2; fi
build=$("$RNVME_REPO/scripts/kernel-path.sh" "$variant" build)
mapfile -t vars < <("$RNVME_REPO/scripts/kernel-path.sh" "$variant" make-vars)
exec make -C "$build" "${vars[@]}" -j"$(nproc)" "$@"
exit
}
