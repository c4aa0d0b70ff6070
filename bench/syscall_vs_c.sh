#!/usr/bin/env bash
# Is `syscost run syscall` as faithful as a bare C loop?
#
# In one invocation, alternately (C, syscost, syscost, C, ...: ABBA order, so drift hits both
# alike) run the minimal C getpid loop of bench/getpid_loop.c and `syscost run syscall` with the
# same CPU, batch size and sample count, and print each round's median ns/call and the ratio
# syscost/C, then the median ratio. Target: 0.98-1.02.
#
# Usage: bench/syscall_vs_c.sh [ROUNDS] [CPU] [CALLS_PER_SAMPLE] [SAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
cpu=${2:-$(( $(nproc) - 1 ))}
ops=${3:-1048576}
samples=${4:-10}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
gcc -O2 -o "$work/getpid_loop" bench/getpid_loop.c
cargo build --release --quiet
syscost=target/release/syscost

c_run() { taskset -c "$cpu" "$work/getpid_loop" "$ops" "$samples"; }
s_run() {
	"$syscost" run syscall --cpu "$cpu" --runs 1 --warmup 1 --samples "$samples" --ops "$ops" \
		--json -e task-clock | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("%.4f" % next(m for m in r["metrics"] if m["name"] == "time")["summary"]["median"])'
}

printf "%-6s %12s %12s %8s\n" round "C ns/call" "syscost" ratio
ratios=()
for i in $(seq 1 "$rounds"); do
	if (( i % 2 )); then c=$(c_run); s=$(s_run); else s=$(s_run); c=$(c_run); fi
	r=$(python3 -c "print('%.4f' % ($s / $c))")
	ratios+=("$r")
	printf "%-6s %12s %12s %8s\n" "$i" "$c" "$s" "$r"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print("median ratio syscost/C: %.4f (min %.4f, max %.4f, %d rounds); target 0.98-1.02"
      % (statistics.median(r), min(r), max(r), len(r)))
PY
