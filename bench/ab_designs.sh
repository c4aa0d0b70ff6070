#!/usr/bin/env bash
# Which `ab` design resolves a 2% change on this machine. Each set runs four `ab`s
# of the spin workload, interleaved so the machine's drift hits every design alike: an A/A
# (1000 against 1000 dependent steps per operation) and a constructed +2% (1000 against 1020),
# each with `--interleave samples` (the runs of a round take turns sample by sample) and
# `--interleave runs` (one run after the other). Every variant's full result is saved under
# OUT/DESIGN-PAIR-SET/, so bench/ab_reanalyse.py can decide each try again with another
# estimator (mean, median, min) or clock (wall, task-clock) from the same raw samples.
#
# Usage: bench/ab_designs.sh [SETS] [OUT] [-- extra run options, e.g. --samples 20]
set -euo pipefail
cd "$(dirname "$0")/.."
sets=${1:-10}
out=${2:-target/ab-designs}
shift $(( $# >= 2 ? 2 : $# ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
cpu=$(( $(nproc) - 1 ))
cargo build --release --quiet
syscost=target/release/syscost
mkdir -p "$out"

one() {
	local design=$1 pair=$2 set=$3 b=1000
	[[ $pair == shift ]] && b=1020
	local dir="$out/$design-$pair-$set"
	rm -rf "$dir"
	"$syscost" ab --interleave "$design" --variant "spin --iterations 1000" \
		--variant "spin --iterations $b" --label A --label B --save "$dir" --format json \
		-- --cpu "$cpu" --runs 10 --no-history "${extra[@]}" 2>/dev/null |
		python3 -c 'import json, sys
c = json.load(sys.stdin)
d = next(x for x in c["deltas"] if x["metric"] == c["primary_metric"] and x["variant"] == 1)
ci = d["ci_pct"] or [float("nan")] * 2
print("%-12s %+6.2f%% [%+.2f, %+.2f]" % (d["decision"], d["delta_pct"] or 0, ci[0], ci[1]))'
}

for set in $(seq 1 "$sets"); do
	designs=(samples runs)
	(( set % 2 == 0 )) && designs=(runs samples)
	for pair in aa shift; do
		for design in "${designs[@]}"; do
			echo "$set $pair $design: $(one "$design" "$pair" "$set")"
		done
	done
done
echo "saved under $out; decide again with: python3 bench/ab_reanalyse.py $out"
