//! What each rule of a user's rules file costs the measured syscall: `audit sweep
//! --audit-rules FILE` steps through the file's rules in order (audit on with its first 0, 1,
//! ..., n rules, and rules 2-n), and rule k's cost is step k against step k-1, paired round by
//! round (the first rule's, all n against rules 2-n, so that the filters starting to run are
//! not in it), for every metric (time, and the exact emulated instructions in a campaign's
//! guest). The set's
//! total is its last step against audit on without rules, and against the baseline (audit
//! off, the audit series' audit=0). Each rule is named by how the kernel walks it
//! ([`Walk`]), with the cheaper rewrite auditctl allows where there is one.

use crate::audit::rules::Rule;
use crate::audit::rules_file::{Refused, RuleSet};
use crate::audit::walk::Walk;
use crate::compare::Delta;
use serde::{Deserialize, Serialize};

/// One rule of the file and its cost.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RuleCost {
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
pub(crate) struct FileSweep {
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
    /// The rules of a sweep, their costs still to be figured from its steps (by
    /// `audit_sweep`); `kept` is (line, rule) of each rule the kernel took, in the order the
    /// steps add them; `measured` the workload's syscall numbers.
    pub(crate) fn of(set: &RuleSet, kept: &[(usize, Vec<u8>)], measured: &[u32]) -> FileSweep {
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
        FileSweep {
            source: set.source.clone(),
            refused: set.refused.clone(),
            rules,
            set_cost: Vec::new(),
            set_total: Vec::new(),
            first_step: Vec::new(),
        }
    }

    /// Whether the first rule's figure includes the filters starting (a file of one rule).
    pub(crate) fn first_includes_start(&self) -> bool {
        self.rules.len() == 1
    }

    /// The metric rules are ranked by: the exact emulated kernel instructions where measured,
    /// else time.
    pub(crate) fn ranking_metric(&self) -> &'static str {
        let emulated = self
            .rules
            .iter()
            .any(|r| r.deltas.iter().any(|d| d.metric == EMULATED));
        if emulated { EMULATED } else { "time" }
    }

    /// The rules, costliest first by [`Self::ranking_metric`].
    pub(crate) fn ranked(&self) -> Vec<&RuleCost> {
        let metric = self.ranking_metric();
        let mut out: Vec<&RuleCost> = self.rules.iter().collect();
        let cost = |r: &RuleCost| r.cost(metric).unwrap_or(f64::NEG_INFINITY);
        out.sort_by(|a, b| cost(b).total_cmp(&cost(a)));
        out
    }
}

/// Kernel instructions counted by a campaign guest's TCG plugin.
pub(crate) const EMULATED: &str = "instructions:k (emulated)";

impl RuleCost {
    /// The rule's added cost in `metric`'s unit per operation: the paired estimate of the
    /// per-round change, applied to the step without it.
    /// Where no pair could be formed (a run without a value, such as an emulated window left
    /// out for another task), the difference of the two steps' medians.
    pub(crate) fn cost(&self, metric: &str) -> Option<f64> {
        let d = self.delta(metric)?;
        Some(match d.delta_pct {
            Some(p) => p / 100.0 * d.base_median,
            None => d.median - d.base_median,
        })
    }

    /// The interval of [`Self::cost`].
    pub(crate) fn cost_ci(&self, metric: &str) -> Option<(f64, f64)> {
        let d = self.delta(metric)?;
        let c = d.ci_pct?;
        Some((c.lo / 100.0 * d.base_median, c.hi / 100.0 * d.base_median))
    }

    pub(crate) fn delta(&self, metric: &str) -> Option<&Delta> {
        self.deltas.iter().find(|d| d.metric == metric)
    }
}
