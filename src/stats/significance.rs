//! Significance tests, multiple-comparison correction and the bootstrap.
//!
//! Mann-Whitney U and Welch's t are short enough to write against statrs's distributions; no
//! maintained crate offers both with tie correction and an exact small-sample U distribution.

use super::{Interval, Tested};
use rand::SeedableRng;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// A statistical test as a comparison uses it: on two independent samples, or on the per-round
/// changes of paired rounds. Each family of tests is one file implementing this
/// (`rank_tests`, `t_tests`) and one line in `registry::TestKind::test`.
pub(crate) trait SignificanceTest: Sync {
    /// The test's name on independent samples, as results print it.
    fn name_unpaired(&self) -> &'static str;
    /// The test's name on paired rounds.
    fn name_paired(&self) -> &'static str;
    /// Two independent samples.
    fn unpaired(&self, a: &[f64], b: &[f64]) -> Unpaired;
    /// Per-round changes `d` (log ratios or scaled differences): their centre with intervals
    /// at `confidence` and at `equivalence` (for TOST), and the test of `d` against 0. `None`
    /// when the test cannot be taken on `d` at all.
    fn paired(&self, d: &[f64], confidence: f64, equivalence: f64) -> Option<PairedTest>;
}

/// An unpaired test's p and, for a rank test, the smallest p its sample sizes allow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Unpaired {
    pub p: Option<f64>,
    pub min_p: Option<f64>,
}

/// A paired test on per-round changes, in the changes' own scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PairedTest {
    pub centre: Option<f64>,
    pub interval: Option<Interval>,
    pub equivalence: Option<Interval>,
    pub p: Option<f64>,
    /// The smallest p the test could give with this many pairs (rank tests).
    pub min_p: Option<f64>,
}

/// Ranks starting at 1, ties given their average rank; also returns Σ(t³ - t) over tie groups.
pub(crate) fn ranks(xs: &[f64]) -> (Vec<f64>, f64) {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (r, ties)
}

/// Exact null distribution of U for sample sizes (n1, n2) without ties: counts of arrangements
/// for each U value, by the recurrence f(n1, n2, u) = f(n1-1, n2, u-n2) + f(n1, n2-1, u).
fn exact_u_counts(n1: usize, n2: usize) -> Vec<f64> {
    // table[j] holds the distribution for (i, j) as i grows.
    let max = n1 * n2;
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // i = 0
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]); // j = 0
        for j in 1..=n2 {
            let mut d = vec![0.0; i * j + 1];
            // arrangements where the largest value is from sample 1: U gains j
            for (u, c) in prev[j].iter().enumerate() {
                d[u + j] += c;
            }
            // largest from sample 2: U unchanged
            for (u, c) in cur[j - 1].iter().enumerate() {
                d[u] += c;
            }
            cur.push(d);
        }
        prev = cur;
    }
    let mut d = prev[n2].clone();
    d.resize(max + 1, 0.0);
    d
}

/// The largest sample of the smaller side scipy's `auto` takes Mann-Whitney's exact distribution
/// for (without ties); beyond it on both sides, the normal approximation.
pub(crate) const MW_EXACT_MAX: usize = 8;

/// Two-sided Mann-Whitney U test: the U of the first sample, the p-value and the method, as
/// scipy's `method="auto"` chooses it: the exact distribution without ties when either sample
/// has at most [`MW_EXACT_MAX`] values, otherwise the normal approximation with tie and
/// continuity correction (scipy's 'asymptotic').
pub(crate) fn mann_whitney(a: &[f64], b: &[f64]) -> Option<Tested> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let big = u1.max(u2);
    if ties == 0.0 && n1.min(n2) <= MW_EXACT_MAX {
        let counts = exact_u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        // P(U >= big) under the null; the distribution is symmetric.
        let k = big.round() as usize;
        let sf: f64 = counts[k..].iter().sum::<f64>() / total;
        return Some(tested(u1, (2.0 * sf).min(1.0), "exact"));
    }
    let n = (n1 + n2) as f64;
    let mu = (n1 * n2) as f64 / 2.0;
    let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return Some(tested(u1, 1.0, "asymptotic"));
    }
    let z = (big - mu - 0.5) / var.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    Some(tested(u1, (2.0 * normal.sf(z)).min(1.0), "asymptotic"))
}

/// Welch's two-sided t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Welch {
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    pub p: f64,
}

/// Welch's two-sided t-test. `None` with fewer than two values in either sample.
pub(crate) fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (super::mean(a), super::mean(b));
    let (va, vb) = (super::stdev(a).powi(2), super::stdev(b).powi(2));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 == 0.0 {
        // Two constant samples: t is undefined (as scipy says, nan), not p = 0.
        return None;
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    // Values so large that the variances overflow leave no usable degrees of freedom.
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch {
        t,
        df,
        p: (2.0 * dist.sf(t.abs())).min(1.0),
    })
}

pub(crate) fn tested(statistic: f64, p: f64, method: &'static str) -> Tested {
    Tested {
        statistic,
        p,
        method,
    }
}

/// Holm-Bonferroni adjusted p-values, in the order given.
pub(crate) fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Draws bootstrap medians of one sample in constant time each, instead of building and
/// selecting in a resample of n values (10,000 resamples of 100,000 values took 12 s that way).
///
/// Why this is exact, not an approximation: a resample is `x[floor(n * U_i)]` for n uniform
/// draws `U_i`, and with `x` sorted the k-th smallest resampled value is `x[floor(n * U_(k))]`,
/// where `U_(k)`, the k-th order statistic of n uniforms, is Beta(k, n + 1 - k). Given `U_(k)`,
/// the next one is `U_(k) + (1 - U_(k)) * Beta(1, n - k)`. So a resample's median (the middle
/// value, or the mean of the two middle values for an even n, as [`super::median`]) has exactly
/// the distribution of the resampling. No crate offers this, hence our own few lines.
struct MedianResampler {
    sorted: Vec<f64>,
    middle: rand_distr::Beta<f64>,
    next: Option<rand_distr::Beta<f64>>,
}

impl MedianResampler {
    /// `None` for an empty sample or one with a value that cannot be ordered (NaN).
    fn new(xs: &[f64]) -> Option<MedianResampler> {
        if xs.is_empty() || xs.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        // The lower middle rank: (n + 1) / 2 for odd n, n / 2 for even n.
        let k = sorted.len().div_ceil(2) as f64;
        let middle = rand_distr::Beta::new(k, n + 1.0 - k).ok()?;
        let next = if sorted.len().is_multiple_of(2) {
            Some(rand_distr::Beta::new(1.0, n - k).ok()?)
        } else {
            None
        };
        Some(MedianResampler {
            sorted,
            middle,
            next,
        })
    }

    fn at(&self, u: f64) -> f64 {
        let n = self.sorted.len();
        self.sorted[((u * n as f64) as usize).min(n - 1)]
    }

    fn draw<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        use rand::distr::Distribution;
        let u = self.middle.sample(rng);
        match &self.next {
            None => self.at(u),
            Some(next) => {
                let v = u + (1.0 - u) * next.sample(rng);
                (self.at(u) + self.at(v)) / 2.0
            }
        }
    }
}

/// Percentile bootstrap of the relative difference of medians, `100 * (med(b) - med(a)) /
/// med(a)`: resamples each sample with replacement `resamples` times from a generator seeded
/// with `seed` (PCG64, so the interval is the same on every machine and version), and cuts the
/// one distribution at each of `confidences` (one interval each). Each resample's median is
/// drawn directly (see [`MedianResampler`]), so the cost is one sort plus O(resamples).
pub(crate) fn bootstrap_delta_pct(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    confidences: &[f64],
) -> Option<Vec<(f64, f64)>> {
    if resamples == 0 {
        return None;
    }
    let (ra, rb) = (MedianResampler::new(a)?, MedianResampler::new(b)?);
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut deltas = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (ma, mb) = (ra.draw(&mut rng), rb.draw(&mut rng));
        if ma != 0.0 {
            deltas.push(100.0 * (mb - ma) / ma);
        }
    }
    if deltas.is_empty() {
        return None;
    }
    Some(
        confidences
            .iter()
            .map(|c| {
                let tail = (1.0 - c) / 2.0;
                (
                    super::quantile(&deltas, tail),
                    super::quantile(&deltas, 1.0 - tail),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod unit {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // Reference values: Python 3.11, SciPy 1.17.1:
    //   from scipy import stats
    //   a = [1.1, 2.3, 3.2, 4.8, 5.0]; b = [6.1, 7.4, 8.8, 9.0, 10.2, 3.3]
    //   stats.mannwhitneyu(a, b, method='exact')            -> U=2.0, p=0.017316017316017316
    //   c = [1, 2, 2, 3, 4, 5]; d = [3, 4, 4, 5, 6, 7, 8]
    //   stats.mannwhitneyu(c, d, method='asymptotic')       -> U=6.0, p=0.0364709007712748
    //   stats.ttest_ind(a, b, equal_var=False)              -> t=-3.3337118595516495,
    //                                                          p=0.009207576110190446
    //   Holm, with statsmodels 0.14:
    //   multipletests([0.01, 0.04, 0.03, 0.005], method='holm')[1]
    //                                                       -> [0.03, 0.06, 0.06, 0.02]
    #[test]
    fn mann_whitney_exact_matches_scipy() {
        let a = [1.1, 2.3, 3.2, 4.8, 5.0];
        let b = [6.1, 7.4, 8.8, 9.0, 10.2, 3.3];
        let Tested {
            statistic: u,
            p,
            method,
        } = mann_whitney(&a, &b).unwrap();
        assert_eq!(method, "exact");
        assert_eq!(u, 2.0);
        assert!(close(p, 0.017316017316017316, 1e-12), "{p}");
    }

    #[test]
    fn mann_whitney_asymptotic_with_ties_matches_scipy() {
        let c = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0];
        let d = [3.0, 4.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let Tested {
            statistic: u,
            p,
            method,
        } = mann_whitney(&c, &d).unwrap();
        assert_eq!(method, "asymptotic");
        assert_eq!(u, 6.0);
        assert!(close(p, 0.0364709007712748, 1e-9), "{p}");
    }

    // scipy 1.17.1: a = arange(1, 10); b = arange(6, 16) + 0.5
    // mannwhitneyu(a, b).pvalue == 0.00166933664274255 (9 and 10 values: 'auto' takes the
    // normal approximation; method='exact' gives 0.0006495052934681417); with a = arange(1, 9),
    // b = arange(6, 26) + 0.5: 4.504352330439287e-06, exact (8 and 20)
    #[test]
    fn mann_whitney_takes_scipy_s_auto_method() {
        let a: Vec<f64> = (1..10).map(f64::from).collect();
        let b: Vec<f64> = (6..16).map(f64::from).map(|x| x + 0.5).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.method, "asymptotic");
        assert!(close(t.p, 0.00166933664274255, 1e-9), "{}", t.p);
        let a: Vec<f64> = (1..9).map(f64::from).collect();
        let b: Vec<f64> = (6..26).map(f64::from).map(|x| x + 0.5).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.method, "exact");
        assert!(close(t.p, 4.504352330439287e-06, 1e-9), "{}", t.p);
    }

    #[test]
    fn mann_whitney_identical_samples() {
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap().p;
        assert!(p > 0.9);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn exact_distribution_sums_to_binomial() {
        let c = exact_u_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0, "C(10, 5) arrangements");
        assert_eq!(c[0], 1.0);
        assert_eq!(c[25], 1.0);
    }

    #[test]
    fn welch_matches_scipy() {
        let a = [1.1, 2.3, 3.2, 4.8, 5.0];
        let b = [6.1, 7.4, 8.8, 9.0, 10.2, 3.3];
        let Welch { t, p, .. } = welch(&a, &b).unwrap();
        assert!(close(t, -3.3337118595516495, 1e-9), "{t}");
        assert!(close(p, 0.009207576110190446, 1e-6), "{p}");
        // scipy 1.17.1: ttest_ind([1, 1], [1, 1], equal_var=False) gives nan, and ([1, 1],
        // [2, 2]) t = -inf, p = 0. With no spread there is no noise to test a difference
        // against: syscost says "no test" for both rather than p = 0.
        assert!(welch(&[1.0, 1.0], &[1.0, 1.0]).is_none());
        assert!(welch(&[1.0, 1.0], &[2.0, 2.0]).is_none());
        // Variances that overflow f64 (values near 1e200) leave no degrees of freedom.
        assert!(welch(&[1e200, 2e200, 3e200], &[1e200, 5e200]).is_none());
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn holm_matches_statsmodels() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!(close(*a, w, 1e-12), "{adj:?}");
        }
    }

    // Reference: SciPy 1.17.1, 400,000 resamples (random_state 1 and 2):
    //   rng = np.random.default_rng(3)
    //   a = np.round(100 + rng.normal(0, 2, 31), 3); b = np.round(103 + rng.normal(0, 2, 40), 3)
    //   def stat(x, y, axis=-1):
    //       mx = np.median(x, axis=axis); return 100 * (np.median(y, axis=axis) - mx) / mx
    //   stats.bootstrap((a, b), stat, method='percentile', vectorized=True, n_resamples=400000,
    //                   confidence_level=0.95 / 0.90).confidence_interval
    //   -> (2.3668402482783386, 4.529138457787324) and (2.6236411420379957, 4.317092531374666)
    const REF_A: [f64; 31] = [
        104.082, 94.889, 100.836, 98.864, 99.095, 99.569, 95.96, 99.536, 98.27, 106.646, 100.452,
        99.295, 99.437, 98.664, 97.89, 99.218, 100.964, 99.523, 101.916, 99.6, 100.049, 103.092,
        101.09, 98.99, 99.634, 101.081, 103.87, 99.461, 99.513, 102.005, 98.227,
    ];
    const REF_B: [f64; 40] = [
        102.417, 104.765, 104.161, 103.183, 104.34, 97.344, 105.043, 101.081, 99.663, 103.553,
        104.401, 102.11, 100.847, 103.052, 102.895, 105.811, 104.495, 103.388, 105.223, 102.589,
        101.148, 104.168, 104.165, 102.57, 101.434, 103.458, 98.012, 104.38, 103.983, 99.722,
        103.123, 101.072, 104.514, 98.932, 101.171, 104.419, 105.313, 98.684, 102.004, 103.656,
    ];

    #[test]
    fn bootstrap_matches_scipy() {
        let cis = bootstrap_delta_pct(&REF_A, &REF_B, 400_000, 11, &[0.95, 0.90]).unwrap();
        let want = [
            (2.3668402482783386, 4.529138457787324),
            (2.6236411420379957, 4.317092531374666),
        ];
        for (got, want) in cis.iter().zip(want) {
            // Two Monte Carlo estimates of the same quantiles: agree to a few hundredths of a
            // percentage point.
            assert!((got.0 - want.0).abs() < 0.03, "{got:?} vs {want:?}");
            assert!((got.1 - want.1).abs() < 0.03, "{got:?} vs {want:?}");
        }
    }

    /// The direct draw of a resample's median has the distribution of building the resample
    /// and taking its median, for odd and even counts and with ties.
    #[test]
    fn median_draws_match_resampling() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        for xs in [
            vec![3.0, 1.0, 2.0, 2.0, 9.0],
            vec![3.0, 1.0, 2.0, 7.0, 9.0, 4.0],
            vec![5.0],
            vec![5.0, 6.0],
        ] {
            let fast = MedianResampler::new(&xs).unwrap();
            let draws = 200_000;
            let mut by_draw: Vec<f64> = (0..draws).map(|_| fast.draw(&mut rng)).collect();
            let mut by_resample: Vec<f64> = (0..draws)
                .map(|_| {
                    let r: Vec<f64> = (0..xs.len())
                        .map(|_| xs[rng.random_range(0..xs.len())])
                        .collect();
                    super::super::median(&r)
                })
                .collect();
            by_draw.sort_by(f64::total_cmp);
            by_resample.sort_by(f64::total_cmp);
            // Compare the two empirical distributions at every value either takes.
            let cdf = |v: &[f64], x: f64| v.partition_point(|y| *y <= x) as f64 / v.len() as f64;
            for x in by_draw.iter().chain(&by_resample) {
                let (p, q) = (cdf(&by_draw, *x), cdf(&by_resample, *x));
                assert!((p - q).abs() < 0.01, "{xs:?} at {x}: {p} vs {q}");
            }
        }
        assert!(MedianResampler::new(&[]).is_none());
        assert!(MedianResampler::new(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_the_shift() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [110.0, 111.0, 109.0, 110.5, 109.5];
        let x = bootstrap_delta_pct(&a, &b, 2000, 7, &[0.95]).unwrap()[0];
        let y = bootstrap_delta_pct(&a, &b, 2000, 7, &[0.95]).unwrap()[0];
        assert_eq!(x, y, "same seed, same interval");
        assert!(
            x.0 > 7.0 && x.1 < 13.0 && x.0 <= 10.0 && 10.0 <= x.1,
            "{x:?}"
        );
    }
}
