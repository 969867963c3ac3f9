#!/bin/sh
# Data-integrity test (fio verify matrix, discard/write zeroes, ext4, unload/reload, host image
# region) of the nvme driver on controller rnvme-a (namespaces of 512 and 4096 B blocks); needs
# tests/qemu/run-guest.sh --topology proof. See /lib/rnvme/integrity.sh (guest/integrity.sh).
exec sh /lib/rnvme/integrity.sh nvme rnvme-a
