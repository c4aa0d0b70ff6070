#!/usr/bin/env bash
# Where the end-to-end suite's CPU goes: runs tests/all (scripts/test.sh's environment) under
# BSD process accounting and prints the CPU seconds of each command name, then of each QEMU
# by the test(s) running when it started (from target/tmp/syscost-e2e-times.tsv). The QEMU
# share is the floor of the suite's wall time on a machine of N CPUs: about its CPU over N.
#   bench/suite_cpu.sh [cargo test filter...]     (root; installs Debian's acct if missing)
# Process accounting is switched on for the run only, into a file under target/tmp.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "process accounting needs root (CAP_SYS_PACCT)" >&2; exit 1; }
command -v accton >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq acct >/dev/null
mkdir -p target/tmp
acct=target/tmp/suite.pacct
times=target/tmp/syscost-e2e-times.tsv
cargo test --release --test all --no-run
rm -f "$times"
: > "$acct"
accton "$acct"
trap 'accton off' EXIT
start=$(date +%s)
status=0
SYSCOST_TEST_REQUIRE_ALL=1 cargo test --release --test all -- "$@" || status=$?
accton off
trap - EXIT
echo "tests/all: exit $status in $(( $(date +%s) - start )) s"
dump-acct "$acct" | python3 -c '
import sys, datetime, collections
# dump-acct: comm|version|utime|stime|elapsed (1/100 s)|...|pid|ppid|flags|exit|tty|start
procs = []
for line in sys.stdin:
    f = [x.strip() for x in line.split("|")]
    start = datetime.datetime.strptime(f[14], "%a %b %d %H:%M:%S %Y")
    start = start.replace(tzinfo=datetime.timezone.utc).timestamp()
    procs.append((f[0], (float(f[2]) + float(f[3])) / 100, float(f[4]) / 100, start))
tests = []
for line in open(sys.argv[1]):
    t, _, _, held, started = line.rstrip("\n").split("\t")
    tests.append((float(started), float(started) + float(held), t))
cpu, n = collections.Counter(), collections.Counter()
for comm, c, _, _ in procs:
    cpu[comm] += c
    n[comm] += 1
print("CPU s  processes  command (all: %.0f CPU s)" % sum(cpu.values()))
for comm, c in cpu.most_common(12):
    print("%7.1f %9d  %s" % (c, n[comm], comm))
boots = collections.defaultdict(lambda: [0, 0.0])
for comm, c, wall, s in procs:
    if comm.startswith("qemu") and wall >= 1:
        during = sorted(t.split("::")[-1][:40] for a, b, t in tests if a - 1 <= s <= b + 1)
        key = " | ".join(during) or "(no test logged)"
        boots[key][0] += 1
        boots[key][1] += c
print("\nQEMU processes by the tests running when each started: %d, %.0f CPU s"
      % (sum(b[0] for b in boots.values()), sum(b[1] for b in boots.values())))
for key, (k, c) in sorted(boots.items(), key=lambda x: -x[1][1])[:20]:
    print("%7.1f %4d  %s" % (c, k, key))
' "$times"
exit "$status"
