#!/usr/bin/env bash
# Why syscost's signal figure is higher than lmbench's lat_sig catch, measured.
#
# lat_sig catch ("Signal handler overhead") times kill(getpid(), SIGUSR1) with a handler, then
# subtracts the time of kill(getpid(), 0), its "cost of sending". syscost's `ipc --op signal`
# reports the whole signal (tgkill, delivery, handler, rt_sigreturn). bench/signal_loop.c
# mirrors both of lat_sig's loops (and syscost's way: tgkill, a second thread, dirty AVX state).
# Rounds run in ABBA order, pinned to one CPU, counting nothing; the script prints each
# figure's median over rounds and the ratios:
#   syscost / C catch            about 1.0: the same work
#   syscost / (catch - send)     what a user sees beside lat_sig's figure
#
# Usage: bench/signal_vs_c.sh [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
cpu=${2:-$(( $(nproc) - 1 ))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export SYSCOST_HISTORY="$work/history.sqlite"
gcc -O2 -mavx2 -o "$work/signal_loop" bench/signal_loop.c -lpthread
cargo build --release --quiet
syscost=target/release/syscost
n=100000
c() { taskset -c "$cpu" "$work/signal_loop" "$1" "$n" 10; }
s() {
	"$syscost" run ipc --op signal --cpu "$cpu" --runs 1 --samples 10 --ops "$n" -e none --json \
		--no-history 2>/dev/null | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("%.2f" % next(m for m in r["metrics"] if m["name"] == "time")["summary"]["median"])'
}
: > "$work/rows"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		echo "$(c kill) $(c send) $(c tgkill-thread) $(s)" >> "$work/rows"
	else
		sy=$(s); tt=$(c tgkill-thread); se=$(c send); ki=$(c kill)
		echo "$ki $se $tt $sy" >> "$work/rows"
	fi
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = lambda xs: statistics.median(xs)
kill, send, tt, sy = (med([r[i] for r in rows]) for i in range(4))
print(f"C kill+catch {kill:.0f} ns, C kill(me, 0) {send:.0f} ns, C tgkill with a 2nd thread {tt:.0f} ns, syscost {sy:.0f} ns")
print(f"syscost / C catch (same work):            {med([r[3] / r[0] for r in rows]):.3f}")
print(f"syscost / C tgkill, two threads:          {med([r[3] / r[2] for r in rows]):.3f}")
print(f"syscost / (catch - send) (lat_sig's way): {med([r[3] / (r[0] - r[1]) for r in rows]):.3f}")
PY
