//! A comparison (compare, ab, and the deltas inside sweeps and probes): the deltas with their
//! CIs, p-values and verdicts, the audit series' Min/Mean/Median/Max/pstdev table, the ranking of many
//! variants (the alignment RFC), the counters side by side, and the profile's differences.

use super::Render;
use super::charts::{compare_chart, profile_diff_chart, ranking_chart};
use super::format::{Cell, Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::{Section, compare_section};
use crate::compare::{Comparison, Decision, Delta};
use crate::core::Kind;
use crate::counters::emulated::is_emulated;
use crate::results::MetricKind;
use crate::stats::Summary;

/// A change in percent, or "-".
pub(super) fn change(x: Option<f64>) -> Cell {
    x.map_or(Cell::Missing, Cell::Change)
}

/// A p-value, or "-".
pub(super) fn pval(p: Option<f64>) -> Cell {
    p.map_or(Cell::Missing, Cell::P)
}

/// An interval of changes in percent, or "-".
pub(super) fn change_interval(i: Option<crate::stats::Interval>) -> Cell {
    i.map_or(Cell::Missing, Cell::ChangeInterval)
}

/// An effect in standard deviations of the noise: "+24.7σ".
fn effect(e: Option<f64>) -> Cell {
    e.map_or(Cell::Missing, |e| {
        Cell::shown_in(e, format!("{e:+.1}σ"), "σ")
    })
}

impl Comparison {
    /// What was analysed; files written before the analysis was recorded were unpaired.
    fn analysis_or_default(&self) -> &str {
        if self.analysis.is_empty() {
            "unpaired"
        } else {
            &self.analysis
        }
    }

    /// The unit of the primary metric, e.g. `ns/call`.
    pub(crate) fn primary_unit(&self) -> String {
        self.variants
            .first()
            .and_then(|v| v.metric(&self.primary_metric))
            .map(|m| m.unit.clone())
            .unwrap_or_default()
    }

    /// The delta table: one row per metric and variant.
    pub(crate) fn delta_grid(&self) -> Grid {
        self.delta_grid_of(|_| true)
    }

    /// The deltas a reviewer pastes: where an exact count decided (a change, or equivalence),
    /// the rows that could not decide (too few rounds for their test) or had nothing to test
    /// are left out, and a note names them with why; every row stays in `-o`'s JSON.
    pub(crate) fn decisive_delta_grid(&self) -> Grid {
        let decided = |d: &Delta| d.decision.is_change() || d.decision == Decision::Equivalent;
        let exact_decides = (self.deltas.iter()).any(|d| is_emulated(&d.metric) && decided(d));
        let idle = |d: &Delta| matches!(d.decision, Decision::TooFewUnits | Decision::NoTest);
        // An exact count the same in every boot of both sides decides nothing worth a row.
        let unchanged = |d: &Delta| {
            is_emulated(&d.metric)
                && d.decision == Decision::Equivalent
                && d.median == d.base_median
                && d.ci_pct.is_some_and(|i| i.lo == 0.0 && i.hi == 0.0)
        };
        let g = self.delta_grid_of(|d| !(exact_decides && (idle(d) || unchanged(d))));
        if !exact_decides {
            return g;
        }
        // Rows of exact counts alone have no p and no effect in σ: their columns go.
        let mut g = g.without_empty(&[6, 7, 8]);
        let same = self.deltas.iter().filter(|d| unchanged(d)).count();
        if same > 0 {
            g.notes.push(format!(
                "not shown: {same} of {} rows, exact counts the same in every boot of both sides \
                 (equivalent; the JSON keeps them)",
                self.deltas.len()
            ));
        }
        for kind in [Decision::TooFewUnits, Decision::NoTest] {
            let left: Vec<&Delta> = self.deltas.iter().filter(|d| d.decision == kind).collect();
            let Some(first) = left.first() else { continue };
            let mut names: Vec<&str> = Vec::new();
            for d in &left {
                if !names.contains(&d.metric.as_str()) {
                    names.push(&d.metric);
                }
            }
            g.notes.push(format!(
                "not shown, the exact counts deciding: {}: {}",
                names.join(", "),
                first.verdict
            ));
        }
        g
    }

    /// The deltas `keep` keeps, a row each.
    fn delta_grid_of(&self, keep: impl Fn(&Delta) -> bool) -> Grid {
        let ci = format!("{:.0}% CI of delta", 100.0 * self.bootstrap.confidence);
        let mut g = Grid::new(&[
            "metric", "variant", "baseline", "median", "delta", &ci, "p", "p adj", "effect",
            "verdict",
        ])
        .right(2..=8)
        .keys(2);
        for d in self.deltas.iter().filter(|d| keep(d)) {
            g.row([
                super::metric_label(&d.metric, &d.unit).into(),
                self.variants[d.variant].label.clone().into(),
                Cell::Num(d.base_median),
                Cell::Num(d.median),
                change(d.delta_pct),
                change_interval(d.ci_pct),
                pval(d.p),
                pval(d.p_adjusted),
                effect(d.effect_sigma),
                d.verdict.clone().into(),
            ]);
        }
        g
    }

    /// The deltas as one block per metric, for a mail (`--format lkml`): the baseline's median
    /// as the block's first row, then each variant's median, delta, CI, adjusted p, effect and
    /// verdict. The unadjusted p is left to the other formats, so a block fits 80 columns.
    pub(crate) fn delta_blocks(&self) -> Vec<Grid> {
        let ci = format!("{:.0}% CI of delta", 100.0 * self.bootstrap.confidence);
        let mut metrics: Vec<&str> = Vec::new();
        for d in &self.deltas {
            if !metrics.contains(&d.metric.as_str()) {
                metrics.push(&d.metric);
            }
        }
        metrics
            .iter()
            .map(|name| {
                let rows: Vec<_> = self.deltas.iter().filter(|d| d.metric == *name).collect();
                let mut g = Grid::new(&["", "median", "delta", &ci, "p adj", "effect", "verdict"])
                    .right(1..=5)
                    .title(format!(" {name} ({})", rows[0].unit));
                g.row([
                    self.variants[0].label.clone().into(),
                    Cell::Num(rows[0].base_median),
                    "baseline".into(),
                ]);
                for d in rows {
                    g.row([
                        self.variants[d.variant].label.clone().into(),
                        Cell::Num(d.median),
                        change(d.delta_pct),
                        // A mail's block leaves out the % signs to fit 80 columns; blocks are
                        // only laid out for mail, never as CSV.
                        d.ci_pct.map_or(Cell::Missing, |c| {
                            format!("[{:+.2}, {:+.2}]", c.lo, c.hi).into()
                        }),
                        pval(d.p_adjusted),
                        effect(d.effect_sigma),
                        d.verdict.clone().into(),
                    ]);
                }
                g
            })
            .collect()
    }

    /// The audit series' table for the primary metric: Min, Mean, Median, Max, pstdev per variant.
    pub(crate) fn seed_table(&self) -> Grid {
        let unit = self.primary_unit();
        let mut g = Grid::new(&["", "n", "Min", "Mean", "Median", "Max", "pstdev"])
            .right(1..=6)
            .title(format!(" {} ({unit}) per variant", self.primary_metric));
        for v in &self.variants {
            if let Some(s) = v
                .metric(&self.primary_metric)
                .and_then(|m| m.summary.as_ref())
            {
                g.row(summary_cells(&v.label, s));
            }
        }
        g
    }

    /// What changed in the profile: functions whose total share grew or shrank most.
    pub fn profile_grid(&self) -> Option<Grid> {
        if self.profile_diff.is_empty() {
            return None;
        }
        let mut g = Grid::new(&[
            "variant",
            "function",
            "",
            "baseline total",
            "total",
            "change",
            "self",
        ])
        .right(3..=6)
        .title(" What changed in the profile (share of samples, percentage points)");
        for d in &self.profile_diff {
            g.row([
                self.variants[d.variant].label.clone().into(),
                d.name.clone().into(),
                d.space.clone().into(),
                Cell::Pct(d.base_total_pct),
                Cell::Pct(d.total_pct),
                Cell::shown_in(
                    d.delta_total_pp,
                    format!("{:+.2} pp", d.delta_total_pp),
                    "pp",
                ),
                Cell::shown_in(
                    d.self_pct,
                    format!("{:.2}% -> {:.2}%", d.base_self_pct, d.self_pct),
                    "%",
                ),
            ]);
        }
        Some(g)
    }

    /// The alignment RFC's ranking: variants ordered by the primary metric, with % against the baseline.
    pub(crate) fn ranking_grid(&self) -> Option<Grid> {
        if self.ranking.is_empty() {
            return None;
        }
        let mut g = Grid::new(&["rank", "variant", &self.primary_metric, "vs baseline"])
            .right([0, 2, 3])
            .title(format!(" Ranked by {} (lowest first)", self.primary_metric));
        for r in &self.ranking {
            g.row([
                Cell::Int(r.rank as i64),
                r.label.clone().into(),
                Cell::Num(r.median),
                if r.variant == 0 {
                    "baseline".into()
                } else {
                    Cell::Change(r.delta_pct)
                },
            ]);
        }
        Some(g)
    }

    /// The syscall-latency post's perf-stat blocks: every metric per op, each variant in turn.
    pub(crate) fn counter_blocks(&self) -> Vec<Grid> {
        self.variants
            .iter()
            .map(|v| {
                let mut g = Grid::new(&["median", "metric", "pstdev"])
                    .right([0])
                    .title(format!(
                        " # {}: per {} (median over {}s)",
                        v.label, v.op_name, v.unit
                    ));
                for m in &v.metrics {
                    match &m.summary {
                        Some(s) => g.row([
                            Cell::Num(s.median),
                            if m.kind == MetricKind::Derived {
                                super::metric_label(&m.name, &m.unit).into()
                            } else {
                                m.name.clone().into()
                            },
                            Cell::shown_in(
                                s.pstdev_pct,
                                format!("( +- {:.2}% )", s.pstdev_pct),
                                "%",
                            ),
                        ]),
                        None => g.row([
                            m.status.clone().unwrap_or_default(),
                            m.name.clone(),
                            String::new(),
                        ]),
                    }
                }
                g
            })
            .collect()
    }

    /// Notes: perturbed and dropped units, warnings.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for v in &self.variants {
            for p in &v.perturbed {
                out.push(format!(" {}: perturbed {}", v.label, p.describe(&v.unit)));
            }
            if !v.dropped.is_empty() {
                out.push(format!(
                    " {}: {} {}(s) left out: {:?}",
                    v.label,
                    v.dropped.len(),
                    v.unit,
                    v.dropped
                ));
            }
        }
        for w in &self.warnings {
            out.push(format!(" warning: {w}"));
        }
        out
    }
}

/// `[label, n, min, mean, median, max, pstdev (+- x%)]`.
pub(crate) fn summary_cells(label: &str, s: &Summary) -> Vec<Cell> {
    let mut cells = vec![label.into(), Cell::Int(s.n as i64)];
    cells.extend(spread_cells(s));
    cells
}

/// The audit series' spread: `[min, mean, median, max, pstdev (+- x%)]`.
pub(crate) fn spread_cells(s: &Summary) -> [Cell; 5] {
    [
        Cell::Num(s.min),
        Cell::Num(s.mean),
        Cell::Num(s.median),
        Cell::Num(s.max),
        Cell::Spread {
            value: s.pstdev,
            pct: s.pstdev_pct,
        },
    ]
}

impl Render for Comparison {
    fn preamble(&self) -> Vec<String> {
        let base = &self.variants[0];
        let ns: Vec<String> = self
            .variants
            .iter()
            .map(|v| v.n(&self.primary_metric).to_string())
            .collect();
        vec![
            format!(
                " Comparing {} results of {}, per {}; baseline {}",
                self.variants.len(),
                base.workload.describe(),
                base.op_name,
                base.label
            ),
            format!(
                " Unit of replication: {} (n = {}). Test: {}, alpha {}; {}.",
                base.unit,
                ns.join(", "),
                self.test,
                self.alpha,
                self.correction
            ),
            format!(" Analysis: {}.", self.analysis_or_default()),
            format!(
                " A change is called when p (adjusted) < alpha and the {:.0}% CI of delta \
                 excludes 0 (said to be inside the noise threshold when the whole CI is within \
                 ±{}%); equivalent when the {:.0}% CI lies within ±{}% (TOST); otherwise \
                 inconclusive.{} Effect: delta in baseline pstdevs (σ).",
                100.0 * self.bootstrap.confidence,
                self.noise_threshold_pct,
                100.0 * (1.0 - 2.0 * self.alpha),
                self.noise_threshold_pct,
                match self.pairing {
                    Some(crate::compare::Pairing::Unpaired) => format!(
                        " CIs by bootstrap ({} resamples, {} seed {}).",
                        self.bootstrap.resamples, self.bootstrap.generator, self.bootstrap.seed
                    ),
                    // Paired: the paired test's own intervals (or unknown, in an old file).
                    _ => String::new(),
                }
            ),
        ]
    }

    /// Every table, in order, for the text formats.
    fn grids(&self) -> Vec<Grid> {
        let mut d = self.delta_grid();
        d.notes = self.notes();
        // A mail shows the deltas one block a metric, the notes under the last.
        d.narrow = Some(self.delta_blocks());
        let mut out = vec![d];
        out.extend(self.other_grids());
        out
    }
}

impl Comparison {
    /// The tables after the deltas.
    fn other_grids(&self) -> Vec<Grid> {
        let mut out = vec![self.seed_table()];
        out.extend(self.profile_grid());
        out.extend(self.ranking_grid());
        out.extend(self.counter_blocks());
        out
    }
}

/// A comparison: its charts, deltas and the table of each variant.
pub(crate) const ENTRY: Entry =
    Entry::of::<Comparison>(Kind::Compare, &["compare", "ranking", "profile"]);

impl ResultKind for Comparison {
    fn kind(&self) -> Kind {
        Kind::Compare
    }

    fn damage(&self) -> Option<String> {
        comparison_damage(self)
    }

    fn title(&self) -> String {
        format!("Comparison of {} results", self.variants.len())
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        compare_section(s, self);
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        Some(match name {
            "compare" => Ok(compare_chart(self)),
            "ranking" => ranking_chart(self)
                .ok_or_else(|| anyhow::anyhow!("a ranking needs three or more variants")),
            "profile" => profile_diff_chart(self)
                .ok_or_else(|| anyhow::anyhow!("this comparison has no profiles")),
            _ => return None,
        })
    }
}

/// What a comparison needs to be drawn: a baseline, and deltas and ranks that name variants.
pub(crate) fn comparison_damage(c: &Comparison) -> Option<String> {
    let n = c.variants.len();
    if n == 0 {
        return Some("it has no variants".into());
    }
    if c.deltas.iter().any(|d| d.variant >= n) || c.ranking.iter().any(|r| r.variant >= n) {
        return Some(format!("a delta or rank names a variant beyond its {n}"));
    }
    None
}
