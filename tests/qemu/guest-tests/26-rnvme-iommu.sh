#!/bin/sh
# rnvme behind an IOMMU (run-guest.sh --topology chain --iommu, scripts/test-driver.sh's third
# boot): every bus address is a real IOVA, so a wrong one corrupts or faults instead of
# working by accident as it does with direct mapping. On controller rnvme-m:
# - the controller's IOMMU domain translates (DMA or DMA-FQ, not identity);
# - the C driver's max_hw_sectors_kb/max_segments, then rnvme's: equal (behind an IOMMU
#   dma_opt_mapping_size() caps both, nvme_pci_alloc_dev()'s rule);
# - fio verify=crc32c over O_DIRECT from page-aligned and unaligned buffers (multi-segment
#   requests: each is mapped by one dma_map_sg call into one IOVA range), 4k to the largest
#   transfer, libaio and io_uring; the char device with io_uring_cmd fixedbufs=0 (per-I/O
#   mapping, the same path) and fixedbufs=1 (premapped tags, mapped once per buffer);
# - passthrough commands of 16 segments (scatter-pt.c: user pages none of which is physically
#   next to the one before) written and read back equal, each mapped by one call;
# - 16 MiB written by rnvme read back through rnvme and through the C driver: equal sha256;
# - proof of the path: rnvme's debugfs prp counter sg_maps (requests mapped by one call) grew;
#   no PRP list page left allocated.
# Prints `rnvme-iommu: domain <type>, <n> requests mapped by one call` and PASS/FAIL lines.
. /lib/rnvme/lib.sh

ko=/lib/modules/extra/rnvme.ko
[ -f "$ko" ] || { fail "iommu-ko-present ($ko missing)"; exit 1; }
b=$(nvme_bdf rnvme-m) ||
    { fail "iommu-topology (needs controller rnvme-m: run-guest.sh --topology chain)"; exit 1; }
dom=$(cat /sys/bus/pci/devices/$b/iommu_group/type 2>/dev/null || echo none)
case "$dom" in
    DMA|DMA-FQ) pass "iommu-domain-translates ($dom)" ;;
    *) fail "iommu-domain-translates ($dom: boot with run-guest.sh --iommu)"; exit 1 ;;
esac

# Other controllers nobody drives stay so while the C driver loads (it would bind them all).
parked=$(nvme_park_idle_except "$b")
kmod_loaded nvme || { kmod_load nvme-core; kmod_load nvme; }
check iommu-bind-nvme nvme_bind "$b" nvme 60
cd=$(nvme_wait_disks "$b" 1 60) || { fail "iommu-nvme-disk"; exit 1; }
c_lim=$(queue_limits "$cd")

kmod_loaded rnvme || check iommu-load-rnvme insmod "$ko"
check iommu-bind-rnvme nvme_bind "$b" rnvme 60
d=$(nvme_wait_disks "$b" 1 60) || { fail "iommu-rnvme-disk"; exit 1; }
ri=$(echo "$d" | sed -n 's/^rnvme\([0-9]*\)n1$/\1/p')
r_lim=$(queue_limits "$d")
[ "$r_lim" = "$c_lim" ] && pass "iommu-limits-equal-c (rnvme $r_lim, nvme $c_lim)" ||
    fail "iommu-limits-equal-c (rnvme $r_lim, nvme $c_lim)"
hw=${r_lim% *}

grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs none /sys/kernel/debug
stats=/sys/kernel/debug/rnvme/rnvme$ri/prp
[ -r "$stats" ] || { fail "iommu-counters ($stats missing)"; exit 1; }
counter() { sed -n "s/^$1 //p" "$stats"; }
sg0=$(counter sg_maps)

# Block sizes up to the largest transfer, from page-aligned buffers and from buffers 512 and
# 2048 bytes into a page (every request of more than one page is then several segments).
n=0
for job in 4k:0 4k:512 16k:0 16k:2048 64k:0 64k:512 ${hw}k:0 ${hw}k:2048; do
    bs=${job%:*}; off=${job#*:}
    n=$((n + 1))
    eng=libaio; [ $((n % 2)) = 0 ] && eng=io_uring
    run_fio "iommu-$bs-align$off-$eng" --filename=/dev/$d --direct=1 --bs=$bs --mem_align=$off \
        --size=8M --offset=$(( (n % 4) * 8 ))M --ioengine=$eng --iodepth=8 --rw=randwrite \
        --verify=crc32c --do_verify=1 --verify_fatal=1
done
sg1=$(counter sg_maps)
[ $((sg1 - sg0)) -gt 0 ] && pass "iommu-block-one-call-maps ($((sg1 - sg0)) requests)" ||
    fail "iommu-block-one-call-maps (none: sg_maps $sg0 -> $sg1)"

rns=/dev/rng${ri}n1
if wait_for "$rns" 10; then
    for fb in 0 1; do
        run_fio "iommu-uring-cmd-fixedbufs$fb" --filename=$rns --ioengine=io_uring_cmd \
            --cmd_type=nvme --fixedbufs=$fb --bs=64k --mem_align=512 --size=8M --offset=40M \
            --iodepth=4 --rw=randwrite --verify=crc32c --do_verify=1 --verify_fatal=1
    done
    # fio's buffers are often physically contiguous (one segment per command, no list to map):
    # the one-call check uses scatter-pt, whose commands have one segment per page whatever the
    # allocator did. Each of its runs is one write and one read of 16 pages.
    if command -v scatter-pt > /dev/null; then
        sg2=$(counter sg_maps)
        ok=0
        for at in 48 49 50 51; do
            scatter-pt "$rns" $((at * 1048576 + 4096)) 65536 && ok=$((ok + 1))
        done
        sg3=$(counter sg_maps)
        [ "$ok" = 4 ] && pass "iommu-passthru-scattered-verify (4 x 64 KiB of 16 segments)" ||
            fail "iommu-passthru-scattered-verify ($ok of 4 runs written and read back equal)"
        [ $((sg3 - sg2)) -ge $((2 * ok)) ] && [ "$ok" -gt 0 ] &&
            pass "iommu-passthru-one-call-maps ($((sg3 - sg2)) of $((2 * ok)) commands)" ||
            fail "iommu-passthru-one-call-maps (sg_maps $sg2 -> $sg3 for $((2 * ok)) commands)"
    else
        fail "iommu-passthru-one-call-maps (scatter-pt missing: scripts/test-driver.sh adds it)"
    fi
else
    fail "iommu-chardev ($rns missing)"
fi

ref="--filename=/dev/DISK --direct=1 --bs=128k --mem_align=2048 --size=16M --offset=64M
     --ioengine=libaio --iodepth=4 --rw=write --verify=crc32c --verify_fatal=1"
run_fio iommu-ref-write $(echo $ref | sed "s|DISK|$d|") --do_verify=0
run_fio iommu-ref-verify-rnvme $(echo $ref | sed "s|DISK|$d|") --verify_only
r_sha=$(dd if=/dev/$d bs=1048576 skip=64 count=16 2>/dev/null | sha256sum | cut -d' ' -f1)
sg=$(( $(counter sg_maps) - sg0 ))
live=$(counter list_pages_live)
[ "$live" = 0 ] && pass "iommu-no-list-page-held" || fail "iommu-no-list-page-held ($live live)"
echo "rnvme-iommu: domain $dom, $sg requests mapped by one call"

check iommu-rebind-nvme nvme_bind "$b" nvme 60
cd=$(nvme_wait_disks "$b" 1 60) || { fail "iommu-nvme-disk-again"; exit 1; }
run_fio iommu-ref-verify-nvme $(echo $ref | sed "s|DISK|$cd|") --verify_only
c_sha=$(dd if=/dev/$cd bs=1048576 skip=64 count=16 2>/dev/null | sha256sum | cut -d' ' -f1)
[ -n "$r_sha" ] && [ "$r_sha" = "$c_sha" ] && pass "iommu-readback-equal (sha256 $r_sha)" ||
    fail "iommu-readback-equal (rnvme $r_sha, nvme $c_sha)"

nvme_park "$b"; nvme_release "$b"
for o in $parked; do nvme_release "$o"; done
check iommu-unload rmmod rnvme
