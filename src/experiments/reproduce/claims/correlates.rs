//! A mechanism, placement by placement: an arm's modelled L1d misses rise with how its rule
//! entries crowd the sets they can reach (the entries in its most crowded set, or their
//! spread), Pearson's r over the arm's placements with its two-sided p (Student's t, as
//! scipy's `pearsonr`).

use super::{ALPHA, Check, Outcome};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::Paper;
use crate::experiments::reproduce::placement::units;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Correlates {
    /// The arm whose placements are correlated.
    pub arm: String,
    /// What of the placement the misses rise with.
    pub with: Crowding,
}

/// What of an arm's placement its misses are correlated with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Crowding {
    /// The entries in the most crowded set.
    Peak,
    /// The syscall-latency post's cacheline-spread.
    Spread,
}

impl Crowding {
    fn said(self) -> &'static str {
        match self {
            Crowding::Peak => "the entries in its most crowded L1d set",
            Crowding::Spread => "its entries' cacheline-spread",
        }
    }
}

impl Check for Correlates {
    fn rule(&self) -> String {
        format!(
            "arm {}: its modelled L1d misses a call against {}, placement by placement: \
             Pearson's r, agreeing when r > 0 at p < {ALPHA}",
            self.arm,
            self.with.said()
        )
    }

    fn run(&self, _: &Paper, f: &Figures) -> Outcome {
        let Some(placed) = f.placed(&self.arm) else {
            let why = format!(
                "arm {} has no placements (not booted, or no rules)",
                self.arm
            );
            return Outcome::missing(why);
        };
        let (x, y): (Vec<f64>, Vec<f64>) = units(&placed.boots)
            .iter()
            .filter_map(|u| {
                let x = match self.with {
                    Crowding::Peak => u.1 as f64,
                    Crowding::Spread => u.0,
                };
                Some((x, u.2?))
            })
            .unzip();
        let Some(c) = crate::stats::correlation::correlate(&x, &y) else {
            let why = format!(
                "{} placements with misses, or a placement that never changed: r needs 3 \
                 that differ",
                x.len()
            );
            return Outcome::missing(why);
        };
        super::correlated("r", (c.pearson_r, c.pearson_p), c.n, "placements")
    }
}
