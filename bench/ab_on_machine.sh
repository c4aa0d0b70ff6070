#!/usr/bin/env bash
# The on-machine targets for `syscost ab`: two identical configurations (A/A) must be
# called a change in at most 1 of 20 tries, and a constructed +2% change (the spin workload
# with 1020 against 1000 dependent steps per operation) in at least 9 of 10, also while a bursty
# process (50 ms busy every 300 ms) shares the measured CPU. Prints each try's verdict and the
# counts.
#
# Usage: bench/ab_on_machine.sh [AA_TRIES] [SHIFT_TRIES] [BURSTY_TRIES] [BURSTY_AA_TRIES]
#        [-- run options]
# (a count of 0 skips that set; BURSTY_TRIES defaults to SHIFT_TRIES, BURSTY_AA_TRIES to 0: an
# A/A pair with the bursty neighbour). Each set's count comes with its exact (Clopper-Pearson)
# 95% binomial interval. Run options are shared
# by every variant, e.g. the floor design: -- --estimator min --sample-time 10ms --samples 100;
# ab's own options go in $AB_OPTS, e.g. AB_OPTS='--interleave runs'.
set -euo pipefail
cd "$(dirname "$0")/.."
aa=${1:-20}
shift_tries=${2:-10}
bursty_tries=${3:-$shift_tries}
bursty_aa=${4:-0}
[[ ${4:-} == -- ]] && bursty_aa=0
shift $(( $# >= 4 ? 4 : $# ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
cpu=$(( $(nproc) - 1 ))
# $SYSCOST: a copy of the binary to measure with, so that rebuilding meanwhile cannot change
# the binary under a running try (workers re-execute it).
if [[ -n ${SYSCOST:-} ]]; then
	syscost=$SYSCOST
else
	cargo build --release --quiet
	syscost=target/release/syscost
fi
work=$(mktemp -d)
burst=
cleanup() { [[ -n $burst ]] && kill "$burst" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

verdict() {
	# shellcheck disable=SC2086 # AB_OPTS is a list of options
	"$syscost" ab --variant "spin --iterations $1" --variant "spin --iterations $2" \
		--format json ${AB_OPTS:-} -- --cpu "$cpu" --runs 10 --no-history "${extra[@]}" 2>/dev/null |
		python3 -c 'import json, sys
c = json.load(sys.stdin)
d = next(x for x in c["deltas"] if x["metric"] == c["primary_metric"] and x["variant"] == 1)
ci = d["ci_pct"] or [float("nan")] * 2
print("%-12s %+6.2f%% [%+.2f, %+.2f]" % (d["decision"], d["delta_pct"] or 0, ci[0], ci[1]))'
}

run_set() {
	local name=$1 a=$2 b=$3 n=$4 called=0
	(( n > 0 )) || return 0
	for i in $(seq 1 "$n"); do
		v=$(verdict "$a" "$b")
		echo "$name $i: $v"
		case $v in slower* | faster* | higher* | lower*) called=$((called + 1)) ;; esac
	done
	echo "== $name: a change called in $called of $n, 95% CI $(binomial_ci "$called" "$n")"
}

# The exact (Clopper-Pearson) 95% interval of a proportion k of n, in percent: the binomial
# tails by bisection (the same as scipy.stats.binomtest(k, n).proportion_ci()).
binomial_ci() {
	python3 - "$1" "$2" <<'PY'
import math, sys
k, n = int(sys.argv[1]), int(sys.argv[2])
cdf = lambda x, p: sum(math.comb(n, i) * p**i * (1 - p)**(n - i) for i in range(x + 1))
def solve(f):
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) else (lo, mid)
    return (lo + hi) / 2
low = 0.0 if k == 0 else solve(lambda p: 1 - cdf(k - 1, p) < 0.025)
high = 1.0 if k == n else solve(lambda p: cdf(k, p) > 0.025)
print("[%.1f%%, %.1f%%]" % (100 * low, 100 * high))
PY
}

echo "ab options: ${AB_OPTS:-(defaults)}; run options: ${extra[*]:-(defaults)}"
run_set "A/A" 1000 1000 "$aa"
run_set "+2%" 1000 1020 "$shift_tries"
# The neighbour: 50 ms busy every 300 ms, on the measured CPU.
taskset -c "$cpu" python3 -c '
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.05:
        pass
    time.sleep(0.25)' &
burst=$!
run_set "+2% with a bursty neighbour" 1000 1020 "$bursty_tries"
run_set "A/A with a bursty neighbour" 1000 1000 "$bursty_aa"
