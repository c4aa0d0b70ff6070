//! One arm's placements crowd a set more often than another's: the share of each arm's
//! placements with as many rule entries in one L1d set as it has ways, compared by Fisher's
//! exact test (two-sided, as scipy's `fisher_exact`).

use super::{ALPHA, Check, Outcome, Verdict};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use crate::experiments::reproduce::placement::Distribution;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Shares {
    /// The arm the claim says crowds more.
    pub arm: String,
    /// The arm it crowds more than.
    pub than: String,
}

impl Check for Shares {
    fn rule(&self) -> String {
        format!(
            "the share of arm {}'s placements that put as many entries into one L1d set as it \
             has ways, against arm {}'s: Fisher's exact test, agreeing when {}'s is higher at \
             p < {ALPHA}",
            self.arm, self.than, self.arm
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let of = |arm: &str| -> Result<&Distribution, String> {
            (f.placed(arm).and_then(|p| p.distribution.as_ref())).ok_or(format!(
                "arm {arm} has no placements (not booted, or no rules)"
            ))
        };
        let (a, b) = match (of(&self.arm), of(&self.than)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(why), _) | (_, Err(why)) => return Outcome::missing(why),
        };
        let count = |d: &Distribution| (d.crowded as u64, d.placements as u64);
        let ((x, n), (y, m)) = (count(a), count(b));
        let found = format!("{x} of {n} against {y} of {m}");
        let Some(p) = crate::stats::proportions::fisher_exact(x, n, y, m) else {
            return Outcome::of(
                found,
                Verdict::NotMeasured("an arm without placements".into()),
            );
        };
        let lean = x as f64 / n as f64 - y as f64 / m as f64;
        let verdict = Verdict::of_test(lean, p, ALPHA, &found);
        Outcome::of(
            format!("{found} (p {})", crate::core::num::fmt_p(p)),
            verdict,
        )
    }
}
