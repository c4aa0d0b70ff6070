#!/usr/bin/env python3
"""Decide again every `ab` try saved by bench/ab_designs.sh, from the same raw samples, with
each per-run estimator (mean: total time over total operations, as perf stat; median: the
median sample; min: the fastest sample) and each clock (wall; cpu: task-clock). Mirrors
syscost's paired analysis: per-round log ratios B/A, the exact Wilcoxon signed-rank test and
the Hodges-Lehmann interval at 95% (a change when p < 0.05 and the interval excludes 0),
equivalence when the 90% interval lies inside +-2%. Prints, per design and pair, how often a
change was called and the median interval width.

Usage: python3 bench/ab_reanalyse.py DIR (as written by bench/ab_designs.sh)
"""
import glob
import json
import math
import os
import statistics
import sys
from collections import defaultdict


def signed_rank_counts(n):
    """Number of subsets of 1..n with each rank sum (the exact null distribution)."""
    counts = [1]
    for k in range(1, n + 1):
        nxt = [0] * (len(counts) + k)
        for s, c in enumerate(counts):
            nxt[s] += c
            nxt[s + k] += c
        counts = nxt
    return counts


def wilcoxon_p(d):
    d = [x for x in d if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    ranked = sorted(range(n), key=lambda i: abs(d[i]))
    ranks = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[ranked[j + 1]]) == abs(d[ranked[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[ranked[k]] = (i + j) / 2 + 1
        i = j + 1
    w = sum(r for r, x in zip(ranks, d) if x > 0)
    counts = signed_rank_counts(n)
    total = 2 ** n
    w = min(w, n * (n + 1) / 2 - w)
    tail = sum(c for s, c in enumerate(counts) if s <= w + 1e-9)
    return min(1.0, 2 * tail / total)


def hl_interval(d, conf):
    n = len(d)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(n) for j in range(i, n))
    counts = signed_rank_counts(n)
    total = 2 ** n
    alpha = 1 - conf
    # The largest k with P(T <= k - 1) <= alpha / 2.
    k, cum = 0, 0
    while cum + counts[k] <= alpha / 2 * total:
        cum += counts[k]
        k += 1
    if k == 0:
        return None
    return walsh[k - 1], walsh[len(walsh) - k]


def run_values(result, estimator, clock):
    names = [e["name"] for e in result["events"]]
    tc = names.index("task-clock") if "task-clock" in names else None
    out = []
    for run in result["runs"]:
        samples = run["samples"]
        if clock == "cpu":
            per = [(s["counts"][tc]["value"], s["ops"]) for s in samples]
        else:
            per = [(s["wall_ns"], s["ops"]) for s in samples]
        if estimator == "mean":
            out.append(sum(t for t, _ in per) / sum(o for _, o in per))
        elif estimator == "min":
            out.append(min(t / o for t, o in per))
        else:
            out.append(statistics.median(t / o for t, o in per))
    return out


def slot_ratios(a, b, clock):
    """Per round: the median over sample slots of log(B/A), the samples of a slot being taken
    next to each other (paced rounds only)."""
    names = [e["name"] for e in a["events"]]
    tc = names.index("task-clock") if "task-clock" in names else None

    def per(s):
        t = s["counts"][tc]["value"] if clock == "cpu" else s["wall_ns"]
        return t / s["ops"]

    return [
        statistics.median(math.log(per(y) / per(x)) for x, y in zip(ra["samples"], rb["samples"]))
        for ra, rb in zip(a["runs"], b["runs"])
    ]


def decide(a, b, d=None):
    if d is None:
        d = [math.log(y / x) for x, y in zip(a, b)]
    p = wilcoxon_p(d)
    ci = hl_interval(d, 0.95)
    eq = hl_interval(d, 0.90)
    pct = lambda x: 100 * (math.exp(x) - 1)
    ci = ci and (pct(ci[0]), pct(ci[1]))
    eq = eq and (pct(eq[0]), pct(eq[1]))
    if ci and p < 0.05 and (ci[0] > 0 or ci[1] < 0):
        verdict = "slower" if ci[0] > 0 else "faster"
    elif eq and -2 < eq[0] and eq[1] < 2:
        verdict = "equivalent"
    else:
        verdict = "inconclusive"
    return verdict, ci


def main():
    root = sys.argv[1]
    table = defaultdict(list)
    for d in sorted(glob.glob(os.path.join(root, "*-*-*"))):
        design, pair, _ = os.path.basename(d).split("-")
        try:
            a = json.load(open(os.path.join(d, "A.json")))
            b = json.load(open(os.path.join(d, "B.json")))
        except (OSError, ValueError):
            continue
        for clock in ("wall", "cpu"):
            for est in ("mean", "median", "min"):
                table[(design, pair, clock, est)].append(
                    decide(run_values(a, est, clock), run_values(b, est, clock))
                )
            if design == "samples":
                table[(design, pair, clock, "slots")].append(
                    decide(None, None, slot_ratios(a, b, clock))
                )
    print("%-8s %-6s %-5s %-7s %7s %8s %8s" % ("design", "pair", "clock", "est", "tries", "called", "CI width"))
    for key in sorted(table):
        rows = table[key]
        called = sum(v in ("slower", "faster") for v, _ in rows)
        widths = [hi - lo for _, ci in rows if ci for lo, hi in [ci]]
        print("%-8s %-6s %-5s %-7s %7d %8d %7.2f%%" % (*key, len(rows), called, statistics.median(widths) if widths else float("nan")))


if __name__ == "__main__":
    main()
