#!/usr/bin/env bash
# compare and merge of result files holding 10^6 raw samples each (10 runs x 100,000 samples).
# Targets: under 1 s and under 100 MB peak memory per command. Prints wall time and max RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
samples=${2:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
cargo build --release --quiet
for i in 1 2 3; do
	python3 bench/make_large_result.py "$work/r$i.json" "$runs" "$samples" "1.0$i" "$i"
done
ls -l "$work"/r1.json | awk '{printf "each file: %.0f MB, %d samples\n", $5/1e6, '"$runs"'*'"$samples"'}'
measure() {
	/usr/bin/time -f "%e s wall, %M KB max RSS" target/release/syscost "$@" > /dev/null 2> "$work/time"
	tail -1 "$work/time"
}
echo "compare 2 files: $(measure compare "$work/r1.json" "$work/r2.json")"
echo "compare 3 files: $(measure compare "$work/r1.json" "$work/r2.json" "$work/r3.json")"
echo "merge 3 files:   $(measure merge "$work/r1.json" "$work/r2.json" "$work/r3.json" -o "$work/m.json")"
echo "correlate 3:     $(measure correlate "$work/r1.json" "$work/r2.json" "$work/r3.json" --x task-clock)"
# One run of 100,000 samples per file, compared sample by sample (target: under 1 s; the
# bootstrap of medians used to take 12 s here).
target/release/syscost run syscall --runs 1 --samples 3 --sample-time 5ms -e task-clock \
	-o "$work/one.json" > /dev/null 2>&1
python3 bench/compare_one_run.py "$work/one.json" "$work/u1.json" 100000 1.0 1
python3 bench/compare_one_run.py "$work/one.json" "$work/u2.json" 100000 1.02 2
echo "compare 2 x 100,000 values: $(measure compare "$work/u1.json" "$work/u2.json" --samples-as-units)"
