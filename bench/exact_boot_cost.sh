#!/usr/bin/env bash
# What leaving the interrupts out of exact counts costs a boot: a one-boot campaign of one
# kernel with --emulated-counters (`run syscall --runs 3`), by this tree's syscost and by
# another one (OLD: a syscost built before the change), alternated pair by pair (old first,
# then new first), N pairs. Prints each boot's wall time and settling (the guest's clock:
# where the new guest tells the plugin its interrupt entries), their medians, the median of
# the pairs' ratios with its 95% interval, and each binary's kernel instructions per getpid.
# Give it the machine to itself: its boots' times follow whatever else runs.
# Usage: bench/exact_boot_cost.sh OLD_SYSCOST [N] [KERNEL]   (N default 6)
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1
n=${2:-6}
kernel=${3:-$(ls target/kernels/boot/vmlinuz-6.1.* | sort -V | tail -1)}
cargo build --release --quiet
new=target/release/syscost
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export XDG_STATE_HOME=$work
one() { # WHICH BINARY PAIR
	"$2" campaign --accel tcg --emulated-counters --arm "k=$kernel" --boots 1 --no-verdict \
		--no-history -o "$work/$1-$3.json" -- run syscall --runs 3 >/dev/null 2>&1
	echo "$1 $work/$1-$3.json" >> "$work/order"
}
for i in $(seq 1 "$n"); do
	if [ $((i % 2)) = 1 ]; then one old "$old" "$i"; one new "$new" "$i"; else one new "$new" "$i"; one old "$old" "$i"; fi
done
python3 - "$work/order" <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
from pairs_ci import interval_line
rows = {"old": [], "new": []}
for line in open(sys.argv[1]):
    which, path = line.split()
    b = json.load(open(path))["boots"][0]
    m = {x["name"]: (x["summary"] or {}).get("median") for x in b["result"]["metrics"]}
    sp = b["split"]
    rows[which].append((b["seconds"], sp["settle"], m["instructions:k (emulated)"], sp["measurement"], sp["kernel"]))
for which, r in rows.items():
    print(f"{which}: wall " + " ".join(f"{x[0]:.2f}" for x in r) + " s; settling "
          + " ".join(f"{x[1]:.2f}" for x in r) + " s; kernel instructions per getpid "
          + " ".join(f"{x[2]:.3f}" for x in r))
    med = lambda i: statistics.median(x[i] for x in r)
    print(f"{which}: medians: wall {med(0):.2f} s, kernel {med(4):.2f} s, settling {med(1):.2f} s, "
          f"measurement {med(3):.2f} s")
print(interval_line([n[0] / o[0] for o, n in zip(rows["old"], rows["new"])]))
PY
