//! Run validity: a run whose invariant counters moved (instructions per op where counted,
//! context-switches, cpu-migrations, page-faults per op) was disturbed, as the alignment RFC checked by
//! eye before trusting its numbers.

use crate::results::Metric;
use crate::stats::{Summary, median};
use serde::{Deserialize, Serialize};

/// Counters that should not move between runs of the same workload.
pub(crate) const INVARIANTS: &[&str] = &[
    "instructions",
    "context-switches",
    "cpu-migrations",
    "page-faults",
];

/// One flagged run (or boot).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Perturbation {
    /// The unit's index (run or boot).
    pub unit: u32,
    pub metric: String,
    pub value: f64,
    pub median: f64,
}

impl Perturbation {
    pub(crate) fn describe(&self, unit_name: &str) -> String {
        format!(
            "{unit_name} {}: {} {} against a median of {}",
            self.unit,
            self.metric,
            crate::core::fmt_num(self.value),
            crate::core::fmt_num(self.median)
        )
    }
}

/// Flag units whose invariant counters differ from the median of all units by more than
/// `threshold_pct` percent of the median and by more than `floor` per op (for counts near zero:
/// one event per sample is `1 / ops_per_sample`).
pub(crate) fn find(metrics: &[Metric], threshold_pct: f64, floor: f64) -> Vec<Perturbation> {
    let mut out = Vec::new();
    for m in metrics {
        let base = m.name.split(':').next().unwrap_or(&m.name);
        if !INVARIANTS.contains(&base) || m.values.len() < 3 {
            continue;
        }
        let med = median(&m.values);
        for (v, u) in m.values.iter().zip(&m.units) {
            let dev = (v - med).abs();
            if dev > threshold_pct / 100.0 * med.abs() && dev > floor {
                out.push(Perturbation {
                    unit: *u,
                    metric: m.name.clone(),
                    value: *v,
                    median: med,
                });
            }
        }
    }
    out
}

/// Keep only the values whose unit `keep` accepts, and summarise again.
pub(crate) fn retain_units(metrics: &mut [Metric], keep: impl Fn(u32) -> bool) {
    for m in metrics {
        let (values, units): (Vec<f64>, Vec<u32>) = m
            .values
            .iter()
            .zip(&m.units)
            .filter(|(_, u)| keep(**u))
            .map(|(v, u)| (*v, *u))
            .unzip();
        m.summary = Summary::of(&values);
        m.values = values;
        m.units = units;
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::results::MetricKind;

    fn metric(name: &str, values: &[f64]) -> Metric {
        Metric {
            name: name.into(),
            unit: "/op".into(),
            kind: MetricKind::Counter,
            replication: "run".into(),
            values: values.to_vec(),
            units: (0..values.len() as u32).collect(),
            summary: Summary::of(values),
            status: None,
            reason: None,
            running_pct: None,
        }
    }

    #[test]
    fn flags_the_disturbed_run_only() {
        let ms = vec![
            metric("context-switches", &[1e-6, 2e-6, 1e-6, 5e-4, 1e-6]),
            metric("instructions:u", &[1000.0, 1001.0, 999.0, 1000.0, 1200.0]),
            metric("time", &[1.0, 50.0, 1.0, 1.0, 1.0]),
        ];
        let p = find(&ms, 10.0, 1e-5);
        let flagged: Vec<(u32, &str)> = p.iter().map(|x| (x.unit, x.metric.as_str())).collect();
        assert_eq!(
            flagged,
            vec![(3, "context-switches"), (4, "instructions:u")],
            "time is not an invariant; tiny count noise stays under the floor"
        );
    }

    #[test]
    fn retain_resummarises() {
        let mut ms = vec![metric("time", &[1.0, 2.0, 30.0])];
        retain_units(&mut ms, |u| u != 2);
        assert_eq!(ms[0].values, vec![1.0, 2.0]);
        assert_eq!(ms[0].units, vec![0, 1]);
        assert_eq!(ms[0].summary.as_ref().unwrap().max, 2.0);
    }
}
