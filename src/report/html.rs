//! `syscost report`: one self-contained HTML page (inline CSS and SVG, no JavaScript, no
//! network) with the charts engineers draw by hand, for every kind of syscost result.

use super::format::Format;
use super::format::Grid;
use super::svg::{self, Category, Mark, Series, esc};
use super::{Render, run_grid};
use crate::compare::Comparison;
use crate::compare::correlate::CorrelationResult;
use crate::compare::merge::Merged;
use crate::core::Kind;
use crate::core::fmt_num;
use crate::experiments::audit_sweep::Sweep;
use crate::experiments::probe::ProbeResult;
use crate::experiments::scale::Scale;
use crate::layout::Analysis;
use crate::results::RunResult;
use crate::results::load::{self, Accept, LoadError};
use crate::stats::{quantile, t_critical};
use anyhow::{Result, bail};
use std::path::Path;

/// A loaded result of any kind.
pub enum Loaded {
    Run(Box<RunResult>),
    Compare(Box<Comparison>),
    Merged(Box<Merged>),
    Sweep(Box<Sweep>),
    Scale(Box<Scale>),
    Correlate(Box<CorrelationResult>),
    Cachesets(Box<Analysis>),
    Probe(Box<ProbeResult>),
}

/// The chart kinds `--svg` can draw.
pub const KINDS: &[&str] = &[
    "run",
    "profile",
    "compare",
    "ranking",
    "merge",
    "sweep",
    "scale",
    "correlate",
    "cachesets",
];

impl Loaded {
    pub fn kind(&self) -> &'static str {
        match self {
            Loaded::Run(_) => Kind::Run,
            Loaded::Compare(_) => Kind::Compare,
            Loaded::Merged(_) => Kind::Merged,
            Loaded::Sweep(_) => Kind::AuditSweep,
            Loaded::Scale(_) => Kind::Scale,
            Loaded::Correlate(_) => Kind::Correlate,
            Loaded::Cachesets(_) => Kind::Cachesets,
            Loaded::Probe(_) => Kind::Probe,
        }
        .name()
    }
}

/// Read a result of any kind, with one clear error naming the file.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let (kind, v) = load::read_value(path, Accept::ANY)?;
    let name = path.display().to_string();
    Ok(match kind {
        Kind::Run => Loaded::Run(Box::new(load::decode(&name, kind, v)?)),
        Kind::Compare => Loaded::Compare(Box::new(load::decode(&name, kind, v)?)),
        Kind::Merged => Loaded::Merged(Box::new(load::decode(&name, kind, v)?)),
        Kind::AuditSweep => Loaded::Sweep(Box::new(load::decode(&name, kind, v)?)),
        Kind::Scale => Loaded::Scale(Box::new(load::decode(&name, kind, v)?)),
        Kind::Correlate => Loaded::Correlate(Box::new(load::decode(&name, kind, v)?)),
        Kind::Cachesets => Loaded::Cachesets(Box::new(load::decode(&name, kind, v)?)),
        Kind::Probe => Loaded::Probe(Box::new(load::decode(&name, kind, v)?)),
    })
}

fn five(v: &[f64]) -> Option<(f64, f64, f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    Some((
        quantile(v, 0.0),
        quantile(v, 0.25),
        quantile(v, 0.5),
        quantile(v, 0.75),
        quantile(v, 1.0),
    ))
}

/// Distribution of time per op: each run's samples as a strip, and a box over runs.
pub fn run_chart(r: &RunResult) -> String {
    let time = r.metrics.iter().find(|m| m.name == "time");
    let unit = time.map(|m| m.unit.clone()).unwrap_or_default();
    let oh = if r.options.subtract_overhead {
        r.overhead
            .first()
            .and_then(|m| m.summary.as_ref())
            .map(|s| s.median)
            .unwrap_or(0.0)
    } else {
        0.0
    };
    let mut cats: Vec<Category> = r
        .runs
        .iter()
        .map(|run| Category {
            label: format!("run {}", run.index),
            strip: run
                .samples
                .iter()
                .map(|s| s.wall_ns as f64 / s.ops.max(1) as f64 - oh)
                .collect(),
            class: 0,
            ..Category::default()
        })
        .collect();
    if let Some(m) = time {
        cats.push(Category {
            label: format!("all ({}s)", m.replication),
            boxplot: five(&m.values),
            strip: m.values.clone(),
            class: 1,
            ..Category::default()
        });
    }
    svg::categories(
        &format!("{}: time per {}", r.workload.describe(), r.op_name),
        "run (dots: its samples) and all units of replication (box: min, quartiles, max)",
        &format!("time ({unit})"),
        &cats,
        vec![
            (0, "samples of one run".into(), Mark::Dot),
            (1, "per-run values".into(), Mark::Box),
        ],
        None,
    )
}

/// Top functions of a profile by self share (total share alongside).
pub fn profile_chart(p: &crate::profile::Profile, title: &str) -> String {
    let mut rows = Vec::new();
    for f in p.functions.iter().take(12) {
        rows.push((format!("{} (self)", f.name), f.self_pct, 0));
        rows.push((format!("{} (total)", f.name), f.total_pct, 5));
    }
    svg::hbars(
        &format!("{title}: where the time goes ({} samples)", p.samples),
        "share of samples (%)",
        &rows,
        vec![
            (0, "self".into(), Mark::Box),
            (5, "total (on the stack)".into(), Mark::Box),
        ],
    )
}

/// Each variant's primary metric: median (dot) with the 95% CI of the mean.
pub fn compare_chart(c: &Comparison) -> String {
    let unit = c
        .variants
        .first()
        .and_then(|v| v.metric(&c.primary_metric))
        .map(|m| m.unit.clone())
        .unwrap_or_default();
    let cats: Vec<Category> = c
        .variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let m = v.metric(&c.primary_metric)?;
            let s = m.summary.as_ref()?;
            let (lo, hi) = s.ci95.unwrap_or((s.median, s.median));
            let d = c
                .deltas
                .iter()
                .find(|d| d.variant == i && d.metric == c.primary_metric);
            Some(Category {
                label: v.label.clone(),
                strip: m.values.clone(),
                dot: Some((s.median, lo.min(s.median), hi.max(s.median))),
                note: d.map(|d| {
                    format!(
                        "{} {}",
                        d.delta_pct.map(|p| format!("{p:+.1}%")).unwrap_or_default(),
                        d.verdict
                    )
                }),
                class: if i == 0 { 5 } else { 0 },
                ..Category::default()
            })
        })
        .collect();
    svg::categories(
        &format!(
            "{} per variant (baseline {})",
            c.primary_metric, c.variants[0].label
        ),
        "variant (above: delta against the baseline and verdict)",
        &format!("{} ({unit})", c.primary_metric),
        &cats,
        vec![
            (0, "median, 95% CI of the mean".into(), Mark::Dot),
            (5, "baseline".into(), Mark::Dot),
        ],
        None,
    )
}

/// Delta % per metric and variant, signed bars; the verdict in the label.
pub fn delta_chart(c: &Comparison) -> String {
    let rows: Vec<(String, f64, usize)> = c
        .deltas
        .iter()
        .filter_map(|d| {
            let p = d.delta_pct?;
            let ci = d
                .ci95_pct
                .map(|(a, b)| format!(" [{a:+.1}, {b:+.1}]"))
                .unwrap_or_default();
            Some((
                format!(
                    "{} {}: {}{ci}",
                    c.variants[d.variant].label, d.metric, d.verdict
                ),
                p,
                if d.verdict == "slower" || d.verdict == "higher" {
                    1
                } else if d.verdict == "faster" || d.verdict == "lower" {
                    2
                } else {
                    5
                },
            ))
        })
        .collect();
    svg::hbars(
        "Change against the baseline, with the 95% bootstrap CI and the verdict",
        "delta of the median (%)",
        &rows,
        vec![
            (1, "slower / higher".into(), Mark::Box),
            (2, "faster / lower".into(), Mark::Box),
            (5, "no change".into(), Mark::Box),
        ],
    )
}

/// Seed 001's ranking: variants by the primary metric.
pub fn ranking_chart(c: &Comparison) -> Option<String> {
    if c.ranking.is_empty() {
        return None;
    }
    let unit = c
        .variants
        .first()
        .and_then(|v| v.metric(&c.primary_metric))
        .map(|m| m.unit.clone())
        .unwrap_or_default();
    let cats: Vec<Category> = c
        .ranking
        .iter()
        .map(|r| Category {
            label: r.label.clone(),
            bar: Some(r.median),
            note: Some(if r.variant == 0 {
                "baseline".into()
            } else {
                format!("{:+.1}%", r.delta_pct)
            }),
            class: if r.variant == 0 { 5 } else { 3 },
            ..Category::default()
        })
        .collect();
    Some(svg::categories(
        &format!("Ranked by {}", c.primary_metric),
        "variant, lowest first",
        &format!("median {} ({unit})", c.primary_metric),
        &cats,
        vec![
            (3, "variant".into(), Mark::Box),
            (5, "baseline".into(), Mark::Box),
        ],
        None,
    ))
}

/// The functions whose share grew and shrank most.
pub fn profile_diff_chart(c: &Comparison) -> Option<String> {
    if c.profile_diff.is_empty() {
        return None;
    }
    let rows: Vec<(String, f64, usize)> = c
        .profile_diff
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                d.delta_total_pp,
                if d.delta_total_pp > 0.0 { 1 } else { 2 },
            )
        })
        .collect();
    Some(svg::hbars(
        "What changed in the profile",
        "change of the share of samples (percentage points)",
        &rows,
        vec![
            (1, "grew".into(), Mark::Box),
            (2, "shrank".into(), Mark::Box),
        ],
    ))
}

/// Boots as groups: each boot's runs, and its median.
pub fn merge_chart(m: &Merged, primary: &str) -> String {
    let unit = m
        .metrics
        .iter()
        .find(|x| x.name == primary)
        .map(|x| x.unit.clone())
        .unwrap_or_default();
    let cats: Vec<Category> = m
        .groups
        .iter()
        .map(|g| {
            let v = g
                .metrics
                .iter()
                .find(|x| x.name == primary)
                .map(|x| x.values.clone())
                .unwrap_or_default();
            Category {
                label: g.label.clone(),
                boxplot: five(&v),
                strip: v,
                class: 0,
                ..Category::default()
            }
        })
        .collect();
    svg::categories(
        &format!("{primary} per boot"),
        "boot (dots: its runs; box: min, quartiles, max)",
        &format!("{primary} ({unit})"),
        &cats,
        vec![(0, "runs of one boot".into(), Mark::Dot)],
        None,
    )
}

/// ns/op against the rule count, the fitted line with its 95% band, the baselines.
pub fn sweep_chart(s: &Sweep) -> String {
    let unit = s
        .steps
        .first()
        .and_then(|x| x.result.metrics.first())
        .map(|m| m.unit.clone())
        .unwrap_or_default();
    let med = |st: &crate::experiments::audit_sweep::Step| {
        st.result.metrics.first().and_then(|m| m.summary.clone())
    };
    let on: Vec<&crate::experiments::audit_sweep::Step> =
        s.steps.iter().filter(|x| x.config.enabled == 1).collect();
    let mut pts = Vec::new();
    let mut err = Vec::new();
    for st in &on {
        if let Some(sm) = med(st) {
            pts.push((st.config.rules as f64, sm.median));
            err.push(sm.ci95.unwrap_or((sm.median, sm.median)));
        }
    }
    let mut series = vec![Series::Points {
        class: 0,
        label: "audit on: median, 95% CI".into(),
        pts,
        err: Some(err),
    }];
    // The fitted line and the 95% confidence band of the mean response, from every run.
    let fit_rules: Vec<u32> = s.fit_steps.iter().filter_map(|x| x.parse().ok()).collect();
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for st in on.iter().filter(|st| fit_rules.contains(&st.config.rules)) {
        if let Some(m) = st.result.metrics.first() {
            for v in &m.values {
                xs.push(st.config.rules as f64);
                ys.push(*v);
            }
        }
    }
    let mut caption = String::new();
    if let (Some(f), true) = (s.fits.iter().find(|f| f.metric == "time"), xs.len() >= 3) {
        let n = xs.len() as f64;
        let mx = crate::stats::mean(&xs);
        let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
        let ssr: f64 = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (y - (f.intercept + f.slope * x)).powi(2))
            .sum();
        let se = (ssr / (n - 2.0)).sqrt();
        let t = t_critical(0.95, n - 2.0);
        let (lo, hi) = (
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let grid: Vec<f64> = (0..=20).map(|i| lo + (hi - lo) * i as f64 / 20.0).collect();
        let fitv: Vec<f64> = grid.iter().map(|x| f.intercept + f.slope * x).collect();
        let half: Vec<f64> = grid
            .iter()
            .map(|x| t * se * (1.0 / n + (x - mx).powi(2) / sxx).sqrt())
            .collect();
        series.push(Series::Band {
            class: 0,
            label: "95% band of the line".into(),
            x: grid.clone(),
            lower: fitv.iter().zip(&half).map(|(a, b)| a - b).collect(),
            upper: fitv.iter().zip(&half).map(|(a, b)| a + b).collect(),
        });
        series.push(Series::Line {
            class: 0,
            label: "least-squares line".into(),
            pts: grid.iter().copied().zip(fitv).collect(),
            dashed: false,
        });
        caption = format!(
            ": {} {unit} per rule [{}]",
            fmt_num(f.slope),
            f.slope_ci95
                .map(|(a, b)| format!("{}, {}", fmt_num(a), fmt_num(b)))
                .unwrap_or_default()
        );
    }
    if let Some(b) = s
        .steps
        .iter()
        .find(|x| x.config.enabled == 0 && x.config.task_never)
        .and_then(med)
    {
        series.push(Series::HLine {
            class: 2,
            label: "audit off (never,task)".into(),
            y: b.median,
        });
    }
    if let Some(b) = s
        .steps
        .iter()
        .find(|x| x.config.enabled == 0 && !x.config.task_never)
        .and_then(med)
    {
        series.push(Series::HLine {
            class: 1,
            label: "audit off (no task rule)".into(),
            y: b.median,
        });
    }
    if let Some(b) = on.iter().find(|x| x.config.rules == 0).and_then(|x| med(x)) {
        series.push(Series::HLine {
            class: 3,
            label: "audit on, 0 rules".into(),
            y: b.median,
        });
    }
    svg::xy(
        &format!("Cost of audit syscall-exit rules{caption}"),
        "syscost exit rules loaded",
        &format!("time ({unit})"),
        &series,
        true,
    )
}

/// Seed 002's scaling as charts: total and per-CPU throughput against threads.
pub fn scale_charts(s: &Scale) -> Vec<String> {
    let pts: Vec<(f64, f64)> = s.rows.iter().map(|r| (r.threads as f64, r.mean)).collect();
    let err: Vec<(f64, f64)> = s
        .rows
        .iter()
        .map(|r| (r.mean - r.stdev, r.mean + r.stdev))
        .collect();
    let per: Vec<(f64, f64)> = s
        .rows
        .iter()
        .map(|r| (r.threads as f64, r.per_cpu))
        .collect();
    let per_err: Vec<(f64, f64)> = s
        .rows
        .iter()
        .map(|r| {
            (
                (r.mean - r.stdev) / r.threads as f64,
                (r.mean + r.stdev) / r.threads as f64,
            )
        })
        .collect();
    vec![
        svg::xy(
            &format!("{}: total throughput", s.case),
            "producer threads (CPUs)",
            "throughput (M calls/s)",
            &[
                Series::Line {
                    class: 0,
                    label: String::new(),
                    pts: pts.clone(),
                    dashed: false,
                },
                Series::Points {
                    class: 0,
                    label: "mean ± stddev over runs".into(),
                    pts,
                    err: Some(err),
                },
            ],
            true,
        ),
        svg::xy(
            &format!("{}: throughput per CPU", s.case),
            "producer threads (CPUs)",
            "throughput per CPU (M calls/s)",
            &[
                Series::Line {
                    class: 1,
                    label: String::new(),
                    pts: per.clone(),
                    dashed: false,
                },
                Series::Points {
                    class: 1,
                    label: "mean ± stddev over runs".into(),
                    pts: per,
                    err: Some(per_err),
                },
            ],
            true,
        ),
    ]
}

/// Scatter with the least-squares line; r, p and n in the title.
pub fn correlate_chart(c: &CorrelationResult) -> String {
    let pts: Vec<(f64, f64)> = c.points.iter().map(|p| (p.x, p.y)).collect();
    let (lo, hi) = (
        pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min),
        pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
    );
    let k = &c.correlation;
    svg::xy(
        &format!(
            "{} against {}: Pearson r = {:.3} (p = {}), Spearman ρ = {:.3}, n = {}",
            c.y,
            c.x,
            k.pearson_r,
            pval(k.pearson_p),
            k.spearman_rho,
            k.n
        ),
        &format!("{} ({})", c.x, c.x_unit),
        &format!("{} ({})", c.y, c.y_unit),
        &[
            Series::Points {
                class: 0,
                label: format!("one {}", c.unit),
                pts,
                err: None,
            },
            Series::Line {
                class: 1,
                label: "least-squares line".into(),
                pts: vec![
                    (lo, c.intercept + c.slope * lo),
                    (hi, c.intercept + c.slope * hi),
                ],
                dashed: false,
            },
        ],
        false,
    )
}

fn pval(p: f64) -> String {
    if p < 0.0001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// Lines per set, reachable sets highlighted, the associativity as a line.
pub fn cachesets_chart(a: &Analysis) -> String {
    let cats: Vec<Category> = a
        .populations
        .iter()
        .enumerate()
        .map(|(set, p)| Category {
            label: if set % 8 == 0 {
                set.to_string()
            } else {
                String::new()
            },
            bar: Some(*p as f64),
            class: if a.reachable_sets.contains(&(set as u64)) {
                0
            } else {
                5
            },
            ..Category::default()
        })
        .collect();
    svg::categories(
        &format!(
            "Lines per L1 set: {} objects, {}-byte alignment, spread {:.2}",
            a.objects, a.alignment, a.cacheline_spread
        ),
        "cache set",
        "population (first lines in the set)",
        &cats,
        vec![
            (0, "reachable set".into(), Mark::Box),
            (5, "other set".into(), Mark::Box),
            (1, format!("{} ways", a.geometry.ways), Mark::DashedLine),
        ],
        Some((1, a.geometry.ways as f64)),
    )
}

/// A grid as an HTML table.
pub fn table(g: &Grid) -> String {
    let mut s = String::from("<table>");
    if let Some(t) = &g.title {
        s.push_str(&format!("<caption>{}</caption>", esc(t.trim())));
    }
    s.push_str("<thead><tr>");
    for (i, h) in g.headers.iter().enumerate() {
        s.push_str(&format!(
            "<th{}>{}</th>",
            if g.right.contains(&i) {
                " class=\"num\""
            } else {
                ""
            },
            esc(h)
        ));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &g.rows {
        s.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            s.push_str(&format!(
                "<td{}>{}</td>",
                if g.right.contains(&i) {
                    " class=\"num\""
                } else {
                    ""
                },
                esc(c)
            ));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    let notes: Vec<&String> = g.notes.iter().filter(|n| !n.trim().is_empty()).collect();
    if !notes.is_empty() {
        s.push_str("<ul class=\"notes\">");
        for n in notes {
            s.push_str(&format!("<li>{}</li>", esc(n.trim())));
        }
        s.push_str("</ul>");
    }
    s
}

fn figure(chart: &str) -> String {
    format!("<figure>{chart}</figure>")
}

/// One section per result.
fn section(l: &Loaded, label: &str, warnings: &mut Vec<String>) -> String {
    let mut s = format!(
        "<section><h2>{}</h2><p class=\"src\">{}</p>",
        esc(&title_of(l)),
        esc(label)
    );
    match l {
        Loaded::Run(r) => {
            warnings.extend(r.warnings.iter().cloned());
            s.push_str(&figure(&run_chart(r)));
            for line in super::run_preamble(r) {
                s.push_str(&format!("<p class=\"meta\">{}</p>", esc(line.trim())));
            }
            let mut g = run_grid(r);
            g.notes
                .retain(|n| !n.contains("Warnings") && !n.trim_start().starts_with("- "));
            s.push_str(&table(&g));
            if let Some(p) = &r.profile {
                s.push_str(&figure(&profile_chart(p, &r.workload.describe())));
            }
        }
        Loaded::Compare(c) => compare_section(&mut s, c, warnings),
        Loaded::Probe(p) => {
            s.push_str(&format!(
                "<p class=\"meta\">{} during <code>{}</code>: hits per run {:?}</p>",
                esc(&p.target),
                esc(&p.command.join(" ")),
                p.hits
            ));
            compare_section(&mut s, &p.comparison, warnings);
        }
        Loaded::Merged(m) => {
            warnings.extend(m.warnings.iter().cloned());
            s.push_str(&figure(&merge_chart(m, "time")));
            s.push_str(&table(&m.seed_table("time")));
            s.push_str(&table(&m.variance_grid()));
        }
        Loaded::Sweep(sw) => {
            warnings.extend(sw.warnings.iter().cloned());
            s.push_str(&figure(&sweep_chart(sw)));
            for line in sw.preamble() {
                s.push_str(&format!("<p class=\"meta\">{}</p>", esc(line.trim())));
            }
            for g in sw.grids() {
                let mut g = g;
                g.notes.retain(|n| !n.contains("warning:"));
                s.push_str(&table(&g));
            }
        }
        Loaded::Scale(sc) => {
            for c in scale_charts(sc) {
                s.push_str(&figure(&c));
            }
            s.push_str(&format!("<pre>{}</pre>", esc(&sc.text(Format::Table))));
        }
        Loaded::Correlate(c) => {
            s.push_str(&figure(&correlate_chart(c)));
            s.push_str(&table(&super::correlate::grid(c)));
        }
        Loaded::Cachesets(a) => {
            s.push_str(&figure(&cachesets_chart(a)));
            s.push_str(&format!("<pre>{}</pre>", esc(&a.text(Format::Table))));
        }
    }
    s.push_str("</section>");
    s
}

fn compare_section(s: &mut String, c: &Comparison, warnings: &mut Vec<String>) {
    warnings.extend(c.warnings.iter().cloned());
    s.push_str(&figure(&compare_chart(c)));
    s.push_str(&figure(&delta_chart(c)));
    if let Some(r) = ranking_chart(c) {
        s.push_str(&figure(&r));
    }
    if let Some(p) = profile_diff_chart(c) {
        s.push_str(&figure(&p));
    }
    for line in c.preamble() {
        s.push_str(&format!("<p class=\"meta\">{}</p>", esc(line.trim())));
    }
    let mut d = c.delta_grid();
    d.notes.clear();
    s.push_str(&table(&d));
    s.push_str(&table(&c.seed_table()));
}

fn title_of(l: &Loaded) -> String {
    match l {
        Loaded::Run(r) => format!("Run: {}", r.workload.describe()),
        Loaded::Compare(c) => format!("Comparison of {} results", c.variants.len()),
        Loaded::Merged(m) => format!("Merged: {} boots", m.groups.len()),
        Loaded::Sweep(s) => format!("Audit sweep: {}", s.workload.describe()),
        Loaded::Scale(s) => format!("Thread scaling: {}", s.case),
        Loaded::Correlate(c) => format!("Correlation: {} and {}", c.x, c.y),
        Loaded::Cachesets(a) => format!("Cache sets: {} objects", a.objects),
        Loaded::Probe(p) => format!("Probe: {}", p.target),
    }
}

fn header(loaded: &[(String, Loaded)]) -> String {
    let env = loaded.iter().find_map(|(_, l)| match l {
        Loaded::Run(r) => Some(r.environment.clone()),
        Loaded::Sweep(s) => s.steps.first().map(|x| x.result.environment.clone()),
        Loaded::Scale(s) => s.results.first().map(|x| x.environment.clone()),
        _ => None,
    });
    let mut rows: Vec<(String, String)> = Vec::new();
    match env {
        Some(e) => {
            rows.push((
                "kernel".into(),
                format!(
                    "{} {}",
                    e.kernel_release.unwrap_or_default(),
                    e.kernel_version.unwrap_or_default()
                ),
            ));
            rows.push((
                "cpu".into(),
                format!(
                    "{} (family {} model {} stepping {}, microcode {})",
                    e.cpu.model_name.unwrap_or_default(),
                    e.cpu.family.unwrap_or_default(),
                    e.cpu.model.unwrap_or_default(),
                    e.cpu.stepping.unwrap_or_default(),
                    e.cpu.microcode.unwrap_or_default()
                ),
            ));
            for c in &e.cpu.caches {
                rows.push((
                    format!("L{} {}", c.level, c.type_.to_lowercase()),
                    format!(
                        "{}: {} sets x {} ways x {} B lines",
                        c.size.clone().unwrap_or_default(),
                        c.sets.map(|x| x.to_string()).unwrap_or_default(),
                        c.ways.map(|x| x.to_string()).unwrap_or_default(),
                        c.line_size.map(|x| x.to_string()).unwrap_or_default()
                    ),
                ));
            }
            rows.push((
                "hardware PMU".into(),
                if e.hardware_pmu {
                    "present".into()
                } else {
                    "absent: cycles and cache events not counted".into()
                },
            ));
            rows.push(("clocksource".into(), e.clocksource.unwrap_or_default()));
        }
        None => rows.push(("machine".into(), "not recorded in these results".into())),
    }
    let mut s = String::from("<table class=\"env\"><tbody>");
    for (k, v) in rows {
        s.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&k),
            esc(&v)
        ));
    }
    s.push_str("</tbody></table>");
    s
}

const PAGE_STYLE: &str = r#"
:root { --bg: #ffffff; --fg: #1b1b1f; --muted: #55555f; --grid: #e3e3ea; --rule: #d0d0da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #17171c; --fg: #e8e8ee; --muted: #a8a8b6; --grid: #2c2c36; --rule: #3a3a46; }
}
html { background: var(--bg); color: var(--fg); }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1000px; margin: 0 auto; padding: 24px; line-height: 1.45; }
h1 { font-size: 24px; margin: 0 0 8px; }
h2 { font-size: 19px; margin: 32px 0 4px; border-top: 1px solid var(--rule); padding-top: 16px; }
.src, .meta { color: var(--muted); font-size: 13px; margin: 2px 0; }
figure { margin: 16px 0; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.env th { color: var(--muted); font-weight: normal; }
.notes { color: var(--muted); font-size: 13px; }
.warnings li { color: #b7791f; }
pre { font-size: 12px; overflow-x: auto; }
@media print {
  body { max-width: none; padding: 0; }
  section, figure, table { break-inside: avoid; }
  h2 { break-after: avoid; }
}
"#;

/// The whole page.
pub fn page(loaded: &[(String, Loaded)]) -> String {
    let mut warnings: Vec<String> = Vec::new();
    let sections: Vec<String> = loaded
        .iter()
        .map(|(label, l)| section(l, label, &mut warnings))
        .collect();
    if let Some(e) = loaded.iter().find_map(|(_, l)| match l {
        Loaded::Run(r) => Some(r.environment.warnings.clone()),
        _ => None,
    }) {
        warnings.extend(e);
    }
    warnings.sort();
    warnings.dedup();
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\">");
    s.push_str("<title>syscost report</title><style>");
    s.push_str(PAGE_STYLE);
    s.push_str(svg::STYLE);
    s.push_str("</style></head><body><h1>syscost report</h1>");
    s.push_str(&format!(
        "<p class=\"meta\">{} result(s); syscost {}</p>",
        loaded.len(),
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(&header(loaded));
    if !warnings.is_empty() {
        s.push_str("<h2>Warnings</h2><ul class=\"warnings\">");
        for w in &warnings {
            s.push_str(&format!("<li>{}</li>", esc(w)));
        }
        s.push_str("</ul>");
    }
    for sec in sections {
        s.push_str(&sec);
    }
    s.push_str("</body></html>\n");
    s
}

/// One chart of `kind` from the results, for `--svg`.
pub fn single_chart(kind: &str, loaded: &[(String, Loaded)]) -> Result<String> {
    let one = |want: &str| -> Result<&Loaded> {
        match loaded {
            [(_, l)] => Ok(l),
            _ => bail!("--svg {want} draws one result; {} were given", loaded.len()),
        }
    };
    let chart = match (kind, one(kind)?) {
        ("run", Loaded::Run(r)) => run_chart(r),
        ("profile", Loaded::Run(r)) => match &r.profile {
            Some(p) => profile_chart(p, &r.workload.describe()),
            None => bail!("this run has no profile: take it with --profile"),
        },
        ("profile", Loaded::Compare(c)) => profile_diff_chart(c)
            .ok_or_else(|| anyhow::anyhow!("this comparison has no profiles"))?,
        ("compare", Loaded::Compare(c)) => compare_chart(c),
        ("compare", Loaded::Probe(p)) => compare_chart(&p.comparison),
        ("ranking", Loaded::Compare(c)) => ranking_chart(c)
            .ok_or_else(|| anyhow::anyhow!("a ranking needs three or more variants"))?,
        ("merge", Loaded::Merged(m)) => merge_chart(m, "time"),
        ("sweep", Loaded::Sweep(s)) => sweep_chart(s),
        ("scale", Loaded::Scale(s)) => scale_charts(s).remove(0),
        ("correlate", Loaded::Correlate(c)) => correlate_chart(c),
        ("cachesets", Loaded::Cachesets(a)) => cachesets_chart(a),
        (k, l) if KINDS.contains(&k) => bail!("a '{}' result has no '{k}' chart", l.kind()),
        (k, _) => bail!("unknown chart '{k}': one of {}", KINDS.join(", ")),
    };
    Ok(svg::standalone(&chart))
}

#[cfg(test)]
mod snapshots {
    //! Charts of fixed inputs: the output is deterministic, so it is compared byte for byte.
    use super::*;
    use crate::compare::unit::variant;
    use crate::compare::{Options, compare};
    use crate::layout::{Geometry, Request, analyse};

    #[test]
    fn charts_of_fixed_inputs() {
        let r = crate::report::snapshots::fixed_result();
        insta::assert_snapshot!("svg_run", run_chart(&r));
        let c = compare(
            vec![
                variant("base", &[100.0, 101.0, 99.5, 100.5, 100.2]),
                variant("slow", &[112.0, 111.0, 113.5, 112.5, 111.8]),
                variant("fast", &[90.0, 91.0, 89.5, 90.5, 90.2]),
            ],
            &Options {
                resamples: 500,
                ..Options::default()
            },
        )
        .unwrap();
        insta::assert_snapshot!("svg_compare", compare_chart(&c));
        insta::assert_snapshot!("svg_ranking", ranking_chart(&c).unwrap());
        let a = analyse(&Request {
            geometry: Geometry {
                sets: 64,
                ways: 8,
                line: 64,
            },
            geometry_source: "--geometry",
            addrs: Some(&(0..12).map(|i| i * 4096).collect::<Vec<u64>>()),
            objects: 12,
            size: Some(408),
            align: None,
            lines: 1,
            trials: 100,
            seed: 1,
        })
        .unwrap();
        insta::assert_snapshot!("svg_cachesets", cachesets_chart(&a));
        // Same input, same bytes.
        assert_eq!(run_chart(&r), run_chart(&r));
    }
}
