#!/usr/bin/env bash
# What a campaign costs beyond the kernels' boots and the measurements (issue: at most 1 s per
# boot): the per-boot time of a near-empty measurement (one 1 ms sample of `run spin`), which
# is the kernel's boot, syscost's init, QEMU's start and the result's transfer; the time to
# build the initramfs (once per campaign); and the wall time of the audit series' design at
# 2 arms x 6 boots with a real measurement. Needs the kernels scripts/test.sh unpacks and
# QEMU; TCG, as on this project's VM.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/syscost
k=($(ls target/kernels/boot/vmlinuz-* | sort))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(campaign --accel tcg --no-history --arm "a=${k[0]}" --arm "b=${k[1]}")

echo "== near-empty measurement, 2 arms x 3 boots (per-boot seconds from QEMU start to exit)"
"$bin" "${common[@]}" --boots 3 -o "$tmp/empty.json" -- run spin --runs 1 --samples 1 --warmup 0 \
	--sample-time 1ms --overhead-samples 0 >/dev/null 2>&1 || true
python3 - "$tmp/empty.json" <<'PY'
import json, sys, statistics
c = json.load(open(sys.argv[1]))
for arm in sorted({b["arm"] for b in c["boots"]}):
    s = [b["seconds"] for b in c["boots"] if b["arm"] == arm]
    print(f"  {arm}: per boot median {statistics.median(s):.2f} s (min {min(s):.2f}, max {max(s):.2f})")
PY

echo "== initramfs build (syscost's binary and libraries)"
start=$(date +%s.%N)
"$bin" "${common[@]}" --boots 1 --boot-timeout 1ms --retries 0 -- run spin >/dev/null 2>&1 || true
end=$(date +%s.%N)
echo "  a campaign whose boots time out at once: $(echo "$end - $start" | bc) s in all"

echo "== 2 arms x 6 boots of run syscall --runs 3 --samples 3 --sample-time 50ms"
start=$(date +%s.%N)
"$bin" "${common[@]}" --boots 6 -- run syscall --runs 3 --samples 3 --sample-time 50ms >"$tmp/six.txt" 2>&1 || true
end=$(date +%s.%N)
echo "  wall time: $(echo "$end - $start" | bc) s"
grep -E "^ (a|b) " "$tmp/six.txt" || cat "$tmp/six.txt"
