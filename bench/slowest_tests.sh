#!/usr/bin/env bash
# The slowest end-to-end tests of the last run, with their seconds and lock waits: the harness
# of tests/all (common.rs) appends `test<TAB>lock<TAB>waited<TAB>held<TAB>started` to
# target/tmp/syscost-e2e-times.tsv as each test ends.
#   bench/slowest_tests.sh [N]          the N slowest (15) of the runs logged so far
#   bench/slowest_tests.sh --run [N]    a fresh log: scripts/test.sh, timed, then the table
set -euo pipefail
cd "$(dirname "$0")/.."
log=target/tmp/syscost-e2e-times.tsv
if [ "${1:-}" = "--run" ]; then
	shift
	rm -f "$log"
	start=$(date +%s)
	status=0
	scripts/test.sh || status=$?
	echo "scripts/test.sh: exit $status in $(( $(date +%s) - start )) s"
fi
n=${1:-15}
[ -s "$log" ] || { echo "no $log: run the tests first (or give --run)" >&2; exit 1; }
# One row per test: a test that took its lock more than once (a helper's) adds them up.
awk -F'\t' '{ w[$1] += $3; h[$1] += $4; k[$1] = $2 } END { for (t in h) printf "%8.1f %8.1f  %-7s %s\n", h[t], w[t], k[t], t }' "$log" \
	| sort -rn | head -n "$n" \
	| { printf "%8s %8s  %-7s %s\n" "held s" "waited s" "lock" "test"; cat; }
awk -F'\t' '{ h += $4; w += $3 } END { printf "all %d lock holds: %.0f s held, %.0f s waited\n", NR, h, w }' "$log"
