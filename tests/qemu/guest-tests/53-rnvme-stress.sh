#!/bin/sh
# Registered-buffer stress on rnvme's namespace character device (issue 8): premap-stress
# (premap-stress.c) runs worker processes that register, use, unregister and re-register io_uring
# buffers (also new pages at the same address), close the device or the ring with I/O in flight,
# exit or get SIGKILLed with I/O in flight, and check every read and finally the whole range
# against a journal of acknowledged writes. Then: no worker left, the device still verifies with
# fio, rnvme's premap counters (debugfs) balance, the module unloads
# (no file or ring keeps it), kmemleak (debug kernel) finds nothing. A shorter run of the same
# program on the C driver's device (rnvme-c) shows the program itself sees no false errors.
# Knobs: rnvme_stress_secs (default 40, debug kernel 20), rnvme_stress_procs (8),
# rnvme_stress_ref_secs (10, debug kernel 0; 0 = no C driver run), rnvme_stress_seed.
. /lib/rnvme/lib.sh

# The debug kernel (kmemleak present) is several times slower: a shorter run, no C driver run,
# so the test stays within the guest's per-test timeout.
if [ -e /sys/kernel/debug/kmemleak ]; then dsecs=20; dref=0; else dsecs=40; dref=10; fi
secs=${rnvme_stress_secs:-$dsecs}
procs=${rnvme_stress_procs:-8}
ref_secs=${rnvme_stress_ref_secs:-$dref}
seed=${rnvme_stress_seed:-$(date +%s)}
ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "stress-ko-present ($ko missing)"; exit 1; }
command -v premap-stress >/dev/null || { fail "stress-helper (premap-stress not in the initramfs)"; exit 1; }
rb=$(nvme_bdf rnvme-b) && cb=$(nvme_bdf rnvme-c) ||
    { fail "stress-topology (needs run-guest.sh --topology proof)"; exit 1; }

nvme_park "$rb"
kmod_loaded rnvme || check stress-load-rnvme insmod "$ko"
check stress-bind-rnvme nvme_bind "$rb" rnvme
rd=$(nvme_wait_disks "$rb" 1 60) || { fail "stress-rnvme-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
rns=/dev/rng${ri}n1
wait_for "$rns" 10 || { fail "stress-chardev ($rns missing)"; exit 1; }
lbs=$(cat "/sys/block/$rd/queue/logical_block_size")
echo "rnvme: $rd $rns, $lbs B blocks"

# ---- the stress run on rnvme -----------------------------------------------------------------
premap-stress "$rns" "$lbs" "$secs" "$procs" 0 "$seed" > /tmp/stress.out 2>&1
rc=$?
cat /tmp/stress.out
if [ "$rc" = 0 ] && grep -q '^premap-stress: final check: [1-9][0-9]* units verified, [0-9]* uncertain.* 0 errors$' /tmp/stress.out; then
    pass "stress-rnvme ($(sed -n 's/^premap-stress: final check: \([0-9]*\) units verified.*/\1/p' /tmp/stress.out) units verified)"
else
    fail "stress-rnvme (exit $rc)"
fi
# The checks' self-test: a short run at another place whose final check must see the unit
# the program zeroes behind its journal's back.
PREMAP_STRESS_CORRUPT=1 premap-stress "$rns" "$lbs" 3 2 32 "$seed" > /tmp/stress-self.out 2>&1
rc=$?
sed 's/^/  self-test: /' /tmp/stress-self.out
[ "$rc" = 1 ] && grep -q 'error: .*final read: unit .* holds generation -1' /tmp/stress-self.out &&
    pass "stress-self-test (a zeroed unit is found)" || fail "stress-self-test (exit $rc)"
# Each kind of event happened at least once (otherwise the run proved less than it says).
for what in 'killed [1-9]' 'exited with I/O in flight [1-9]' 'remaps at the same address [1-9]' \
    'old-registration checks [1-9]' 'new-page checks [1-9]' '\([1-9][0-9]* with I/O in flight\)' \
    'updates [1-9]' 'device closed with I/O in flight [1-9]' 'ring closed with I/O in flight [1-9]'; do
    grep -Eq "$what" /tmp/stress.out || fail "stress-coverage ('$what' not in the summary)"
done
sleep 1
pidof premap-stress >/dev/null && fail "stress-no-workers-left" || pass "stress-no-workers-left"

# ---- rnvme's premapped DMA tags (debugfs) ------------------------------------------------------
# rnvme/README.md: every tag dropped (file closed, evicted, found stale, controller removed) is
# counted in tags_released, so tags_created = tags_released + tags_live, and evictions are among
# the releases. Every worker has exited and its files are closed: nothing may be live.
pm=/sys/kernel/debug/rnvme/rnvme$ri/premap
if [ -r "$pm" ]; then
    sed 's/^/  premap: /' "$pm"
    val() { awk -v k="$1" '$1 == k { print $2 }' "$pm"; }
    live=$(val tags_live); created=$(val tags_created); evicted=$(val tags_evicted)
    released=$(val tags_released); premapped=$(val io_premapped); bytes=$(val tag_bytes_live)
    [ "$live" = 0 ] && [ "${bytes:-0}" = 0 ] && pass "stress-premap-tags-live-0" ||
        fail "stress-premap-tags-live-0 (tags_live '$live', tag_bytes_live '$bytes')"
    [ -n "$created" ] && [ -n "$evicted" ] && [ -n "$released" ] && [ -n "$live" ] &&
        [ "$created" -eq $((released + live)) ] && [ "$evicted" -le "$released" ] &&
        pass "stress-premap-tags-balance ($created created = $released released + $live live; $evicted evicted)" ||
        fail "stress-premap-tags-balance (created '$created', released '$released', live '$live', evicted '$evicted')"
    [ -n "$premapped" ] && [ "$premapped" -gt 0 ] && pass "stress-premap-used ($premapped premapped I/Os)" ||
        fail "stress-premap-used (io_premapped '$premapped')"
    # Plain I/Os on a registered buffer's pages go on its cached tag instead of a second mapping
    # of the same pages (rnvme/README.md); their data is checked by premap-stress above.
    plain=$(val io_plain_on_tag)
    [ -n "$plain" ] && [ "$plain" -gt 0 ] && pass "stress-premap-plain-on-tag ($plain plain I/Os on a tag)" ||
        fail "stress-premap-plain-on-tag (io_plain_on_tag '$plain')"
else
    fail "stress-premap-counters ($pm missing)"
fi

# ---- the device still works ------------------------------------------------------------------
run_fio "stress-fio-after" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bs=16k --iodepth=16 --offset=64M --size=8M --rw=randwrite --verify=crc32c \
    --do_verify=1 --verify_fatal=1

# ---- reference: the same program on the C driver ----------------------------------------------
if [ "$ref_secs" -gt 0 ]; then
    kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
    check stress-bind-nvme nvme_bind "$cb" nvme
    if cd_=$(nvme_wait_disks "$cb" 1 60); then
        ci=$(echo "$cd_" | sed -n 's/^nvme\([0-9]*\)n1$/\1/p')
        cns=/dev/ng${ci}n1
        wait_for "$cns" 10
        premap-stress "$cns" "$(cat "/sys/block/$cd_/queue/logical_block_size")" "$ref_secs" \
            "$procs" 0 "$seed" > /tmp/stress-c.out 2>&1
        rc=$?
        sed 's/^/  nvme: /' /tmp/stress-c.out
        [ "$rc" = 0 ] && pass "stress-reference-nvme" || fail "stress-reference-nvme (exit $rc)"
    else
        fail "stress-nvme-disk"
    fi
    nvme_release "$cb"
fi

# ---- nothing holds the module; kmemleak ------------------------------------------------------
nvme_park "$rb"
check stress-unload rmmod rnvme
nvme_release "$rb"
if [ -w /sys/kernel/debug/kmemleak ]; then
    echo scan > /sys/kernel/debug/kmemleak; sleep 6; echo scan > /sys/kernel/debug/kmemleak
    kmemleak_read /tmp/stress.kmemleak
    if [ -s /tmp/stress.kmemleak ]; then
        head -60 /tmp/stress.kmemleak
        fail "stress-kmemleak ($(grep -c 'unreferenced object' /tmp/stress.kmemleak) objects)"
    else
        pass "stress-kmemleak (clean)"
    fi
fi
