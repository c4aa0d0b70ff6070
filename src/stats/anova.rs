//! One-way random-effects analysis of variance: how much of a metric's spread is between groups
//! (boots) and how much within them (runs of one boot), by the method of moments. The naive
//! split (variance of the group means against the mean within-group variance) counts the
//! within-group noise of each mean as between-group spread: data with no boot effect at all
//! showed a 30-37% between-boot share that way.

use super::mean;

/// The variance components of grouped values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Components {
    /// The within-group variance: the pooled mean square within (N - k degrees of freedom).
    pub within: f64,
    /// The between-group variance component, (MSB - MSW) / n0, clamped at 0.
    pub between: f64,
    /// The F statistic, MSB / MSW (`None` without within-group spread).
    pub f: Option<f64>,
}

/// Variance components of `groups` (at least two groups, not all of one value). With one
/// value per group there is no within-group information: `within` is 0 and `between` the
/// variance of the values.
pub(crate) fn components(groups: &[&[f64]]) -> Option<Components> {
    let k = groups.len();
    let n_total: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 || groups.iter().any(|g| g.is_empty()) {
        return None;
    }
    let all: Vec<f64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let grand = mean(&all);
    let ssb: f64 = groups
        .iter()
        .map(|g| g.len() as f64 * (mean(g) - grand).powi(2))
        .sum();
    let ssw: f64 = groups
        .iter()
        .map(|g| {
            let m = mean(g);
            g.iter().map(|x| (x - m).powi(2)).sum::<f64>()
        })
        .sum();
    let msb = ssb / (k - 1) as f64;
    if n_total == k {
        return Some(Components {
            within: 0.0,
            between: msb,
            f: None,
        });
    }
    let msw = ssw / (n_total - k) as f64;
    let sum_sq: f64 = groups.iter().map(|g| (g.len() * g.len()) as f64).sum();
    let n0 = (n_total as f64 - sum_sq / n_total as f64) / (k - 1) as f64;
    Some(Components {
        within: msw,
        between: ((msb - msw) / n0).max(0.0),
        f: (msw > 0.0).then(|| msb / msw),
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    // scipy 1.17.1: scipy.stats.f_oneway([10.1, 10.3, 9.9, 10.0], [10.8, 11.0, 10.7],
    // [9.5, 9.7, 9.6, 9.4, 9.8]).statistic = 54.81672597864754; by hand with numpy,
    // MSW = 0.026018518518518555, MSB = 1.4262500000000022, n0 = 3.9166666666666665, so the
    // between-boot component is (MSB - MSW) / n0 = 0.35750591016548516.
    #[test]
    fn components_match_scipy() {
        let g: [&[f64]; 3] = [
            &[10.1, 10.3, 9.9, 10.0],
            &[10.8, 11.0, 10.7],
            &[9.5, 9.7, 9.6, 9.4, 9.8],
        ];
        let c = components(&g).unwrap();
        assert!((c.f.unwrap() - 54.81672597864754).abs() < 1e-9, "{c:?}");
        assert!((c.within - 0.026018518518518555).abs() < 1e-12);
        assert!((c.between - 0.35750591016548516).abs() < 1e-12);
    }

    #[test]
    fn no_group_effect_gives_a_small_between_share() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let (mut naive, mut moments) = (0.0, 0.0);
        let trials = 200;
        for _ in 0..trials {
            let groups: Vec<Vec<f64>> = (0..12)
                .map(|_| (0..5).map(|_| rng.random_range(99.0..101.0)).collect())
                .collect();
            let refs: Vec<&[f64]> = groups.iter().map(|g| g.as_slice()).collect();
            let c = components(&refs).unwrap();
            moments += c.between / (c.between + c.within);
            let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
            let within = mean(
                &groups
                    .iter()
                    .map(|g| super::super::pstdev(g).powi(2))
                    .collect::<Vec<_>>(),
            );
            let between = super::super::pstdev(&means).powi(2);
            naive += between / (between + within);
        }
        let (naive, moments) = (naive / trials as f64, moments / trials as f64);
        // The naive split credits the boots with the noise of their means (about 1/n of the
        // within variance, here a sixth); the components leave them almost nothing.
        assert!(naive > 0.12, "naive {naive}");
        assert!(moments < 0.05, "method of moments {moments}");
    }
}
