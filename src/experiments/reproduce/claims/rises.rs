//! A figure that rises build after build (the RFC: "128/256/512 bytes numbers show an
//! increasing amount of cache misses"): each step's ratio over the build before, by the range
//! of every pairing of their boots.

use super::{Check, Outcome, Verdict, cross_ratio, ratio_said};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rises {
    /// The builds in the order the figure rises.
    pub arms: Vec<String>,
    pub metrics: Vec<String>,
}

impl Check for Rises {
    fn rule(&self) -> String {
        format!(
            "{} over {}: each build's over the one before, agreeing when every pairing of \
             their boots rises, disagreeing when a step's every pairing falls",
            self.metrics.join(" + "),
            self.arms.join(", ")
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let mut said = Vec::new();
        let mut verdict = Verdict::Agrees;
        for w in self.arms.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let step = cross_ratio(&f.per_boot(b, &self.metrics), &f.per_boot(a, &self.metrics));
            let Some((r, (lo, hi))) = step else {
                return Outcome::missing(format!("{a} and {b} need a boot each"));
            };
            said.push(format!("{b}/{a} {}", ratio_said(r, (lo, hi))));
            verdict = match (verdict, lo > 1.0, hi < 1.0) {
                (Verdict::Disagrees, ..) | (_, _, true) => Verdict::Disagrees,
                (v, true, _) => v,
                (Verdict::Agrees, false, false) => {
                    Verdict::Inconclusive(format!("{b} against {a}: the boots' ratios span 1"))
                }
                (v, false, false) => v,
            };
        }
        Outcome::of(said.join("; "), verdict)
    }
}
