//! An audit sweep: one row per step against the baseline, the costs of enabling audit, of the
//! first rules and of the residue, the audit state before and after, and the cost per rule.

use super::Render;
use super::charts::sweep_chart;
use super::format::Format;
use super::format::{Cell, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::compare::Delta;
use crate::core::Kind;
use crate::core::fmt_num;
use crate::experiments::audit_sweep::Sweep;

impl Render for Sweep {
    fn preamble(&self) -> Vec<String> {
        let runs = self.steps.first().map(|s| s.result.runs.len()).unwrap_or(0);
        if let Some(f) = &self.rules_file {
            return vec![
                format!(
                    " Audit sweep of {} over the rules of {}: {} steps x {runs} runs, \
                     interleaved in rounds (alternating order)",
                    self.workload.describe(),
                    f.source,
                    self.steps.len()
                ),
                format!(" Baseline: {}", self.baseline),
                format!(
                    " Rules: the file's, in its order ({} taken by the kernel, {} lines left \
                     out); a rule's cost is the step with it against the step before it, \
                     paired by round",
                    f.rules.len(),
                    f.refused.len()
                ),
            ];
        }
        vec![
            format!(
                " Audit sweep of {}: {} steps x {runs} runs, interleaved in rounds (alternating \
                 order)",
                self.workload.describe(),
                self.steps.len()
            ),
            format!(" Baseline: {}", self.baseline),
            self.rules_line(),
        ]
    }

    /// Every table, for the text formats.
    fn grids(&self) -> Vec<Grid> {
        let mut steps = self.step_grid();
        self.summary_notes(&mut steps);
        let mut out = vec![steps];
        if !self.fits.is_empty() {
            out.push(self.fit_grid());
        }
        if let Some(f) = &self.rules_file {
            out.push(super::rule_costs::ranking_grid(f, &self.time_unit()));
        }
        out
    }
}

impl Sweep {
    /// What the generated rules name: the first `matching` the benchmarked syscall (or the
    /// workload's), the others rarely used syscalls.
    fn rules_line(&self) -> String {
        let named = match self.syscalls.len() {
            // Results written before sweeps of any workload named one syscall.
            0 | 1 => "the benchmarked syscall".to_string(),
            _ => format!(
                "the workload's syscalls in turn (nr {})",
                self.syscalls
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        match self.matching {
            0 => crate::said!(
                format!(" Rules: none names {named} ("),
                crate::core::input::Opt::Matching,
                " 0); each names a rarely used syscall. None can generate a record."
            )
            .spell(crate::core::input::spelled),
            m => format!(
                " Rules: the first {m} name {named} and fail on their pid field; the others \
                 name rarely used syscalls. None can generate a record."
            ),
        }
    }

    fn time_unit(&self) -> String {
        self.steps
            .first()
            .and_then(|s| s.result.metrics.first())
            .map(|m| m.unit.clone())
            .unwrap_or_default()
    }

    /// The costs, the audit state before and after, notes and warnings.
    fn summary_notes(&self, g: &mut Grid) {
        let b = &self.audit_before;
        let a = &self.audit_after;
        g.notes.push(String::new());
        if let Some(l) = Self::delta_line("Enabling audit (0 rules vs baseline)", &self.enable_cost)
        {
            g.notes.push(l);
        }
        if let Some(l) = Self::delta_line(
            "First rules (smallest rule count vs 0 rules: the filters start running)",
            &self.first_rules_cost,
        ) {
            g.notes.push(l);
        }
        if let Some(l) = Self::delta_line(
            "Residue (audit off, no task rule vs baseline)",
            &self.residue,
        ) {
            g.notes.push(l);
        }
        g.notes.push(format!(
            " Audit state: before enabled={} rules={} lost={} backlog={}; after enabled={} \
             rules={} lost={} backlog={}",
            b.enabled,
            b.rule_count(),
            b.lost,
            b.backlog,
            a.enabled,
            a.rule_count(),
            a.lost,
            a.backlog
        ));
        for n in &self.notes {
            g.notes.push(format!(" note: {n}"));
        }
        for w in &self.warnings {
            g.notes.push(format!(" warning: {w}"));
        }
    }

    pub(crate) fn step_grid(&self) -> Grid {
        let unit = self.time_unit();
        let mut g = Grid::new(&[
            "step",
            "n",
            &format!("median ({unit})"),
            "mean",
            "95% CI",
            "pstdev",
            "vs baseline",
        ])
        .right(1..=6);
        let base = self.steps[0]
            .result
            .metrics
            .first()
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.median);
        for s in &self.steps {
            let Some(sm) = s.result.metrics.first().and_then(|m| m.summary.as_ref()) else {
                continue;
            };
            g.row([
                s.label.clone().into(),
                Cell::Int(sm.n as i64),
                Cell::Num(sm.median),
                Cell::Num(sm.mean),
                Cell::interval(sm.ci95),
                Cell::shown_in(sm.pstdev_pct, format!("±{:.2}%", sm.pstdev_pct), "%"),
                base.map_or_else(
                    || Cell::from(""),
                    |b| Cell::Change(100.0 * (sm.median - b) / b),
                ),
            ]);
        }
        g
    }

    fn delta_line(title: &str, deltas: &[Delta]) -> Option<String> {
        let d = deltas.iter().find(|d| d.metric == "time")?;
        Some(format!(
            " {title}: {:+} {} ({}, CI {}), p={:.4}: {}",
            fmt_num(d.median - d.base_median),
            d.unit,
            d.delta_pct
                .map(|p| format!("{p:+.2}%"))
                .unwrap_or_else(|| "-".into()),
            d.ci_pct
                .map(|c| format!("[{:+.2}%, {:+.2}%]", c.lo, c.hi))
                .unwrap_or_else(|| "-".into()),
            d.p.unwrap_or(f64::NAN),
            d.verdict
        ))
    }

    pub(crate) fn fit_grid(&self) -> Grid {
        let mut g = Grid::new(&["metric", "per rule", "95% CI", "R²", "n", "at 0 rules"])
            .right(1..=5)
            .title(format!(
                " Cost per rule (least squares over every run of the steps with {} rules)",
                self.fit_steps.join(", ")
            ));
        for f in &self.fits {
            g.row([
                super::metric_label(&f.metric, &f.unit).into(),
                Cell::Num(f.slope),
                Cell::interval(f.slope_ci95),
                Cell::shown(f.r2, format!("{:.3}", f.r2)),
                Cell::Int(f.n as i64),
                Cell::Num(f.intercept),
            ]);
        }
        g
    }
}

/// An audit sweep: its chart, lines and tables.
pub(crate) const ENTRY: Entry = Entry::of::<Sweep>(Kind::AuditSweep, &["sweep"]);

impl ResultKind for Sweep {
    fn kind(&self) -> Kind {
        Kind::AuditSweep
    }

    fn damage(&self) -> Option<String> {
        self.steps.is_empty().then(|| "it has no steps".into())
    }

    fn title(&self) -> String {
        format!("Audit sweep: {}", self.workload.describe())
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.warn(&self.warnings);
        s.figure(&sweep_chart(self));
        for line in self.preamble() {
            s.meta(&line);
        }
        for mut g in self.grids() {
            g.notes.retain(|n| !n.contains("warning:"));
            s.table(&g);
        }
    }

    fn environment(&self) -> Option<&crate::environment::Environment> {
        self.steps.first().map(|x| &x.result.environment)
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "sweep").then(|| Ok(sweep_chart(self)))
    }
}
