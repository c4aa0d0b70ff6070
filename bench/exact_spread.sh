#!/usr/bin/env bash
# How exact an emulated count is at the defaults: N boots of one kernel under TCG (no --icount),
# each measuring `run syscall --runs 3`, and per boot the kernel instructions per getpid the
# plugin counted with the interrupts in its windows left out, the same windows' count with
# them in (the count plus the interrupts' instructions per call: what syscost counted before
# it left them out), the interrupts' instructions per call, the guest's time per call, and
# the boot's wall time and split. Then each figure's spread over the boots (max - min).
# Usage: bench/exact_spread.sh [KERNEL] [BOOTS]   (default: the newest 6.1 cloud kernel that
# scripts/test.sh fetched into target/kernels, 6 boots)
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:-$(ls target/kernels/boot/vmlinuz-6.1.* | sort -V | tail -1)}
boots=${2:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cargo build --release --quiet
target/release/syscost campaign --accel tcg --emulated-counters --arm "one=$kernel" \
	--boots "$boots" --no-verdict -o "$work/c.json" -- run syscall --runs 3 > /dev/null
python3 - "$work/c.json" "$kernel" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"kernel: {sys.argv[2]}, {len(c['boots'])} boots, no --icount")
print(f"{'boot':>4} {'left out':>10} {'with them':>10} {'irq/call':>9} {'ns/call':>8} {'wall s':>7}  split")
rows = []
for i, b in enumerate(c["boots"]):
    r = b["result"]
    m = {x["name"]: (x["summary"] or {}).get("median") for x in r["metrics"]}
    k = m["instructions:k (emulated)"]
    q = (r.get("emulated_windows") or {}).get("interrupts")
    irq = q["instructions"] / q["ops"] if q else float("nan")
    rows.append((k, k + irq, irq, m["time"], b["seconds"]))
    split = " ".join(f"{n} {v:.2f}" for n, v in (b.get("split") or {}).items())
    print(f"{i + 1:>4} {k:>10.4f} {k + irq:>10.4f} {irq:>9.4f} {m['time']:>8.1f} {b['seconds']:>7.2f}  {split}")
for j, name in enumerate(["left out", "with them", "irq/call"]):
    v = [r[j] for r in rows]
    print(f"spread of '{name}': {max(v) - min(v):.4f} instructions per call ({100 * (max(v) - min(v)) / min(v):.4f}%)")
w = sorted(r[4] for r in rows)
print(f"boot wall time: median {w[len(w) // 2]:.2f} s, {w[0]:.2f} to {w[-1]:.2f} s")
PY
