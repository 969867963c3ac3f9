#!/bin/sh
# Harness self-test: every test line passes, but a (simulated) KASAN report lands in
# the kernel log. The kernel-log checks (guest and host side) must fail the run.
. /lib/rnvme/lib.sh
echo "<3>BUG: KASAN: harness self-test simulated report (not a real bug)" > /dev/kmsg
pass harness-selftest-kernel-report-written
