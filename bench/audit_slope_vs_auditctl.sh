#!/usr/bin/env bash
# Does `syscost audit sweep` agree with an independent measurement? The independent one is
# what the audit investigations did by hand: auditctl loads N syscall-exit rules, audit is enabled, and a
# bare C getpid loop (bench/getpid_loop.c) is timed; the slope over N is fitted by least
# squares. Both are run in this one invocation (independent, syscost, independent) and the
# per-rule slopes compared. Target: within 15%.
#
# auditctl comes from Debian's auditd package, unpacked into a temporary directory (not
# installed: no daemon is started). Needs root. The audit state is restored on exit.
#
# Usage: bench/audit_slope_vs_auditctl.sh [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
cpu=${2:-$(( $(nproc) - 1 ))}
counts=(16 32 48)
work=$(mktemp -d)
# Benchmark runs stay out of the user's history store.
export SYSCOST_HISTORY="$work/history.sqlite"
orig_enabled=""
restore() {
	if [[ -n "${auditctl:-}" ]]; then
		for k in $(seq 1 64); do $auditctl -D -k "bench-indep-$k" >/dev/null 2>&1 || true; done
		[[ -n "$orig_enabled" ]] && $auditctl -e "$orig_enabled" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap restore EXIT INT TERM

(cd "$work" && apt-get download auditd libauparse0 >/dev/null 2>&1) || {
	apt-get update -qq && (cd "$work" && apt-get download auditd libauparse0 >/dev/null)
}
for d in "$work"/*.deb; do dpkg-deb -x "$d" "$work/root"; done
ma=$(gcc -print-multiarch)
auditctl="env LD_LIBRARY_PATH=$work/root/lib/$ma:$work/root/usr/lib/$ma $work/root/sbin/auditctl"
orig_enabled=$($auditctl -s | awk '/^enabled/ {print $2}')
[[ "$orig_enabled" == 2 ]] && { echo "audit is locked: nothing to do" >&2; exit 1; }
gcc -O2 -o "$work/getpid_loop" bench/getpid_loop.c
cargo build --release --quiet

set_rules() { # N: exactly N bench rules, audit enabled
	for k in $(seq 1 64); do $auditctl -D -k "bench-indep-$k" >/dev/null 2>&1 || true; done
	for k in $(seq 1 "$1"); do
		$auditctl -a always,exit -F arch=b64 -S acct -F pid=2147483646 -k "bench-indep-$k" >/dev/null
	done
	$auditctl -e 1 >/dev/null
}

independent() { # prints "N ns" lines, rounds in alternating order
	for r in $(seq 1 "$rounds"); do
		order=("${counts[@]}")
		if (( r % 2 == 0 )); then order=($(printf '%s\n' "${counts[@]}" | tac)); fi
		for n in "${order[@]}"; do
			set_rules "$n"
			echo "$n $(taskset -c "$cpu" "$work/getpid_loop" 1048576 5)"
		done
	done
	for k in $(seq 1 64); do $auditctl -D -k "bench-indep-$k" >/dev/null 2>&1 || true; done
	$auditctl -e "$orig_enabled" >/dev/null
}

slope() { python3 -c '
import sys
pts = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
n = len(pts); mx = sum(p[0] for p in pts) / n; my = sum(p[1] for p in pts) / n
sxx = sum((p[0] - mx) ** 2 for p in pts); sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
print("%.4f" % (sxy / sxx))'; }

a=$(independent | slope)
s=$(target/release/syscost audit sweep --rules "$(IFS=,; echo "${counts[*]}")" --cpu "$cpu" \
	--runs "$rounds" --samples 5 --no-residue-step --format json \
	| python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["fits"][0]["slope"])')
b=$(independent | slope)
python3 - "$a" "$s" "$b" <<'PY'
import sys
a, s, b = map(float, sys.argv[1:])
ind = (a + b) / 2
print("independent (auditctl + C loop): %.3f and %.3f ns/call per rule (mean %.3f)" % (a, b, ind))
print("syscost audit sweep:              %.3f ns/call per rule" % s)
print("ratio syscost/independent: %.3f (target 0.85-1.15)" % (s / ind))
PY
