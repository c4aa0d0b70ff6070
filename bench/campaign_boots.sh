#!/usr/bin/env bash
# Do boots fail for the emulator's sake under the default TCG settings? N consecutive boots
# (default 50) of each test kernel (the images scripts/test.sh unpacks into target/kernels),
# as one campaign with no retries, then every failed boot with its reason. Before one vCPU
# became the default under TCG, Debian's 6.12 kernel oopsed ("Oops: int3" at
# sched_clock_cpu+0x9, text patching racing between two emulated vCPUs) in about 1 boot of
# 15. Usage: bench/campaign_boots.sh [N] [extra campaign options, e.g. --guest-cpus 2]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50}
shift || true
[ -n "${SYSCOST:-}" ] || cargo build --release -q
bin=${SYSCOST:-target/release/syscost}
k=($(ls target/kernels/boot/vmlinuz-* | sort))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(campaign --accel tcg --no-history --retries 0 --boots "$n" -o "$tmp/c.json")
for i in "${!k[@]}"; do args+=(--arm "k$i=${k[$i]}"); done
start=$(date +%s)
"$bin" "${args[@]}" "$@" -- run syscall --runs 1 --samples 1 --warmup 0 --sample-time 5ms \
	--overhead-samples 0 >"$tmp/out.txt" 2>&1 || true
end=$(date +%s)
python3 - "$tmp/c.json" "$((end - start))" <<'PY'
import json, sys, collections
c = json.load(open(sys.argv[1]))
m = c["machine"]
print(f"{len(c['boots'])} boots in {sys.argv[2]} s, {m['accel']}, {m['cpus']} vCPU(s), entry {m.get('entry', 'bzimage')}")
for a in c["arms"]:
    boots = [b for b in c["boots"] if b["arm"] == a["name"]]
    bad = [b for b in boots if b["outcome"] != "measured"]
    print(f"  {a['kernel']}: {len(boots)} boots, {len(bad)} failed")
    for b in bad:
        print(f"    round {b['round']}: {b['reason']}")
PY
