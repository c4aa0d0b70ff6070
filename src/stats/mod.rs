//! Descriptive statistics for a set of measurements: the columns of the public investigations' tables
//! (min, mean, median, max, pstdev) plus a 95% confidence interval of the mean.
//!
//! Distribution quantiles come from `statrs`; the rest is arithmetic.

pub(crate) mod anova;
pub(crate) mod correlation;
pub(crate) mod exact;
pub(crate) mod paired;
pub(crate) mod proportions;
pub(crate) mod rank_tests;
pub(crate) mod registry;
pub(crate) mod regression;
pub(crate) mod significance;
pub(crate) mod slope;
pub(crate) mod t_tests;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A two-sided interval `[lo, hi]`. Written to files as the pair `[lo, hi]`, as before it had
/// a name.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "(f64, f64)", into = "(f64, f64)")]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub(crate) fn new(lo: f64, hi: f64) -> Interval {
        Interval { lo, hi }
    }

    /// Both ends mapped by `f` (e.g. a log ratio to a percentage).
    pub(crate) fn map(self, f: impl Fn(f64) -> f64) -> Interval {
        Interval::new(f(self.lo), f(self.hi))
    }

    /// Neither end reaches zero.
    pub(crate) fn excludes_zero(self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }

    /// Both ends strictly inside ±`t`.
    pub(crate) fn inside(self, t: f64) -> bool {
        self.lo > -t && self.hi < t
    }

    pub(crate) fn width(self) -> f64 {
        self.hi - self.lo
    }
}

impl From<(f64, f64)> for Interval {
    fn from((lo, hi): (f64, f64)) -> Interval {
        Interval { lo, hi }
    }
}

impl From<Interval> for (f64, f64) {
    fn from(i: Interval) -> (f64, f64) {
        (i.lo, i.hi)
    }
}

/// A test's statistic and its two-sided p-value, with how p was found ("exact", "asymptotic",
/// "normal").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tested {
    pub statistic: f64,
    pub p: f64,
    pub method: &'static str,
}

/// Summary of one metric over its units of replication (runs, or samples when there is one run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Population standard deviation (divides by n), as in the audit series' table.
    pub pstdev: f64,
    /// Sample standard deviation (divides by n - 1).
    pub stdev: f64,
    /// `pstdev` as a percentage of the mean (the "+- x%" of the audit series).
    pub pstdev_pct: f64,
    /// Two-sided 95% confidence interval of the mean (Student's t, n - 1 degrees of freedom);
    /// `None` with fewer than two values.
    pub ci95: Option<(f64, f64)>,
}

/// Arithmetic mean; `NaN` for an empty slice.
pub(crate) fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Median (mean of the two middle values for an even count); `NaN` for an empty slice.
pub(crate) fn median(xs: &[f64]) -> f64 {
    quantile(xs, 0.5)
}

/// Quantile with linear interpolation between order statistics (numpy's default, "type 7").
pub(crate) fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Sum of squared deviations from the mean.
fn sum_sq_dev(xs: &[f64], m: f64) -> f64 {
    xs.iter().map(|x| (x - m) * (x - m)).sum()
}

/// Population standard deviation.
pub(crate) fn pstdev(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (sum_sq_dev(xs, mean(xs)) / xs.len() as f64).sqrt()
}

/// Sample standard deviation; 0 for a single value.
pub(crate) fn stdev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    (sum_sq_dev(xs, mean(xs)) / (xs.len() - 1) as f64).sqrt()
}

/// The two-sided critical value of Student's t for `confidence` (e.g. 0.95) and `df` degrees of
/// freedom.
pub(crate) fn t_critical(confidence: f64, df: f64) -> f64 {
    let t = StudentsT::new(0.0, 1.0, df).expect("degrees of freedom are positive");
    t.inverse_cdf(0.5 + confidence / 2.0)
}

/// Confidence interval of the mean at `confidence`; `None` for fewer than two values.
pub(crate) fn mean_ci(xs: &[f64], confidence: f64) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let m = mean(xs);
    let half = t_critical(confidence, n - 1.0) * stdev(xs) / n.sqrt();
    Some((m - half, m + half))
}

/// The distribution-free interval of the median at (at least) `confidence`: the order
/// statistics x_(k) and x_(n+1-k) with the largest k such that P(Binomial(n, 1/2) < k) <=
/// (1 - confidence) / 2. Returns the interval and its exact coverage; `None` when even the
/// whole range covers less (n < 6 at 95%).
pub(crate) fn median_ci(xs: &[f64], confidence: f64) -> Option<((f64, f64), f64)> {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let b = Binomial::new(0.5, n as u64).ok()?;
    let tail = (1.0 - confidence) / 2.0;
    // P(X <= k - 1) for k = 1, 2, ...: the chance the median lies below x_(k).
    let k = (1..=n / 2)
        .take_while(|&k| b.cdf(k as u64 - 1) <= tail)
        .last()?;
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let coverage = 1.0 - 2.0 * b.cdf(k as u64 - 1);
    Some(((sorted[k - 1], sorted[n - k]), coverage))
}

impl Summary {
    /// Summarise `xs`; `None` when empty or when any value is not finite.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let m = mean(xs);
        let p = pstdev(xs);
        Some(Summary {
            n: xs.len(),
            median: median(xs),
            mean: m,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            pstdev: p,
            stdev: stdev(xs),
            pstdev_pct: if m != 0.0 { 100.0 * p / m.abs() } else { 0.0 },
            ci95: mean_ci(xs, 0.95).map(|(lo, hi)| {
                // The mean of values that cannot be negative (times, counts) cannot be either:
                // with two runs Student's t (12.7) reaches below zero.
                if xs.iter().all(|x| *x >= 0.0) {
                    (lo.max(0.0), hi)
                } else {
                    (lo, hi)
                }
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_is_the_binomial_order_statistics() {
        // Indices k and coverages from scipy.stats.binom: the largest k with
        // binom.cdf(k - 1, n, 0.5) <= 0.025, coverage 1 - 2 binom.cdf(k - 1, n, 0.5).
        for (n, k, coverage) in [
            (6, 1, 0.96875),
            (10, 2, 0.978515625),
            (12, 3, 0.96142578125),
            (20, 6, 0.9586105346679688),
            (31, 10, 0.9705506265163422),
        ] {
            let xs: Vec<f64> = (1..=n).rev().map(f64::from).collect();
            let ((lo, hi), c) = median_ci(&xs, 0.95).unwrap();
            assert_eq!((lo, hi), (k as f64, (n + 1 - k) as f64), "n = {n}");
            assert!((c - coverage).abs() < 1e-12, "n = {n}: {c}");
        }
        assert!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).is_none());
        assert!(median_ci(&[], 0.95).is_none());
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    // Reference values computed independently with Python 3.11, NumPy and SciPy 1.17:
    //   import numpy as np, scipy.stats as st
    //   x = np.array([2, 4, 4, 4, 5, 5, 7, 9.])
    //   x.mean(), np.median(x), x.std(ddof=0), x.std(ddof=1)
    //   st.t.interval(0.95, len(x)-1, loc=x.mean(), scale=st.sem(x))
    #[test]
    fn the_interval_of_a_mean_of_times_stays_at_or_above_zero() {
        let s = Summary::of(&[208.58, 442.47]).unwrap();
        assert_eq!(
            s.ci95.unwrap().0,
            0.0,
            "t for two values reaches below zero"
        );
        let signed = Summary::of(&[-1.0, 3.0]).unwrap();
        assert!(
            signed.ci95.unwrap().0 < -1.0,
            "a signed quantity keeps its interval"
        );
    }

    #[test]
    fn summary_matches_scipy() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::of(&x).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!(close(s.pstdev, 2.0, 1e-12));
        assert!(close(s.stdev, 2.138089935299395, 1e-12));
        assert!(close(s.pstdev_pct, 40.0, 1e-12));
        let (lo, hi) = s.ci95.unwrap();
        assert!(close(lo, 3.21251208176379, 1e-9), "{lo}");
        assert!(close(hi, 6.787487918236209, 1e-9), "{hi}");
    }

    // scipy.stats.t.ppf(0.975, df) for df = 1, 4, 11, 30
    #[test]
    fn t_quantiles_match_scipy() {
        assert!(close(t_critical(0.95, 1.0), 12.706204736174694, 1e-9));
        assert!(close(t_critical(0.95, 4.0), 2.7764451051977934, 1e-9));
        assert!(close(t_critical(0.95, 11.0), 2.200985160091639, 1e-9));
        assert!(close(t_critical(0.95, 30.0), 2.0422724563012378, 1e-9));
    }

    // np.quantile([1, 2, 3, 4, 10], [0.25, 0.5, 0.9]) == [2., 3., 7.6]
    #[test]
    fn quantiles_match_numpy() {
        let x = [10.0, 1.0, 3.0, 2.0, 4.0];
        assert!(close(quantile(&x, 0.25), 2.0, 1e-12));
        assert!(close(quantile(&x, 0.5), 3.0, 1e-12));
        assert!(close(quantile(&x, 0.9), 7.6, 1e-12));
    }

    #[test]
    fn edge_cases() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
        let one = Summary::of(&[3.5]).unwrap();
        assert_eq!((one.median, one.pstdev, one.stdev), (3.5, 0.0, 0.0));
        assert!(one.ci95.is_none(), "no interval from a single value");
        let zero = Summary::of(&[0.0, 0.0]).unwrap();
        assert_eq!(zero.pstdev_pct, 0.0);
    }
}
