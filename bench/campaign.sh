#!/usr/bin/env bash
# What a campaign costs beyond the kernels' boots and the measurements (issue: at most 1 s per
# boot outside the guest's clock): per-boot time of a near-empty measurement (one 1 ms sample
# of `run spin`), split by the guest's clock into its kernel's boot, syscost's init, the
# measurement, and what is outside the guest's clock (QEMU's start, firmware, loading and,
# for a bzImage, decompressing the kernel, power-off), for the two cloud images scripts/test.sh
# unpacks and for Debian's generic 6.1 image (what a Debian machine's /boot holds; fetched
# into target/kernels-generic), each started at its PVH entry (the default) and as a bzImage;
# then the time to build the initramfs, and the wall time of the audit series' design at
# 2 arms x 6 boots. Needs QEMU; TCG, as on this project's VM. SYSCOST=path uses that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${SYSCOST:-}" ] || cargo build --release -q
bin=${SYSCOST:-target/release/syscost}
k=($(ls target/kernels/boot/vmlinuz-* | sort))
g=$(bench/generic_kernel.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arms=(--arm "generic=$g" --arm "cloud61=${k[0]}" --arm "cloud612=${k[1]}")
for entry in pvh bzimage; do
	echo "== entry $entry: 3 arms x 3 boots of a near-empty measurement (seconds per boot, median)"
	"$bin" campaign --accel tcg --no-history --entry "$entry" "${arms[@]}" --boots 3 --no-verdict \
		-o "$tmp/$entry.json" -- run spin --runs 1 --samples 1 --warmup 0 --sample-time 1ms \
		--overhead-samples 0 >/dev/null 2>&1 || true
	python3 - "$tmp/$entry.json" <<'PY'
import json, sys, statistics
c = json.load(open(sys.argv[1]))
for a in c["arms"]:
    boots = [b for b in c["boots"] if b["arm"] == a["name"] and "split" in b]
    med = lambda part: statistics.median(b["split"][part] for b in boots)
    wall = statistics.median(b["seconds"] for b in boots)
    print(f"  {a['name']:9} {a['kernel'].split('/')[-1]:34} boot {wall:.2f} s = kernel {med('kernel'):.2f}"
          f" + init {med('init'):.2f} + measurement {med('measurement'):.2f} + outside {med('outside'):.2f}"
          f" (outside max {max(b['split']['outside'] for b in boots):.2f})")
PY
done

common=(campaign --accel tcg --no-history --arm "a=${k[0]}" --arm "b=${k[1]}")
echo "== initramfs build and vmlinux extraction (once per campaign)"
start=$(date +%s.%N)
"$bin" "${common[@]}" --boots 1 --no-verdict --boot-timeout 1ms --retries 0 -- run spin >/dev/null 2>&1 || true
end=$(date +%s.%N)
echo "  a campaign whose boots time out at once: $(echo "$end - $start" | bc) s in all"

echo "== 2 arms x 6 boots of run syscall --runs 3 --samples 3 --sample-time 50ms"
start=$(date +%s.%N)
"$bin" "${common[@]}" --boots 6 -- run syscall --runs 3 --samples 3 --sample-time 50ms >"$tmp/six.txt" 2>&1 || true
end=$(date +%s.%N)
echo "  wall time: $(echo "$end - $start" | bc) s"
grep -E "^ (a|b) " "$tmp/six.txt" || cat "$tmp/six.txt"

echo "== the cost of counting: 2 arms x 3 boots of run syscall, plain, with --emulated-counters,"
echo "   with --cache-model skylake-x (the L1 models) and with --emulated-profile (the first boot"
echo "   of each arm reads its kallsyms: the slowest boot)"
for counting in "" --emulated-counters "--cache-model skylake-x" --emulated-profile; do
	# shellcheck disable=SC2086 # the option and its value are two words
	"$bin" "${common[@]}" --boots 3 --no-verdict $counting -o "$tmp/count.json" -- run syscall \
		--runs 3 --samples 3 --sample-time 20ms >/dev/null 2>&1 || true
	python3 - "$tmp/count.json" "${counting:-plain}" <<'PY'
import json, sys, statistics
c = json.load(open(sys.argv[1]))
boots = [b for b in c["boots"] if "split" in b]
med = lambda part: statistics.median(b["split"][part] for b in boots)
print(f"  {sys.argv[2]:26} boot {statistics.median(b['seconds'] for b in boots):.2f} s "
      f"(slowest {max(b['seconds'] for b in boots):.2f} s), kernel {med('kernel'):.2f} s, "
      f"settling {med('settle'):.2f} s, measurement {med('measurement'):.2f} s "
      f"(median of {len(boots)})")
PY
done
