#!/usr/bin/env bash
# Is `syscost run uprobe` as fast as a bare C loop under the same uprobe? For nop, push and ret,
# alternately run bench/uprobe_loop.c (it attaches the uprobe to itself through perf_event_open)
# and `syscost run uprobe`, same CPU, calls per sample and samples; print the median M calls/s
# of each and the ratio syscost/C. Target: >= 0.97. Needs root (uprobes).
# Usage: bench/uprobe_vs_c.sh [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
cpu=${2:-$(( $(nproc) - 1 ))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
gcc -O2 -o "$work/uprobe_loop" bench/uprobe_loop.c
cargo build --release --quiet
for insn in nop push ret; do
	calls=200000; [ "$insn" = ret ] && calls=5000   # a probed ret is single-stepped: slow
	c=(); s=()
	for r in $(seq 1 "$rounds"); do
		cr() { taskset -c "$cpu" "$work/uprobe_loop" "$insn" uprobe "$calls" 5; }
		sr() { target/release/syscost run uprobe --probe uprobe --insn "$insn" --cpu "$cpu" \
			--runs 1 --warmup 1 --samples 5 --ops "$calls" -e task-clock --json \
			| python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.4f" % next(m for m in r["metrics"] if m["name"]=="throughput")["summary"]["median"])'; }
		if (( r % 2 )); then c+=("$(cr)"); s+=("$(sr)"); else s+=("$(sr)"); c+=("$(cr)"); fi
	done
	python3 - "$insn" "${c[*]}" "${s[*]}" <<'PY'
import statistics, sys
insn, c, s = sys.argv[1], list(map(float, sys.argv[2].split())), list(map(float, sys.argv[3].split()))
mc, ms = statistics.median(c), statistics.median(s)
print("uprobe-%-5s C %.3f M/s, syscost %.3f M/s, ratio syscost/C %.3f (target >= 0.97)" % (insn, mc, ms, ms / mc))
PY
done
