//! Whether a rise in L1i misses from one build to another is the cache's associativity or
//! its capacity (the RFC: "probably due to the artificially reduced associativity of the
//! caching"): the same fetches counted by the paper's set-associative L1i and by a fully
//! associative one of the same size in the same boots. A rise that survives full
//! associativity is capacity (the padding between functions fills the cache); one that goes
//! with it is associativity. Beside it, each build's misses in the sets a function can start
//! in (with functions on N bytes, one set in N/64 of a 64-set L1i of 64-byte lines): crowding
//! shows there.

use super::{Build, Check, Detail, Outcome, Verdict, cross_ratio, ratio_said};
use crate::core::num::fmt_num;
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Capacity {
    /// The build the rise is from and the one it is to.
    pub from: String,
    pub to: String,
    /// The paper's set-associative L1i's misses, and the fully associative one's.
    pub set_associative: Vec<String>,
    pub fully_associative: Vec<String>,
    /// Every build, for its sets.
    pub builds: Vec<Build>,
    /// The L1i's line, in bytes, and its sets.
    pub line: u64,
    pub sets: u64,
}

/// The share of the rise associativity must explain for the paper's reason to agree.
pub(crate) const MOSTLY: f64 = 0.5;

impl Check for Capacity {
    fn rule(&self) -> String {
        format!(
            "{} over {} under the set-associative L1i and under a fully associative one of the \
             same size, in the same boots: associativity, as the paper says, when the fully \
             associative rise's boots lie below the set-associative's and it explains at least \
             {:.0}% of the rise; capacity when less and the rise survives (its boots above 1)",
            self.to,
            self.from,
            100.0 * MOSTLY
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let rise = |m: &[String]| cross_ratio(&f.per_boot(&self.to, m), &f.per_boot(&self.from, m));
        let (Some(set), Some(full)) = (rise(&self.set_associative), rise(&self.fully_associative))
        else {
            return Outcome::missing(format!(
                "{} and {} need boots counted by both L1i models",
                self.from, self.to
            ));
        };
        let found = format!(
            "set-associative {}, fully associative {}",
            ratio_said(set.0, set.1),
            ratio_said(full.0, full.1)
        );
        Outcome {
            detail: Some(self.detail(f)),
            ..Outcome::of(found, decide(set, full))
        }
    }
}

/// The verdict on a rise `set` (ratio, boots' range) under the set-associative L1i and
/// `full` under the fully associative one.
pub(crate) fn decide(set: (f64, (f64, f64)), full: (f64, (f64, f64))) -> Verdict {
    if set.1.0 <= 1.0 {
        return Verdict::Inconclusive(format!(
            "no rise to explain: the set-associative boots' ratios reach {:.4}",
            set.1.0
        ));
    }
    let explained = (set.0 - full.0) / (set.0 - 1.0);
    let share = format!(
        "associativity explains {:.0}% of the rise",
        100.0 * explained
    );
    if full.1.1 < set.1.0 && explained >= MOSTLY {
        Verdict::Agrees
    } else if explained < MOSTLY && full.1.0 > 1.0 {
        Verdict::Disagrees
    } else {
        Verdict::Inconclusive(share)
    }
}

impl Capacity {
    /// A row per build measured: its misses in both models and the share of its set-associative misses
    /// in the sets its functions can start in.
    fn detail(&self, f: &Figures) -> Detail {
        let med = |arm: &str, m: &[String]| {
            let v = f.per_boot(arm, m);
            (!v.is_empty()).then(|| crate::stats::median(&v))
        };
        let rows = (self.builds.iter())
            .filter(|b| !f.per_boot(&b.arm, &self.set_associative).is_empty())
            .map(|b| {
                let (s, a) = (
                    med(&b.arm, &self.set_associative),
                    med(&b.arm, &self.fully_associative),
                );
                let stride = b.bytes.map_or(1, |n| (n / self.line).max(1));
                let starts = f.l1i_share(&b.arm, |set| (set as u64).is_multiple_of(stride));
                vec![
                    b.arm.clone(),
                    s.map_or("-".into(), fmt_num),
                    a.map_or("-".into(), fmt_num),
                    match (s, a) {
                        (Some(s), Some(a)) if s > 0.0 => format!("x{:.3}", a / s),
                        _ => "-".into(),
                    },
                    match stride {
                        1 => "every set".into(),
                        k => format!("1 in {k}"),
                    },
                    starts.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x)),
                    format!("{:.1}%", 100.0 / stride.min(self.sets) as f64),
                ]
            })
            .collect();
        Detail {
            title: "Each build's L1i misses per operation in both models, and the share of the \
                    set-associative misses in the sets its functions can start in"
                .into(),
            head: [
                "build",
                "set-associative",
                "fully associative",
                "full/set",
                "start sets",
                "their misses",
                "their share of sets",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            notes: vec![
                "a function on N bytes starts in one set in N/64: crowding shows as more of the \
                 misses there than the sets' share"
                    .into(),
            ],
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_rise_that_survives_full_associativity_is_capacity() {
        // 8-way: x1.10; fully associative: x1.09: the padding, not the sets.
        assert_eq!(
            decide((1.10, (1.09, 1.11)), (1.09, (1.08, 1.10))),
            Verdict::Disagrees
        );
        // Fully associative: x1.01: the sets.
        assert_eq!(
            decide((1.10, (1.09, 1.11)), (1.01, (1.00, 1.02))),
            Verdict::Agrees
        );
        let none = decide((1.0, (0.99, 1.01)), (1.0, (0.99, 1.01)));
        assert!(matches!(none, Verdict::Inconclusive(ref w) if w.contains("no rise")));
    }
}
