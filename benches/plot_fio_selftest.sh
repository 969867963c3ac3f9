#!/usr/bin/env bash
# Self-test of the fio matrix's paired-round statistics (benches/plot_fio.py), run by
# scripts/test-all.sh: a hand-made guest log through plot_fio.py, and the ratio of the medians,
# the paired min/max, the geometric mean of the paired ratios, its 95% confidence interval and
# the verdict checked against figures computed here by hand.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "plot_fio selftest: FAIL: $*" >&2; exit 1; }

# Point A, three rounds, rnvme/C per round 0.5, 1.0, 2.0: medians 1000/1000 (ratio 1.00), the
# logs -ln2, 0, ln2 have mean 0 and standard deviation ln2, so the interval is
# exp(+-4.303 * 0.693147 / sqrt(3)) = exp(+-1.72198) = [0.179-5.596]: not resolved.
# Point B, four rounds, 0.9 each but the last 0.8: logs ln0.9 x3, ln0.8; mean -0.134806,
# sd 0.058892, half 3.182 * 0.058892 / 2 = 0.093696: exp(-0.228503) = 0.796 to exp(-0.041110)
# = 0.960, below 1.00; geo-mean exp(-0.134806) = 0.874.
line() { echo "fio-point $1 dev=$2 round=$3 iops=$4 bw_kib=1 ios=$4 runtime_ms=1000 sys_ticks=1 busy_ticks=1 irq_ticks=0 err=0"; }
{
    line randread-4k-qd1-io_uring rnvme 0 500;  line randread-4k-qd1-io_uring nvme 0 1000
    line randread-4k-qd1-io_uring rnvme 1 1000; line randread-4k-qd1-io_uring nvme 1 1000
    line randread-4k-qd1-io_uring rnvme 2 2000; line randread-4k-qd1-io_uring nvme 2 1000
    for r in 0 1 2; do line read-128k-qd8-libaio rnvme $r 900; line read-128k-qd8-libaio nvme $r 1000; done
    line read-128k-qd8-libaio rnvme 3 800; line read-128k-qd8-libaio nvme 3 1000
} > "$tmp/guest.log"
out=$(python3 "$here/plot_fio.py" --log "$tmp/guest.log" --out "$tmp" --no-plot 2>&1)
echo "$out" | sed 's/^/  /'
expect() { grep -qxF -- "$1" <<< "$out" || fail "missing line: $1"; }
expect "fio-ci randread-4k-qd1-io_uring: rnvme/nvme 1.000 [0.179-5.596] 95% CI over 3 paired rounds: not resolved"
expect "fio-ci read-128k-qd8-libaio: rnvme/nvme 0.874 [0.796-0.960] 95% CI over 4 paired rounds: below 1.00"
# The CSV row: ratio of the medians (900/1000) and the paired min/max.
row=$(grep '^read-128k-qd8-libaio,.*,rnvme,' "$tmp/fio-matrix.csv") || fail "no CSV row for point B"
hdr=$(head -n1 "$tmp/fio-matrix.csv")
col() { awk -F, -v h="$hdr" -v n="$1" 'BEGIN { split(h, H, ","); for (i in H) if (H[i] == n) c = i } { print $c }' <<< "$row"; }
[[ "$(col ratio)" == 0.9 && "$(col ratio_min)" == 0.8 && "$(col ratio_max)" == 0.9 ]] ||
    fail "point B: ratio $(col ratio) min $(col ratio_min) max $(col ratio_max), want 0.9 0.8 0.9"
echo "plot_fio selftest: ok"
