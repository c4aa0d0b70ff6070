//! A comparison (compare, ab, and the deltas inside sweeps and probes): the deltas with their
//! CIs, p-values and verdicts, seed 004's Min/Mean/Median/Max/pstdev table, the ranking of many
//! variants (seed 001), the counters side by side, and the profile's differences.

use super::Render;
use super::charts::{compare_chart, profile_diff_chart, ranking_chart};
use super::format::{Format, Grid};
use super::html::{Section, compare_section};
use super::loaded::{Entry, ResultKind};
use crate::compare::Comparison;
use crate::core::Kind;
use crate::core::fmt_num;
use crate::results::MetricKind;
use crate::stats::Summary;

pub(super) fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{v:+.2}%")).unwrap_or_else(|| "-".into())
}

pub(super) fn pval(p: Option<f64>) -> String {
    p.map(crate::core::fmt_p).unwrap_or_else(|| "-".into())
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
    pub fn primary_unit(&self) -> String {
        self.variants
            .first()
            .and_then(|v| v.metric(&self.primary_metric))
            .map(|m| m.unit.clone())
            .unwrap_or_default()
    }

    /// The delta table: one row per metric and variant.
    pub fn delta_grid(&self) -> Grid {
        let ci = format!("{:.0}% CI of delta", 100.0 * self.bootstrap.confidence);
        let mut g = Grid::new(&[
            "metric", "variant", "baseline", "median", "delta", &ci, "p", "p adj", "effect",
            "verdict",
        ])
        .right(2..=8);
        for d in &self.deltas {
            g.row(vec![
                super::metric_label(&d.metric, &d.unit),
                self.variants[d.variant].label.clone(),
                fmt_num(d.base_median),
                fmt_num(d.median),
                pct(d.delta_pct),
                d.ci_pct
                    .map(|c| format!("[{:+.2}%, {:+.2}%]", c.lo, c.hi))
                    .unwrap_or_else(|| "-".into()),
                pval(d.p),
                pval(d.p_adjusted),
                d.effect_sigma
                    .map(|e| format!("{e:+.1}σ"))
                    .unwrap_or_else(|| "-".into()),
                d.verdict.clone(),
            ]);
        }
        g
    }

    /// The deltas as one block per metric, for a mail (`--format lkml`): the baseline's median
    /// as the block's first row, then each variant's median, delta, CI, adjusted p, effect and
    /// verdict. The unadjusted p is left to the other formats, so a block fits 80 columns.
    pub fn delta_blocks(&self) -> Vec<Grid> {
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
                g.row(vec![
                    self.variants[0].label.clone(),
                    fmt_num(rows[0].base_median),
                    "baseline".into(),
                ]);
                for d in rows {
                    g.row(vec![
                        self.variants[d.variant].label.clone(),
                        fmt_num(d.median),
                        pct(d.delta_pct),
                        d.ci_pct
                            .map(|c| format!("[{:+.2}, {:+.2}]", c.lo, c.hi))
                            .unwrap_or_else(|| "-".into()),
                        pval(d.p_adjusted),
                        d.effect_sigma
                            .map(|e| format!("{e:+.1}σ"))
                            .unwrap_or_else(|| "-".into()),
                        d.verdict.clone(),
                    ]);
                }
                g
            })
            .collect()
    }

    /// Seed 004's table for the primary metric: Min, Mean, Median, Max, pstdev per variant.
    pub fn seed_table(&self) -> Grid {
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
            g.row(vec![
                self.variants[d.variant].label.clone(),
                d.name.clone(),
                d.space.clone(),
                format!("{:.2}%", d.base_total_pct),
                format!("{:.2}%", d.total_pct),
                format!("{:+.2} pp", d.delta_total_pp),
                format!("{:.2}% -> {:.2}%", d.base_self_pct, d.self_pct),
            ]);
        }
        Some(g)
    }

    /// Seed 001's ranking: variants ordered by the primary metric, with % against the baseline.
    pub fn ranking_grid(&self) -> Option<Grid> {
        if self.ranking.is_empty() {
            return None;
        }
        let mut g = Grid::new(&["rank", "variant", &self.primary_metric, "vs baseline"])
            .right([0, 2, 3])
            .title(format!(" Ranked by {} (lowest first)", self.primary_metric));
        for r in &self.ranking {
            g.row(vec![
                r.rank.to_string(),
                r.label.clone(),
                fmt_num(r.median),
                if r.variant == 0 {
                    "baseline".into()
                } else {
                    format!("{:+.2}%", r.delta_pct)
                },
            ]);
        }
        Some(g)
    }

    /// Seed 000's perf-stat blocks: every metric per op, each variant in turn.
    pub fn counter_blocks(&self) -> Vec<Grid> {
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
                        Some(s) => g.row(vec![
                            fmt_num(s.median),
                            if m.kind == MetricKind::Derived {
                                super::metric_label(&m.name, &m.unit)
                            } else {
                                m.name.clone()
                            },
                            format!("( +- {:.2}% )", s.pstdev_pct),
                        ]),
                        None => g.row(vec![
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
    pub fn notes(&self) -> Vec<String> {
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
pub fn summary_cells(label: &str, s: &Summary) -> Vec<String> {
    vec![
        label.to_string(),
        s.n.to_string(),
        fmt_num(s.min),
        fmt_num(s.mean),
        fmt_num(s.median),
        fmt_num(s.max),
        format!("{} (±{:.2}%)", fmt_num(s.pstdev), s.pstdev_pct),
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
                base.describe_workload(),
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
                if self.analysis.starts_with("paired") {
                    String::new()
                } else {
                    format!(
                        " CIs by bootstrap ({} resamples, {} seed {}).",
                        self.bootstrap.resamples, self.bootstrap.generator, self.bootstrap.seed
                    )
                }
            ),
        ]
    }

    /// Every table, in order, for the text formats.
    fn grids(&self) -> Vec<Grid> {
        let mut d = self.delta_grid();
        d.notes = self.notes();
        let mut out = vec![d];
        out.extend(self.other_grids());
        out
    }

    /// For a mail, the deltas come one block per metric (see [`Comparison::delta_blocks`]).
    fn text(&self, format: Format) -> String {
        if format != Format::Lkml {
            return super::format::render(format, &self.preamble(), &self.grids());
        }
        let mut grids = self.delta_blocks();
        if let Some(last) = grids.last_mut() {
            last.notes = self.notes();
        }
        grids.extend(self.other_grids());
        super::format::render(format, &self.preamble(), &grids)
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
pub const ENTRY: Entry = Entry::of::<Comparison>(Kind::Compare, &["compare", "ranking", "profile"]);

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
pub fn comparison_damage(c: &Comparison) -> Option<String> {
    let n = c.variants.len();
    if n == 0 {
        return Some("it has no variants".into());
    }
    if c.deltas.iter().any(|d| d.variant >= n) || c.ranking.iter().any(|r| r.variant >= n) {
        return Some(format!("a delta or rank names a variant beyond its {n}"));
    }
    None
}
