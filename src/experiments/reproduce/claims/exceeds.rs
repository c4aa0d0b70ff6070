//! One arm's exact count above another's (the uprobe thread: "-ret variants (single-stepping
//! case for x86-64) still suck"; a ret's uprobe costs more than a nop's): decided as exact
//! counts are, by their boots' ranges, never in σ. Every boot of the arm above every boot of the
//! other agrees, every one below disagrees, ranges that meet decide nothing.

use super::{Check, Outcome, Verdict};
use crate::core::num::fmt_num;
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Exceeds {
    pub arm: String,
    pub over: String,
    /// syscost's exact counts of both arms, added together.
    pub metrics: Vec<String>,
}

impl Check for Exceeds {
    fn rule(&self) -> String {
        format!(
            "{} above {} ({}, exact): agrees when every boot of {} is above every boot of {}, \
             disagrees when every one is below",
            self.arm,
            self.over,
            self.metrics.join(" + "),
            self.arm,
            self.over
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let arm = f.per_boot(&self.arm, &self.metrics);
        let over = f.per_boot(&self.over, &self.metrics);
        let (Some(a), Some(o)) = (range(&arm), range(&over)) else {
            return Outcome::two_arms_missing(&self.arm, &self.over, &self.metrics);
        };
        let found = format!(
            "{} {} against {} {} (x{:.3})",
            self.arm,
            said(a, arm.len()),
            self.over,
            said(o, over.len()),
            crate::stats::median(&arm) / crate::stats::median(&over)
        );
        Outcome::of(found, decide(a, o))
    }
}

/// The least and the most of `v`.
fn range(v: &[f64]) -> Option<(f64, f64)> {
    let lo = v.iter().copied().reduce(f64::min)?;
    Some((lo, v.iter().copied().fold(lo, f64::max)))
}

fn said((lo, hi): (f64, f64), boots: usize) -> String {
    match lo == hi {
        true => format!("{} in each of {boots} boots", fmt_num(lo)),
        false => format!("{} to {} over {boots} boots", fmt_num(lo), fmt_num(hi)),
    }
}

/// The arm's range `a` against the other's `o`.
fn decide(a: (f64, f64), o: (f64, f64)) -> Verdict {
    if a.0 > o.1 {
        Verdict::Agrees
    } else if a.1 < o.0 {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive(format!(
            "the boots' ranges meet ({} to {} against {} to {})",
            fmt_num(a.0),
            fmt_num(a.1),
            fmt_num(o.0),
            fmt_num(o.1)
        ))
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A ret's uprobe on 6.12: 2,192 kernel instructions a hit in every boot, a nop's 1,418.
    #[test]
    fn ranges_apart_decide_and_ranges_that_meet_do_not() {
        assert_eq!(decide((2192.0, 2192.0), (1418.0, 1418.0)), Verdict::Agrees);
        assert_eq!(
            decide((1418.0, 1418.0), (2192.0, 2192.0)),
            Verdict::Disagrees
        );
        let v = decide((1418.0, 1420.0), (1419.0, 1419.0));
        assert!(matches!(v, Verdict::Inconclusive(_)), "{v:?}");
        assert_eq!(range(&[]), None);
        assert_eq!(range(&[3.0, 1.0, 2.0]), Some((1.0, 3.0)));
        assert_eq!(said((8.0, 8.0), 2), "8.00 in each of 2 boots");
    }
}
