#!/usr/bin/env bash
# Where syscost's figure differs from lmbench's by definition, measured beside C loops that do
# it either way (our own code, each saying which lmbench test it mirrors):
#   signal  lat_sig catch subtracts the time of kill(getpid(), 0) from its catch loop
#           (bench/signal_loop.c: catch, send, and syscost's tgkill with a second thread);
#   fork    lat_proc fork's child calls exit(1), syscost's _exit (bench/fork_exit.c: either).
# Rounds run in ABBA order on one CPU, counting nothing; prints each figure's median over rounds
# and the ratios of syscost to each.
#
# Usage: bench/lmbench_gaps.sh signal|fork [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/.."
op=${1:?usage: bench/lmbench_gaps.sh signal|fork [ROUNDS] [CPU]}
rounds=${2:-6}
cpu=${3:-$(( $(nproc) - 1 ))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export SYSCOST_HISTORY="$work/history.sqlite"
cargo build --release --quiet
syscost=target/release/syscost
case $op in
signal)
	gcc -O2 -mavx2 -o "$work/loop" bench/signal_loop.c -lpthread
	n=100000 args=(ipc --op signal) cases=(kill send tgkill-thread) ;;
fork)
	gcc -O2 -o "$work/loop" bench/fork_exit.c
	n=200 args=(proc --op fork) cases=(_exit exit) ;;
*) echo "unknown op $op: signal or fork" >&2; exit 2 ;;
esac
c() { taskset -c "$cpu" "$work/loop" "$1" "$n" 10; }
s() {
	"$syscost" run "${args[@]}" --cpu "$cpu" --runs 1 --samples 10 --ops "$n" -e none --json \
		--no-history 2>/dev/null | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("%.2f" % next(m for m in r["metrics"] if m["name"] == "time")["summary"]["median"])'
}
: > "$work/rows"
for r in $(seq 1 "$rounds"); do
	row=()
	if [ $((r % 2)) = 1 ]; then
		for k in "${cases[@]}"; do row+=("$(c "$k")"); done
		row+=("$(s)")
	else
		sy=$(s)
		for (( i = ${#cases[@]} - 1; i >= 0; i-- )); do row=("$(c "${cases[$i]}")" "${row[@]}"); done
		row+=("$sy")
	fi
	echo "${row[*]}" >> "$work/rows"
done
python3 - "$op" "$work/rows" "${cases[@]}" <<'PY'
import statistics, sys
op, path, cases = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [list(map(float, l.split())) for l in open(path)]
med = statistics.median
k = len(cases)
print(", ".join(f"C {c} {med([r[i] for r in rows]):.0f} ns" for i, c in enumerate(cases))
      + f", syscost {med([r[k] for r in rows]):.0f} ns")
for i, c in enumerate(cases):
    if c != "send":
        print(f"syscost / C {c}: {med([r[k] / r[i] for r in rows]):.3f}")
if op == "signal":
    print(f"syscost / (kill - send), lat_sig's figure: {med([r[k] / (r[0] - r[1]) for r in rows]):.3f}")
PY
