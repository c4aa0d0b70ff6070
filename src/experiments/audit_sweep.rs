//! `syscost audit sweep`: what audit being on costs each syscall, and what each syscall-exit
//! rule adds (the syscall-latency post and the audit series).
//!
//! Steps: audit off with a `never,task` rule (the honest baseline: new tasks get no audit
//! context at all), audit off without it (shows the per-task work a kernel keeps once audit
//! has ever been enabled in this boot), then audit on with each rule count. Every step is a
//! full run per round; rounds visit every step, in alternating order, so this machine's drift
//! falls on all steps alike. The slope per rule is a least-squares fit over every run of the
//! audit-on steps.

use super::rule_costs::FileSweep;
use crate::audit::{self, AuditStatus, session::Session};
use crate::compare::{self, Delta};
use crate::core::input::Opt;
use crate::core::{Envelope, Kind};
use crate::results::{Metric, MetricKind, RunResult};
use crate::runner::{self, Plan, Progress, interleave::Batch};
use crate::stats::regression::fit;
use crate::workloads::WorkloadSpec;
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// The most rules a sweep step may load. The kernel sets no limit of its own (rules are
/// allocated until memory runs out); this keeps a typo from loading millions.
pub(crate) const MAX_RULES: u32 = 10_000;

/// A sweep to run.
#[derive(Clone, Debug)]
pub(crate) struct SweepPlan {
    /// The benchmark: a `syscall` workload with the run options.
    pub plan: Plan,
    /// Rule counts of the audit-on steps, strictly increasing.
    pub rules: Vec<u32>,
    /// How many rules name the benchmarked syscall (and fail on a field).
    pub matching: u32,
    /// Include the "audit off, no task rule" step.
    pub residue_step: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StepConfig {
    pub enabled: u32,
    pub task_never: bool,
    pub rules: u32,
    pub matching: u32,
    /// The rules are the first `rules` of a rules file's (`--audit-rules`), not generated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_file: bool,
    /// With `from_file`: the file's first rule left out (its cost on top of the others,
    /// with the filters already running).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_first: bool,
}

impl StepConfig {
    pub(crate) fn label(&self) -> String {
        match (self.enabled, self.task_never) {
            (0, true) => "audit off (never,task)".into(),
            (0, false) => "audit off (no task rule)".into(),
            _ if self.without_first => format!("audit on, the file's rules 2-{}", self.rules),
            _ if self.from_file => format!("audit on, the file's first {} rules", self.rules),
            _ => format!(
                "audit on, {} rules ({} matching)",
                self.rules, self.matching
            ),
        }
    }
}

/// One step's configuration and its run result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Step {
    pub label: String,
    #[serde(flatten)]
    pub config: StepConfig,
    pub result: RunResult,
}

/// A least-squares line of a metric against the rule count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Fit {
    pub metric: String,
    /// Unit of the slope, e.g. `ns/call per rule`.
    pub unit: String,
    pub n: usize,
    pub slope: f64,
    pub slope_ci95: Option<(f64, f64)>,
    pub intercept: f64,
    pub r2: f64,
}

/// A `syscost audit sweep` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Sweep {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub created_unix: u64,
    pub workload: WorkloadSpec,
    /// The first syscall the matching rules name (kept for older readers).
    pub syscall_nr: u32,
    /// Every syscall the matching rules name, in turn: the workload's own.
    #[serde(default)]
    pub syscalls: Vec<u32>,
    pub matching: u32,
    /// Which step is the baseline, and why.
    pub baseline: String,
    pub audit_before: AuditStatus,
    pub audit_after: AuditStatus,
    pub steps: Vec<Step>,
    /// Every metric of "audit on, 0 rules" against the baseline.
    pub enable_cost: Vec<Delta>,
    /// Every metric of "audit off, no task rule" against the baseline.
    pub residue: Vec<Delta>,
    /// Every metric of the smallest non-zero rule count against "audit on, 0 rules".
    pub first_rules_cost: Vec<Delta>,
    /// The rule counts the per-rule fit used.
    pub fit_steps: Vec<String>,
    pub fits: Vec<Fit>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// A sweep over a rules file's rules: what each costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_file: Option<FileSweep>,
}

impl Sweep {
    /// What one boot's sweep comes to when boots are compared (a campaign's): each fitted
    /// metric's cost per rule (the slope), one value, of the kind the steps measured it as;
    /// ratios are left out.
    pub(crate) fn per_boot_metrics(&self) -> Vec<Metric> {
        let kind_of = |name: &str| {
            let step = self.steps.first().map(|s| &s.result.metrics);
            step.and_then(|ms| ms.iter().find(|m| m.name == name))
                .map_or(MetricKind::Counter, |m| m.kind)
        };
        // A ratio's slope (IPC per rule) is not a cost: left out.
        self.fits
            .iter()
            .filter(|f| kind_of(&f.metric) != MetricKind::Derived)
            .map(|f| {
                let values = vec![f.slope];
                Metric::of_values(&f.metric, &f.unit, kind_of(&f.metric), "boot", values, None)
            })
            .collect()
    }

    /// The costs and fits again, from the steps as they are now: after counts were added to
    /// the steps' samples (a campaign guest's emulated counts), so the fits include them.
    pub(crate) fn refigure(&mut self) -> Result<()> {
        let residue_step = self
            .steps
            .iter()
            .any(|s| s.config.enabled == 0 && !s.config.task_never);
        let costs = costs(&self.steps, residue_step)?;
        (self.enable_cost, self.residue, self.first_rules_cost) =
            (costs.enable, costs.residue, costs.first_rules);
        (self.fit_steps, self.fits) = fits(&self.steps);
        if let Some(f) = &mut self.rules_file {
            file_costs(f, &self.steps)?;
        }
        Ok(())
    }
}

/// Parse `0,8,16` or `0-48:16` into strictly increasing rule counts.
pub fn parse_rule_counts(s: &str) -> Result<Vec<u32>> {
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let bad = || {
            crate::refused!(
                Opt::Rules,
                format!(" '{s}': '{part}' is not a rule count; "),
                "write counts like 0,8,16,32 or a range like 0-48:16"
            )
        };
        let num = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
        if let Some((range, step)) = part.split_once(':') {
            let (a, b) = range.split_once('-').ok_or_else(bad)?;
            let (a, b, step) = (num(a)?, num(b)?, num(step)?);
            if step == 0 || b < a {
                return Err(bad());
            }
            out.extend((a..=b).step_by(step as usize));
        } else if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(num(part)?);
        }
    }
    if out.is_empty() {
        return Err(crate::refused!(
            Opt::Rules,
            " is empty: give rule counts like 0,16,32,48"
        ));
    }
    if out.windows(2).any(|w| w[1] <= w[0]) {
        return Err(crate::refused!(
            Opt::Rules,
            format!(" '{s}': counts must be strictly increasing, like 0,16,32,48")
        ));
    }
    if let Some(&max) = out.last()
        && max > MAX_RULES
    {
        return Err(crate::refused!(
            Opt::Rules,
            format!(" '{s}': {max} rules is above syscost's limit of {MAX_RULES} per step")
        ));
    }
    Ok(out)
}

/// Put audit in the state of step `c`.
fn apply(session: &mut Session, c: &StepConfig, targets: &[u32]) -> Result<()> {
    if c.enabled == 0 {
        session.set_enabled(0)?;
        session.set_exit_rules(0, 0, targets)?;
        session.set_file_rules(0)?;
        session.set_task_never(c.task_never)
    } else if c.from_file {
        session.set_task_never(false)?;
        session.set_file_window(usize::from(c.without_first), c.rules as usize)?;
        session.set_enabled(1)
    } else {
        session.set_task_never(false)?;
        session.set_exit_rules(c.rules as usize, c.matching as usize, targets)?;
        session.set_enabled(1)
    }
}

/// Run the sweep, in stages: check the plan, lay out the steps, measure them interleaved,
/// then the costs, the fits and the warnings. Every change to audit is undone before this
/// returns, whatever happens.
pub(crate) fn run(sp: &SweepPlan, progress: &mut dyn FnMut(Progress)) -> Result<Sweep> {
    // The syscalls the matching rules name: the workload's own.
    let targets = sp.plan.workload.syscalls();
    check(sp, &targets)?;
    let mut session = Session::begin()?;
    let mut notes = session.notes.clone();
    let before = session.status()?;
    // A rules file's rules are loaded once, to hear what the kernel refuses; the steps then
    // hold its first k.
    let mut file = sp.plan.audit_rules.clone();
    if let Some(set) = &mut file {
        notes.extend(session.load_file(set)?);
        session.set_file_rules(0)?;
    }
    let configs = step_configs(sp, file.as_ref().map(|_| session.file_rules().len()));
    // One workload in different audit states: one batch size for every step, and before each
    // run (and each step's profiling run) audit is put in that step's state.
    let plan = Plan {
        audit_rules: None,
        ..sp.plan.clone()
    };
    let plans = vec![plan; configs.len()];
    let results = runner::run_interleaved_with(
        &mut runner::Workers,
        &plans,
        Batch::Shared,
        &mut |k| apply(&mut session, &configs[k], &targets),
        progress,
    )?;
    let after_changes = session.status()?;
    let original = session.original_enabled();
    let kept = session.file_rules().to_vec();
    session.restore()?;
    let after = audit::status()?;
    let steps: Vec<Step> = configs
        .iter()
        .zip(results)
        .map(|(c, result)| Step {
            label: c.label(),
            config: *c,
            result,
        })
        .collect();
    let costs = costs(&steps, sp.residue_step)?;
    let (fit_steps, fits) = fits(&steps);
    let warnings = warnings(sp, &before, &after_changes, &after, original);
    let rules_file = match file {
        Some(set) => {
            let mut f = FileSweep::of(&set, &kept, &targets);
            file_costs(&mut f, &steps)?;
            Some(f)
        }
        None => None,
    };
    Ok(Sweep {
        envelope: Envelope::new(Kind::AuditSweep),
        created_unix: crate::core::now_unix(),
        workload: sp.plan.workload.clone(),
        syscall_nr: targets.first().copied().unwrap_or(0),
        syscalls: targets.clone(),
        matching: sp.matching,
        baseline: "audit off with a syscost never,task rule loaded, so new tasks (the workers) \
                   get no audit context: the cost of a kernel where audit was never enabled"
            .into(),
        audit_before: before,
        audit_after: after,
        steps,
        enable_cost: costs.enable,
        residue: costs.residue,
        first_rules_cost: costs.first_rules,
        fit_steps,
        fits,
        notes,
        warnings,
        rules_file,
    })
}

/// Refuse a plan the sweep cannot measure, before audit is touched.
fn check(sp: &SweepPlan, targets: &[u32]) -> Result<()> {
    if sp.matching > 0 && targets.is_empty() {
        return Err(crate::refused!(
            Opt::Matching,
            format!(
                " {}: {} does not say which system calls it makes (a command's are its own), \
                 so no rule can name them; use ",
                sp.matching,
                sp.plan.workload.describe()
            ),
            Opt::Matching,
            " 0"
        ));
    }
    if sp.rules.is_empty() && !sp.residue_step {
        bail!("nothing to measure: no rule counts and no residue step");
    }
    if sp.plan.audit_rules.is_some() && sp.rules.is_empty() {
        return Err(crate::refused!(
            Opt::AuditRules,
            ": the residue is measured without rules; sweep them with audit sweep"
        ));
    }
    let file_rules = sp
        .plan
        .audit_rules
        .as_ref()
        .map_or(0, |s| s.rules().count());
    if file_rules > MAX_RULES as usize {
        return Err(crate::refused!(
            Opt::AuditRules,
            format!(
                ": {file_rules} rules would make {} steps a round, above syscost's limit of \
                 {MAX_RULES} rules per sweep: sweep a part of the file",
                file_rules + 4
            )
        ));
    }
    if sp.plan.audit_rules.is_some() && sp.matching > 0 {
        return Err(crate::refused!(
            Opt::Matching,
            " places syscost's own generated rules; with ",
            Opt::AuditRules,
            " the steps are the file's rules: give one or the other"
        ));
    }
    let max = *sp.rules.last().unwrap_or(&0);
    if sp.matching > max {
        return Err(crate::refused!(
            Opt::Matching,
            format!(
                " {} is more than the largest rule count ({max}): at most {max} rules can name \
                 the syscalls of {}",
                sp.matching,
                sp.plan.workload.describe()
            )
        ));
    }
    runner::validate(&sp.plan)
}

/// The steps in order: the baseline (audit off, never,task), the residue step if asked, then
/// one audit-on step per rule count, or, for a rules file whose kernel took `file` rules, its
/// first 0, 1, ..., `file` rules.
fn step_configs(sp: &SweepPlan, file: Option<usize>) -> Vec<StepConfig> {
    let off = |task_never| StepConfig {
        enabled: 0,
        task_never,
        rules: 0,
        matching: 0,
        from_file: false,
        without_first: false,
    };
    let mut configs = vec![off(true)];
    if sp.residue_step {
        configs.push(off(false));
    }
    let on = |n: u32| StepConfig {
        enabled: 1,
        task_never: false,
        rules: n,
        matching: sp.matching.min(n),
        from_file: file.is_some(),
        without_first: false,
    };
    match file {
        Some(n) => {
            configs.extend((0..=n as u32).map(on));
            // The first rule's own cost, on top of the others (which keep the filters
            // running): its own step would add the filters starting to it.
            if n >= 2 {
                configs.push(StepConfig {
                    without_first: true,
                    ..on(n as u32)
                });
            }
        }
        None => configs.extend(sp.rules.iter().map(|&n| on(n))),
    }
    configs
}

/// The sweep's three costs, each a paired comparison of two steps.
struct Costs {
    enable: Vec<Delta>,
    residue: Vec<Delta>,
    first_rules: Vec<Delta>,
}

/// Every metric of step `b` against step `a`, paired by round.
pub(crate) fn delta(steps: &[Step], a: usize, b: usize) -> Result<Vec<Delta>> {
    let vs = vec![
        compare::Variant::from_run(&steps[a].label, "sweep", &steps[a].result),
        compare::Variant::from_run(&steps[b].label, "sweep", &steps[b].result),
    ];
    let opts = compare::Options {
        configurations: true,
        paired: true,
        ..compare::Options::default()
    };
    Ok(compare::compare(vs, &opts)?.deltas)
}

fn costs(steps: &[Step], residue_step: bool) -> Result<Costs> {
    let delta_of = |a: usize, b: usize| delta(steps, a, b);
    let on0 = steps
        .iter()
        .position(|s| s.config.enabled == 1 && s.config.rules == 0);
    let first_rules = steps
        .iter()
        .position(|s| s.config.enabled == 1 && s.config.rules > 0);
    Ok(Costs {
        enable: match on0 {
            Some(i) => delta_of(0, i)?,
            None => Vec::new(),
        },
        residue: if residue_step {
            delta_of(0, 1)?
        } else {
            Vec::new()
        },
        first_rules: match (on0, first_rules) {
            (Some(a), Some(b)) => delta_of(a, b)?,
            _ => Vec::new(),
        },
    })
}

/// A rules-file sweep's costs from its steps: each rule's (the step with it against the step
/// without it; the first rule's on top of the others where that step was measured), the set's
/// against audit on without rules and against the baseline, and the first rule's step.
fn file_costs(f: &mut FileSweep, steps: &[Step]) -> Result<()> {
    let on = |k: usize, without_first: bool| {
        steps.iter().position(|s| {
            s.config.enabled == 1
                && s.config.rules as usize == k
                && s.config.without_first == without_first
        })
    };
    let n = f.rules.len();
    for (k, r) in f.rules.iter_mut().enumerate() {
        // The first rule on top of the others where that step was measured.
        let (without, with) = match (k, on(n, true)) {
            (0, Some(others)) => (Some(others), on(n, false)),
            _ => (on(k, false), on(k + 1, false)),
        };
        if let (Some(a), Some(b)) = (without, with) {
            r.deltas = delta(steps, a, b)?;
        }
    }
    if let (Some(a), Some(b), Some(c)) = (on(0, false), on(n, false), on(1, false)) {
        f.set_cost = delta(steps, a, b)?;
        f.set_total = delta(steps, 0, b)?;
        f.first_step = delta(steps, a, c)?;
    }
    Ok(())
}

/// Fits over every run of the audit-on steps that have rules. With no rule at all the kernel
/// keeps a dummy audit context and skips the filters, a different regime: it anchors the
/// line only when fewer than two rule counts are above zero. Returns the rule counts fitted
/// and one fit per metric.
fn fits(steps: &[Step]) -> (Vec<String>, Vec<Fit>) {
    let with_rules: Vec<&Step> = steps
        .iter()
        .filter(|s| s.config.enabled == 1 && s.config.rules > 0 && !s.config.without_first)
        .collect();
    let on: Vec<&Step> = if with_rules.len() >= 2 {
        with_rules
    } else {
        steps
            .iter()
            .filter(|s| s.config.enabled == 1 && !s.config.without_first)
            .collect()
    };
    let fit_steps = on.iter().map(|s| s.config.rules.to_string()).collect();
    let Some(first) = on.first() else {
        return (fit_steps, Vec::new());
    };
    let fits = first
        .result
        .metrics
        .iter()
        .filter(|m| m.summary.is_some())
        .filter_map(|m| {
            let (mut xs, mut ys) = (Vec::new(), Vec::new());
            for s in &on {
                if let Some(mm) = s.result.metrics.iter().find(|x| x.name == m.name) {
                    xs.extend(mm.values.iter().map(|_| s.config.rules as f64));
                    ys.extend(&mm.values);
                }
            }
            let l = fit(&xs, &ys)?;
            Some(Fit {
                metric: m.name.clone(),
                unit: format!("{} per rule", m.unit),
                n: xs.len(),
                slope: l.slope,
                slope_ci95: Some(l.slope_ci95),
                intercept: l.intercept,
                r2: l.r2,
            })
        })
        .collect();
    (fit_steps, fits)
}

/// What changed in audit around the sweep, and what the sweep leaves behind.
fn warnings(
    sp: &SweepPlan,
    before: &AuditStatus,
    after_changes: &AuditStatus,
    after: &AuditStatus,
    original: u32,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if after.lost > before.lost {
        warnings.push(format!(
            "audit's lost counter grew from {} to {} during the sweep: records were dropped \
             (syscost's rules cannot match; something else on the machine logged)",
            before.lost, after.lost
        ));
    }
    if after_changes.backlog > before.backlog {
        warnings.push(format!(
            "audit's backlog grew from {} to {} during the sweep",
            before.backlog, after_changes.backlog
        ));
    }
    if after.enabled != before.enabled || after.rules != before.rules {
        warnings.push(format!(
            "audit state differs from before the sweep: enabled {} -> {}, rules {:?} -> {:?}",
            before.enabled, after.enabled, before.rules, after.rules
        ));
    }
    if original == 0 && !sp.rules.is_empty() {
        warnings.push(
            "this sweep enabled audit: until the next reboot, new processes keep per-task audit \
             work even with audit disabled (the residue step measures it); a never,task rule \
             (auditctl -a never,task) avoids it"
                .into(),
        );
    }
    let user_exit = before.rules.get("exit").copied().unwrap_or(0);
    if user_exit > 0 {
        warnings.push(format!(
            "{user_exit} exit rule(s) of your own were loaded throughout and are walked at every \
             audit-on step, before syscost's rules"
        ));
    }
    warnings
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn rule_counts() {
        assert_eq!(
            parse_rule_counts("0,16,32,48").unwrap(),
            vec![0, 16, 32, 48]
        );
        assert_eq!(parse_rule_counts("0-48:16").unwrap(), vec![0, 16, 32, 48]);
        assert_eq!(parse_rule_counts("2-4").unwrap(), vec![2, 3, 4]);
        for bad in ["", "16,8", "8,8", "-1", "a", "0-8:0", "20000"] {
            assert!(parse_rule_counts(bad).is_err(), "{bad}");
        }
        assert!(
            parse_rule_counts("16,8")
                .unwrap_err()
                .to_string()
                .contains("increasing")
        );
    }
}
