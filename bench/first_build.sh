#!/usr/bin/env bash
# A newcomer's first wait: `cargo build --release` of a fresh clone, every dependency built
# from nothing (the registry's sources fetched first, so the network is not timed), then the
# five units that took longest by cargo's own --timings. Target: 3 minutes or less
# on the 2-core test machine. The clone is of HEAD; commit what you want timed.
#
# Usage: bench/first_build.sh [RUNS]   (default 1; each run a fresh clone and target directory)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
for i in $(seq "$runs"); do
	rm -rf "$work/clone"
	git clone -q . "$work/clone"
	(cd "$work/clone" && cargo fetch -q)
	start=$(date +%s.%N)
	(cd "$work/clone" && cargo build --release --timings -q)
	end=$(date +%s.%N)
	python3 - "$work/clone/target/cargo-timings/cargo-timing.html" "$start" "$end" <<'PY'
import json, re, sys
html, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);", open(html).read(), re.S).group(1))
print(f"fresh cargo build --release: {end - start:.0f} s wall, "
      f"{sum(u['duration'] for u in units):.0f} s of units over {len(units)} units")
for u in sorted(units, key=lambda u: -u["duration"])[:5]:
    print(f"  {u['name']} {u['version']}{u['target']}: {u['duration']:.1f} s (from {u['start']:.0f} s)")
PY
done
