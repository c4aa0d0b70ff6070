#!/usr/bin/env bash
# The history store's speed: import of N real run results (a real result of this machine with
# N distinct creation times) into a fresh store, then `history list` over them. Targets
# (targets): import at 500 results/s or more; recording adds under 20 ms to a command.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
cargo build --release --quiet
target/release/syscost run syscall --runs 3 --samples 3 --sample-time 5ms --no-history \
	-o "$work/one.json" > /dev/null 2>&1
python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
d = json.load(open(f"{work}/one.json"))
for i in range(n):
    d["created_unix"] = 1_700_000_000 + i
    json.dump(d, open(f"{work}/r{i}.json", "w"), indent=2)
PY
ls -l "$work/r0.json" | awk '{printf "each result: %.0f KB\n", $5/1e3}'
start=$(date +%s.%N)
target/release/syscost history --history "$work/h.sqlite" import "$work"/r*.json 2> /dev/null
end=$(date +%s.%N)
python3 -c "print('import: %d results in %.2f s, %.0f results/s' % ($n, $end - $start, $n / ($end - $start)))"
/usr/bin/time -f "history list over $n results: %e s" target/release/syscost history \
	--history "$work/h.sqlite" list --format json > /dev/null
/usr/bin/time -o "$work/t" -f "one more import (a command's recording): %e s" \
	target/release/syscost history --history "$work/h.sqlite" import "$work/one.json" \
	> /dev/null 2>&1
cat "$work/t"
