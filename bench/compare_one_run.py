#!/usr/bin/env python3
"""Write a one-run syscost result whose metrics hold N per-sample values (for
bench/compare_large.sh's one-run case): a real result of this machine (argv[1]) with each metric's
values replaced by N noisy values around its median times SHIFT."""
import json, random, sys

src, dst, n, shift, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
d = json.load(open(src))
for m in d["metrics"]:
    med = m["summary"]["median"] if m.get("summary") else 1.0
    m["values"] = [med * shift * (1 + rng.gauss(0, 0.01)) for _ in range(n)]
    m["units"] = list(range(n))
    m["summary"] = None
json.dump(d, open(dst, "w"))
