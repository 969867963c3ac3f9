#!/bin/sh
# Harness self-test: this test must make the whole run fail.
. /lib/rnvme/lib.sh
pass harness-selftest-pass-line
fail harness-selftest-deliberate-failure
