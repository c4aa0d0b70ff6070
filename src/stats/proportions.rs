//! Two shares compared: Fisher's exact test of a 2x2 table (how many of each group's units have
//! a property), two-sided as scipy's `fisher_exact` computes it: the probability, under the
//! hypergeometric law of the table's fixed margins, of every table no likelier than the one
//! seen.
//!
//! Written here because statrs has the hypergeometric law but no test over it; the law's
//! probabilities come from statrs' log-gamma.

use statrs::function::gamma::ln_gamma;

/// `a` of `n` units of one group have the property, `b` of `m` of the other: the two-sided p
/// that the shares are the same. `None` when a group is empty or a count exceeds its group.
pub(crate) fn fisher_exact(a: u64, n: u64, b: u64, m: u64) -> Option<f64> {
    if n == 0 || m == 0 || a > n || b > m {
        return None;
    }
    // The table [[a, n - a], [b, m - b]]: with its margins fixed, `a` follows the
    // hypergeometric law of drawing n from n + m holding a + b with the property.
    let (with, total) = (a + b, n + m);
    let ln_choose = |k: u64, r: u64| {
        ln_gamma(k as f64 + 1.0) - ln_gamma(r as f64 + 1.0) - ln_gamma((k - r) as f64 + 1.0)
    };
    let pmf =
        |x: u64| (ln_choose(with, x) + ln_choose(total - with, n - x) - ln_choose(total, n)).exp();
    let lo = with.saturating_sub(m);
    let hi = with.min(n);
    let seen = pmf(a);
    // scipy's relative tolerance: tables as likely as the one seen, to rounding, count too.
    let p: f64 = (lo..=hi)
        .map(pmf)
        .filter(|&q| q <= seen * (1.0 + 1e-7))
        .sum();
    Some(p.min(1.0))
}

#[cfg(test)]
mod unit {
    use super::*;

    // scipy 1.17.1: fisher_exact([[a, n - a], [b, m - b]]).pvalue
    #[test]
    fn fisher_s_exact_test_matches_scipy() {
        for (a, n, b, m, scipy) in [
            (16, 48, 21, 48, 0.4017574875674178),
            (1, 10, 11, 14, 0.0027594561852200836),
            (0, 10, 10, 10, 1.082508822446903e-05),
            (5, 10, 5, 10, 1.0),
            (3, 43, 12, 42, 0.01094383860894112),
        ] {
            let p = fisher_exact(a, n, b, m).unwrap();
            assert!(
                (p - scipy).abs() <= 1e-9 * scipy,
                "{a}/{n} {b}/{m}: {p} against {scipy}"
            );
        }
        assert_eq!(fisher_exact(1, 0, 1, 2), None);
        assert_eq!(fisher_exact(3, 2, 1, 2), None);
    }
}
