#!/usr/bin/env bash
# What a campaign costs beyond the kernels' boots and the measurements (issue: at most 1 s per
# boot): the per-boot time of a near-empty measurement (one 1 ms sample of `run spin`), split
# by the guest's clock into its kernel's boot, syscost's init, the measurement, and what is
# outside the guest's clock (QEMU's start, firmware, kernel loading, power-off); the time to
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
    boots = [b for b in c["boots"] if b["arm"] == arm]
    s = [b["seconds"] for b in boots]
    print(f"  {arm}: per boot median {statistics.median(s):.2f} s (min {min(s):.2f}, max {max(s):.2f})")
    # The guest's clock splits each boot: what is neither its kernel's boot nor the
    # measurement is syscost's init plus what lies outside the guest's clock.
    splits = [b["split"] for b in boots if "split" in b]
    for part in ("kernel", "init", "measurement", "outside"):
        v = [x[part] for x in splits]
        if v:
            print(f"    {part:12} median {statistics.median(v):.2f} s (min {min(v):.2f}, max {max(v):.2f})")
    over = [x["init"] + x["outside"] for x in splits]
    if over:
        print(f"    beyond kernel and measurement: median {statistics.median(over):.2f} s, max {max(over):.2f} s")
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
