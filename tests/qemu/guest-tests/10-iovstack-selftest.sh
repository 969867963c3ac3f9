#!/bin/sh
# iovstack_selftest.ko: smoke test of bvec/iov/bio on real pages, and the differential test of
# iov::IovIter against the kernel's own iov_iter (4000 random cases). Must pass.
IOVSTACK_PARAMS="" . /lib/rnvme/iovstack-check.sh
