//! How one step of a bisection classifies a build: like the good end, like the bad end, or
//! undecided, from its boots and the ends' boots.
//!
//! - **Exact counts** (emulated instructions, the interrupts in their windows left out): a
//!   count does not move between boots of one kernel, so one boot of a candidate decides when it lies on one side of
//!   the ends' midpoint by more than the ends' own boot-to-boot range and the resolution (the
//!   range rule of `stats::exact`, applied to a build against the two ends).
//! - **Timed figures**: each round boots the good end, the candidate and the bad end in a
//!   shuffled order, and gives one difference: the candidate less the midpoint of that round's
//!   ends, signed so that positive leans to the bad end. Student's t on those differences
//!   (boots as units, paired by round, so drift between steps cannot decide a step) calls the
//!   candidate good or bad when its p is below the step's share of the bisection's error bound,
//!   shared again over the looks a step may take (Bonferroni: each look tests at
//!   `alpha_step / looks`, so a step that adds rounds until it decides keeps its error rate).

use crate::stats::paired::paired_t;
use serde::{Deserialize, Serialize};

/// The fewest rounds a timed step tests: Student's t needs a spread, and with two pairs its
/// one degree of freedom cannot reach a small p.
pub(crate) const MIN_ROUNDS: usize = 3;

/// How a build is classified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "class", content = "why")]
pub(crate) enum Class {
    Good,
    Bad,
    /// Its boots did not decide (between the ends, or the step's budget spent).
    Undecided,
    /// It could not be measured: not a kernel, or no boot measured it.
    Skipped(String),
}

impl Class {
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Class::Good => "good",
            Class::Bad => "bad",
            Class::Undecided => "undecided",
            Class::Skipped(_) => "skipped",
        }
    }
}

/// A decision and its evidence: where the build lies between the ends (0 the good end's
/// figure, 1 the bad end's), and either a p (timed) or how far it lies from the midpoint
/// against the tolerance (exact).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Decision {
    #[serde(flatten)]
    pub class: Class,
    pub position: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// The level p was tested at (timed), or the tolerance around the midpoint in the figure's
    /// unit (exact).
    pub bar: f64,
}

impl Decision {
    /// A build that could not be measured, and why.
    pub(crate) fn skipped(why: &str) -> Decision {
        Decision {
            class: Class::Skipped(why.into()),
            ..Decision::undecided()
        }
    }

    /// No evidence either way.
    pub(crate) fn undecided() -> Decision {
        Decision {
            class: Class::Undecided,
            position: None,
            p: None,
            bar: 0.0,
        }
    }
}

/// The midpoint of the ends and the tolerance of exact counts: the larger of the ends' own
/// boot-to-boot ranges and `floor_pct` of the midpoint.
fn exact_bar(good: &[f64], bad: &[f64], floor_pct: f64) -> (f64, f64) {
    let range = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        hi - lo
    };
    let (g, b) = (crate::stats::median(good), crate::stats::median(bad));
    let mid = (g + b) / 2.0;
    (
        mid,
        range(good)
            .max(range(bad))
            .max(mid.abs() * floor_pct / 100.0),
    )
}

/// Where `x` lies between the ends' medians: 0 at the good end, 1 at the bad end.
pub(crate) fn position(x: f64, good: &[f64], bad: &[f64]) -> Option<f64> {
    let (g, b) = (crate::stats::median(good), crate::stats::median(bad));
    (b != g && !good.is_empty() && !bad.is_empty()).then(|| (x - g) / (b - g))
}

/// One boot's exact count `x` against the ends' boots.
pub(crate) fn exact(x: f64, good: &[f64], bad: &[f64], floor_pct: f64) -> Decision {
    let (mid, bar) = exact_bar(good, bad, floor_pct);
    let towards_bad = (x - mid) * (crate::stats::median(bad) - crate::stats::median(good)).signum();
    let class = if towards_bad > bar {
        Class::Bad
    } else if towards_bad < -bar {
        Class::Good
    } else {
        Class::Undecided
    };
    Decision {
        class,
        position: position(x, good, bad),
        p: None,
        bar,
    }
}

/// The rounds of a timed step so far, each `(good, candidate, bad)`, tested at `level` (the
/// step's share of the error bound over its looks). `None` before [`MIN_ROUNDS`].
pub(crate) fn timed(rounds: &[(f64, f64, f64)], level: f64) -> Option<Decision> {
    if rounds.len() < MIN_ROUNDS {
        return None;
    }
    let sign = rounds.iter().map(|(g, _, b)| b - g).sum::<f64>().signum();
    let d: Vec<f64> = rounds
        .iter()
        .map(|(g, c, b)| sign * (c - (g + b) / 2.0))
        .collect();
    let t = paired_t(&d, 1.0 - level)?;
    let spread: Vec<f64> = rounds.iter().map(|(g, _, b)| (b - g).abs()).collect();
    let span = crate::stats::mean(&spread);
    let class = match t.p {
        Some(p) if p < level && t.mean > 0.0 => Class::Bad,
        Some(p) if p < level => Class::Good,
        _ => Class::Undecided,
    };
    Some(Decision {
        class,
        position: (span > 0.0).then(|| 0.5 + t.mean / span),
        p: t.p,
        bar: level,
    })
}

/// Whether the ends differ, timed: Student's t on the rounds' differences (bad less good) at
/// `level`; its p.
pub(crate) fn ends_timed(rounds: &[(f64, f64)], level: f64) -> Option<(bool, Option<f64>)> {
    if rounds.len() < MIN_ROUNDS {
        return None;
    }
    let d: Vec<f64> = rounds.iter().map(|(g, b)| b - g).collect();
    let t = paired_t(&d, 1.0 - level)?;
    Some((t.p.is_some_and(|p| p < level), t.p))
}

/// The error bound shared out: the steps a bisection of `interior` builds between its ends
/// takes when none is skipped (ceil(log2(interior + 1))), each step's share, and each look's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Budget {
    pub bound: f64,
    pub steps: usize,
    pub per_step: f64,
    pub looks: usize,
    pub per_look: f64,
}

impl Budget {
    pub(crate) fn new(bound: f64, interior: usize, max_rounds: usize) -> Budget {
        let steps = (usize::BITS - interior.leading_zeros()).max(1) as usize;
        let looks = max_rounds.saturating_sub(MIN_ROUNDS) + 1;
        let per_step = bound / steps as f64;
        Budget {
            bound,
            steps,
            per_step,
            looks,
            per_look: per_step / looks as f64,
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn one_boot_of_exact_counts_decides_beyond_the_ends_range() {
        // Kernel instructions per getpid: audit off on two boots, 40 exit rules on two.
        let (good, bad) = ([305.36, 305.31], [1567.28, 1567.40]);
        let d = exact(305.9, &good, &bad, 0.1);
        assert_eq!(d.class, Class::Good, "{d:?}");
        assert!(d.position.unwrap().abs() < 0.01);
        assert_eq!(exact(1566.0, &good, &bad, 0.1).class, Class::Bad);
        // At the midpoint, within the tolerance (0.1% of it): undecided.
        assert_eq!(exact(936.5, &good, &bad, 0.1).class, Class::Undecided);
        // The ends the other way round (an improvement) classify by nearness too.
        assert_eq!(exact(305.0, &bad, &good, 0.1).class, Class::Bad);
    }

    #[test]
    fn a_timed_step_needs_three_rounds_and_decides_by_side() {
        let near_good = [
            (100.0, 101.0, 150.0),
            (98.0, 99.5, 149.0),
            (103.0, 102.0, 152.0),
        ];
        assert!(timed(&near_good[..2], 0.01).is_none());
        let d = timed(&near_good, 0.01).unwrap();
        assert_eq!(d.class, Class::Good, "{d:?}");
        assert!(d.position.unwrap() < 0.1, "{d:?}");
        let near_bad: Vec<_> = near_good.iter().map(|&(g, _, b)| (g, b - 1.0, b)).collect();
        assert_eq!(timed(&near_bad, 0.01).unwrap().class, Class::Bad);
        let middle: Vec<_> = near_good
            .iter()
            .enumerate()
            .map(|(i, &(g, _, b))| (g, (g + b) / 2.0 + [3.0, -4.0, 1.0][i], b))
            .collect();
        assert_eq!(timed(&middle, 0.01).unwrap().class, Class::Undecided);
    }

    // scipy.stats.ttest_1samp([-24.0, -25.0, -25.5], 0): t = -56.3, p = 0.000315.
    #[test]
    fn the_timed_p_is_scipy_s_one_sample_t() {
        let rounds = [
            (100.0, 101.0, 150.0),
            (98.0, 98.5, 149.0),
            (103.0, 102.0, 152.0),
        ];
        let d = timed(&rounds, 0.01).unwrap();
        let p = d.p.unwrap();
        assert!((p - 0.000315).abs() < 0.000002, "{p}");
    }

    #[test]
    fn a_decision_reads_back_as_written() {
        let d = Decision {
            class: Class::Skipped("no boot".into()),
            position: None,
            p: None,
            bar: 0.0,
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(
            (v["class"].as_str(), v["why"].as_str()),
            (Some("skipped"), Some("no boot"))
        );
        assert_eq!(serde_json::from_value::<Decision>(v).unwrap(), d);
        let good = serde_json::to_value(exact(1.0, &[1.0, 1.0], &[2.0, 2.0], 0.1)).unwrap();
        assert_eq!(good["class"], "good");
        assert_eq!(
            serde_json::from_value::<Decision>(good).unwrap().class,
            Class::Good
        );
    }

    #[test]
    fn the_bound_is_shared_over_the_steps_and_looks() {
        // 7 builds: 5 between the ends, 3 steps; rounds 3 to 6: 4 looks.
        let b = Budget::new(0.05, 5, 6);
        assert_eq!((b.steps, b.looks), (3, 4));
        assert!((b.per_step - 0.05 / 3.0).abs() < 1e-12);
        assert!((b.per_look - 0.05 / 12.0).abs() < 1e-12);
        assert_eq!(Budget::new(0.05, 1, 3).steps, 1);
        assert_eq!(Budget::new(0.05, 7, 3).steps, 3);
        assert_eq!(Budget::new(0.05, 8, 3).steps, 4);
    }
}
