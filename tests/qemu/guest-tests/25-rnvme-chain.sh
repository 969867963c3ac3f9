#!/bin/sh
# Transfers above 2 MiB in chained PRP lists (issue 7), on controller rnvme-m (QEMU mdts=10,
# 4 MiB; run-guest.sh --topology chain, scripts/test-driver.sh's second boot; QEMU's controller
# takes at most 1024 PRP entries, so 8 MiB transfers cannot be tested on it: see run-guest.sh):
# - the C driver's max_hw_sectors_kb/max_segments for the controller, then rnvme's: equal
#   (the C driver's rules: min(8 MiB, MDTS, dma_opt_mapping_size), min(max_hw/8 + 1, 128));
# - max_sectors_kb raised to max_hw_sectors_kb, then fio verify=crc32c with O_DIRECT blocks of
#   3M, 2M+4k and 2M+8k (PRP lists of 512 to 769 entries) from page-aligned buffers and from
#   buffers starting 512, 2048 and 3584 bytes into a page, 4M from page-aligned buffers (1023
#   entries: two pages, the last entry in the last slot) and 4M-4k from all four starts, over
#   libaio and io_uring (a request of more than 1024 pages, i.e. 4M from an unaligned buffer,
#   would fail in QEMU for either driver);
# - on the char device, io_uring_cmd with registered 4M-4k buffers: every I/O ends on the
#   premapped list's chain boundary, so each gets a chained list of its own (1022 entries);
# - 32 MiB written by rnvme in 4 MiB commands read back and verified by fio through rnvme and
#   through the C driver, and equal sha256 through both;
# - proof that commands above 2 MiB reached the controller whole: rnvme's debugfs counters
#   (/sys/kernel/debug/rnvme/rnvme<C>/prp: io_over_2mib, prp_chained, list_pages; how many
#   block requests stay above 2 MiB depends on how physically contiguous fio's buffers are:
#   both drivers allow 128 segments, so the 4M and 3M transfers that must stay whole come from
#   contig-dio.c, which picks user memory of few physical runs through /proc/self/pagemap)
#   and the sectors per request in /sys/block/<disk>/stat; no list page left allocated
#   afterwards.
# Prints `rnvme-chain: <n> commands over 2 MiB, <c> chained lists, <p> list pages, <s> sectors
# per request` and PASS/FAIL lines.
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "chain-ko-present ($ko missing)"; exit 1; }
b=$(nvme_bdf rnvme-m) ||
    { fail "chain-topology (needs controller rnvme-m: run-guest.sh --topology chain)"; exit 1; }

# Other controllers nobody drives stay so while the C driver loads (it would bind them all).
parked=$(nvme_park_idle_except "$b")

# The C driver's limits and its view of the reference region, later compared with rnvme's.
kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
check chain-bind-nvme nvme_bind "$b" nvme 60
cd=$(nvme_wait_disks "$b" 1 60) || { fail "chain-nvme-disk"; exit 1; }
c_lim=$(queue_limits "$cd")
echo "nvme $cd: max_hw_sectors_kb max_segments = $c_lim (max_sectors_kb $(cat /sys/block/$cd/queue/max_sectors_kb))"

# sgl_threshold=0: PRPs for every command, as this test is about PRP lists (with the default
# 32 KiB, the C driver's rule, a request whose segments average 32 KiB or more takes an SGL,
# and every request above 2 MiB within 128 segments does).
kmod_loaded rnvme || check chain-load-rnvme insmod "$ko" sgl_threshold=0
check chain-bind-rnvme nvme_bind "$b" rnvme 60
d=$(nvme_wait_disks "$b" 1 60) || { fail "chain-rnvme-disk"; exit 1; }
ri=$(echo "$d" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
r_lim=$(queue_limits "$d")
echo "rnvme $d: max_hw_sectors_kb max_segments = $r_lim"
[ "$r_lim" = "$c_lim" ] && pass "chain-limits-equal-c (rnvme $r_lim, nvme $c_lim)" ||
    fail "chain-limits-equal-c (rnvme $r_lim, nvme $c_lim)"
hw=${r_lim% *}
[ "$hw" -gt 2048 ] && pass "chain-limit-above-2m ($hw KiB)" || fail "chain-limit-above-2m ($hw KiB)"
echo "$hw" > /sys/block/$d/queue/max_sectors_kb
[ "$(cat /sys/block/$d/queue/max_sectors_kb)" = "$hw" ] && pass "chain-max-sectors-raised ($hw KiB)" ||
    fail "chain-max-sectors-raised ($(cat /sys/block/$d/queue/max_sectors_kb) KiB)"

grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
stats=/sys/kernel/debug/rnvme/rnvme$ri/prp
[ -r "$stats" ] && pass "chain-counters $stats" || { fail "chain-counters ($stats missing)"; exit 1; }
counter() { sed -n "s/^$1 //p" "$stats"; }
# Requests and sectors of the disk so far (reads + writes; /sys/block/<disk>/stat fields 1 3 5 7).
ios() { awk '{ print $1 + $5 }' /sys/block/$d/stat; }
sectors() { awk '{ print $3 + $7 }' /sys/block/$d/stat; }
over0=$(counter io_over_2mib); ch0=$(counter prp_chained); pg0=$(counter list_pages)
ios0=$(ios); sec0=$(sectors)

# Commands above 2 MiB whatever fio's buffers look like: contig-dio writes and reads back 4M and
# 3M from user memory it picked for few physical runs (at most max_segments), so each stays one
# request (and one command: io_over_2mib grows by 2 per call).
maxseg=$(cat /sys/block/$d/queue/max_segments)
if command -v contig-dio > /dev/null; then
    for job in 4194304:$((32 << 20)) 3145728:$((40 << 20)); do
        len=${job%:*}; at=${job#*:}
        o0=$(counter io_over_2mib)
        if contig-dio /dev/$d "$at" "$len" "$maxseg" 256; then
            o=$(( $(counter io_over_2mib) - o0 ))
            [ "$o" -ge 2 ] && pass "chain-contig-$len-over-2m ($o commands over 2 MiB)" ||
                fail "chain-contig-$len-over-2m ($o commands over 2 MiB, want 2)"
        else
            fail "chain-contig-$len (contig-dio failed)"
        fi
    done
else
    fail "chain-contig (contig-dio missing from the image)"
fi

# Block sizes and buffer start offsets into a page (fio mem_align): 3M, 2052k, 2056k and 4092k
# from every start, 4M only page-aligned (list entries: 767, 512, 513, 1022 for page-aligned
# buffers, one more from the others; 4M: 1023).
n=0
for job in 3M:0 3M:512 3M:2048 3M:3584 2052k:0 2052k:512 2052k:2048 2052k:3584 \
           2056k:0 2056k:512 2056k:2048 2056k:3584 4M:0 4092k:0 4092k:512 4092k:2048 4092k:3584; do
    bs=${job%:*}; off=${job#*:}
    n=$((n + 1))
    eng=libaio; [ $((n % 2)) = 0 ] && eng=io_uring
    run_fio "chain-$bs-align$off-$eng" --filename=/dev/$d --direct=1 --bs=$bs --mem_align=$off \
        --size=16M --offset=$(( (n % 3) * 16 ))M --ioengine=$eng --iodepth=2 --rw=randwrite \
        --verify=crc32c --do_verify=1 --verify_fatal=1
done
ios1=$(ios); sec1=$(sectors)

# The char device with registered buffers of 1023 pages: the I/O's last entry is the first of the
# premapped list's second page, so each I/O gets a chained list of its own (1022 entries).
rns=/dev/rng${ri}n1
pstats=/sys/kernel/debug/rnvme/rnvme$ri/premap
if wait_for "$rns" 10; then
    sed 's/^/  premap before: /' "$pstats"
    per0=$(sed -n 's/^io_premapped_list_per_io //p' "$pstats")
    ch_a=$(counter prp_chained)
    run_fio chain-uring-cmd-fixedbufs --filename=$rns --ioengine=io_uring_cmd --cmd_type=nvme \
        --fixedbufs=1 --bs=4092k --mem_align=4096 --size=16M --offset=48M --iodepth=1 --rw=randwrite \
        --verify=crc32c --do_verify=1 --verify_fatal=1
    sed 's/^/  premap after: /' "$pstats"
    per=$(( $(sed -n 's/^io_premapped_list_per_io //p' "$pstats") - per0 ))
    ch_b=$(( $(counter prp_chained) - ch_a ))
    # 4 writes and 4 verify reads, each with its own chained list.
    [ "$per" -ge 8 ] && [ "$ch_b" -ge 8 ] &&
        pass "chain-premap-per-io-chained ($per per-I/O lists, $ch_b chained)" ||
        fail "chain-premap-per-io-chained ($per per-I/O lists, $ch_b chained, want >= 8 each)"
else
    fail "chain-chardev ($rns missing)"
fi

# 32 MiB in 4 MiB commands, read back through rnvme (fio verify_only, sha256) and later the C
# driver.
ref="--filename=/dev/DISK --direct=1 --bs=4M --size=32M --offset=64M
     --ioengine=libaio --iodepth=2 --rw=write --verify=crc32c --verify_fatal=1"
run_fio chain-ref-write $(echo $ref | sed "s|DISK|$d|") --do_verify=0
run_fio chain-ref-verify-rnvme $(echo $ref | sed "s|DISK|$d|") --verify_only
r_sha=$(dd if=/dev/$d bs=1048576 skip=64 count=32 2>/dev/null | sha256sum | cut -d' ' -f1)

over=$(( $(counter io_over_2mib) - over0 )); ch=$(( $(counter prp_chained) - ch0 ))
pg=$(( $(counter list_pages) - pg0 ))
nr=$((ios1 - ios0)); [ "$nr" -gt 0 ] || nr=1
spr=$(( (sec1 - sec0) / nr ))
cat "$stats" | sed 's/^/  /'
echo "rnvme-chain: $over commands over 2 MiB, $ch chained lists, $pg list pages, $spr sectors per request"
[ "$over" -gt 0 ] && pass "chain-commands-over-2m ($over)" || fail "chain-commands-over-2m (none)"
[ "$ch" -gt 0 ] && [ "$pg" -gt "$ch" ] && pass "chain-lists-chained ($ch lists, $pg pages)" ||
    fail "chain-lists-chained ($ch lists, $pg pages)"
live=$(counter list_pages_live)
[ "$live" = 0 ] && pass "chain-no-list-page-held" || fail "chain-no-list-page-held ($live live)"
# Without an IOMMU each contiguous run is mapped by its own call (26-rnvme-iommu.sh: one call).
sgm=$(counter sg_maps)
[ "$sgm" = 0 ] && pass "chain-no-one-call-maps-without-iommu" ||
    fail "chain-no-one-call-maps-without-iommu ($sgm requests mapped by one call)"

# The C driver reads what rnvme wrote.
check chain-rebind-nvme nvme_bind "$b" nvme 60
cd=$(nvme_wait_disks "$b" 1 60) || { fail "chain-nvme-disk-again"; exit 1; }
run_fio chain-ref-verify-nvme $(echo $ref | sed "s|DISK|$cd|") --verify_only
c_sha=$(dd if=/dev/$cd bs=1048576 skip=64 count=32 2>/dev/null | sha256sum | cut -d' ' -f1)
[ -n "$r_sha" ] && [ "$r_sha" = "$c_sha" ] && pass "chain-readback-equal (sha256 $r_sha)" ||
    fail "chain-readback-equal (rnvme $r_sha, nvme $c_sha)"

# Leave the controllers as they were: this one unbound, rnvme unloaded.
nvme_park "$b"; nvme_release "$b"
for o in $parked; do nvme_release "$o"; done
check chain-unload rmmod rnvme
