//! Stage 2 of a comparison: each metric of each variant against the baseline's, as a delta in
//! percent with its intervals and the test's p, paired by round or unpaired.

use super::{Decision, Delta, Options, Variant};
use crate::results::Metric;
use crate::results::slots::RoundChanges;
use crate::stats::Interval;
use crate::stats::exact::{RangeRule, range_rule};
use crate::stats::significance::bootstrap_delta_pct;

/// The deltas before Holm and the decisions.
pub(super) struct Estimated {
    pub deltas: Vec<Delta>,
    /// Per delta: the smallest p its test could give with its units (rank tests), if any.
    pub limits: Vec<Option<Limit>>,
    /// Per delta of an emulated (exact) count: the range rule's evidence, or why there is
    /// none; `None` for every other metric.
    pub exact: Vec<Option<Exact>>,
    /// "metric of variant" for each paired analysis that fell back to unpaired.
    pub unpaired_fallback: Vec<String>,
}

/// The smallest p a rank test could give, with the units on each side behind it (the
/// baseline's, the variant's; the pairs twice when paired).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Limit {
    pub min_p: f64,
    pub sizes: (usize, usize),
}

/// The evidence for a delta of exact counts (`stats::exact`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Exact {
    Rule(RangeRule),
    /// An arm with fewer than two units: no boot-to-boot range to judge a difference by.
    TooFew {
        units: usize,
    },
    /// A baseline that counts none: no change in percent.
    ZeroBase,
}

/// A delta's estimate, interval and test, before the decision.
struct Estimate {
    delta: Option<f64>,
    ci: Option<Interval>,
    ci_equivalence: Option<Interval>,
    p: Option<f64>,
    limit: Option<Limit>,
    n: usize,
}

impl Estimate {
    fn untested(n: usize) -> Estimate {
        Estimate {
            delta: None,
            ci: None,
            ci_equivalence: None,
            p: None,
            limit: None,
            n,
        }
    }
}

pub(super) fn estimate(tested: &[Variant], opts: &Options) -> Estimated {
    let base = &tested[0];
    let mut out = Estimated {
        deltas: Vec::new(),
        limits: Vec::new(),
        exact: Vec::new(),
        unpaired_fallback: Vec::new(),
    };
    for (vi, v) in tested.iter().enumerate().skip(1) {
        for bm in base.metrics.iter().filter(|m| m.summary.is_some()) {
            let Some(om) = v.metric(&bm.name) else {
                continue;
            };
            if bm.is_exact_count() {
                let (est, exact) = exact_estimate(bm, om, opts);
                out.limits.push(None);
                out.exact.push(Some(exact));
                out.deltas.push(delta(vi, bm, om, est));
                continue;
            }
            let est = if opts.paired {
                let slots = v.round_changes.iter().find(|c| c.metric == bm.name);
                paired_estimate(bm, om, slots, opts).unwrap_or_else(|| {
                    out.unpaired_fallback
                        .push(format!("{} of {}", bm.name, v.label));
                    unpaired_estimate(bm, om, opts)
                })
            } else {
                unpaired_estimate(bm, om, opts)
            };
            out.limits.push(est.limit);
            out.exact.push(None);
            out.deltas.push(delta(vi, bm, om, est));
        }
    }
    out
}

/// The delta of metric `om` of variant `vi` against the baseline's `bm`, undecided.
fn delta(vi: usize, bm: &Metric, om: &Metric, est: Estimate) -> Delta {
    let (bs, os) = (summary(bm), summary(om));
    Delta {
        metric: bm.name.clone(),
        unit: bm.unit.clone(),
        variant: vi,
        base_median: bs.median,
        base_mean: bs.mean,
        median: os.median,
        mean: os.mean,
        delta_pct: est.delta,
        ci_pct: est.ci,
        ci_equivalence_pct: est.ci_equivalence,
        n: est.n,
        p: est.p,
        p_adjusted: None,
        // None for an exact count: one that does not vary between boots has no spread to
        // measure a change in (a 1% change read +58268σ).
        effect_sigma: (bs.pstdev > 0.0 && !bm.is_exact_count())
            .then(|| (os.median - bs.median) / bs.pstdev),
        base_pstdev_pct: bs.pstdev_pct,
        decision: Decision::NoTest,
        verdict: String::new(),
    }
}

/// The summary of a metric `estimate` found summarised (the baseline's are filtered on it, and
/// `Variant::metric` returns only summarised metrics).
fn summary(m: &Metric) -> &crate::stats::Summary {
    m.summary
        .as_ref()
        .expect("estimate takes only summarised metrics")
}

/// Two samples compared as independent: the difference of medians with its bootstrap
/// intervals, and the test's p.
fn unpaired_estimate(bm: &Metric, om: &Metric, opts: &Options) -> Estimate {
    let (bs, os) = (summary(bm), summary(om));
    let cis = bootstrap_delta_pct(
        &bm.values,
        &om.values,
        opts.resamples,
        opts.seed,
        &[1.0 - opts.alpha, 1.0 - 2.0 * opts.alpha],
    );
    let (n1, n2) = (bm.values.len(), om.values.len());
    let test = opts.test.test().unpaired(&bm.values, &om.values);
    Estimate {
        delta: (bs.median != 0.0).then(|| 100.0 * (os.median - bs.median) / bs.median),
        ci: cis.as_ref().map(|c| c[0].into()),
        ci_equivalence: cis.as_ref().map(|c| c[1].into()),
        p: test.p,
        limit: test.min_p.map(|min_p| Limit {
            min_p,
            sizes: (n1, n2),
        }),
        n: n1.min(n2),
    }
}

/// Exact counts, one value per boot, compared by the range rule: the change of the means, and
/// as its interval the range of every cross-boot change. Not paired: an emulator's counts do
/// not drift with the host, so the round a boot ran in tells nothing.
fn exact_estimate(bm: &Metric, om: &Metric, opts: &Options) -> (Estimate, Exact) {
    let n = bm.values.len().min(om.values.len());
    match range_rule(&bm.values, &om.values, opts.exact_floor_pct) {
        Some(r) => (
            Estimate {
                delta: Some(r.delta_pct),
                ci: Some(r.cross),
                ci_equivalence: Some(r.cross),
                p: None,
                limit: None,
                n,
            },
            Exact::Rule(r),
        ),
        None if n < 2 => (Estimate::untested(n), Exact::TooFew { units: n }),
        None => (Estimate::untested(n), Exact::ZeroBase),
    }
}

/// The rounds both metrics have: (unit, baseline value, variant value).
fn pairs(bm: &Metric, om: &Metric) -> Vec<(u32, f64, f64)> {
    bm.units
        .iter()
        .zip(&bm.values)
        .filter_map(|(u, a)| {
            let i = om.units.iter().position(|x| x == u)?;
            Some((*u, *a, om.values[i]))
        })
        .collect()
}

/// Units paired by round: the per-round change, as a log ratio when every value is positive
/// (reported as a percentage), otherwise as a difference in units of the baseline's median.
/// A paced round's change is taken slot by slot (`slots`, for the rounds still in both
/// variants) rather than from the two runs' values. `None` when fewer than two rounds pair up.
fn paired_estimate(
    bm: &Metric,
    om: &Metric,
    slots: Option<&RoundChanges>,
    opts: &Options,
) -> Option<Estimate> {
    let pairs = pairs(bm, om);
    if pairs.len() < 2 {
        return None;
    }
    let base_median = summary(bm).median;
    let by_slot: Option<Vec<f64>> = slots.and_then(|c| {
        let at = |u: &u32| Some(c.log_ratios[c.units.iter().position(|x| x == u)?]);
        pairs.iter().map(|(u, _, _)| at(u)).collect()
    });
    let log = by_slot.is_some() || pairs.iter().all(|(_, a, b)| *a > 0.0 && *b > 0.0);
    if !log && base_median == 0.0 {
        // A metric at zero in the baseline (migrations, page faults): no percentage to test.
        return Some(Estimate::untested(pairs.len()));
    }
    let d: Vec<f64> = by_slot.unwrap_or_else(|| {
        let change = |a: f64, b: f64| {
            if log {
                (b / a).ln()
            } else {
                (b - a) / base_median.abs()
            }
        };
        pairs.iter().map(|(_, a, b)| change(*a, *b)).collect()
    });
    let pct = |x: f64| if log { 100.0 * x.exp_m1() } else { 100.0 * x };
    let t = opts
        .test
        .test()
        .paired(&d, 1.0 - opts.alpha, 1.0 - 2.0 * opts.alpha)?;
    let n = d.len();
    Some(Estimate {
        delta: t.centre.map(pct),
        ci: t.interval.map(|i| i.map(pct)),
        ci_equivalence: t.equivalence.map(|i| i.map(pct)),
        p: t.p,
        limit: t.min_p.map(|min_p| Limit {
            min_p,
            sizes: (n, n),
        }),
        n,
    })
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::compare::tests::variant;
    use crate::stats::registry::TestKind;

    fn paired_opts(test: TestKind) -> Options {
        Options {
            paired: true,
            test,
            ..Options::default()
        }
    }

    #[test]
    fn paired_rounds_are_log_ratios_reported_in_percent() {
        let a = variant("a", &[100.0, 100.0, 100.0, 100.0, 100.0, 100.0]);
        let b = variant("b", &[110.0, 110.0, 110.0, 110.0, 110.0, 110.0]);
        let e = estimate(&[a, b], &paired_opts(TestKind::SignedRank));
        let d = &e.deltas[0];
        assert!((d.delta_pct.unwrap() - 10.0).abs() < 1e-9, "{d:?}");
        assert_eq!(e.limits[0].unwrap().sizes, (6, 6));
        assert!((e.limits[0].unwrap().min_p - 0.03125).abs() < 1e-15);
    }

    #[test]
    fn one_round_falls_back_to_unpaired_and_says_so() {
        let e = estimate(
            &[variant("a", &[100.0]), variant("b", &[110.0])],
            &paired_opts(TestKind::T),
        );
        assert_eq!(e.unpaired_fallback, vec!["time of b"]);
        assert_eq!(e.deltas[0].n, 1);
    }

    #[test]
    fn a_baseline_at_zero_has_no_percentage_to_test() {
        let a = variant("a", &[0.0, 0.0, 0.0]);
        let b = variant("b", &[1.0, 0.0, 2.0]);
        let e = estimate(&[a, b], &paired_opts(TestKind::SignedRank));
        assert_eq!((e.deltas[0].delta_pct, e.deltas[0].p), (None, None));
    }
}
