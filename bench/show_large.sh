#!/usr/bin/env bash
# `syscost show` (and `report`, which reads the same way) of a run result holding many raw
# samples: a real result of this machine with each run's samples repeated to N (default
# 300,000 per run, 3 runs: about 450 MB). Whole-file readers decode straight from the text after
# checking only the envelope. Prints wall time and max RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
per_run=${1:-300000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
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
