#!/usr/bin/env bash
# Runs every test of the project: formatting and lints, the no_std builds, the cargo test suite
# (unit, property, doc tests and the fuzz-corpus replay), bounded cargo-fuzz runs, and the QEMU
# tests (kernel self-test, differential test against the kernel's iov_iter, NVMe smoke checks).
#
# Usage: scripts/test-all.sh            (everything; installs what is missing first)
#        RNVME_SKIP_QEMU=1 scripts/test-all.sh   (host-only stages; for quick local runs)
#        RNVME_FUZZ_SECONDS=N           (seconds per fuzz target, default 30)
set -euo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()
stage() {
    local name=$1
    shift
    local t0=$SECONDS
    echo "==> [test-all] $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "==> [test-all] $name: ok ($((SECONDS - t0)) s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "==> [test-all] $name: FAILED ($((SECONDS - t0)) s)"
    fi
}

# Set-up is not a test: if it fails nothing else can run.
scripts/setup.sh
# shellcheck source=/dev/null
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

stage "cargo fmt --check" cargo fmt --all -- --check
stage "cargo clippy -D warnings" cargo clippy --workspace --all-targets -- -D warnings
stage "no_std build (x86_64-unknown-none)" \
    cargo build -p bvec -p iov -p bio -p nvme --target x86_64-unknown-none
stage "cargo test (unit, property, doc, fuzz corpus replay)" cargo test --workspace
stage "cargo doc -D warnings" env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
stage "bounded fuzz runs" scripts/fuzz.sh "${RNVME_FUZZ_SECONDS:-30}"
# The benchmark analyses on hand-made input (no QEMU, no perf: under a second each): the
# host-side profile of `scripts/profile-fio.sh --host-perf`, the fio matrix's paired-round
# ratios and confidence intervals (benches/plot_fio.py) and their pooling over runs
# (benches/pool_runs.py), and of `scripts/profile-fio.sh
# --timeline` the per-I/O intervals at QD1 (benches/qemu_timeline.py), the submission batches
# (benches/qemu_batches.py) and the host scheduler's view of their stalls (benches/qemu_sched.py);
# of `scripts/profile-fio.sh --phases` the phase table (benches/phases.py) and the timers it
# inserts into the C driver (benches/c_nvme_phases.py), and the jump-cache counters of the
# QEMU built by scripts/build-qemu-debug.sh (benches/jump_cache.py) and its vCPU threads'
# call chains (benches/qemu_vcpu_chains.py), and the block-end classes per mode and module of
# `scripts/profile-fio.sh --insns` (benches/tb_profile.py).
stage "host profile analysis self-test" benches/host_profile_selftest.sh
stage "fio matrix statistics self-test" benches/plot_fio_selftest.sh
stage "paired runs pooling self-test" python3 benches/pool_runs.py --self-test
stage "QEMU QD1 timeline analysis self-test" python3 benches/qemu_timeline.py --self-test
stage "QEMU batch analysis self-test" python3 benches/qemu_batches.py --self-test
stage "QEMU main-loop scheduling analysis self-test" python3 benches/qemu_sched.py --self-test
stage "phase timer analysis self-test" python3 benches/phases.py --self-test
stage "QEMU jump-cache counter analysis self-test" python3 benches/jump_cache.py --self-test
stage "instruction-count block-end analysis self-test" python3 benches/tb_profile.py --self-test
stage "QEMU vCPU call-chain analysis self-test" python3 benches/qemu_vcpu_chains.py --self-test
stage "C driver phase timer edits self-test" python3 benches/c_nvme_phases.py --self-test
if [ "${RNVME_SKIP_QEMU:-0}" != 1 ]; then
    # The instruction-count profiler of `scripts/profile-fio.sh --insns`: the QEMU plugin builds
    # and counts in QEMU, and its analysis gives the hand-computed figures (seconds).
    stage "QEMU instruction-count plugin self-test" benches/qemu-plugin/selftest.sh
    # The crates inside the kernel under the kernel's own lints and clippy (its MSRV is 6.12's
    # minimum rustc, 1.78): a fresh build so every object is linted.
    lintdir=$(mktemp -d "${TMPDIR:-/tmp}/rnvme-lint.XXXXXX")
    stage "module build with kernel lints (CLIPPY=1)" \
        env RNVME_MODULE_BUILD_DIR="$lintdir" scripts/build-module.sh normal CLIPPY=1
    rm -rf "$lintdir"
    # The phase timers of `scripts/profile-fio.sh --phases` are compiled out of the driver that
    # is tested; built in, under the same lints, so they do not rot.
    lintdir=$(mktemp -d "${TMPDIR:-/tmp}/rnvme-lint.XXXXXX")
    stage "module build with phase timers (RNVME_PHASES=1, CLIPPY=1)" \
        env RNVME_MODULE_BUILD_DIR="$lintdir" scripts/build-module.sh normal CLIPPY=1 RNVME_PHASES=1
    rm -rf "$lintdir"
    stage "QEMU tests (normal and debug kernels, harness self-test)" \
        env RNVME_SKIP_SETUP=1 RNVME_PROOF_DEBUG="${RNVME_PROOF_DEBUG:-1}" scripts/test-qemu.sh
    # rnvme.ko on its own: probe, disks, fio verify per disk, flush/FUA/discard/write zeroes,
    # timeouts, poll queues, SGLs, load/unload cycles (20-rnvme-basic.sh) and the passthrough
    # char devices (nvme-cli against the C driver, io_uring_cmd fio, hostile ioctls:
    # 50-rnvme-passthru.sh), on the four-controller proof topology.
    stage "rnvme driver + passthrough guest tests (normal kernel)" scripts/test-driver.sh normal
    # The same tests on the debug kernel (KASAN, lockdep, kmemleak, atomic-sleep checks, DMA-API
    # debugging with every error counted): issue #7's and #8's proof asks for no report there.
    stage "rnvme driver + passthrough guest tests (debug kernel)" scripts/test-driver.sh debug
    # Issue #10: faults under fio load (hot-unplug + re-plug through the QEMU monitor, injected
    # and real timeouts, allocation failures in probe and I/O, rmmod under load) and
    # acknowledged writes surviving a QEMU kill (two boots on one image), on both kernels; the
    # debug kernel scans kmemleak after every fault (scripts/test-faults.sh). The debug run
    # took 7.5 minutes at load 3 (3c22834) and 9 at load 3-7 (ba9b3f0).
    stage "rnvme fault tests (normal kernel)" scripts/test-faults.sh normal
    stage "rnvme fault tests (debug kernel)" scripts/test-faults.sh debug
fi

echo
if [ "$failed" -ne 0 ]; then
    printf 'failed stage: %s\n' "${failures[@]}"
fi
echo "test-all: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
