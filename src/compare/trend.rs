//! A metric across groups in order (kernel versions, oldest first): each group's median with
//! its distribution-free interval, and each step (a group against the one before it) compared
//! with the statistics of `compare`, Holm-corrected over the steps, so a series of ten kernels
//! does not call a regression by chance. A step that makes the metric worse by more than the
//! noise threshold, decided, is flagged as a regression.

use super::decision::{Decision, Evidence, decide};
use super::{Options, Variant, compare, lower_is_better};
use crate::core::{Envelope, Kind};
use crate::stats::significance::holm;
use crate::stats::{median, median_ci};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// One group of the series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Point {
    pub label: String,
    /// Units (boots, or runs when grouped by boot).
    pub n: usize,
    pub median: f64,
    /// The interval of the median at the trend's confidence, when n allows one.
    pub ci: Option<(f64, f64)>,
    /// Where its values came from (results and boots).
    pub source: String,
}

/// A group against the one before it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Step {
    /// Indices into `points`.
    pub from: usize,
    pub to: usize,
    pub delta_pct: Option<f64>,
    pub ci_pct: Option<crate::stats::Interval>,
    pub p: Option<f64>,
    /// p after Holm over all steps.
    pub p_adjusted: Option<f64>,
    pub decision: Decision,
    pub verdict: String,
    /// Decided worse by more than the noise threshold.
    pub regression: bool,
}

/// A `syscost history trend` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trend {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub created_unix: u64,
    /// What the groups are (`kernel`, `host`, `tag build`).
    pub by: String,
    pub workload: crate::workloads::RecordedWorkload,
    pub op_name: String,
    pub metric: String,
    pub unit: String,
    /// The unit of replication within a group: `boot` or `run`.
    pub replication: String,
    pub test: String,
    pub alpha: f64,
    pub noise_threshold_pct: f64,
    pub points: Vec<Point>,
    pub steps: Vec<Step>,
    pub warnings: Vec<String>,
}

/// The trend of `opts.primary` over `groups`, in the order given.
pub(crate) fn trend(groups: Vec<Variant>, by: &str, opts: &Options) -> Result<Trend> {
    if groups.len() < 2 {
        bail!("a trend needs two or more groups");
    }
    let metric = opts.primary.clone();
    let mut points = Vec::new();
    for g in &groups {
        let Some(m) = g.metric(&metric) else {
            bail!("{}: no metric '{metric}' to follow", g.label);
        };
        points.push(Point {
            label: g.label.clone(),
            n: m.values.len(),
            median: median(&m.values),
            ci: median_ci(&m.values, 1.0 - opts.alpha).map(|(ci, _)| ci),
            source: g.source.clone(),
        });
    }
    let mut steps = Vec::new();
    let mut warnings = Vec::new();
    let mut test = String::new();
    for i in 1..groups.len() {
        let pair = vec![groups[i - 1].clone(), groups[i].clone()];
        let c = compare(pair, opts)?;
        test = c.test.clone();
        for w in c.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let d = c
            .deltas
            .into_iter()
            .find(|d| d.metric == metric && d.variant == 1);
        steps.push((i, d));
    }
    // Holm over the steps: each comparison above corrected only within itself.
    let tested: Vec<usize> = (0..steps.len())
        .filter(|&s| steps[s].1.as_ref().and_then(|d| d.p).is_some())
        .collect();
    let adjusted = holm(
        &tested
            .iter()
            .map(|&s| steps[s].1.as_ref().and_then(|d| d.p).unwrap_or(1.0))
            .collect::<Vec<_>>(),
    );
    let lower = lower_is_better(&metric);
    // Exact counts were decided by the range rule in each step's comparison: that decision
    // stands (a timing threshold or a p-value would judge what does not vary), and more of a
    // count per operation is the worse way.
    let exact = crate::counters::emulated::is_exact_count(&metric);
    let steps = steps
        .into_iter()
        .enumerate()
        .map(|(s, (to, d))| {
            let p_adjusted = tested.iter().position(|&t| t == s).map(|k| adjusted[k]);
            let (decision, verdict) = match &d {
                Some(d) if exact => (d.decision, d.verdict.clone()),
                Some(d) => decide(
                    &Evidence {
                        ci: d.ci_pct,
                        ci_equivalence: d.ci_equivalence_pct,
                        delta: d.delta_pct,
                        p_adjusted,
                        alpha: opts.alpha,
                        threshold: opts.noise_pct,
                        n: d.n,
                        paired: false,
                    },
                    lower,
                ),
                None => (Decision::NoTest, "no test".into()),
            };
            let worse = match exact {
                true => decision == Decision::Higher,
                false => {
                    matches!(decision, Decision::Slower)
                        || (!lower && matches!(decision, Decision::Lower))
                }
            };
            let beyond = exact
                || d.as_ref()
                    .and_then(|d| d.ci_pct)
                    .is_some_and(|c| c.lo > opts.noise_pct || c.hi < -opts.noise_pct);
            Step {
                from: to - 1,
                to,
                delta_pct: d.as_ref().and_then(|d| d.delta_pct),
                ci_pct: d.as_ref().and_then(|d| d.ci_pct),
                p: d.as_ref().and_then(|d| d.p),
                p_adjusted,
                decision,
                verdict,
                regression: worse && beyond,
            }
        })
        .collect();
    let first = &groups[0];
    Ok(Trend {
        envelope: Envelope::new(Kind::Trend),
        created_unix: crate::core::now_unix(),
        by: by.to_string(),
        workload: first.workload.clone(),
        op_name: first.op_name.clone(),
        unit: first
            .metric(&metric)
            .map(|m| m.unit.clone())
            .unwrap_or_default(),
        metric,
        replication: first.unit.clone(),
        test,
        alpha: opts.alpha,
        noise_threshold_pct: opts.noise_pct,
        points,
        steps,
        warnings,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    fn around(center: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + 0.004 * (i as f64 - n as f64 / 2.0) / n as f64))
            .collect()
    }

    #[test]
    fn a_step_worse_beyond_the_threshold_is_a_regression() {
        let groups = vec![
            Variant::of_times("6.9", &around(100.0, 8)),
            Variant::of_times("6.10", &around(100.1, 8)),
            Variant::of_times("6.11", &around(110.0, 8)),
            Variant::of_times("6.12", &around(100.0, 8)),
        ];
        let t = trend(groups, "kernel", &Options::default()).unwrap();
        assert_eq!(t.points.len(), 4);
        assert_eq!(t.steps.len(), 3);
        let flags: Vec<bool> = t.steps.iter().map(|s| s.regression).collect();
        assert_eq!(flags, vec![false, true, false], "{:?}", t.steps);
        assert_eq!(t.steps[2].decision, Decision::Faster);
        // Holm over three steps: the smallest p is tripled.
        let p: Vec<f64> = t.steps.iter().filter_map(|s| s.p).collect();
        let adj: Vec<f64> = t.steps.iter().filter_map(|s| s.p_adjusted).collect();
        assert_eq!(adj, holm(&p));
        assert!(t.points[0].ci.is_some(), "8 units give a 95% interval");
        assert!(
            trend(
                vec![Variant::of_times("a", &[1.0])],
                "kernel",
                &Options::default()
            )
            .is_err()
        );
    }

    /// Exact counts over a series of kernels (one value per boot): each step by the range
    /// rule, as campaign and history compare decide them; +2 instructions per getpid is a
    /// change and a regression, though far inside the 2% noise threshold of timed figures.
    #[test]
    fn exact_steps_are_decided_by_the_range_rule() {
        use crate::results::metrics::{Metric, MetricKind};
        let name = "instructions (emulated)";
        let boots = |label: &str, v: &[f64]| {
            let mut g = Variant::of_times(label, &[100.0, 100.0]);
            g.unit = "boot".into();
            g.metrics = vec![Metric::of_values(
                name,
                "/call",
                MetricKind::Emulated,
                "boot",
                v.to_vec(),
                None,
            )];
            g
        };
        let groups = vec![
            boots("6.12.113", &[314.0, 314.0]),
            boots("6.12.115", &[314.0, 314.0001]),
            boots("6.12.117", &[316.0, 316.0]),
        ];
        let opts = Options {
            primary: name.into(),
            ..Options::default()
        };
        let t = trend(groups, "kernel", &opts).unwrap();
        let d: Vec<Decision> = t.steps.iter().map(|s| s.decision).collect();
        assert_eq!(d, [Decision::Equivalent, Decision::Higher], "{:?}", t.steps);
        assert!(
            t.steps[1].verdict.contains("exact"),
            "{}",
            t.steps[1].verdict
        );
        let flags: Vec<bool> = t.steps.iter().map(|s| s.regression).collect();
        assert_eq!(flags, [false, true]);
    }
}
