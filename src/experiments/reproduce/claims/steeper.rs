//! One cache's penalty steeper than another's (the RFC: "the penalty at 512 bytes is much
//! steeper than on Intel systems"): a build's figure over another's under one model, against
//! the same ratio under the other model, each with the range of every pairing of the boots;
//! steeper when the ranges are apart.

use super::{Check, Outcome, Verdict, cross_ratio, ratio_said};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Steeper {
    pub from: String,
    pub to: String,
    /// The model the claim finds steeper, and the one it is compared with.
    pub this: Vec<String>,
    pub than: Vec<String>,
}

impl Check for Steeper {
    fn rule(&self) -> String {
        format!(
            "{} over {} under {} against under {}: steeper when every pairing of the boots \
             gives the first a higher ratio",
            self.to,
            self.from,
            self.this.join(" + "),
            self.than.join(" + ")
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let rise = |m: &[String]| cross_ratio(&f.per_boot(&self.to, m), &f.per_boot(&self.from, m));
        let (Some(a), Some(b)) = (rise(&self.this), rise(&self.than)) else {
            return Outcome::missing(format!(
                "{} and {} need boots counted by both models",
                self.from, self.to
            ));
        };
        let found = format!("{} against {}", ratio_said(a.0, a.1), ratio_said(b.0, b.1));
        let verdict = if a.1.0 > b.1.1 {
            Verdict::Agrees
        } else if a.1.1 < b.1.0 {
            Verdict::Disagrees
        } else {
            Verdict::Inconclusive("the two ratios' ranges overlap".into())
        };
        Outcome::of(found, verdict)
    }
}
