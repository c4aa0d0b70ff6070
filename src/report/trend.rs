//! `syscost history trend`: the metric per group in order, and each step's change, verdict and
//! regression flag.

use super::Render;
use super::charts::trend_chart;
use super::compare::{change, change_interval, pval};
use super::format::Format;
use super::format::{Cell, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::compare::trend::Trend;
use crate::core::Kind;
use crate::stats::Interval;

impl Trend {
    /// The steps flagged as regressions.
    pub(crate) fn regressions(&self) -> usize {
        self.steps.iter().filter(|s| s.regression).count()
    }
}

impl Render for Trend {
    fn preamble(&self) -> Vec<String> {
        let confidence = 100.0 * (1.0 - self.alpha);
        vec![
            format!(
                " Trend of {} ({}) of {} by {}, {} groups in order{}",
                self.metric,
                self.unit,
                self.workload.describe(),
                self.by,
                self.points.len(),
                if self.by == "kernel" {
                    " of version"
                } else {
                    ""
                }
            ),
            format!(
                " Unit of replication: {}. Each group: its median and the distribution-free \
                 {confidence}% interval of the median (order statistics; none under 6 units). \
                 Each step: the group against the one before, {}, alpha {}, Holm over the {} \
                 steps; a regression is a step decided worse whose whole interval lies beyond the \
                 {}% noise threshold.",
                self.replication,
                self.test,
                self.alpha,
                self.steps.len(),
                self.noise_threshold_pct
            ),
        ]
    }

    fn grids(&self) -> Vec<Grid> {
        let mut g = self.table();
        g.notes
            .extend(super::warning_notes(&self.warnings).unwrap_or_default());
        vec![g]
    }
}

impl Trend {
    /// The steps' table and its notes; the warnings go apart (a page shows them above it).
    pub(super) fn table(&self) -> Grid {
        let confidence = 100.0 * (1.0 - self.alpha);
        let mut g = Grid::new(&[
            &self.by,
            "n",
            "median",
            &format!("{confidence}% CI"),
            "step",
            &format!("{confidence}% CI of step"),
            "p adj",
            "verdict",
        ])
        .right([1, 2, 3, 4, 5, 6]);
        // Exact counts have no p-value: a column of nothing but "-" is left out (its header
        // would wrap over a column one character wide).
        let no_p = self.steps.iter().all(|s| s.p_adjusted.is_none());
        for (i, p) in self.points.iter().enumerate() {
            let step = self.steps.iter().find(|s| s.to == i);
            // The first point has no step: its step cells are empty, not "-".
            let empty = || Cell::from("");
            let no_step_p = || if no_p { Cell::Missing } else { empty() };
            g.row([
                p.label.clone().into(),
                Cell::Int(p.n as i64),
                Cell::Num(p.median),
                p.ci.map_or(Cell::Missing, |(lo, hi)| {
                    Cell::Interval(Interval::new(lo, hi))
                }),
                step.map_or_else(empty, |s| change(s.delta_pct)),
                match step {
                    Some(s) if s.ci_pct.is_some() => change_interval(s.ci_pct),
                    _ => empty(),
                },
                step.map_or_else(no_step_p, |s| pval(s.p_adjusted)),
                step.map(|s| {
                    if s.regression {
                        format!("REGRESSION: {}", s.verdict)
                    } else {
                        s.verdict.clone()
                    }
                })
                .unwrap_or_else(|| "(first)".into())
                .into(),
            ]);
        }
        let mut g = g.without_empty(&[3, 6]);
        let n = self.regressions();
        g.notes
            .push(match crate::counters::emulated::is_emulated(&self.metric) {
                // An exact count has no noise: any step the range rule calls higher is one.
                true => format!(
                    " {n} regression(s): steps whose exact count the range rule called higher"
                ),
                false => format!(
                    " {n} regression(s) beyond the {}% noise threshold",
                    self.noise_threshold_pct
                ),
            });
        g
    }
}

/// A trend: its chart, lines and the table of steps.
pub(crate) const ENTRY: Entry = Entry::of::<Trend>(Kind::Trend, &["trend"]);

impl ResultKind for Trend {
    fn kind(&self) -> Kind {
        Kind::Trend
    }

    fn damage(&self) -> Option<String> {
        if self.points.is_empty() {
            return Some("it has no groups".into());
        }
        let beyond = self.steps.iter().any(|s| s.to >= self.points.len());
        beyond.then(|| "a step names a group beyond its list".into())
    }

    fn title(&self) -> String {
        format!("Trend of {} by {}", self.metric, self.by)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.warn(&self.warnings);
        s.figure(&trend_chart(self));
        for line in self.preamble() {
            s.meta(&line);
        }
        s.table(&self.table());
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "trend").then(|| Ok(trend_chart(self)))
    }
}
