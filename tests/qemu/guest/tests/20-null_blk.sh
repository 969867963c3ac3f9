#!/bin/sh
# null_blk (C) smoke: load, fio, unload.
. /lib/rnvme/lib.sh

check null_blk-load kmod_load null_blk nr_devices=1 queue_mode=2 gb=1 bs=4096
if wait_for /dev/nullb0 10; then pass nullb0-present; else fail nullb0-present; exit 1; fi
run_fio null_blk-randrw-io_uring --filename=/dev/nullb0 --direct=1 --bs=4k --ioengine=io_uring \
    --iodepth=32 --rw=randrw --time_based --runtime=3 --group_reporting
run_fio null_blk-randread-libaio --filename=/dev/nullb0 --direct=1 --bs=4k --ioengine=libaio \
    --iodepth=32 --rw=randread --time_based --runtime=2
check null_blk-unload kmod_unload null_blk
