//! Whether syscost ranks the builds as the paper does: Spearman's rank correlation between the
//! builds' medians and the paper's figures for them, with its two-sided p (Student's t with
//! n - 2 degrees of freedom, as scipy's `spearmanr`); a build whose paper figure is a
//! misprint is left out.

use super::{ALPHA, Build, Check, Outcome};
use crate::experiments::reproduce::Figures;
use crate::experiments::reproduce::paper::{Class, Paper};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ranks {
    pub builds: Vec<Build>,
    pub metrics: Vec<String>,
}

impl Check for Ranks {
    fn rule(&self) -> String {
        format!(
            "the builds' {} against the paper's figures for them: Spearman's rho, agreeing \
             when rho > 0 at p < {ALPHA} (builds whose paper figure is a misprint left out)",
            self.metrics.join(" + ")
        )
    }

    fn run(&self, p: &Paper, f: &Figures) -> Outcome {
        let mut pairs: Vec<(f64, f64)> = Vec::new();
        let mut left_out: Vec<&str> = Vec::new();
        for b in &self.builds {
            let Some((t, c)) = b.paper.as_deref().and_then(|at| p.cell_at(at)) else {
                continue;
            };
            let ours = f.per_boot(&b.arm, &self.metrics);
            if c.class == Class::Misprint || ours.is_empty() {
                left_out.push(&b.arm);
                continue;
            }
            pairs.push((crate::stats::median(&ours), t.value(c)));
        }
        let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let Some(c) = crate::stats::correlation::correlate(&x, &y) else {
            return Outcome::missing(format!(
                "{} builds with a figure of both (3 that differ are needed)",
                x.len()
            ));
        };
        let out = match left_out.is_empty() {
            true => String::new(),
            false => format!(
                " ({} left out: a misprint, or not booted)",
                left_out.join(", ")
            ),
        };
        let units = format!("builds{out}");
        super::correlated("rho", (c.spearman_rho, c.spearman_p), c.n, &units)
    }
}
