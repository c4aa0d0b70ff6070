//! Student's t: Welch's unequal-variance test on independent samples, the paired t with its
//! interval on paired rounds.

use super::paired::paired_t;
use super::significance::{PairedTest, SignificanceTest, Unpaired, welch};

pub(crate) struct TTests;

pub(crate) static T: TTests = TTests;

impl SignificanceTest for TTests {
    fn name_unpaired(&self) -> &'static str {
        "Welch's t, two-sided"
    }

    fn name_paired(&self) -> &'static str {
        "paired t on per-round log ratios, two-sided, with its t interval"
    }

    fn unpaired(&self, a: &[f64], b: &[f64]) -> Unpaired {
        Unpaired {
            p: welch(a, b).map(|w| w.p),
            min_p: None,
        }
    }

    fn paired(&self, d: &[f64], confidence: f64, equivalence: f64) -> Option<PairedTest> {
        let t = paired_t(d, confidence)?;
        Some(PairedTest {
            centre: Some(t.mean),
            interval: Some(t.interval),
            equivalence: Some(paired_t(d, equivalence)?.interval),
            p: t.p,
            min_p: None,
        })
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    // scipy 1.17.1: scipy.stats.ttest_1samp(d, 0).pvalue == 0.01562857947294929 for the d below;
    // its 90% interval (for TOST) is narrower than its 95% one.
    #[test]
    fn the_paired_t_gives_both_intervals_and_scipy_s_p() {
        let d = [0.012, -0.004, 0.021, 0.018, 0.009, 0.015, -0.002, 0.011];
        let t = T.paired(&d, 0.95, 0.90).unwrap();
        assert!((t.p.unwrap() - 0.01562857947294929).abs() < 1e-8);
        assert!(t.equivalence.unwrap().width() < t.interval.unwrap().width());
        assert!(
            T.paired(&[0.01], 0.95, 0.9).is_none(),
            "one pair has no spread"
        );
    }
}
