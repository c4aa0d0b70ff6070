#!/usr/bin/env bash
# A boot's cost through a LAVA lab on this machine against the same boot directly in QEMU, in
# one run, interleaved (direct, lava, lava, direct, ...): N pairs of a one-arm, one-boot
# campaign of the newest kernel in target/kernels/boot, measured by `run syscall` with exact
# counts. Prints each command's wall time, the medians and their ratio, the median of the
# pairs' own ratios (the machine's speed drifts between pairs, less within one) with its 95%
# interval, and the medians of the guest's kernel boot and of what lay outside its clock.
#
#   bench/lava_boot.sh [N] [LAB_DIR]   N pairs (default 10, 6 or more give the interval of
#                                      their median ratio); LAB_DIR: a lab started by
#                                      scripts/lava-lab (default: one started here and removed)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
lab=${2:-}
cargo build --release -q
bin=target/release/syscost
kernel=$(ls target/kernels/boot/vmlinuz-* | sort -V | tail -1)
scratch=$(mktemp -d)
# mktemp makes it 0700: the lab's PostgreSQL (user postgres) must enter it.
chmod 755 "$scratch"
own=0
trap '[ "$own" = 1 ] && scripts/lava-lab remove "$lab"; rm -rf "$scratch"' EXIT
if [ -z "$lab" ]; then
	lab=$scratch/lab
	own=1
	scripts/lava-lab start "$lab" --devices 1 >/dev/null
fi
export XDG_STATE_HOME=$scratch SYSCOST_LAVA_TOKEN
SYSCOST_LAVA_TOKEN=$(cat "$lab/token")
common=(--arm "k=$kernel" --boots 1 --no-verdict --no-history --emulated-counters --retries 0)
measure=(-- run syscall --runs 1 --samples 3 --sample-time 20ms)

# One campaign: its wall time, and its result (whose boot's split by the guest's clock says
# how long the guest's kernel took to boot, and what lay outside the guest's clock).
one() {
	local t0 t1 out=$scratch/$1-$2.json
	t0=$(date +%s.%N)
	case $1 in
		direct) "$bin" campaign --accel tcg "${common[@]}" -o "$out" "${measure[@]}" >/dev/null 2>&1 ;;
		lava) "$bin" campaign --via lava --lava-url "$(cat "$lab/url")" --lava-events "$(cat "$lab/events-url")" \
			"${common[@]}" -o "$out" "${measure[@]}" >/dev/null 2>&1 ;;
	esac
	t1=$(date +%s.%N)
	echo "$1 $(echo "$t1 - $t0" | bc) $out"
}

results=$scratch/times
for i in $(seq 1 "$n"); do
	if [ $((i % 2)) = 1 ]; then one direct "$i"; one lava "$i"; else one lava "$i"; one direct "$i"; fi
done | tee "$results"
python3 - "$results" <<'EOF'
import json, math, os, statistics, sys
t, pairs, pair, split = {}, [], {}, {}
for line in open(sys.argv[1]):
    k, v, out = line.split()
    t.setdefault(k, []).append(float(v))
    # A campaign that failed wrote no result: its time stands, its split is missing.
    for b in json.load(open(out))["boots"] if os.path.exists(out) else []:
        for part, s in (b.get("split") or {}).items():
            split.setdefault((k, part), []).append(s)
    pair[k] = float(v)
    if len(pair) == 2:
        pairs.append(pair["lava"] / pair["direct"])
        pair = {}
d, l = statistics.median(t["direct"]), statistics.median(t["lava"])
print(f"median direct {d:.1f} s, via LAVA {l:.1f} s: x{l / d:.2f}, +{l - d:.1f} s per boot")
# Whether the guest itself ran longer in the lab, or the lab's own work took the difference.
for part in ("kernel", "outside"):
    m = {k: statistics.median(split.get((k, part), [math.nan])) for k in ("direct", "lava")}
    print(f"median {part} (guest's clock split): direct {m['direct']:.2f} s, via LAVA {m['lava']:.2f} s")
# The machine's speed drifts between pairs; the two runs of a pair ran back to back. Each
# pair's ratio, their median and its distribution-free 95% interval (bench/pairs_ci.py).
sys.path.insert(0, "bench")
from pairs_ci import interval_line
print(interval_line(pairs))
EOF
