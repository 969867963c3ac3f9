#!/bin/sh
# Harness self-test for the differential test: inject_fault=1 corrupts one byte of one of our
# results. The checks below are the normal ones, so this test MUST report FAIL lines and the
# whole run must fail (scripts/test-module.sh checks that it does, and why).
IOVSTACK_PARAMS="inject_fault=1 cases=1000" . /lib/rnvme/iovstack-check.sh
