#!/usr/bin/env bash
# Why syscost's fork figure is lower than lmbench's lat_proc fork, measured: lat_proc's child
# calls exit(1) (libc's exit handlers, stdio flush, destructors, with copy-on-write faults in
# the child), syscost's child calls _exit. bench/fork_exit.c does either; rounds run in ABBA
# order on one CPU, counting nothing, and the script prints each figure's median and the ratios
# syscost / C _exit (the same work: about 1.0) and syscost / C exit(1).
#
# Usage: bench/fork_vs_c.sh [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
cpu=${2:-$(( $(nproc) - 1 ))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export SYSCOST_HISTORY="$work/history.sqlite"
gcc -O2 -o "$work/fork_exit" bench/fork_exit.c
cargo build --release --quiet
syscost=target/release/syscost
n=200
c() { taskset -c "$cpu" "$work/fork_exit" "$1" "$n" 10; }
s() {
	"$syscost" run proc --op fork --cpu "$cpu" --runs 1 --samples 10 --ops "$n" -e none --json \
		--no-history 2>/dev/null | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("%.0f" % next(m for m in r["metrics"] if m["name"] == "time")["summary"]["median"])'
}
: > "$work/rows"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		echo "$(c _exit) $(c exit) $(s)" >> "$work/rows"
	else
		sy=$(s); ex=$(c exit); ue=$(c _exit)
		echo "$ue $ex $sy" >> "$work/rows"
	fi
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = statistics.median
u, e, s = (med([r[i] for r in rows]) for i in range(3))
print(f"C _exit {u:.0f} ns, C exit(1) {e:.0f} ns, syscost {s:.0f} ns")
print(f"syscost / C _exit (same work): {med([r[2] / r[0] for r in rows]):.3f}")
print(f"syscost / C exit(1) (lat_proc's child): {med([r[2] / r[1] for r in rows]):.3f}")
PY
