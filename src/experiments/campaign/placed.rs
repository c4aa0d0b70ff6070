//! Whether a campaign's verdict on a figure placement decides holds placement by placement.
//! Where every run placed the arms' rule entries anew (`--placement run`), run `k` of a round
//! drew its fillers alike in every arm, so the arms' runs pair up: each arm's modelled misses
//! against the first arm's, run by run, counted up and tested (the signed-rank test of the
//! differences), beside the boots' verdict on their medians.

use crate::experiments::boots::record::Decoded;
use crate::stats::paired::{min_signed_rank_p, signed_rank};
use serde::{Deserialize, Serialize};

/// One arm against the first over their placements paired run by run, for one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlacedDelta {
    pub metric: String,
    pub arm: String,
    pub against: String,
    pub pairs: usize,
    /// Pairs where the arm's run was higher, lower, the same.
    pub higher: usize,
    pub lower: usize,
    pub alike: usize,
    /// The signed-rank test's two-sided p, when the pairs that differ can reach `alpha`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
}

/// Whether `name` is a figure placement decides: a cache model's misses.
pub(crate) fn placed_metric(name: &str) -> bool {
    name.ends_with("-misses (emulated)")
}

/// Each arm but the first against the first, for each metric placement decides, over their
/// runs paired by round and index (`views`: per arm, its good boots with their round).
pub(crate) fn deltas(
    names: &[&str],
    views: &[Vec<(u32, Decoded)>],
    alpha: f64,
) -> Vec<PlacedDelta> {
    let Some(base) = views.first() else {
        return Vec::new();
    };
    let metrics = metrics_of(base);
    let mut out = Vec::new();
    for (name, arm) in names.iter().zip(views).skip(1) {
        for m in &metrics {
            let d = differences(arm, base, m);
            if d.is_empty() {
                continue;
            }
            out.push(delta(m, (name, names[0]), &d, alpha));
        }
    }
    out
}

/// The metrics placement decides that the first arm's boots measured.
fn metrics_of(base: &[(u32, Decoded)]) -> Vec<String> {
    let mut m: Vec<String> = (base.iter())
        .flat_map(|(_, d)| d.view.metrics.iter().map(|m| m.name.clone()))
        .filter(|n| placed_metric(n))
        .collect();
    m.sort();
    m.dedup();
    m
}

/// `arm`'s runs less `base`'s of the same round and index.
fn differences(arm: &[(u32, Decoded)], base: &[(u32, Decoded)], metric: &str) -> Vec<f64> {
    let runs = |views: &[(u32, Decoded)], round: u32| -> Vec<f64> {
        (views.iter().find(|(r, _)| *r == round))
            .and_then(|(_, d)| d.view.metric(metric))
            .map_or(Vec::new(), |m| m.values.clone())
    };
    let mut out = Vec::new();
    for (round, _) in arm {
        let (a, b) = (runs(arm, *round), runs(base, *round));
        out.extend(a.iter().zip(&b).map(|(x, y)| x - y));
    }
    out
}

fn delta(metric: &str, (arm, against): (&str, &str), d: &[f64], alpha: f64) -> PlacedDelta {
    let higher = d.iter().filter(|x| **x > 0.0).count();
    let lower = d.iter().filter(|x| **x < 0.0).count();
    let can = min_signed_rank_p(higher + lower) < alpha;
    PlacedDelta {
        metric: metric.to_string(),
        arm: arm.to_string(),
        against: against.to_string(),
        pairs: d.len(),
        higher,
        lower,
        alike: d.len() - higher - lower,
        p: can.then(|| signed_rank(d).map_or(1.0, |t| t.p)),
    }
}

impl PlacedDelta {
    /// What the pairs say: a shift across placements, none, or too few to tell.
    pub(crate) fn said(&self, alpha: f64) -> String {
        let p = |p: f64| crate::core::num::fmt_p(p);
        match self.p {
            None => format!(
                "{} pairs that differ cannot reach p < {alpha}: undecided",
                self.higher + self.lower
            ),
            Some(v) if v < alpha && self.higher > self.lower => {
                format!("higher across placements (signed-rank p {})", p(v))
            }
            Some(v) if v < alpha => format!("lower across placements (signed-rank p {})", p(v)),
            Some(v) => format!("no shift across placements shown (signed-rank p {})", p(v)),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn pairs_are_counted_and_tested_and_too_few_say_so() {
        // scipy 1.17.1: wilcoxon([1, 2, 3, 4, 5, 6, 0, 0]).pvalue == 0.03125 (method="auto":
        // zeros in 8 pairs, every sign flip)
        let d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0];
        let x = delta("m", ("b", "a"), &d, 0.05);
        assert_eq!((x.pairs, x.higher, x.lower, x.alike), (8, 6, 0, 2));
        assert!((x.p.unwrap() - 0.03125).abs() < 1e-12, "{x:?}");
        assert!(
            x.said(0.05).starts_with("higher across placements"),
            "{x:?}"
        );
        let few = delta("m", ("b", "a"), &d[2..], 0.05);
        assert_eq!(few.p, None, "4 pairs that differ: 2 / 2^4 = 0.125 at best");
        assert!(few.said(0.05).contains("undecided"));
        // As many placements higher as lower, by as much: scipy 1.17.1's
        // wilcoxon([1, -1, 2, -2, 3, -3]).pvalue == 1.0
        let mixed = delta("m", ("b", "a"), &[1.0, -1.0, 2.0, -2.0, 3.0, -3.0], 0.05);
        assert_eq!(mixed.p, Some(1.0));
        assert!(mixed.said(0.05).starts_with("no shift"), "{mixed:?}");
        assert!(placed_metric("L1-dcache-load-misses (emulated)"));
        assert!(!placed_metric("L1-dcache-load-misses:k (emulated)"));
        assert!(!placed_metric("instructions (emulated)"));
    }
}
