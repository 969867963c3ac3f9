#!/usr/bin/env bash
# Self-test of the instruction-count profiler (scripts/profile-fio.sh --insns), run by
# scripts/test-all.sh: builds benches/qemu-plugin/tbcount.c with -Werror and
#  1. loads it into QEMU (TCG, the firmware alone, 3 s): the plugin must write a snapshot with
#     counted blocks whose instructions add up to more than a million (the firmware's boot);
#  2. checks benches/tb_profile.py against a hand-made snapshot, System.map and guest log whose
#     per-I/O figures are computed here by hand: attribution to the right function (kernel and
#     module), user space lumped, the right mark per run, division by the run's I/Os, and the
#     rnvme - C difference;
#  3. the per-block info file (info=): written in the QEMU run, with memory operands counted
#     and last instructions disassembled, and tb_profile.py --info's block-end classes, the
#     ends that cost a jump-cache lookup by function, and per-I/O figures on hand-made input;
#  4. the soft-TLB model (tlb=): in QEMU, a 16-entry table misses more than a 65,536-entry one
#     over the same firmware boot, counted per block ("t" lines); and tb_profile.py's misses
#     per I/O by function on hand-made input.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "tbcount selftest: FAIL: $*" >&2; exit 1; }

cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/tbcount.so" "$here/tbcount.c" -lpthread

# 1. In QEMU. SIGTERM makes QEMU shut down cleanly, which runs the plugin's exit snapshot.
timeout -s TERM 3 qemu-system-x86_64 -accel tcg -display none -m 64 -nodefaults \
    -plugin "$tmp/tbcount.so,out=$tmp/dump.txt,info=$tmp/info.txt" >/dev/null 2>&1 || true
[[ -s "$tmp/dump.txt" ]] || fail "QEMU wrote no snapshot"
head -n1 "$tmp/dump.txt" | grep -qx 'mark 1' || fail "the snapshot does not start with 'mark 1'"
total=$(awk 'NR > 1 { s += $2 * $3 } END { printf "%d", s }' "$tmp/dump.txt")
((total > 1000000)) || fail "only $total instructions counted"
echo "tbcount selftest: QEMU run: $(($(wc -l < "$tmp/dump.txt") - 1)) blocks, $total instructions"
# Every translated block has an info line "ADDR INSNS MEMOPS LAST..."; the firmware loads and
# stores, and ends blocks with conditional jumps and returns.
[[ -s "$tmp/info.txt" ]] || fail "QEMU wrote no info file"
awk 'NF < 4 || $1 !~ /^[0-9a-f]+$/ || $2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $3 > $2 { bad++ }
     END { exit bad > 0 }' "$tmp/info.txt" || fail "malformed info lines"
awk '{ m += $3 } END { exit m == 0 }' "$tmp/info.txt" || fail "no memory operand counted"
grep -qE '^[0-9a-f]+ [0-9]+ [0-9]+ j[a-z]+ ' "$tmp/info.txt" || fail "no block ends in a jump"
grep -qE '^[0-9a-f]+ [0-9]+ [0-9]+ ret' "$tmp/info.txt" || fail "no block ends in a return"

# 2. The analysis, on known input. Kernel text: f_a at ...1000, f_b at ...2000; module function
# m_x at ffffffffa0000000. Run 1 (rnvme, 10 I/Os) is mark 2, run 2 (nvme, 5 I/Os) is mark 4.
cat > "$tmp/System.map" <<'EOF'
ffffffff81001000 T f_a
ffffffff81002000 t f_b
ffffffff81003000 D some_data
EOF
cat > "$tmp/guest.log" <<'EOF'
fio-profile-ksym ffffffffa0000000 t m_x	[rnvme]
fio-profile wl dev=rnvme ios=10 irqs=10 irqs_per_io=1.000 marker=1 smark=2
fio-profile wl dev=nvme ios=5 irqs=5 irqs_per_io=1.000 marker=3 smark=4
EOF
cat > "$tmp/dump2.txt" <<'EOF'
mark 1
ffffffff81001000 4 1000
mark 2
ffffffff81001000 4 10
ffffffff81001010 6 5
ffffffff81002004 3 10
ffffffffa0000020 7 20
400000 2 50
mark 3
ffffffff81002000 9 99
mark 4
ffffffff81001000 4 5
ffffffff81002000 2 15
EOF
python3 "$here/../tb_profile.py" --dump "$tmp/dump2.txt" --system-map "$tmp/System.map" \
    --log "$tmp/guest.log" > "$tmp/out.txt"
# rnvme: f_a (4*10 + 6*5)/10 = 7, f_b 3*10/10 = 3, m_x 7*20/10 = 14, user 2*50/10 = 10,
# kernel 24 (modules 14). nvme: f_a 4*5/5 = 4, f_b 2*15/5 = 6, kernel 10.
# expect_in FILE LINE: FILE has LINE as a whole line (else it is shown and the test fails).
expect_in() { grep -qxF "$2" "$1" || { cat "$1" >&2; fail "missing line: $2"; }; }
expect() { expect_in "$tmp/out.txt" "$1"; }
expect "fio-insns wl dev=rnvme: ios 10, instructions per I/O: kernel 24 (modules 14), user 10"
expect "fio-insns wl dev=nvme: ios 5, instructions per I/O: kernel 10 (modules 0), user 0"
expect "fio-insns-sym wl dev=rnvme 14.0 m_x [rnvme]"
expect "fio-insns-sym wl dev=rnvme 7.0 f_a"
expect "fio-insns-sym wl dev=nvme 6.0 f_b"
expect "fio-insns-diff wl [kernel total] rnvme 24.0 c 10.0 diff +14.0"
expect "fio-insns-diff wl f_b rnvme 3.0 c 6.0 diff -3.0"
expect "fio-insns-diff wl f_a rnvme 7.0 c 4.0 diff +3.0"
echo "tbcount selftest: analysis: 8 expected lines found"

# 3. Block ends, on the same dump. f_a's block at ...1000 (4 insns, 2 with memory operands)
# ends in a call on its own page, ...1010 (6, 1) in a jump to another page, f_b's ...2004 (3,
# 0) in sti; the module block (7, 3) in a return, the user block (2, 1) in an indirect call.
# ...2000 with 2 instructions (nvme only) ends in wrmsr; the 9-instruction block at the same
# address (a conditional jump) is never executed.
cat > "$tmp/info2.txt" <<'EOF'
ffffffff81001000 4 2 callq 0xffffffff81001800
ffffffff81001010 6 1 jmp 0xffffffff81005000
ffffffff81002004 3 0 sti 
ffffffffa0000020 7 3 retq 
400000 2 1 callq *%rax
ffffffff81002000 9 4 je 0xffffffff81002040
ffffffff81002000 2 0 wrmsr 
EOF
python3 "$here/../tb_profile.py" --dump "$tmp/dump2.txt" --system-map "$tmp/System.map" \
    --log "$tmp/guest.log" --info "$tmp/info2.txt" > "$tmp/out2.txt"
# rnvme (10 I/Os): kernel blocks (10 + 5 + 10 + 20)/10 = 4.5, instructions 24, memops
# (2*10 + 1*5 + 0 + 3*20)/10 = 8.5; ends call-page 1, jmp-xpage 0.5, irqon 1, ret 2. User:
# 5 blocks, 10 instructions, 5 memops, 5 indirect. nvme (5 I/Os): ...1000 x5 (call-page 1)
# and ...2000 with 2 instructions x15 (wrmsr: sys 3): 4 blocks, 10 instructions, memops 2.
expect2() { expect_in "$tmp/out2.txt" "$1"; }
expect2 "fio-insns-tb wl dev=rnvme kernel: blocks 4.5 insns 24.0 memops 8.5 ends call-page=1.0 irqon=1.0 jmp-xpage=0.5 ret=2.0"
expect2 "fio-insns-tb wl dev=rnvme user: blocks 5.0 insns 10.0 memops 5.0 ends indirect=5.0"
expect2 "fio-insns-tb wl dev=nvme kernel: blocks 4.0 insns 10.0 memops 2.0 ends call-page=1.0 sys=3.0"
# Ends with a jump-cache lookup (ret, indirect, branches to another page) by function: rnvme
# f_a 5/10 (the jump to another page), m_x 20/10 (the return), user 50/10; nvme none.
expect2 "fio-exits wl dev=rnvme: ios 10, block ends with a jump-cache lookup per I/O: kernel 2 (modules 2), user 5"
expect2 "fio-exits wl dev=nvme: ios 5, block ends with a jump-cache lookup per I/O: kernel 0 (modules 0), user 0"
expect2 "fio-exits-sym wl dev=rnvme 2.0 m_x [rnvme]"
expect2 "fio-exits-sym wl dev=rnvme 0.5 f_a"
expect2 "fio-exits-diff wl m_x [rnvme] rnvme 2.0 c 0.0 diff +2.0"
echo "tbcount selftest: block ends: 8 expected lines found"

# 4. The soft-TLB model. A 65,536-entry table holds every page the firmware touches, so it
# misses only on first touches; a 16-entry table (plus 8 victims) must miss more often than
# that, per instruction, over the same boot.
for bits in 4 16; do
    timeout -s TERM 3 qemu-system-x86_64 -accel tcg -display none -m 64 -nodefaults \
        -plugin "$tmp/tbcount.so,out=$tmp/tlb$bits.txt,tlb=$bits" >/dev/null 2>&1 || true
    grep -q '^t ' "$tmp/tlb$bits.txt" || fail "tlb=$bits: no miss lines"
done
rate() { awk '/^t / { m += $4; next } NR > 1 { i += $2 * $3 } END { printf "%d", m * 1000000 / i }' "$1"; }
small=$(rate "$tmp/tlb4.txt") large=$(rate "$tmp/tlb16.txt")
((large > 0 && small > large)) || fail "misses per million instructions: 16 entries $small, 65536 entries $large"
echo "tbcount selftest: TLB model: misses per million instructions $small (16 entries), $large (65536)"
# Misses by function, on the dump of part 2 with "t" lines: rnvme (mark 2, 10 I/Os) f_a 30 + 10
# misses, m_x 20, user 50; nvme (mark 4, 5 I/Os) f_b 5.
cat > "$tmp/dump3.txt" <<'EOF'
mark 1
ffffffff81001000 4 1000
mark 2
ffffffff81001000 4 10
t ffffffff81001000 4 30
ffffffff81001010 6 5
t ffffffff81001010 6 10
ffffffffa0000020 7 20
t ffffffffa0000020 7 20
400000 2 50
t 400000 2 50
mark 3
mark 4
ffffffff81002000 2 15
t ffffffff81002000 2 5
EOF
python3 "$here/../tb_profile.py" --dump "$tmp/dump3.txt" --system-map "$tmp/System.map" \
    --log "$tmp/guest.log" > "$tmp/out3.txt"
expect3() { expect_in "$tmp/out3.txt" "$1"; }
expect3 "fio-tlb wl dev=rnvme: ios 10, modelled soft-TLB misses per I/O: kernel 6 (modules 2), user 5"
expect3 "fio-tlb wl dev=nvme: ios 5, modelled soft-TLB misses per I/O: kernel 1 (modules 0), user 0"
expect3 "fio-tlb-sym wl dev=rnvme 4.0 f_a"
expect3 "fio-tlb-diff wl [kernel total] rnvme 6.0 c 1.0 diff +5.0"
expect3 "fio-tlb-diff wl f_b rnvme 0.0 c 1.0 diff -1.0"
echo "tbcount selftest: TLB analysis: 5 expected lines found"
