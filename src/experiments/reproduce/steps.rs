//! A series of changes, build by build: each build's exact counts per operation (with the
//! paper's rules) and per turn of the rule walk (an audit sweep's slope), and what each build
//! changed from the one before it: the table a reader of a patch series wants beside its
//! cover letter, whether or not the paper printed a figure for the step.

use super::Figures;
use serde::{Deserialize, Serialize};

/// One build of an investigation's series: the arm that measures it per operation and the arm
/// that sweeps its rules.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeriesBuild {
    pub build: &'static str,
    pub arm: &'static str,
    pub walk: &'static str,
}

/// The counters a step is shown in, each the sum of its metrics.
pub(crate) const COUNTERS: [(&str, &[&str]); 3] = [
    ("instructions", &["instructions (emulated)"]),
    ("branches", &["branches (emulated)"]),
    (
        "L1-dcache-loads",
        &[
            "L1-dcache-loads:u (emulated)",
            "L1-dcache-loads:k (emulated)",
        ],
    ),
];

/// One build's figures for one counter: the medians over its boots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Step {
    pub build: String,
    pub counter: String,
    pub per_op: Option<f64>,
    /// The lowest and highest boot's.
    pub per_op_range: Option<(f64, f64)>,
    /// From the build before it.
    pub change: Option<f64>,
    /// Per turn of the rule walk: its sweep's slope.
    pub per_rule: Option<f64>,
    pub per_rule_range: Option<(f64, f64)>,
    pub per_rule_change: Option<f64>,
}

/// Every build of `series`, counter by counter, in order.
pub(crate) fn steps(series: &[SeriesBuild], f: &Figures) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for (name, metrics) in COUNTERS {
        let metrics: Vec<String> = metrics.iter().map(|m| m.to_string()).collect();
        // The build before's figures per operation and per rule.
        let mut before: (Option<f64>, Option<f64>) = (None, None);
        for b in series {
            let op = f.per_boot(b.arm, &metrics);
            let rule = f.per_boot(b.walk, &metrics);
            let (per_op, per_rule) = (median(&op), median(&rule));
            let minus = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a - b);
            out.push(Step {
                build: b.build.to_string(),
                counter: name.to_string(),
                per_op,
                per_op_range: super::range_of(&op),
                change: minus(per_op, before.0),
                per_rule,
                per_rule_range: super::range_of(&rule),
                per_rule_change: minus(per_rule, before.1),
            });
            before = (per_op, per_rule);
        }
    }
    out
}

fn median(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| crate::stats::median(xs))
}
