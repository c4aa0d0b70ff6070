#!/usr/bin/env bash
# What a boot costs, this tree's syscost against another one (OLD_TREE: a checkout of an
# earlier commit, built here with cargo), side by side in one run:
#  - a plain exact-count boot of one kernel (`campaign --emulated-counters`, one boot measuring
#    MEASURE) and a `--cache-model skylake-x` boot with the audit series' 42 rules, each binary's boots alternated pair by pair
#    (old first, then new first), N pairs: each boot's wall time and its split (kernel,
#    settling, measurement, outside the guest's clock), the medians, the median of the pairs'
#    ratios with its 95% interval, for the whole boot and for all but the measurement;
#  - the exact counts per operation of every boot, which must be the same for both binaries
#    (and, from windows sized by count, whole numbers in the new tree's), and the cache model's
#    L1d misses per operation and per set (the sets' medians);
#  - a LAVA lab's start by each tree's scripts/lava-lab (the new one's kept database made
#    first), alternated, N/2 pairs; with --suite also the end-to-end suite's CPU seconds under
#    process accounting (bench/suite_cpu.sh) in each tree, one after the other (about 20
#    minutes each).
# A checkout before 5592d76 counted the interrupts (timer ticks) in its windows: its kernel counts
# read a fraction of an instruction more per operation, and differ from the same by that alone.
# Give it the machine to itself: its boots' times follow whatever else runs.
# Usage: bench/boot_cost.sh OLD_TREE [N] [--suite]   (N default 6; root; KERNEL: the newest
#        target/kernels/boot/vmlinuz-6.1.*; MEASURE default 'run syscall --runs 3')
set -euo pipefail
cd "$(dirname "$0")/.."
old_tree=$(cd "$1" && pwd)
n=${2:-6}
suite=${3:-}
kernel=${KERNEL:-$(ls target/kernels/boot/vmlinuz-6.1.* | sort -V | tail -1)}
read -r -a measure <<< "${MEASURE:-run syscall --runs 3}"
cargo build --release --quiet
(cd "$old_tree" && cargo build --release --quiet)
new=$PWD/target/release/syscost
old=$old_tree/target/release/syscost
work=$(mktemp -d /var/tmp/syscost-boot-cost.XXXXXX)
chmod 755 "$work"
trap 'for l in "$work"/lab-*; do [ -d "$l" ] && scripts/lava-lab stop "$l"; done; rm -rf "$work"' EXIT INT TERM
export XDG_STATE_HOME=$work/state
one() { # WHICH BINARY KIND PAIR [OPTIONS...]
	local which=$1 bin=$2 kind=$3 pair=$4
	shift 4
	"$bin" campaign --accel tcg --emulated-counters "$@" --arm "k=$kernel" --boots 1 \
		--no-verdict --no-history -o "$work/$kind-$which-$pair.json" -- "${measure[@]}" >/dev/null 2>&1
	echo "$kind $which $work/$kind-$which-$pair.json" >> "$work/order"
}
for i in $(seq 1 "$n"); do
	for kind in plain cache; do
		opts=()
		[ "$kind" = plain ] || opts=(--cache-model skylake-x --append k=audit=1 --audit-rules "k=$PWD/papers/audit-series.rules")
		if [ $((i % 2)) = 1 ]; then
			one old "$old" "$kind" "$i" "${opts[@]}"; one new "$new" "$kind" "$i" "${opts[@]}"
		else
			one new "$new" "$kind" "$i" "${opts[@]}"; one old "$old" "$kind" "$i" "${opts[@]}"
		fi
	done
done
lab() { # WHICH TREE PAIR: the seconds its start takes
	local dir=$work/lab-$1-$3 s
	s=$(date +%s.%N)
	"$2/scripts/lava-lab" start "$dir" >/dev/null 2>&1
	echo "$1 $(echo "$(date +%s.%N) - $s" | bc)" >> "$work/labs"
	"$2/scripts/lava-lab" remove "$dir"
}
if command -v lava-worker >/dev/null; then
	lab new "$PWD" 0 # the kept database, made once
	: > "$work/labs"
	for i in $(seq 1 $(( (n + 1) / 2 ))); do
		if [ $((i % 2)) = 1 ]; then lab old "$old_tree" "$i"; lab new "$PWD" "$i"; else lab new "$PWD" "$i"; lab old "$old_tree" "$i"; fi
	done
fi
python3 - "$work/order" "$work/labs" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, "bench")
from pairs_ci import interval_line
boots = {}
for line in open(sys.argv[1]):
    kind, which, path = line.split()
    b = json.load(open(path))["boots"][0]
    m = {x["name"]: (x["summary"] or {}).get("median") for x in b["result"]["metrics"]}
    sets = (b["result"].get("emulated_sets") or {}).get("l1d") or []
    ops = b["result"]["options"].get("ops_per_sample")
    boots.setdefault(kind, {}).setdefault(which, []).append((b["seconds"], b["split"], m, sets, ops))
med = statistics.median
for kind, by in boots.items():
    print(f"== {kind} exact-count boots ({'--cache-model skylake-x' if kind == 'cache' else 'plain'})")
    for which in ("old", "new"):
        r = by[which]
        sp = lambda k: med(x[1][k] for x in r)
        print(f"{which}: wall " + " ".join(f"{x[0]:.2f}" for x in r)
              + f" s; medians: wall {med(x[0] for x in r):.2f} s = kernel {sp('kernel'):.2f} + init "
              f"{sp('init'):.2f} + settling {sp('settle'):.2f} + measurement {sp('measurement'):.2f} "
              f"+ outside {sp('outside'):.2f}; the measurement's share "
              f"{med(x[1]['measurement'] / x[0] for x in r):.0%}; operations a sample "
              + " ".join(str(x[4]) for x in r))
    pairs = list(zip(by["old"], by["new"]))
    print("whole boot, new/old: " + interval_line([n[0] / o[0] for o, n in pairs]))
    around = lambda x: x[0] - x[1]["measurement"]
    print("all but the measurement, new/old: " + interval_line([around(n) / around(o) for o, n in pairs]))
    exact = lambda x: {k: v for k, v in x[2].items() if "(emulated)" in k and "miss" not in k}
    # Each exact count's range over the boots of each binary; the same when every boot of
    # both lies within 0.01% of every other (campaign's --exact-resolution).
    names = sorted(k for k in exact(by["new"][0]) if ":k " in k or ":u " in k)
    for k in names:
        o, n = ([x[2][k] for x in by[w]] for w in ("old", "new"))
        lo, hi = min(o + n), max(o + n)
        same = hi - lo <= 1e-4 * max(abs(hi), 1e-9)
        whole = all(v == round(v) for v in n)
        print(f"{k}: old {min(o):.4f} to {max(o):.4f}, new {min(n):.4f} to {max(n):.4f}: "
              + ("the same" if same else "DIFFERENT")
              + ("; new whole in every boot" if whole else "; new NOT whole"))
    if all(x[3] for w in by for x in by[w]):
        for w in ("old", "new"):
            print(f"{w}: L1d misses per operation (the sets' sum), each boot: "
                  + " ".join(f"{sum(x[3]):.3f}" for x in by[w]))
        per_set = {w: [med(x[3][i] for x in by[w]) for i in range(len(by[w][0][3]))] for w in by}
        top = lambda v: sorted(range(len(v)), key=lambda i: -v[i])[:4]
        for w in ("old", "new"):
            print(f"{w}: the sets' medians, most missed: "
                  + ", ".join(f"set {i} {per_set[w][i]:.3f}" for i in top(per_set[w])))
        print("largest difference of a set's median, new - old: %+.3f per operation"
              % max((n - o for o, n in zip(per_set["old"], per_set["new"])), key=abs))
if len(boots) == 2:
    for which in ("old", "new"):
        c, p = (med(x[0] for x in boots[k][which]) for k in ("cache", "plain"))
        print(f"{which}: a cache-model boot costs x{c / p:.2f} of a plain one (medians)")
if os.path.exists(sys.argv[2]) and os.path.getsize(sys.argv[2]):
    labs = {"old": [], "new": []}
    for line in open(sys.argv[2]):
        w, s = line.split()
        labs[w].append(float(s))
    print("== a LAVA lab's start (scripts/lava-lab start)")
    for w in ("old", "new"):
        print(f"{w}: " + " ".join(f"{s:.1f}" for s in labs[w]) + f" s; median {med(labs[w]):.1f} s")
PY
if [ "$suite" = --suite ]; then
	for t in "$old_tree" "$PWD"; do
		echo "== the end-to-end suite's CPU in $t"
		# A failed test fails suite_cpu.sh, not this comparison.
		{ bash "$t/bench/suite_cpu.sh" 2>&1 || true; } | grep -E '^(tests/all|CPU s|QEMU processes)|^ +[0-9.]+ +[0-9]+  [a-z]'
	done
fi
