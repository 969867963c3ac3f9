#!/bin/sh
# Premapped DMA tags for io_uring registered buffers (issue 8): unmodified fio
# (ioengine=io_uring_cmd, cmd_type=nvme, verify=crc32c) on rnvme's namespace char device with
# fixedbufs=1 and fixedbufs=0, QD1 and QD32, 4K and 128K blocks, and rnvme's debugfs counters
# (/sys/kernel/debug/rnvme/rnvme<C>/premap) read before and after each group of runs: with
# fixedbufs=1 every I/O must be on a premapped tag (none mapped per I/O), with fixedbufs=0 every
# I/O mapped per I/O (none premapped); I/O counts must equal what fio issued (writes plus verify
# reads), tags must be created at most once per registered buffer and open file, and all released
# when fio closes the device; the submit-path time counters must have timed every I/O once, on
# the path it took. Prints
#   rnvme-premap: fixedbufs=1 <a> premapped <b> mapped; fixedbufs=0 <c> premapped <d> mapped
# Then premap-reuse (premap-reuse.c): one buffer registered again and again and used through nine
# open files keeps one tag. Then IOPOLL: rnvme loaded with poll_queues=1, fio io_uring_cmd hipri=1 (an IOPOLL ring) with
# fixedbufs=1 and 0 must verify, every request on a poll queue (counter io_polled), none timed out.
# Needs --topology proof (controller rnvme-b); the C driver's /dev/ng* runs the same fio jobs in
# 50-rnvme-passthru.sh.
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "premap-ko-present ($ko missing)"; exit 1; }
rb=$(nvme_bdf rnvme-b) || { fail "premap-topology (needs run-guest.sh --topology proof)"; exit 1; }
kmod_loaded rnvme || check premap-load-rnvme insmod "$ko"
[ "$(nvme_driver "$rb")" = rnvme ] || check premap-bind-rnvme nvme_bind "$rb" rnvme
rd=$(nvme_wait_disks "$rb" 1 60) || { fail "premap-rnvme-disk"; exit 1; }
ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
rns=/dev/rng${ri}n1
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
stats=/sys/kernel/debug/rnvme/rnvme$ri/premap
wait_for "$rns" 10 || { fail "premap-chardev ($rns missing)"; exit 1; }
[ -r "$stats" ] && pass "premap-counters $stats" || { fail "premap-counters ($stats missing)"; exit 1; }
cat "$stats" | sed 's/^/  /'

counter() { # NAME: the counter's value now
    sed -n "s/^$1 //p" "$stats"
}
snap() { # PREFIX: saves every counter as shell variables PREFIX_<name>
    while read -r _k _v; do eval "$1_$_k=$_v"; done < "$stats"
}

size_mb=4
total_fb0=0; total_fb1=0
for fb in 1 0; do
    snap before
    expect=0; bufs=0; off=0
    for qd in 1 32; do
        for bs in 4 128; do
            run_fio "premap-fio-fb$fb-qd$qd-${bs}k" --filename="$rns" --ioengine=io_uring_cmd \
                --cmd_type=nvme --fixedbufs=$fb --bs=${bs}k --iodepth=$qd --offset=$((off))M \
                --size=${size_mb}M --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
            # Every block written once, then read once by the verify phase.
            expect=$((expect + 2 * size_mb * 1024 / bs))
            bufs=$((bufs + qd))
            off=$((off + size_mb))
        done
    done
    snap after
    pre=$((after_io_premapped - before_io_premapped))
    map=$((after_io_mapped - before_io_mapped))
    created=$((after_tags_created - before_tags_created))
    released=$((after_tags_released - before_tags_released))
    echo "premap fixedbufs=$fb: $pre premapped, $map mapped (fio issued $expect), tags created" \
        "$created released $released live $after_tags_live, per-I/O lists" \
        "$((after_io_premapped_list_per_io - before_io_premapped_list_per_io))," \
        "stale $((after_tags_stale - before_tags_stale))"
    # The submit-path time (rnvme/README.md) is recorded once for every I/O, on the path it took.
    sp=$((after_submit_ios_premapped - before_submit_ios_premapped))
    sm=$((after_submit_ios_mapped - before_submit_ios_mapped))
    nsp=$((after_submit_ns_premapped - before_submit_ns_premapped))
    nsm=$((after_submit_ns_mapped - before_submit_ns_mapped))
    [ "$sp" = "$pre" ] && [ "$sm" = "$map" ] &&
        pass "premap-fb$fb-submit-timed ($sp premapped in $nsp ns, $sm mapped in $nsm ns)" ||
        fail "premap-fb$fb-submit-timed ($sp premapped, $sm mapped timed; $pre premapped, $map mapped)"
    if [ "$fb" = 1 ]; then
        total_fb1="$pre $map"
        [ "$pre" = "$expect" ] && [ "$map" = 0 ] &&
            pass "premap-fb1-all-premapped ($pre of $expect)" ||
            fail "premap-fb1-all-premapped ($pre premapped, $map mapped, expected $expect premapped)"
        # At most one tag per registered buffer (fio registers one per queue slot) and open
        # file: fio opens the device again for its verify phase, so two per buffer.
        [ "$created" -ge 1 ] && [ "$created" -le $((2 * bufs)) ] &&
            pass "premap-fb1-tags-created ($created for $bufs buffers, 2 opens)" ||
            fail "premap-fb1-tags-created ($created for $bufs buffers, 2 opens)"
    else
        total_fb0="$pre $map"
        [ "$map" = "$expect" ] && [ "$pre" = 0 ] &&
            pass "premap-fb0-all-mapped ($map of $expect)" ||
            fail "premap-fb0-all-mapped ($map mapped, $pre premapped, expected $expect mapped)"
        [ "$created" = 0 ] && pass "premap-fb0-no-tags" || fail "premap-fb0-no-tags ($created created)"
    fi
    # fio closed the device: its tags are released, none is left.
    [ "$released" = "$created" ] && [ "$after_tags_live" = 0 ] &&
        pass "premap-fb$fb-tags-released ($released)" ||
        fail "premap-fb$fb-tags-released ($released of $created released, $after_tags_live live)"
done
set -- $total_fb1; a=$1; b=$2
set -- $total_fb0; c=$1; d=$2
echo "rnvme-premap: fixedbufs=1 $a premapped $b mapped; fixedbufs=0 $c premapped $d mapped"

# A mixed-size job on registered buffers (tags reused across block sizes) still verifies.
run_fio "premap-fio-bsrange" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
    --fixedbufs=1 --bsrange=4k-128k --iodepth=16 --offset=$((off))M --size=8M --rw=randwrite \
    --verify=crc32c --do_verify=1 --verify_fatal=1
[ "$(counter tags_live)" = 0 ] && pass "premap-none-live-at-end" ||
    fail "premap-none-live-at-end ($(counter tags_live) live)"
cat "$stats" | sed 's/^/  /'

# One buffer registered again and again (new pages, same pages, an update) and used through nine
# open files: its pages are mapped by one tag at a time (premap-reuse.c, exact counter changes).
if command -v premap-reuse >/dev/null; then
    premap-reuse "$rns" "$(cat "/sys/block/$rd/queue/logical_block_size")" "$stats" \
        $((off + 16)) > /tmp/premap-reuse.out 2>&1
    rc=$?
    sed 's/^/  /' /tmp/premap-reuse.out
    [ "$rc" = 0 ] && grep -q '^premap-reuse: 0 errors$' /tmp/premap-reuse.out &&
        pass "premap-reuse (one tag per buffer's pages)" || fail "premap-reuse (exit $rc)"
else
    fail "premap-reuse (helper not in the initramfs)"
fi

# ---- IOPOLL (uring_cmd_iopoll) on a poll queue -------------------------------------------------
if [ "$(cat /sys/module/rnvme/parameters/poll_queues)" = 0 ]; then
    check premap-rmmod rmmod rnvme
    check premap-load-poll insmod "$ko" poll_queues=1
    [ "$(nvme_driver "$rb")" = rnvme ] || check premap-bind-poll nvme_bind "$rb" rnvme
    rd=$(nvme_wait_disks "$rb" 1 60) || { fail "premap-poll-disk"; exit 1; }
    ri=$(echo "$rd" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
    rns=/dev/rng${ri}n1
    stats=/sys/kernel/debug/rnvme/rnvme$ri/premap
    wait_for "$rns" 10 || { fail "premap-poll-chardev ($rns missing)"; exit 1; }
fi
for fb in 1 0; do
    p0=$(counter io_polled); s0=$(counter io_premapped); m0=$(counter io_mapped)
    t0=$(dmesg | grep -c "timed out")
    run_fio "premap-fio-hipri-fb$fb" --filename="$rns" --ioengine=io_uring_cmd --cmd_type=nvme \
        --hipri=1 --fixedbufs=$fb --bs=4k --iodepth=8 --offset=$((off + 8))M --size=2M \
        --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
    p1=$(counter io_polled)
    # 512 writes + 512 verify reads, each on a poll queue (no interrupt there: completed by
    # polling, not by the timeout handler's reaping, which would log "timed out").
    [ $((p1 - p0)) -ge 1024 ] && pass "premap-hipri-fb$fb-poll-queue ($((p1 - p0)) requests)" ||
        fail "premap-hipri-fb$fb-poll-queue ($((p1 - p0)) requests on poll queues, wanted 1024)"
    [ "$(dmesg | grep -c "timed out")" = "$t0" ] && pass "premap-hipri-fb$fb-no-timeout" ||
        fail "premap-hipri-fb$fb-no-timeout (an I/O timed out)"
    echo "hipri fixedbufs=$fb: $(($(counter io_premapped) - s0)) premapped," \
        "$(($(counter io_mapped) - m0)) mapped, $((p1 - p0)) polled"
done
