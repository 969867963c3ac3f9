#!/bin/sh
# rnull (Rust null block driver from the kernel tree) smoke: proves Rust modules load.
. /lib/rnvme/lib.sh

check rnull-load kmod_load rnull_mod
if wait_for /dev/rnullb0 10; then pass rnullb0-present; else fail rnullb0-present; ls /dev; exit 1; fi
run_fio rnull-randread-io_uring --filename=/dev/rnullb0 --direct=1 --bs=4k --ioengine=io_uring \
    --iodepth=16 --rw=randread --size=64M --time_based --runtime=2
check rnull-unload kmod_unload rnull_mod
