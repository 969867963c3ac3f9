#!/bin/sh
# Guest helper (installed as /lib/rnvme/iovstack-check.sh): load iovstack_selftest.ko with
# $IOVSTACK_PARAMS, then report its results as PASS:/FAIL: lines for the /init runner.
#
# The module prints (kernel log):
#   smoke: N checks, M failures
#   differential: N cases, M mismatches
#   bio-differential: N cases, M mismatches     (bio::split_rw_at vs the kernel's bio_split_rw_at)
#   batch-differential: N cases, M mismatches   (kernel_glue's blk_mq_add_to_batch vs the kernel's)
#   selftest: PASS | selftest: FAIL      (on FAIL, init returns -EINVAL and insmod fails)
# Each is checked separately, so a failure says which part failed.
. /lib/rnvme/lib.sh

mod=iovstack_selftest
ko=$(kmod_path "$mod")
if [ -z "$ko" ]; then
    fail "iovstack-module-present ($mod.ko not in the initramfs)"
    exit 1
fi
kmod_unload "$mod" 2>/dev/null

# Only kernel messages after this marker belong to this run.
marker="iovstack-check: start $$ $(cut -d' ' -f1 /proc/uptime)"
echo "$marker" > /dev/kmsg
echo "--- insmod $ko $IOVSTACK_PARAMS"
# shellcheck disable=SC2086
insmod "$ko" $IOVSTACK_PARAMS
rc=$?
dmesg | sed -n "/$marker/,\$p" | sed 's/^\[[^]]*\] //' | grep -E '^iovstack_selftest: ' \
    | sed 's/^iovstack_selftest: /iovstack: /' > /tmp/iovstack.log
cat /tmp/iovstack.log

smoke=$(grep -E '^iovstack: smoke: [0-9]+ checks, [0-9]+ failures$' /tmp/iovstack.log | tail -n1)
diffl=$(grep -E '^iovstack: differential: [0-9]+ cases, [0-9]+ mismatches$' /tmp/iovstack.log | tail -n1)
biol=$(grep -E '^iovstack: bio-differential: [0-9]+ cases, [0-9]+ mismatches$' /tmp/iovstack.log | tail -n1)
batchl=$(grep -E '^iovstack: batch-differential: [0-9]+ cases, [0-9]+ mismatches$' /tmp/iovstack.log | tail -n1)
verdict=$(grep -E '^iovstack: selftest: (PASS|FAIL)$' /tmp/iovstack.log | tail -n1)

if [ -z "$smoke" ]; then
    fail "iovstack-smoke (no summary line)"
elif echo "$smoke" | grep -qE ' 0 failures$'; then
    pass "iovstack-smoke (${smoke#iovstack: })"
else
    fail "iovstack-smoke (${smoke#iovstack: })"
fi

# check_differential NAME LINE: LINE is "...: N cases, M mismatches" (or empty); passes when it
# has 0 mismatches over at least $IOVSTACK_MIN_CASES (default 1000) cases.
check_differential() {
    if [ -z "$2" ]; then
        fail "$1 (no summary line)"
        return
    fi
    n=$(echo "$2" | sed -E 's/.*differential: ([0-9]+) cases.*/\1/')
    m=$(echo "$2" | sed -E 's/.* ([0-9]+) mismatches$/\1/')
    if [ "$m" = 0 ] && [ "$n" -ge "${IOVSTACK_MIN_CASES:-1000}" ]; then
        pass "$1 ($n cases, $m mismatches)"
    else
        fail "$1 ($n cases, $m mismatches; need >= ${IOVSTACK_MIN_CASES:-1000} cases, 0 mismatches)"
    fi
}
check_differential iovstack-differential "$diffl"
check_differential iovstack-bio-differential "$biol"
check_differential iovstack-batch-differential "$batchl"

if [ "$rc" = 0 ] && [ "$verdict" = "iovstack: selftest: PASS" ]; then
    pass "iovstack-selftest (insmod ok, selftest: PASS)"
    check iovstack-rmmod kmod_unload "$mod"
else
    fail "iovstack-selftest (insmod exit $rc, ${verdict:-no verdict line})"
fi
