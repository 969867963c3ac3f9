#!/usr/bin/env bash
# Self-test of the host-side profile (scripts/profile-fio.sh --host-perf), run by
# scripts/test-all.sh: benches/host_profile.py on a hand-made QEMU trace, `perf script` text and
# guest log whose per-I/O figures are computed here by hand: the runs cut at the right markers
# (QEMU's wall-clock stamps moved onto perf's clock), samples classed by QEMU thread, TCG's code
# and QEMU's unnamed functions told apart, other processes and idle time, uprobe hits counted,
# samples outside every run ignored, and the rnvme - C difference.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "host_profile selftest: FAIL: $*" >&2; exit 1; }

# Wall clock = perf clock + 1000 s. Run 1 (rnvme, 100 I/Os): perf time 10..11 s; run 2 (nvme,
# 50 I/Os): 12..14 s.
cat > "$tmp/trace.log" <<'EOF'
700@1010.000000:pci_nvme_mmio_read addr 0xc data 0x0 size 4
700@1010.500000:pci_nvme_mmio_doorbell_sq sqid 1 new_tail 1
700@1011.000000:pci_nvme_mmio_read addr 0xc data 0x0 size 4
700@1012.000000:pci_nvme_mmio_read addr 0xc data 0x0 size 4
700@1014.000000:pci_nvme_mmio_read addr 0xc data 0x0 size 4
EOF
cat > "$tmp/guest.log" <<'EOF'
fio-profile wl dev=rnvme ios=100 irqs=100 irqs_per_io=1.000 marker=1 smark=0
fio-profile wl dev=nvme ios=50 irqs=50 irqs_per_io=1.000 marker=3 smark=0
EOF
cat > "$tmp/perf.txt" <<'EOF'
       CPU 0/TCG   500/501   9.900000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
       CPU 0/TCG   500/501  10.100000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
       CPU 0/TCG   500/501  10.200000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
       CPU 1/TCG   500/502  10.300000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
       CPU 1/TCG   500/502  10.400000000: cpu-clock/period=250000/:      55bce8a00010 helper_x+0x10 (/usr/bin/qemu-system-x86_64)
       CPU 1/TCG   500/502  10.450000000: probe_qemu:tb_gen_code: (55bce8a00000)
       CPU 1/TCG   500/502  10.460000000: probe_qemu:tb_gen_code: (55bce8a00000)
 qemu-system-x86   500/500  10.500000000: cpu-clock/period=250000/:      55bce8a00020 [unknown] (/usr/bin/qemu-system-x86_64)
 qemu-system-x86   500/500  10.600000000: cpu-clock/period=250000/:      55bce8a00020 [unknown] (/usr/bin/qemu-system-x86_64)
          worker   500/503  10.650000000: cpu-clock/period=250000/:  ffffffff81000000 _copy_to_iter ([kernel.kallsyms])
            bash   600/600  10.700000000: cpu-clock/period=250000/:      55bce8a00020 main (/usr/bin/bash)
         swapper     0/0    10.800000000: cpu-clock/period=250000/:  ffffffff81000100 default_idle ([kernel.kallsyms])
       CPU 0/TCG   500/501  11.500000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
       CPU 0/TCG   500/501  13.000000000: cpu-clock/period=250000/:      55bce8af5cce [unknown] (/tmp/perf-500.map)
EOF
out=$(python3 "$here/host_profile.py" --trace "$tmp/trace.log" --perf-script "$tmp/perf.txt" \
    --log "$tmp/guest.log" --clock-offset 1000 --period-us 250 --cpus 2)
echo "$out" | sed 's/^/  /'
expect() { grep -qxF -- "$1" <<< "$out" || fail "missing line: $1"; }
# Run 1: 1e4 µs per second per I/O; a sample is 250 µs: 2.5 µs/IO. vCPU: 4 samples = 10.0,
# main 2 = 5.0, worker 1 = 2.5, bash 1 = 2.5, idle = 2 CPUs x 1 s x 1e4 - 20.0 = 19980.0.
expect "host-profile wl rnvme: ios 100 wall 10000.0 | vcpu 10.0 main 5.0 worker 2.5 other 0.0 | host-other 2.5 idle 19980.0 (us/IO)"
expect "host-profile-calls wl rnvme 0.020 vcpu tb_gen_code"
expect "host-profile-sym wl rnvme 7.50 vcpu [tcg code]"
expect "host-profile-sym wl rnvme 2.50 vcpu helper_x (/usr/bin/qemu-system-x86_64)"
expect "host-profile-sym wl rnvme 5.00 main [unknown qemu-system-x86_64]"
# Run 2: 2 s, 50 I/Os: 2e4 µs per second per I/O (wall 4e4), one vCPU sample = 5.0; idle
# 2 x 2 x 2e4 - 5.0. The sample at 11.5 s lies in no run.
expect "host-profile wl nvme: ios 50 wall 40000.0 | vcpu 5.0 main 0.0 worker 0.0 other 0.0 | host-other 0.0 idle 79995.0 (us/IO)"
expect "host-profile-sym wl nvme 5.00 vcpu [tcg code]"
expect "host-profile-diff wl +2.50 vcpu [tcg code]"
expect "host-profile-diff wl +2.50 worker _copy_to_iter ([kernel.kallsyms])"
expect "host-profile-diff wl +5.00 main [unknown qemu-system-x86_64]"
expect "host-profile-diff wl +2.50 vcpu helper_x (/usr/bin/qemu-system-x86_64)"
echo "host_profile selftest: ok"
