"""The median of paired ratios and its distribution-free 95% interval, for the benches that
interleave two ways of doing one thing (bench/lava_boot.sh, bench/boot_cost.sh).

The interval is the order statistics x_(k), x_(n+1-k) with the largest k whose binomial tail
P(X < k) is at most 2.5%: the interval scipy's quantile_test(pairs, p=0.5).confidence_interval()
gives, and syscost's stats::median_ci."""
import math
import statistics


def interval_line(pairs):
    """What the benches print of `pairs`: each ratio, their median, and its 95% interval (or
    that 6 or more pairs are needed for one)."""
    n = len(pairs)
    out = " ".join(f"{r:.3f}" for r in pairs)
    out = f"each pair's ratio: {out}; median x{statistics.median(pairs):.3f}\n"
    tail = lambda k: sum(math.comb(n, i) for i in range(k)) / 2**n
    ks = [k for k in range(1, n // 2 + 1) if tail(k) <= 0.025]
    if not ks:
        return out + f"no 95% interval of the pairs' median ratio from {n} pairs: give 6 or more"
    k, s = ks[-1], sorted(pairs)
    return out + (f"95% interval of the pairs' median ratio: x{s[k - 1]:.3f} to x{s[n - k]:.3f} "
                  f"(coverage {100 * (1 - 2 * tail(k)):.1f}%)")
