#!/usr/bin/env bash
# `syscost show` and `report` of a run result holding many raw samples: a real result of this
# machine with each run's samples repeated to N (default 333,334 per run, 3 runs: 10^6 samples,
# about 300 MB with ten events). Targets: under 100 MB and 2 s. Both stream the file
# and skip the raw samples they do not print (show: all; report: all but about 1,000 dots per
# run). `show --format json` re-emits the whole result and so reads it all. Prints wall time and
# max RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
per_run=${1:-333334}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
cargo build --release --quiet
target/release/syscost run syscall --runs 3 --samples 3 --sample-time 5ms -o "$work/small.json" \
	> /dev/null 2>&1
python3 - "$work/small.json" "$work/big.json" "$per_run" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    r["samples"] = [r["samples"][0]] * int(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
ls -l "$work/big.json" | awk '{printf "file: %.0f MB\n", $5/1e6}'
/usr/bin/time -f "show: %e s wall, %M KB max RSS" target/release/syscost show "$work/big.json" \
	> /dev/null
/usr/bin/time -f "report: %e s wall, %M KB max RSS" target/release/syscost report "$work/big.json" \
	-o "$work/big.html"
ls -l "$work/big.html" | awk '{printf "report page: %.0f KB\n", $5/1e3}'
/usr/bin/time -f "show --format json: %e s wall, %M KB max RSS" target/release/syscost show \
	"$work/big.json" --format json > /dev/null
