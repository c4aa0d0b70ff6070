//! Paired analysis of interleaved designs: each round gives one run of the baseline and one of
//! the variant, taken seconds apart, so the machine's drift falls on both. The unit is the round
//! and the quantity its log ratio `d = ln(B / A)`; results are reported as percentages,
//! `100 (e^d - 1)`.
//!
//! - [`signed_rank`]: the Wilcoxon signed-rank test as scipy's `method="auto"` decides it: the
//!   exact null distribution for up to 50 pairs without ties or zeros; with ties or zeros, every
//!   sign flip of up to 13 pairs (scipy's permutation test, which enumerates all 2^13); the
//!   normal approximation with the tie correction otherwise, without continuity correction, as
//!   scipy's default;
//! - [`hodges_lehmann`]: the median of the Walsh averages and its distribution-free confidence
//!   interval (the one R's `wilcox.test(conf.int = TRUE)` gives);
//! - [`paired_t`]: Student's t on the log ratios, with its interval.
//!
//! Written here because no maintained crate has the signed-rank test with an exact small-sample
//! distribution or the Hodges-Lehmann interval; the distributions come from statrs.

use super::significance::{ranks, tested};
use super::{Interval, Tested};
use super::{mean, stdev, t_critical};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Up to this many pairs without ties or zeros, the exact distribution is used.
pub(crate) const EXACT_MAX: usize = 50;

/// Up to this many pairs (zeros counted) with ties or zeros, the p is exact over every sign
/// flip: scipy's `auto` runs its permutation test there, whose 9,999 resamples exceed the
/// 2^13 flips, so it enumerates them all.
pub(crate) const FLIPS_MAX: usize = 13;

/// The number of subsets of {1..n} with each rank sum: the exact null distribution of W+ for
/// n pairs is `counts[w] / 2^n`.
pub(crate) fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut c = vec![0.0; max + 1];
    c[0] = 1.0;
    for k in 1..=n {
        for w in (k..=max).rev() {
            c[w] += c[w - k];
        }
    }
    c
}

/// P(W+ <= w) for n pairs, exactly.
fn exact_cdf(counts: &[f64], w: usize, n: usize) -> f64 {
    let total = 2f64.powi(n as i32);
    counts.iter().take(w + 1).sum::<f64>() / total
}

/// The signed-rank test of `d` against 0: W+, the two-sided p, and how it was found ("exact",
/// "flips" or "normal", as scipy's `method="auto"` chooses). Zeros are dropped (scipy's
/// `zero_method="wilcox"`). `None` with no non-zero difference.
pub(crate) fn signed_rank(d: &[f64]) -> Option<Tested> {
    let nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let n = nz.len();
    if n == 0 {
        return None;
    }
    let abs: Vec<f64> = nz.iter().map(|x| x.abs()).collect();
    let (r, ties) = ranks(&abs);
    let w_plus: f64 = nz
        .iter()
        .zip(&r)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    let t = w_plus.min(total - w_plus);
    let zeros = n != d.len();
    if d.len() <= EXACT_MAX && ties == 0.0 && !zeros {
        let counts = signed_rank_counts(n);
        let p = (2.0 * exact_cdf(&counts, t as usize, n)).min(1.0);
        return Some(tested(w_plus, p, "exact"));
    }
    if d.len() <= FLIPS_MAX {
        return Some(tested(w_plus, flipped_p(&r, w_plus), "flips"));
    }
    let var = (n * (n + 1) * (2 * n + 1)) as f64 / 24.0 - ties / 48.0;
    if var <= 0.0 {
        return Some(tested(w_plus, 1.0, "normal"));
    }
    let z = (t - total / 2.0) / var.sqrt();
    let p = (2.0 * Normal::standard().cdf(-z.abs())).min(1.0);
    Some(tested(w_plus, p, "normal"))
}

/// The two-sided p of W+ = `w_plus` over every sign flip of the differences whose ranks (ties
/// averaged, so whole or halves) are `r`: twice the smaller tail, at most 1, as scipy's
/// permutation test gives it.
fn flipped_p(r: &[f64], w_plus: f64) -> f64 {
    // Ranks doubled are whole: the count of flips giving each doubled sum, subset by subset.
    let doubled: Vec<usize> = r.iter().map(|x| (2.0 * x).round() as usize).collect();
    let max: usize = doubled.iter().sum();
    let mut c = vec![0.0f64; max + 1];
    c[0] = 1.0;
    for &k in &doubled {
        for w in (k..=max).rev() {
            c[w] += c[w - k];
        }
    }
    let all = 2f64.powi(r.len() as i32);
    let at = (2.0 * w_plus).round() as usize;
    let below: f64 = c[..=at].iter().sum::<f64>() / all;
    let above: f64 = c[at..].iter().sum::<f64>() / all;
    (2.0 * below.min(above)).min(1.0)
}

/// The smallest two-sided p-value the signed-rank test can give for n pairs: 2 / 2^n.
pub(crate) fn min_signed_rank_p(n: usize) -> f64 {
    (2.0 / 2f64.powi(n as i32)).min(1.0)
}

/// The fewest pairs whose signed-rank test can give a p below `alpha` when Holm multiplies the
/// smallest p by `comparisons` (the variants compared with the baseline): 6 for one comparison
/// at 0.05 (5 pairs cannot go below 0.0625), 7 for two.
pub(crate) fn pairs_to_decide(alpha: f64, comparisons: usize) -> usize {
    let k = comparisons.max(1) as f64;
    (1..=200)
        .find(|&n| min_signed_rank_p(n) * k < alpha)
        .unwrap_or(200)
}

/// The sorted Walsh averages (d_i + d_j) / 2, i <= j.
fn walsh(d: &[f64]) -> Vec<f64> {
    let mut w = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            w.push((d[i] + d[j]) / 2.0);
        }
    }
    w.sort_by(|a, b| a.total_cmp(b));
    w
}

/// A centre and, when the data can reach the confidence asked, its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Located {
    pub estimate: f64,
    pub interval: Option<Interval>,
}

/// The paired t's mean, p and interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MeanInterval {
    pub mean: f64,
    /// `None` when every difference is the same (no spread to test against).
    pub p: Option<f64>,
    pub interval: Interval,
}

/// The Hodges-Lehmann estimate of the centre of `d` (the median of the Walsh averages) and
/// its `confidence` interval: the Walsh averages at the signed-rank test's critical values
/// (exact for up to 50 pairs without ties, the normal approximation beyond). `None` for fewer
/// than 2 pairs; the interval is `None` when n is too small to reach `confidence` at all.
pub(crate) fn hodges_lehmann(d: &[f64], confidence: f64) -> Option<Located> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let w = walsh(d);
    let m = w.len();
    let est = super::median(&w);
    let alpha = 1.0 - confidence;
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let ties = ranks(&abs).1 != 0.0 || d.contains(&0.0);
    // k: the number of Walsh averages cut from each end.
    let k = if n <= EXACT_MAX && !ties {
        // The largest k with 2 P(W+ <= k - 1) <= alpha (R's qsignrank(alpha / 2, n)).
        let counts = signed_rank_counts(n);
        let total = 2f64.powi(n as i32);
        let (mut acc, mut k) = (0.0, 0);
        while k < counts.len() && 2.0 * (acc + counts[k]) / total <= alpha {
            acc += counts[k];
            k += 1;
        }
        k
    } else {
        let z = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
        let sd = ((n * (n + 1) * (2 * n + 1)) as f64 / 24.0).sqrt();
        (m as f64 / 2.0 - z * sd).floor().max(0.0) as usize
    };
    let interval = (k >= 1 && k <= m / 2).then(|| Interval::new(w[k - 1], w[m - k]));
    Some(Located {
        estimate: est,
        interval,
    })
}

/// Student's t on `d`: the mean, the two-sided p and the `confidence` interval of the mean.
/// `None` for fewer than 2 pairs.
pub(crate) fn paired_t(d: &[f64], confidence: f64) -> Option<MeanInterval> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let m = mean(d);
    let se = stdev(d) / (n as f64).sqrt();
    let df = n as f64 - 1.0;
    let half = t_critical(confidence, df) * se;
    let p = (se > 0.0).then(|| {
        let t = StudentsT::new(0.0, 1.0, df).expect("df >= 1");
        (2.0 * t.cdf(-(m / se).abs())).min(1.0)
    });
    Some(MeanInterval {
        mean: m,
        p,
        interval: Interval::new(m - half, m + half),
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // scipy.stats.wilcoxon(range(1, n + 1)).pvalue: 0.0625 for 5 pairs, 0.03125 for 6, and
    // 0.015625 for 7 (the smallest p: every difference on one side).
    #[test]
    fn the_fewest_pairs_that_can_decide_match_scipy_s_smallest_p() {
        assert_eq!(min_signed_rank_p(5), 0.0625);
        assert_eq!(min_signed_rank_p(6), 0.03125);
        assert_eq!(pairs_to_decide(0.05, 1), 6);
        // Holm doubles the smallest p of two comparisons: 2 * 0.03125 is not below 0.05.
        assert_eq!(pairs_to_decide(0.05, 2), 7);
        assert_eq!(pairs_to_decide(0.01, 1), 8);
    }

    // scipy 1.17.1: scipy.stats._wilcoxon._get_wilcoxon_distr(5) * 2**5
    #[test]
    fn exact_distribution_matches_scipy() {
        let c = signed_rank_counts(5);
        let scipy = [
            1., 1., 1., 2., 2., 3., 3., 3., 3., 3., 3., 2., 2., 1., 1., 1.,
        ];
        assert_eq!(c, scipy);
        assert_eq!(signed_rank_counts(20).iter().sum::<f64>(), 2f64.powi(20));
    }

    // scipy 1.17.1:
    // d = [0.012, -0.004, 0.021, 0.018, 0.009, 0.015, -0.002, 0.011]
    // scipy.stats.wilcoxon(d) -> statistic 3.0 (min(W+, W-)), pvalue 0.0390625 (exact)
    // d2 = d + [0.03, 0.025, -0.01, 0.017, 0.022, 0.008, 0.013, 0.019, 0.027, 0.005, 0.016,
    //           0.024, -0.006, 0.014, 0.02, 0.007, 0.029, 0.01, 0.026, 0.003, 0.028, 0.023,
    //           0.004, 0.031, 0.006, 0.033, 0.032, -0.008, 0.034, 0.035, 0.036, 0.037, 0.038,
    //           0.039, 0.04, 0.041, 0.042, 0.043, 0.044, 0.045, 0.046, 0.047, 0.048]  (51 pairs)
    // scipy.stats.wilcoxon(d2) -> statistic 33.0, pvalue 3.5176258616153648e-09 (approx)
    // tied = [1, 1, 2, -2, 3, 3, 3, -1, 4, 5]
    // scipy.stats.wilcoxon(tied) -> statistic 6.5, pvalue 0.03125 (auto: ties in 10 pairs,
    // every sign flip); method="approx" -> 0.03130779790854022
    #[test]
    fn signed_rank_matches_scipy() {
        let d = [0.012, -0.004, 0.021, 0.018, 0.009, 0.015, -0.002, 0.011];
        let Tested {
            statistic: w,
            p,
            method: how,
        } = signed_rank(&d).unwrap();
        assert_eq!((36.0 - w, how), (3.0, "exact"));
        assert!(close(p, 0.0390625, 1e-12), "{p}");
        let mut d2 = d.to_vec();
        d2.extend([
            0.03, 0.025, -0.01, 0.017, 0.022, 0.008, 0.013, 0.019, 0.027, 0.005, 0.016, 0.024,
            -0.006, 0.014, 0.02, 0.007, 0.029, 0.01, 0.026, 0.003, 0.028, 0.023, 0.004, 0.031,
            0.006, 0.033, 0.032, -0.008, 0.034, 0.035, 0.036, 0.037, 0.038, 0.039, 0.04, 0.041,
            0.042, 0.043, 0.044, 0.045, 0.046, 0.047, 0.048,
        ]);
        let Tested {
            statistic: w,
            p,
            method: how,
        } = signed_rank(&d2).unwrap();
        assert_eq!(how, "normal");
        assert_eq!(51.0 * 52.0 / 2.0 - w, 33.0);
        assert!(close(p, 3.5176258616153648e-09, 1e-9), "{p}");
        let tied = [1.0, 1.0, 2.0, -2.0, 3.0, 3.0, 3.0, -1.0, 4.0, 5.0];
        let Tested {
            statistic: w,
            p,
            method: how,
        } = signed_rank(&tied).unwrap();
        assert_eq!((55.0 - w, how), (6.5, "flips"));
        assert!(close(p, 0.03125, 1e-12), "{p}");
        assert!(signed_rank(&[0.0, 0.0]).is_none());
        assert!((min_signed_rank_p(4) - 0.125).abs() < 1e-15);
    }

    // scipy 1.17.1, method="auto":
    //   wilcoxon([-1, -2, -3, -4, -5, -6, 0, 0]).pvalue == 0.03125 (zeros: every sign flip;
    //     method="approx": 0.027707849358079864)
    //   wilcoxon([-3, -1, -2, -2, -5, -4, 1, -6, -2]).pvalue == 0.01171875 (ties: flips;
    //     approx 0.012459728609350268)
    //   wilcoxon([-9, -8, 0, 0, 0, -8, -9, 7, -8, 0, -9, -8]).pvalue == 0.015625
    //   wilcoxon([-3, -1, -2, -2, -5, -4, 1, -6, -2, -7, -8, -2, -3, -1]).pvalue
    //     == 0.0014626673573089727 (14 pairs with ties: the normal approximation)
    //   wilcoxon([1, 2, 3, 4, 5, -6, 7, 8, 9]).pvalue == 0.0546875 (no ties: exact)
    #[test]
    fn ties_and_zeros_in_13_pairs_or_fewer_flip_every_sign_as_scipy_s_auto() {
        let cases: [(&[f64], f64, &str); 5] = [
            (&[-1., -2., -3., -4., -5., -6., 0., 0.], 0.03125, "flips"),
            (
                &[-3., -1., -2., -2., -5., -4., 1., -6., -2.],
                0.01171875,
                "flips",
            ),
            (
                &[-9., -8., 0., 0., 0., -8., -9., 7., -8., 0., -9., -8.],
                0.015625,
                "flips",
            ),
            (
                &[
                    -3., -1., -2., -2., -5., -4., 1., -6., -2., -7., -8., -2., -3., -1.,
                ],
                0.0014626673573089727,
                "normal",
            ),
            (&[1., 2., 3., 4., 5., -6., 7., 8., 9.], 0.0546875, "exact"),
        ];
        for (d, scipy, how) in cases {
            let t = signed_rank(d).unwrap();
            assert!(close(t.p, scipy, 1e-9), "{d:?}: {} against {scipy}", t.p);
            assert_eq!(t.method, how, "{d:?}");
        }
    }

    // The interval inverts the test. With d as above (8 pairs, exact), 2 P(W <= 3) = 0.039 and
    // 2 P(W <= 4) = 0.0547, so 4 Walsh averages are cut from each end (R's qsignrank(0.025, 8)
    // = 4): [walsh[3], walsh[32]] = [0.0025, 0.018]; median(walsh) = 0.01075 (numpy). scipy
    // 1.17.1 agrees that these are the ends: scipy.stats.wilcoxon(d - c).pvalue is 0.0546875
    // (not rejected) for c = 0.0026 and 0.0179, and 0.0390625 and 0.0234375 (rejected) for
    // c = 0.0024 and 0.0181.
    #[test]
    fn hodges_lehmann_interval_inverts_the_test() {
        let d = [0.012, -0.004, 0.021, 0.018, 0.009, 0.015, -0.002, 0.011];
        let Located {
            estimate: est,
            interval: ci,
        } = hodges_lehmann(&d, 0.95).unwrap();
        assert!(close(est, 0.01075, 1e-12), "{est}");
        let Interval { lo, hi } = ci.unwrap();
        assert!(
            close(lo, 0.0025, 1e-12) && close(hi, 0.018, 1e-12),
            "{lo} {hi}"
        );
        for (c, rejected) in [
            (0.0026, false),
            (0.0179, false),
            (0.0024, true),
            (0.0181, true),
        ] {
            let shifted: Vec<f64> = d.iter().map(|x| x - c).collect();
            let p = signed_rank(&shifted).unwrap().p;
            assert_eq!(p < 0.05, rejected, "c = {c}: p = {p}");
        }
        // Too few pairs for 95%: 2 / 2^4 > 0.05.
        assert_eq!(hodges_lehmann(&d[..4], 0.95).unwrap().interval, None);
    }

    // scipy 1.17.1: r = scipy.stats.ttest_1samp(d, 0) -> pvalue 0.01562857947294929;
    // r.confidence_interval(0.95) -> (0.0025491551230764917, 0.01745084487692351); mean 0.01
    #[test]
    fn paired_t_matches_scipy() {
        let d = [0.012, -0.004, 0.021, 0.018, 0.009, 0.015, -0.002, 0.011];
        let MeanInterval {
            mean: m,
            p,
            interval: Interval { lo, hi },
        } = paired_t(&d, 0.95).unwrap();
        assert!(close(m, 0.01, 1e-12));
        assert!(close(p.unwrap(), 0.01562857947294929, 1e-6), "{p:?}");
        assert!(close(lo, 0.0025491551230764917, 1e-6) && close(hi, 0.01745084487692351, 1e-6));
        assert_eq!(paired_t(&[0.01, 0.01, 0.01], 0.95).unwrap().p, None);
    }
}
