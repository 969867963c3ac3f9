#!/bin/sh
# iovstack_selftest.ko: smoke test of bvec/iov/bio on real pages, and the differential test of
# iov::IovIter against the kernel's own iov_iter (8000 random cases plus 2000 bvec_iter cases by
# default: "differential: 10000 cases"). Must pass.
# Kernel command line knobs: iovstack_seed=N iovstack_cases=N (see scripts/test-module.sh).
IOVSTACK_PARAMS="${iovstack_seed:+seed=$iovstack_seed} ${iovstack_cases:+cases=$iovstack_cases}" \
    . /lib/rnvme/iovstack-check.sh
