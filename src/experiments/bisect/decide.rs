//! How one step of a bisection classifies a build: like the good end, like the bad end, like
//! neither (exact counts), or undecided, from its boots and the ends' boots.
//!
//! - **Exact counts** (emulated instructions, the interrupts in their windows left out): a
//!   count does not move between boots of one kernel, so one boot of a candidate decides: it is
//!   the same count as one of the two measured builds it lies between when within the tolerance
//!   of it (the larger of the ends' own boot-to-boot range and the resolution: the range rule of
//!   `stats::exact`), else a count of its own, which splits the search in two (a figure that
//!   moves in two steps gives two findings).
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
    /// Its exact count is neither end's: the figure moves in more than one step.
    Other,
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
            Class::Other => "other",
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

/// The tolerance of exact counts around `x`: the larger of the ends' own boot-to-boot ranges
/// and `floor_pct` of `x`. Two counts closer than it are the same.
pub(crate) fn exact_bar(x: f64, good: &[f64], bad: &[f64], floor_pct: f64) -> f64 {
    let range = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        if v.is_empty() { 0.0 } else { hi - lo }
    };
    range(good).max(range(bad)).max(x.abs() * floor_pct / 100.0)
}

/// Where `x` lies between the ends' medians: 0 at the good end, 1 at the bad end.
pub(crate) fn position(x: f64, good: &[f64], bad: &[f64]) -> Option<f64> {
    let (g, b) = (crate::stats::median(good), crate::stats::median(bad));
    (b != g && !good.is_empty() && !bad.is_empty()).then(|| (x - g) / (b - g))
}

/// Which of the two measured builds a build was tried between its exact count is the same as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Equals {
    Lo,
    Hi,
    /// Neither: a count of its own.
    Neither,
    /// Both are within the tolerance of it: it cannot be placed.
    Both,
}

/// One boot's exact count `x` against the boots of the two measured builds it lies between
/// (`lo`, `hi`), the ends' boots (`good`, `bad`) giving its position and the tolerance; the
/// decision's class is the caller's to set from what it equals.
pub(crate) fn exact(
    x: f64,
    (lo, hi): (&[f64], &[f64]),
    (good, bad): (&[f64], &[f64]),
    floor_pct: f64,
) -> (Equals, Decision) {
    let bar = exact_bar(x, good, bad, floor_pct);
    let near = |v: &[f64]| (x - crate::stats::median(v)).abs() <= bar;
    let equals = match (near(lo), near(hi)) {
        (true, false) => Equals::Lo,
        (false, true) => Equals::Hi,
        (false, false) => Equals::Neither,
        (true, true) => Equals::Both,
    };
    let decision = Decision {
        class: Class::Undecided,
        position: position(x, good, bad),
        p: None,
        bar,
    };
    (equals, decision)
}

/// Whether exact ends that differ can place a build between them: only when they lie more than
/// twice the tolerance apart can no count be the same as both. `None` when they can; else the
/// change and the tolerance, in the figure's unit.
pub(crate) fn exact_unplaceable(good: &[f64], bad: &[f64], floor_pct: f64) -> Option<(f64, f64)> {
    let (g, b) = (crate::stats::median(good), crate::stats::median(bad));
    let bar = exact_bar((g + b) / 2.0, good, bad, floor_pct);
    ((b - g).abs() <= 2.0 * bar).then_some((b - g, bar))
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

/// The most rounds a timed step may be given (`--step-rounds`).
pub(crate) const MOST_ROUNDS: usize = 100;

/// The rounds a timed step needs to place a build that sits at one end, from the ends' rounds
/// (each `(good, bad)`): the fewest `n` for which its expected t, half the ends' change over
/// the spread of a step's differences (a candidate less the midpoint of two ends: 0.75 of the
/// variance of the ends' own differences), reaches the two-sided critical value at `level`
/// (an even chance of deciding). `None` when more than [`MOST_ROUNDS`] would be needed, or the
/// ends' differences have no spread to judge by.
pub(crate) fn timed_rounds_needed(rounds: &[(f64, f64)], level: f64) -> Option<usize> {
    let d: Vec<f64> = rounds.iter().map(|(g, b)| b - g).collect();
    let (change, sd) = (crate::stats::mean(&d), crate::stats::stdev(&d));
    if d.len() < 2 || sd <= 0.0 {
        return (sd <= 0.0 && change != 0.0).then_some(MIN_ROUNDS);
    }
    let step_sd = (0.75f64).sqrt() * sd;
    (MIN_ROUNDS..=MOST_ROUNDS).find(|&n| {
        let t = (change.abs() / 2.0) * (n as f64).sqrt() / step_sd;
        t > crate::stats::t_critical(1.0 - level, n as f64 - 1.0)
    })
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
    fn one_boot_of_an_exact_count_is_the_same_as_a_bound_or_neither() {
        // Kernel instructions per getpid, interrupts left out: audit off on two boots, 40
        // exit rules on two; at the default resolution (0.01%).
        let (good, bad) = ([305.0, 305.0], [1567.0, 1567.0]);
        let ends = (&good[..], &bad[..]);
        let (e, d) = exact(305.0, ends, ends, 0.01);
        assert_eq!(e, Equals::Lo, "{d:?}");
        assert_eq!(d.position, Some(0.0));
        assert!((d.bar - 0.0305).abs() < 1e-9, "{d:?}");
        assert_eq!(exact(1567.1, ends, ends, 0.01).0, Equals::Hi);
        // One instruction off the good end: a count of its own, not the good end's.
        let (e, d) = exact(306.0, ends, ends, 0.01);
        assert_eq!(e, Equals::Neither);
        assert!(d.position.unwrap() > 0.0);
        // Between two measured builds inside the ends: the same as the one it equals.
        let mid = [936.0];
        assert_eq!(exact(936.0, (&good, &mid), ends, 0.01).0, Equals::Hi);
        // The ends' own boot-to-boot range widens the tolerance.
        let wide = [305.0, 305.5];
        assert_eq!(
            exact(305.4, (&wide, &bad), (&wide, &bad), 0.01).0,
            Equals::Lo
        );
    }

    #[test]
    fn ends_too_close_to_place_a_build_between_them_are_said() {
        // 0.05% apart at a 0.01% resolution: 0.15 instructions, tolerance 0.03: placeable.
        assert_eq!(exact_unplaceable(&[305.0; 2], &[305.15; 2], 0.01), None);
        // 0.05 apart: a count between could be the same as both.
        let (change, bar) = exact_unplaceable(&[305.0; 2], &[305.05; 2], 0.01).unwrap();
        assert!(
            (change - 0.05).abs() < 1e-9 && (bar - 0.0305025).abs() < 1e-6,
            "{bar}"
        );
        let (e, _) = exact(
            305.025,
            (&[305.0; 2], &[305.05; 2]),
            (&[305.0; 2], &[305.05; 2]),
            0.01,
        );
        assert_eq!(e, Equals::Both);
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
        let other = Decision {
            class: Class::Other,
            ..exact(1.5, (&[1.0; 2], &[2.0; 2]), (&[1.0; 2], &[2.0; 2]), 0.1).1
        };
        let v = serde_json::to_value(&other).unwrap();
        assert_eq!(v["class"], "other");
        assert_eq!(serde_json::from_value::<Decision>(v).unwrap(), other);
    }

    /// A change of 10 against a spread of 2 per round places a build in the fewest rounds; a
    /// change of 1 against the same spread needs more than a step may take.
    #[test]
    fn a_timed_change_too_small_for_the_step_s_rounds_is_said() {
        let rounds = |change: f64| -> Vec<(f64, f64)> {
            [1.0, -1.0, 2.0, -2.0, 0.0]
                .iter()
                .map(|e| (100.0, 100.0 + change + e))
                .collect()
        };
        let large = timed_rounds_needed(&rounds(10.0), 0.05 / 12.0);
        assert!(large.is_some_and(|n| n <= 6), "{large:?}");
        let small = timed_rounds_needed(&rounds(1.0), 0.05 / 12.0);
        assert!(small.is_some_and(|n| n > 6), "{small:?}");
        assert_eq!(timed_rounds_needed(&rounds(0.05), 0.05 / 12.0), None);
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
