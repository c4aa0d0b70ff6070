//! What each rule of a user's rules file costs the measured syscall: `audit sweep
//! --audit-rules FILE` steps through the file's rules in order (audit on with its first 0, 1,
//! ..., n rules), and rule k's cost is step k against step k-1, paired round by round, for
//! every metric (time, and the exact emulated instructions in a campaign's guest). The set's
//! total is its last step against audit on without rules, and against the baseline (audit
//! off, the audit series' audit=0). Each rule is named by how the kernel walks it
//! ([`Walk`]), with the cheaper rewrite auditctl allows where there is one.

use super::audit_sweep::{Step, delta};
use crate::audit::rules::Rule;
use crate::audit::rules_file::{Refused, RuleSet};
use crate::audit::walk::Walk;
use crate::compare::Delta;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// One rule of the file and its cost.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RuleCost {
    pub line: usize,
    pub text: String,
    pub walk: Walk,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// Every metric with this rule against without it (the rules before it loaded in both).
    pub deltas: Vec<Delta>,
}

/// A sweep over a rules file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileSweep {
    pub source: String,
    /// Lines left out: syscost could not read them, or the kernel refused them.
    pub refused: Vec<Refused>,
    /// In the file's order.
    pub rules: Vec<RuleCost>,
    /// Every metric with all the rules against audit on without rules.
    pub set_cost: Vec<Delta>,
    /// Every metric with all the rules against the baseline (audit off).
    pub set_total: Vec<Delta>,
    /// Every metric of the first rule's step against audit on without rules: the first rule
    /// and the filters starting to run (with no rule at all the kernel skips them).
    #[serde(default)]
    pub first_step: Vec<Delta>,
}

impl FileSweep {
    /// The costs, from the sweep's steps; `kept` is (line, rule) of each rule the kernel took,
    /// in the order the steps add them; `measured` the workload's syscall numbers.
    pub fn of(
        set: &RuleSet,
        kept: &[(usize, Vec<u8>)],
        measured: &[u32],
        steps: &[Step],
    ) -> Result<FileSweep> {
        let rules = kept
            .iter()
            .map(|(line, bytes)| {
                let rule = Rule::decode(bytes).expect("a rule libaudit built");
                let walk = Walk::of(&rule, measured);
                let text = set.lines.iter().find(|l| l.number == *line);
                RuleCost {
                    line: *line,
                    text: text.map(|l| l.text.clone()).unwrap_or_default(),
                    walk,
                    advice: walk.advice(&rule),
                    deltas: Vec::new(),
                }
            })
            .collect();
        let mut f = FileSweep {
            source: set.source.clone(),
            refused: set.refused.clone(),
            rules,
            set_cost: Vec::new(),
            set_total: Vec::new(),
            first_step: Vec::new(),
        };
        f.refigure(steps)?;
        Ok(f)
    }

    /// The deltas again from the steps (after a campaign's guest added emulated counts).
    pub fn refigure(&mut self, steps: &[Step]) -> Result<()> {
        let on = |k: usize, without_first: bool| {
            steps.iter().position(|s| {
                s.config.enabled == 1
                    && s.config.rules as usize == k
                    && s.config.without_first == without_first
            })
        };
        let n = self.rules.len();
        for (k, r) in self.rules.iter_mut().enumerate() {
            // The first rule on top of the others where that step was measured.
            let before = match k {
                0 => on(n, true).or(on(0, false)),
                _ => on(k, false),
            };
            let with = if k == 0 && before != on(0, false) {
                on(n, false)
            } else {
                on(k + 1, false)
            };
            if let (Some(a), Some(b)) = (before, with) {
                r.deltas = delta(steps, a, b)?;
            }
        }
        if let (Some(a), Some(b), Some(c)) = (on(0, false), on(n, false), on(1, false)) {
            self.set_cost = delta(steps, a, b)?;
            self.set_total = delta(steps, 0, b)?;
            self.first_step = delta(steps, a, c)?;
        }
        Ok(())
    }

    /// Whether the first rule's figure includes the filters starting (a file of one rule).
    pub fn first_includes_start(&self) -> bool {
        self.rules.len() == 1
    }

    /// The metric rules are ranked by: the exact emulated kernel instructions where measured,
    /// else time.
    pub fn ranking_metric(&self) -> &'static str {
        let emulated = self
            .rules
            .iter()
            .any(|r| r.deltas.iter().any(|d| d.metric == EMULATED));
        if emulated { EMULATED } else { "time" }
    }

    /// The rules, costliest first by [`Self::ranking_metric`].
    pub fn ranked(&self) -> Vec<&RuleCost> {
        let metric = self.ranking_metric();
        let mut out: Vec<&RuleCost> = self.rules.iter().collect();
        let cost = |r: &RuleCost| r.cost(metric).unwrap_or(f64::NEG_INFINITY);
        out.sort_by(|a, b| cost(b).total_cmp(&cost(a)));
        out
    }
}

/// Kernel instructions counted by a campaign guest's TCG plugin.
pub const EMULATED: &str = "instructions:k (emulated)";

impl RuleCost {
    /// The rule's added cost in `metric`'s unit per operation: the paired estimate of the
    /// per-round change, applied to the step without it.
    pub fn cost(&self, metric: &str) -> Option<f64> {
        let d = self.delta(metric)?;
        Some(d.delta_pct? / 100.0 * d.base_median)
    }

    /// The interval of [`Self::cost`].
    pub fn cost_ci(&self, metric: &str) -> Option<(f64, f64)> {
        let d = self.delta(metric)?;
        let c = d.ci_pct?;
        Some((c.lo / 100.0 * d.base_median, c.hi / 100.0 * d.base_median))
    }

    pub fn delta(&self, metric: &str) -> Option<&Delta> {
        self.deltas.iter().find(|d| d.metric == metric)
    }
}
