#!/usr/bin/env bash
# Are `syscost run file|ipc|proc|mem` as faithful as bare C loops doing the same operations?
#
# For each operation, in one invocation, alternately (C, syscost, syscost, C, ...: ABBA order,
# so drift hits both alike) run bench/hot_path_loop.c and the syscost workload with the same CPU,
# batch size and sample count, counting no events (-e none: the C loop counts none either), then
# print the median over rounds of the per-round ratio syscost/C. Target: within 5%
# (0.95-1.05) for read, write, stat, open+close, pipe round trip, fork+exit and page fault.
#
# Usage: bench/hot_paths_vs_c.sh [ROUNDS] [CPU] [OPS]   (OPS: a comma-separated subset, e.g. fork,pipe)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
cpu=${2:-$(( $(nproc) - 1 ))}
only=${3:-}
samples=10

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
gcc -O2 -o "$work/hot_path_loop" bench/hot_path_loop.c
cargo build --release --quiet
syscost=target/release/syscost

# op-for-C  ops-per-sample  syscost arguments
cases=(
	"read 200000 file --op read"
	"write 200000 file --op write"
	"stat 50000 file --op stat --dir $work"
	"open-close 30000 file --op open-close --dir $work"
	"pipe 5000 ipc --op pipe"
	"fork 200 proc --op fork"
	"fault-anon 10000 mem --op fault-anon"
)

median_of() {
	python3 -c 'import json,sys
r = json.load(sys.stdin)
print("%.4f" % next(m for m in r["metrics"] if m["name"] == "time")["summary"]["median"])'
}

printf "%-11s %10s %10s %8s\n" op "C ns/op" syscost "ratio (median of rounds)"
for c in "${cases[@]}"; do
	read -r op ops workload args <<<"$c"
	if [[ -n $only && ,$only, != *,$op,* ]]; then continue; fi
	c_run() { taskset -c "$cpu" "$work/hot_path_loop" "$op" "$ops" "$samples" "$work"; }
	s_run() {
		# shellcheck disable=SC2086
		"$syscost" run "$workload" $args --cpu "$cpu" --runs 1 --warmup 1 --samples "$samples" \
			--ops "$ops" --estimator median --json -e none | median_of
	}
	ratios=() cs=() ss=()
	for i in $(seq 1 "$rounds"); do
		if (( i % 2 )); then c=$(c_run); s=$(s_run); else s=$(s_run); c=$(c_run); fi
		ratios+=("$(python3 -c "print('%.4f' % ($s / $c))")")
		cs+=("$c") ss+=("$s")
	done
	python3 - "$op" "${#ratios[@]}" "${cs[@]}" "${ss[@]}" "${ratios[@]}" <<'PY'
import statistics, sys
op, n = sys.argv[1], int(sys.argv[2])
v = [float(x) for x in sys.argv[3:]]
c, s, r = v[:n], v[n:2 * n], v[2 * n:]
print("%-11s %10.1f %10.1f %8.4f  (min %.4f, max %.4f, %d rounds)"
      % (op, statistics.median(c), statistics.median(s), statistics.median(r), min(r), max(r), n))
PY
done
