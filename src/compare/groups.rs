//! Results grouped by what they share (a kernel, a host, a tag's value) as the sides of a
//! comparison. Within a group the boot is the unit of replication, as in `merge`: a boot's value
//! of a metric is the median of its runs, pooled over the group's results from that boot (a
//! result with no boot id is a boot of its own). Grouped by boot, each group is one boot and
//! its runs are the units.

use super::Variant;
use crate::results::Metric;
use crate::results::metrics::NOT_COUNTED;
use crate::results::view::ResultView;
use crate::stats::median;
use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// What one value of a group's variant stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
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
pub(crate) fn boots(views: &[&ResultView]) -> usize {
    let mut b: Vec<String> = views.iter().map(|v| boot_of(v)).collect();
    b.sort();
    b.dedup();
    b.len()
}

/// One side of a comparison from the results of a group. Metrics that some result lacks are
/// left out and named in the returned warnings.
pub(crate) fn variant(
    label: &str,
    views: &[&ResultView],
    unit: Unit,
) -> Result<(Variant, Vec<String>)> {
    build(label, views, unit, &|_, v| boot_of(v))
}

/// One side of a comparison whose results are one boot each, in the order given (a campaign's
/// boots of one arm, round by round): unit i is the i-th result, so sides built alike pair.
pub(crate) fn boots_in_order(label: &str, views: &[&ResultView]) -> Result<(Variant, Vec<String>)> {
    build(label, views, Unit::Boot, &|i, _| format!("{i:010}"))
}

/// A side whose boots are told apart (and ordered) by `boot`. A metric some boots lack (an
/// emulated count whose every window another task ran in, a counter never scheduled) keeps
/// the boots that have it, each under its own unit so sides still pair by boot, and a warning
/// says how many boots it lacks and why.
fn build(
    label: &str,
    views: &[&ResultView],
    unit: Unit,
    boot: &dyn Fn(usize, &ResultView) -> String,
) -> Result<(Variant, Vec<String>)> {
    let Some(first) = views.first() else {
        bail!("group '{label}' has no results");
    };
    let keys: Vec<String> = views.iter().enumerate().map(|(i, v)| boot(i, v)).collect();
    let mut all_boots = keys.clone();
    all_boots.sort();
    all_boots.dedup();
    let mut warnings = Vec::new();
    let by = Boots {
        keys: &keys,
        all: &all_boots,
    };
    let metrics = metric_names(views)
        .into_iter()
        .filter_map(|name| metric_of(label, name, views, &by, unit, &mut warnings))
        .collect();
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

/// The boot key of each view, and every key once, sorted (a boot's unit is its index there).
struct Boots<'a> {
    keys: &'a [String],
    all: &'a [String],
}

/// Metric `name` over `views`: each boot's runs pooled under its boot (or every run a unit);
/// a warning when some boots lack it. `None` when no view has it.
fn metric_of(
    label: &str,
    name: String,
    views: &[&ResultView],
    boots: &Boots,
    unit: Unit,
    warnings: &mut Vec<String>,
) -> Option<Metric> {
    let mut by_boot: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut runs = Vec::new();
    let mut template = None;
    for (v, key) in views.iter().zip(boots.keys) {
        if let Some(m) = v.metric(&name).filter(|m| m.summary.is_some()) {
            let values = run_values(m);
            let b = boots.all.binary_search(key).expect("every key is listed");
            by_boot.entry(b).or_default().extend(&values);
            runs.extend(values);
            template.get_or_insert(m);
        }
    }
    let (have, of) = match unit {
        Unit::Boot => (by_boot.len(), boots.all.len()),
        Unit::Run => (views.iter().filter(|v| has(v, &name)).count(), views.len()),
    };
    // A figure no boot could have (`<not supported>`: no PMU) is shown with its reason in the
    // tables; one that some boots have, or that was counted and lost, is said here.
    if have < of && (have > 0 || lost(views, &name)) {
        warnings.push(lacking(label, &name, views, (have, of), unit));
    }
    let m0 = template?;
    let (replication, values, units) = match unit {
        Unit::Boot => (
            "boot",
            by_boot.values().map(|r| median(r)).collect(),
            Some(by_boot.keys().map(|&b| b as u32).collect()),
        ),
        Unit::Run => ("run", runs, None),
    };
    Some(Metric::of_values(
        name,
        m0.unit.clone(),
        m0.kind,
        replication,
        values,
        units,
    ))
}

/// Every metric name of `views`, in the order they first appear (a first result without one
/// does not hide it).
fn metric_names(views: &[&ResultView]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in views.iter().flat_map(|v| &v.metrics) {
        if !names.contains(&m.name) {
            names.push(m.name.clone());
        }
    }
    names
}

/// Whether some result counted `name` and has no value of it (`<not counted>`).
fn lost(views: &[&ResultView], name: &str) -> bool {
    views
        .iter()
        .filter_map(|v| v.metric(name))
        .any(|m| m.summary.is_none() && m.status.as_deref() == Some(NOT_COUNTED))
}

fn has(v: &ResultView, name: &str) -> bool {
    v.metric(name).is_some_and(|m| m.summary.is_some())
}

/// "LABEL: METRIC has figures from HAVE of OF boots (the others: WHY): compared on those".
fn lacking(
    label: &str,
    name: &str,
    views: &[&ResultView],
    (have, of): (usize, usize),
    unit: Unit,
) -> String {
    let what = match unit {
        Unit::Boot => "boot(s)",
        Unit::Run => "result(s)",
    };
    let why = views
        .iter()
        .filter_map(|v| v.metric(name).filter(|m| m.summary.is_none()))
        .find_map(|m| Some(format!("{} {}", m.status.as_deref()?, m.reason.as_deref()?)))
        .unwrap_or_else(|| "not measured".into());
    match have {
        0 => format!("{label}: {name} has no figure in any of its {of} {what} ({why})"),
        _ => format!(
            "{label}: {name} has figures from {have} of {of} {what} (the others: {why}): \
             compared on those"
        ),
    }
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

    /// A boot's result with time and, when `insns` is given, an emulated count (`None`: the
    /// count exists without values, as when every window was left out).
    fn counted(boot: &str, insns: Option<Option<f64>>) -> ResultView {
        let mut metrics = vec![Metric::of_values(
            "time",
            "ns/call",
            MetricKind::Time,
            "run",
            vec![100.0],
            None,
        )];
        if let Some(v) = insns {
            let mut m = Metric::of_values(
                "instructions (emulated)",
                "/call",
                MetricKind::Emulated,
                "run",
                v.into_iter().collect(),
                None,
            );
            if m.values.is_empty() {
                m.status = Some("<not counted>".into());
                m.reason = Some("every window was left out".into());
            }
            metrics.push(m);
        }
        let text = serde_json::json!({
            "schema": crate::core::SCHEMA, "version": crate::core::VERSION, "kind": "run",
            "created_unix": 1, "workload": {"workload": "syscall", "syscall": "getpid"},
            "op_name": "call", "environment": {"boot_id": boot}, "metrics": metrics,
        })
        .to_string();
        ResultView::from_text(boot, &text).unwrap()
    }

    #[test]
    fn a_metric_some_boots_lack_keeps_the_others_and_says_so() {
        let insns = "instructions (emulated)";
        // The first boot lacks it: it is still found in the others.
        let (a, b, c) = (
            counted("b1", Some(None)),
            counted("b2", Some(Some(314.0))),
            counted("b3", Some(Some(315.0))),
        );
        let (v, w) = boots_in_order("on", &[&a, &b, &c]).unwrap();
        let m = v.metric(insns).unwrap();
        assert_eq!(
            (m.values.clone(), m.units.clone()),
            (vec![314.0, 315.0], vec![1, 2])
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("from 2 of 3 boot(s)"), "{}", w[0]);
        assert!(w[0].contains("every window was left out"), "{}", w[0]);
        let (none, d) = (counted("b1", None), counted("b2", Some(None)));
        let (v, w) = boots_in_order("off", &[&none, &d]).unwrap();
        assert!(v.metric(insns).is_none());
        assert!(
            w[0].contains("no figure in any of its 2 boot(s)"),
            "{}",
            w[0]
        );
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
