#!/usr/bin/env bash
# Host side of the integrity test: after QEMU has exited, the kept images must hold exactly what
# the guest wrote. The guest (guest/integrity.sh) prints one line per region it wrote and read
# back across a driver unload/reload:
#   rnvme-image: serial=S nsid=N offset=BYTES length=BYTES sha256=HEX driver=D
# This script recomputes each region's sha256 on DIR/S-nN.img (run-guest.sh --keep-images DIR)
# and compares.
#
#   tests/qemu/check-images.sh [--self-test] CONSOLE_LOG IMAGE_DIR
#     --self-test   also prove the comparison can fail: flip one byte of the first region in its
#                   image, check that the comparison now reports a mismatch, restore the byte
#                   and check again
# Prints `host-image-check: N regions, M mismatches`; exits 0 iff N > 0 and M == 0 (and, with
# --self-test, the flipped byte was caught).
set -euo pipefail
# Parsed as one block, so editing this file while it runs cannot break the run.
{
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/lib.sh"

self_test=0
if [[ "${1:-}" == --self-test ]]; then self_test=1; shift; fi
(($# == 2)) || die "usage: check-images.sh [--self-test] CONSOLE_LOG IMAGE_DIR"
logf="$1"
dir="$2"
[[ -f "$logf" ]] || die "console log not found: $logf"
[[ -d "$dir" ]] || die "image directory not found: $dir"

mapfile -t lines < <(grep -aE '^rnvme-image: ' "$logf" | tr -d '\r')

# field LINE NAME: the value of NAME=... in LINE.
field() { sed -nE "s/.* $2=([^ ]+).*/\1/p" <<<" $1"; }

# compare: check every region; prints one line each and the summary; sets mismatches.
mismatches=0
compare() {
    local line serial nsid off len want img got
    mismatches=0
    for line in "${lines[@]}"; do
        serial=$(field "$line" serial) nsid=$(field "$line" nsid) off=$(field "$line" offset)
        len=$(field "$line" length) want=$(field "$line" sha256)
        img="$dir/$serial-n$nsid.img"
        if [[ ! "$off" =~ ^[0-9]+$ || ! "$len" =~ ^[0-9]+$ || ! -f "$img" ]]; then
            log "host-image-check: $line: bad line or no image $img"
            mismatches=$((mismatches + 1))
            continue
        fi
        got=$(dd if="$img" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" 2>/dev/null |
            sha256sum | cut -d' ' -f1)
        if [[ "$got" == "$want" ]]; then
            log "host-image-check: $serial n$nsid [$off, +$len) written by $(field "$line" driver): OK"
        else
            log "host-image-check: $serial n$nsid [$off, +$len) written by $(field "$line" driver): MISMATCH (host $got, guest $want)"
            mismatches=$((mismatches + 1))
        fi
    done
    echo "host-image-check: ${#lines[@]} regions, $mismatches mismatches"
}

compare
rc=0
((${#lines[@]} > 0 && mismatches == 0)) || rc=1
if ((self_test && rc == 0)); then
    first="${lines[0]}"
    img="$dir/$(field "$first" serial)-n$(field "$first" nsid).img"
    pos=$(( $(field "$first" offset) + $(field "$first" length) / 2 ))
    orig=$(dd if="$img" bs=1 skip="$pos" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
    flip() { printf "\\$(printf '%03o' "$1")" | dd of="$img" bs=1 seek="$pos" count=1 conv=notrunc 2>/dev/null; }
    flip $((orig ^ 0x5a))
    log "host-image-check self-test: flipped byte $pos of $img"
    compare >/dev/null 2>&1 || true
    caught=$mismatches
    flip "$orig"
    compare >/dev/null 2>&1 || true
    if ((caught == 1 && mismatches == 0)); then
        echo "host-image-check self-test: the flipped byte was reported as 1 mismatch; restored image matches"
    else
        echo "host-image-check self-test: FAILED (flipped byte gave $caught mismatches, restored $mismatches)"
        rc=1
    fi
fi
exit "$rc"
exit
}
