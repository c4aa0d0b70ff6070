//! The rank tests: Mann-Whitney U on independent samples, the Wilcoxon signed-rank test with
//! the Hodges-Lehmann interval on paired rounds. Neither assumes normality.

use super::paired::{hodges_lehmann, min_signed_rank_p, signed_rank};
use super::significance::{PairedTest, SignificanceTest, Unpaired, mann_whitney};

pub(crate) struct Ranks;

pub(crate) static RANKS: Ranks = Ranks;

impl SignificanceTest for Ranks {
    fn name_unpaired(&self) -> &'static str {
        "Mann-Whitney U, two-sided"
    }

    fn name_paired(&self) -> &'static str {
        "Wilcoxon signed-rank on per-round log ratios, two-sided, with the Hodges-Lehmann \
         interval"
    }

    fn unpaired(&self, a: &[f64], b: &[f64]) -> Unpaired {
        Unpaired {
            p: mann_whitney(a, b).map(|t| t.p),
            min_p: Some(min_mann_whitney_p(a.len(), b.len())),
        }
    }

    fn paired(&self, d: &[f64], confidence: f64, equivalence: f64) -> Option<PairedTest> {
        let hl = hodges_lehmann(d, confidence);
        Some(PairedTest {
            centre: hl.map(|h| h.estimate),
            interval: hl.and_then(|h| h.interval),
            equivalence: hodges_lehmann(d, equivalence).and_then(|h| h.interval),
            // All-zero changes: nothing to test, and nothing changed.
            p: Some(signed_rank(d).map(|t| t.p).unwrap_or(1.0)),
            min_p: Some(min_signed_rank_p(d.len())),
        })
    }
}

/// The smallest two-sided p-value Mann-Whitney U can give for samples of n1 and n2 without
/// ties: 2 / C(n1 + n2, n1).
pub(crate) fn min_mann_whitney_p(n1: usize, n2: usize) -> f64 {
    let (k, n) = (n1.min(n2), n1 + n2);
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

#[cfg(test)]
mod unit {
    use super::*;

    // scipy 1.17.1: scipy.stats.mannwhitneyu([1, 2, 3], [4, 5, 6]).pvalue == 0.1;
    // [1..5] against [6..10]: 0.007936507936507936.
    #[test]
    fn the_smallest_p_matches_scipy_s_most_extreme_samples() {
        assert!((min_mann_whitney_p(3, 3) - 0.1).abs() < 1e-15);
        assert!((min_mann_whitney_p(5, 5) - 0.007936507936507936).abs() < 1e-15);
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(RANKS.unpaired(&a, &b).p, Some(min_mann_whitney_p(5, 5)));
    }

    #[test]
    fn all_zero_changes_test_as_nothing_changed() {
        let t = RANKS.paired(&[0.0; 6], 0.95, 0.9).unwrap();
        assert_eq!(t.p, Some(1.0));
        assert_eq!(t.centre, Some(0.0));
    }
}
