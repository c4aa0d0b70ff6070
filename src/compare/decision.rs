//! Decisions on intervals. A delta is called a change only when its interval excludes zero and
//! its (Holm-adjusted) p-value is below alpha; it is called equivalent when its (1 - 2 alpha)
//! interval lies inside the noise threshold (two one-sided tests at alpha, TOST); otherwise the
//! data cannot tell, and the verdict says so with an estimate of how many more units would
//! likely decide. "No change" is never said: an underpowered comparison is inconclusive.

use crate::stats::Interval;
use serde::{Deserialize, Serialize};

/// What a comparison decided about one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Time-like metric went up.
    Slower,
    /// Time-like metric went down.
    Faster,
    /// Any other metric went up.
    Higher,
    /// Any other metric went down.
    Lower,
    /// The interval lies inside ±threshold: no change that matters.
    Equivalent,
    /// Neither a change nor equivalence.
    Inconclusive,
    /// Even the most extreme data could not reach alpha with these counts (after Holm).
    TooFewUnits,
    /// Runs are the unit and there is only one (samples of one process).
    NoVerdict,
    /// Nothing to test (no values, or no spread).
    NoTest,
}

impl Decision {
    /// A change was called.
    pub fn is_change(self) -> bool {
        matches!(
            self,
            Decision::Slower | Decision::Faster | Decision::Higher | Decision::Lower
        )
    }

    /// The decision's name, as written in result files.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Decision::Slower => "slower",
            Decision::Faster => "faster",
            Decision::Higher => "higher",
            Decision::Lower => "lower",
            Decision::Equivalent => "equivalent",
            Decision::Inconclusive => "inconclusive",
            Decision::TooFewUnits => "too-few-units",
            Decision::NoVerdict => "no-verdict",
            Decision::NoTest => "no-test",
        }
    }

    /// The direction for a delta of this sign.
    pub(crate) fn of_change(lower_is_better: bool, up: bool) -> Decision {
        match (lower_is_better, up) {
            (true, true) => Decision::Slower,
            (true, false) => Decision::Faster,
            (false, true) => Decision::Higher,
            (false, false) => Decision::Lower,
        }
    }
}

/// What a decision needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Evidence {
    /// The interval of the delta at 1 - alpha, percent.
    pub ci: Option<Interval>,
    /// The interval at 1 - 2 alpha, for equivalence (TOST), percent.
    pub ci_equivalence: Option<Interval>,
    /// The delta's point estimate, percent.
    pub delta: Option<f64>,
    /// The adjusted p-value.
    pub p_adjusted: Option<f64>,
    pub alpha: f64,
    /// ± this many percent is noise (a change inside it is still called, and said to be inside).
    pub threshold: f64,
    /// Units behind the interval (pairs, or the smaller sample).
    pub n: usize,
    /// Whether the units are rounds of paired runs (`ab`), not each variant's own runs.
    pub paired: bool,
}

/// The decision and its sentence.
pub(crate) fn decide(e: &Evidence, lower_is_better: bool) -> (Decision, String) {
    let (Some(delta), Some(p)) = (e.delta, e.p_adjusted) else {
        return (Decision::NoTest, "no test".into());
    };
    let t = e.threshold;
    if let Some(ci) = e.ci
        && p < e.alpha
        && ci.excludes_zero()
    {
        let d = Decision::of_change(lower_is_better, delta > 0.0);
        let name = d.name();
        if ci.inside(t) {
            return (d, format!("{name}, inside the {t}% noise threshold"));
        }
        return (d, name.into());
    }
    if e.ci_equivalence.is_some_and(|c| c.inside(t)) {
        return (Decision::Equivalent, format!("equivalent (within ±{t}%)"));
    }
    match runs_to_decide(e) {
        Some(n) => (
            Decision::Inconclusive,
            format!(
                "inconclusive (about {n} {} would decide)",
                if e.paired { "rounds" } else { "per side" }
            ),
        ),
        None => (Decision::Inconclusive, "inconclusive".into()),
    }
}

/// How many units would likely decide, from the observed interval: its half-width shrinks as
/// 1/sqrt(n), and it decides once it is narrower than the distance to zero (a change) or to
/// the nearer threshold (equivalence), whichever comes first. `None` without an interval.
pub(crate) fn runs_to_decide(e: &Evidence) -> Option<usize> {
    let half = e.ci?.width() / 2.0;
    let delta = e.delta?;
    if half.is_nan() || half <= 0.0 || e.n == 0 {
        return None;
    }
    let target = delta.abs().max(e.threshold - delta.abs());
    if target.is_nan() || target <= 0.0 {
        return None;
    }
    let n = (e.n as f64 * (half / target).powi(2)).ceil();
    Some((n as usize).max(e.n + 1))
}

#[cfg(test)]
mod unit {
    use super::*;

    fn ev(ci: (f64, f64), eq: (f64, f64), delta: f64, p: f64) -> Evidence {
        Evidence {
            ci: Some(ci.into()),
            ci_equivalence: Some(eq.into()),
            delta: Some(delta),
            p_adjusted: Some(p),
            alpha: 0.05,
            threshold: 2.0,
            n: 10,
            paired: false,
        }
    }

    #[test]
    fn three_ways_named_honestly() {
        let (d, s) = decide(&ev((1.0, 3.0), (1.2, 2.8), 2.0, 0.001), true);
        assert_eq!((d, s.as_str()), (Decision::Slower, "slower"));
        let (d, s) = decide(&ev((0.5, 1.1), (0.6, 1.0), 0.8, 0.001), true);
        assert_eq!(d, Decision::Slower);
        assert_eq!(s, "slower, inside the 2% noise threshold");
        let (d, s) = decide(&ev((-0.9, 0.7), (-0.7, 0.5), -0.1, 0.6), true);
        assert_eq!(
            (d, s.as_str()),
            (Decision::Equivalent, "equivalent (within ±2%)")
        );
        let (d, s) = decide(&ev((-1.0, 5.0), (-0.5, 4.5), 2.0, 0.2), false);
        assert_eq!(d, Decision::Inconclusive);
        assert!(s.starts_with("inconclusive (about "), "{s}");
        // A significant p with an interval that touches zero is not a change.
        let (d, _) = decide(&ev((-0.1, 5.0), (0.5, 4.5), 2.0, 0.01), true);
        assert_eq!(d, Decision::Inconclusive);
        assert_eq!(
            decide(&ev((-3.0, -1.0), (-2.8, -1.2), -2.0, 0.01), false).0,
            Decision::Lower
        );
    }

    #[test]
    fn names_are_the_serialised_names() {
        for d in [
            Decision::Slower,
            Decision::Faster,
            Decision::Higher,
            Decision::Lower,
            Decision::Equivalent,
            Decision::Inconclusive,
            Decision::TooFewUnits,
            Decision::NoVerdict,
            Decision::NoTest,
        ] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.name());
        }
    }

    #[test]
    fn runs_needed_shrink_the_interval_enough() {
        // Half-width 3 at n = 10, delta 2: the interval excludes zero once the half-width is
        // below 2, at n = 10 * (3 / 2)^2 = 22.5 -> 23.
        assert_eq!(
            runs_to_decide(&ev((-1.0, 5.0), (-0.5, 4.5), 2.0, 0.2)),
            Some(23)
        );
        // Delta 0: equivalence needs a half-width below the threshold 2: 10 * (3/2)^2.
        assert_eq!(
            runs_to_decide(&ev((-3.0, 3.0), (-2.5, 2.5), 0.0, 1.0)),
            Some(23)
        );
    }
}
