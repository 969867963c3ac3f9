#!/bin/sh
# I/O queues of the rnvme driver: one hardware queue per CPU with vectors firing on every CPU
# (rnvme-a), and a controller granting one I/O queue (rnvme-q, max_ioqpairs=1); needs
# tests/qemu/run-guest.sh --topology proof. See /lib/rnvme/queues.sh (guest/queues.sh).
exec sh /lib/rnvme/queues.sh rnvme rnvme-a rnvme-q
