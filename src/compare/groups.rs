//! Results grouped by what they share (a kernel, a host, a tag's value) as the sides of a
//! comparison. Within a group the boot is the unit of replication, as in `merge`: a boot's value
//! of a metric is the median of its runs, pooled over the group's results from that boot (a
//! result with no boot id is a boot of its own). Grouped by boot, each group is one boot and
//! its runs are the units.

use super::Variant;
use crate::results::Metric;
use crate::results::view::ResultView;
use crate::stats::median;
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// What one value of a group's variant stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Boot,
    Run,
}

/// A result's per-run values of a metric: a one-run result gives its samples' median.
fn run_values(m: &Metric) -> Vec<f64> {
    if m.replication == "run" {
        m.values.clone()
    } else if m.values.is_empty() {
        Vec::new()
    } else {
        vec![median(&m.values)]
    }
}

/// The boot a result comes from, or the result itself when it does not say.
fn boot_of(v: &ResultView) -> String {
    v.environment
        .boot_id
        .clone()
        .unwrap_or_else(|| format!("({})", v.path.display()))
}

/// How many boots `views` span.
pub fn boots(views: &[&ResultView]) -> usize {
    let mut b: Vec<String> = views.iter().map(|v| boot_of(v)).collect();
    b.sort();
    b.dedup();
    b.len()
}

/// One side of a comparison from the results of a group. Metrics that some result lacks are
/// left out and named in the returned warnings.
pub fn variant(label: &str, views: &[&ResultView], unit: Unit) -> Result<(Variant, Vec<String>)> {
    build(label, views, unit, &|_, v| boot_of(v))
}

/// One side of a comparison whose results are one boot each, in the order given (a campaign's
/// boots of one arm, round by round): unit i is the i-th result, so sides built alike pair.
pub fn boots_in_order(label: &str, views: &[&ResultView]) -> Result<(Variant, Vec<String>)> {
    build(label, views, Unit::Boot, &|i, _| format!("{i:010}"))
}

/// A side whose boots are told apart (and ordered) by `boot`.
fn build(
    label: &str,
    views: &[&ResultView],
    unit: Unit,
    boot: &dyn Fn(usize, &ResultView) -> String,
) -> Result<(Variant, Vec<String>)> {
    let Some(first) = views.first() else {
        bail!("group '{label}' has no results");
    };
    let mut warnings = Vec::new();
    let mut metrics = Vec::new();
    for m0 in first.metrics.iter().filter(|m| m.summary.is_some()) {
        let mut by_boot: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut runs = Vec::new();
        let mut complete = true;
        for (i, v) in views.iter().enumerate() {
            match v.metric(&m0.name).filter(|m| m.summary.is_some()) {
                Some(m) => {
                    let values = run_values(m);
                    by_boot.entry(boot(i, v)).or_default().extend(&values);
                    runs.extend(values);
                }
                None => complete = false,
            }
        }
        if !complete {
            warnings.push(format!(
                "{label}: {} is missing from some results: left out",
                m0.name
            ));
            continue;
        }
        let (replication, values) = match unit {
            Unit::Boot => ("boot", by_boot.values().map(|r| median(r)).collect()),
            Unit::Run => ("run", runs),
        };
        metrics.push(Metric::of_values(
            m0.name.clone(),
            m0.unit.clone(),
            m0.kind,
            replication,
            values,
            None,
        ));
    }
    let common = |f: &dyn Fn(&ResultView) -> Option<String>| {
        let x = f(first);
        views.iter().all(|v| f(v) == x).then_some(x).flatten()
    };
    let variant = Variant {
        label: label.to_string(),
        source: format!("{} result(s), {} boot(s)", views.len(), boots(views)),
        unit: match unit {
            Unit::Boot => "boot",
            Unit::Run => "run",
        }
        .into(),
        workload: first.workload.clone(),
        op_name: first.op_name.clone(),
        subtract_overhead: first.subtract_overhead(),
        created_unix: views.iter().map(|v| v.created_unix).max().unwrap_or(0),
        kernel: common(&|v| v.environment.kernel_release.clone()),
        host: common(&|v| v.environment.hostname.clone()),
        ops_per_sample: None,
        metrics,
        perturbed: Vec::new(),
        dropped: Vec::new(),
        warnings: Vec::new(),
        profile: None,
        round_changes: Vec::new(),
    };
    Ok((variant, warnings))
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::results::MetricKind;

    fn result(boot: &str, times: &[f64]) -> ResultView {
        let text = serde_json::json!({
            "schema": crate::core::SCHEMA, "version": crate::core::VERSION, "kind": "run",
            "created_unix": 1, "workload": {"workload": "syscall", "syscall": "getpid"},
            "op_name": "call",
            "environment": {"boot_id": boot, "kernel_release": "6.1", "hardware_pmu": false},
            "metrics": [Metric::of_values("time", "ns/call", MetricKind::Time, "run",
                times.to_vec(), None)],
        })
        .to_string();
        ResultView::from_text(boot, &text).unwrap()
    }

    #[test]
    fn boots_are_the_units_and_their_runs_are_pooled() {
        let (a, b, c) = (
            result("b1", &[10.0, 12.0]),
            result("b1", &[11.0]),
            result("b2", &[20.0, 22.0, 21.0]),
        );
        let views = [&a, &b, &c];
        let (v, w) = variant("6.1", &views, Unit::Boot).unwrap();
        assert!(w.is_empty());
        let t = v.metric("time").unwrap();
        // b1: median of 10, 12, 11; b2: median of 20, 22, 21.
        assert_eq!(t.values, vec![11.0, 21.0]);
        assert_eq!(t.replication, "boot");
        assert_eq!(v.kernel.as_deref(), Some("6.1"));
        assert_eq!(boots(&views), 2);
        let (v, _) = variant("6.1", &views, Unit::Run).unwrap();
        assert_eq!(v.metric("time").unwrap().values.len(), 6);
    }
}
