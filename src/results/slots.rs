//! The changes of paced rounds, slot by slot. In a paced round (`ab`'s default, see
//! `runner::paced`) the runs of the arms took turns sample by sample: the k-th sample of one
//! arm and the k-th of the other were taken next to each other, a sample's length apart. A
//! round's change of a metric is then the median, over the round's slots, of the log ratio of
//! the two samples' per-op values: the machine's moment, shared by the two samples of a slot,
//! cancels, and a slot hit by a burst weighs no more than any other. Runs stay the units: each
//! round gives one change, and the tests are taken over rounds.
//!
//! Measured on this project's VM while the host's load swung a sample's time by up to 60%
//! (bench/ab_designs.sh): the spread of the per-round change of an A/A pair was 1.8% slot by
//! slot against 4.8% from the runs' medians.

use super::metrics::{self, Estimator, Metric};
use super::{Grain, RunRecord, RunResult};
use serde::{Deserialize, Serialize};

/// One metric's per-round changes of a variant against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundChanges {
    pub metric: String,
    /// The rounds (run indices), one per change.
    pub units: Vec<u32>,
    /// ln(variant / baseline), the median over the round's slots.
    pub log_ratios: Vec<f64>,
}

/// Each metric's per-sample values of one run, as the run's result derives them (overhead
/// subtracted, per-part and throughput figures added, when the result has them).
fn per_sample(r: &RunResult, run: &RunRecord) -> Vec<Metric> {
    let (mut m, _) = metrics::analyze_with(
        std::slice::from_ref(run),
        &r.events,
        &r.op_name,
        r.options.subtract_overhead,
        Estimator::Mean,
    );
    metrics::add_derived(&mut m, &r.workload);
    m
}

/// The per-round changes of `other` against `base`, slot by slot, for every metric whose
/// per-sample values are all positive in every round. Empty unless both were measured in the
/// same paced rounds with the same warm-up and sample counts (their k-th samples share a slot),
/// and for `--estimator min`: the fastest sample of each run is its clean moment, chosen from
/// each run alone, so the rounds compare the runs' values (the floors) instead.
pub(crate) fn round_changes(base: &RunResult, other: &RunResult) -> Vec<RoundChanges> {
    let paced = |r: &RunResult| {
        r.options.interleaved == Some(Grain::Samples) && r.options.estimator != Estimator::Min
    };
    if !paced(base)
        || !paced(other)
        || base.options.warmup != other.options.warmup
        || base.options.samples != other.options.samples
    {
        return Vec::new();
    }
    let mut out: Vec<RoundChanges> = Vec::new();
    let mut rounds = 0;
    for a in &base.runs {
        let Some(b) = other.runs.iter().find(|b| b.index == a.index) else {
            continue;
        };
        let (ma, mb) = (per_sample(base, a), per_sample(other, b));
        for m in &ma {
            let Some(n) = mb.iter().find(|n| n.name == m.name) else {
                continue;
            };
            let logs: Vec<f64> = m
                .units
                .iter()
                .zip(&m.values)
                .filter_map(|(k, x)| {
                    let i = n.units.iter().position(|u| u == k)?;
                    let y = n.values[i];
                    (*x > 0.0 && y > 0.0).then(|| (y / x).ln())
                })
                .collect();
            // Every slot must pair up with positive values, or the metric is left to the
            // runs' values (a count at zero has no ratio).
            if logs.is_empty() || logs.len() != m.values.len() || logs.len() != n.values.len() {
                continue;
            }
            let change = crate::stats::median(&logs);
            match out.iter_mut().find(|c| c.metric == m.name) {
                Some(c) => {
                    c.units.push(a.index);
                    c.log_ratios.push(change);
                }
                None if rounds == 0 => out.push(RoundChanges {
                    metric: m.name.clone(),
                    units: vec![a.index],
                    log_ratios: vec![change],
                }),
                None => {}
            }
        }
        rounds += 1;
        // A metric missing a round is left to the runs' values.
        out.retain(|c| c.units.len() == rounds);
    }
    out
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::results::fixture::fixed_result;

    fn paced(mut r: RunResult) -> RunResult {
        r.options.interleaved = Some(Grain::Samples);
        r
    }

    #[test]
    fn a_round_changes_by_the_median_of_its_slots() {
        let base = paced(fixed_result());
        // B's first sample of each round 2% slower than A's, its second 4%, a third 50% (a
        // burst) in round 1: the median of three slots ignores the burst.
        let mut other = base.clone();
        for run in other.runs.iter_mut() {
            for (k, s) in run.samples.iter_mut().enumerate() {
                s.wall_ns = (s.wall_ns as f64 * [1.02, 1.04][k]).round() as u64;
            }
        }
        let c = round_changes(&base, &other);
        let time = c.iter().find(|c| c.metric == "time").expect("time");
        assert_eq!(time.units, [0, 1, 2]);
        let expected = (1.02f64.ln() + 1.04f64.ln()) / 2.0;
        for x in &time.log_ratios {
            assert!((x - expected).abs() < 1e-6, "{x} vs {expected}");
        }
        // task-clock did not move; context-switches has samples at zero: no ratio, left to
        // the runs' values.
        let tc = c
            .iter()
            .find(|c| c.metric == "task-clock")
            .expect("task-clock");
        assert!(tc.log_ratios.iter().all(|x| x.abs() < 1e-12));
        assert!(!c.iter().any(|c| c.metric == "context-switches"));

        let third = |r: &mut RunResult, f: f64| {
            for run in r.runs.iter_mut() {
                let mut s = run.samples[0].clone();
                s.wall_ns = (s.wall_ns as f64 * if run.index == 1 { f } else { 1.0 }) as u64;
                run.samples.push(s);
            }
            r.options.samples = 3;
        };
        let (mut a3, mut b3) = (base.clone(), other.clone());
        third(&mut a3, 1.0);
        third(&mut b3, 1.5);
        let time = round_changes(&a3, &b3)
            .into_iter()
            .find(|c| c.metric == "time")
            .unwrap();
        assert!((time.log_ratios[1] - 1.04f64.ln()).abs() < 1e-6, "{time:?}");
    }

    #[test]
    fn only_paced_rounds_of_one_shape_pair_by_slot() {
        let base = paced(fixed_result());
        assert!(round_changes(&fixed_result(), &fixed_result()).is_empty());
        let mut other = base.clone();
        other.options.interleaved = Some(Grain::Runs);
        assert!(round_changes(&base, &other).is_empty());
        let mut other = base.clone();
        other.options.warmup = 0;
        assert!(round_changes(&base, &other).is_empty());
        let mut floors = (base.clone(), base.clone());
        floors.0.options.estimator = Estimator::Min;
        floors.1.options.estimator = Estimator::Min;
        assert!(round_changes(&floors.0, &floors.1).is_empty());
        // A round missing from one side is skipped; the others pair.
        let mut other = base.clone();
        other.runs.remove(1);
        let c = round_changes(&base, &other);
        assert_eq!(c.iter().find(|c| c.metric == "time").unwrap().units, [0, 2]);
    }
}
