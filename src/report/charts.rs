//! The charts of every result kind, as inline SVG drawn by [`super::svg`]: the runs' spread,
//! comparisons and rankings, merges over boots, audit sweeps with their fitted line, thread
//! scaling, correlations and cache-set populations.

use super::svg::{self, Category, Mark, Series};
use crate::compare::correlate::CorrelationResult;
use crate::compare::merge::Merged;
use crate::compare::{Comparison, Decision};
use crate::core::{fmt_num, fmt_p as pval};
use crate::experiments::audit_sweep::Sweep;
use crate::experiments::scale::Scale;
use crate::layout::Analysis;
use crate::results::RunResult;
use crate::stats::quantile;

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
pub(crate) fn run_chart(r: &RunResult) -> String {
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
    let dots = match r.thinned {
        Some(t) => format!(
            "dots: {} of the {} raw samples, evenly spaced",
            t.kept, t.total
        ),
        None => "dots: its samples".into(),
    };
    svg::categories(
        &format!("{}: time per {}", r.workload.describe(), r.op_name),
        &format!("run ({dots}) and all units of replication (box: min, quartiles, max)"),
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
pub(crate) fn profile_chart(p: &crate::profile::Profile, title: &str) -> String {
    let mut rows = Vec::new();
    for f in p.functions.iter().take(12) {
        rows.push((format!("{} (self)", f.name), f.self_pct, 0));
        rows.push((format!("{} (total)", f.name), f.total_pct, 5));
    }
    svg::hbars(
        &format!("{title}: where the time goes ({} samples)", p.samples),
        "share of samples (%)",
        &rows,
        &[],
        vec![
            (0, "self".into(), Mark::Box),
            (5, "total (on the stack)".into(), Mark::Box),
        ],
    )
}

/// Each variant's primary metric: median (dot) with the 95% CI of the mean.
pub(crate) fn compare_chart(c: &Comparison) -> String {
    let unit = c.primary_unit();
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
                // The decision's name: the whole verdict is in the tables.
                note: d.map(|d| {
                    format!(
                        "{} {}",
                        d.delta_pct.map(|p| format!("{p:+.1}%")).unwrap_or_default(),
                        d.decision.name()
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

/// A trend: each group's median and interval in order, the step's change and verdict above it,
/// regressions in the warning colour.
pub(crate) fn trend_chart(t: &crate::compare::trend::Trend) -> String {
    let cats: Vec<Category> = t
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let step = t.steps.iter().find(|s| s.to == i);
            let (lo, hi) = p.ci.unwrap_or((p.median, p.median));
            Category {
                label: p.label.clone(),
                dot: Some((p.median, lo.min(p.median), hi.max(p.median))),
                note: step.map(|s| {
                    format!(
                        "{} {}",
                        s.delta_pct.map(|d| format!("{d:+.1}%")).unwrap_or_default(),
                        if s.regression {
                            "REGRESSION"
                        } else {
                            s.decision.name()
                        }
                    )
                }),
                class: if step.is_some_and(|s| s.regression) {
                    3
                } else {
                    0
                },
                ..Category::default()
            }
        })
        .collect();
    let confidence = 100.0 * (1.0 - t.alpha);
    svg::categories(
        &format!("{} by {}", t.metric, t.by),
        &format!("{} (above: the step from the one before)", t.by),
        &super::metric_label(&t.metric, &t.unit),
        &cats,
        vec![
            (
                0,
                format!("median, {confidence}% CI of the median"),
                Mark::Dot,
            ),
            (3, "regression".into(), Mark::Dot),
        ],
        None,
    )
}

/// Delta % per metric and variant, signed bars; the verdict in the label.
pub(crate) fn delta_chart(c: &Comparison) -> String {
    let intervals: Vec<Option<(f64, f64)>> = c
        .deltas
        .iter()
        .filter(|d| d.delta_pct.is_some())
        .map(|d| d.ci_pct.map(Into::into))
        .collect();
    let rows: Vec<(String, f64, usize)> = c
        .deltas
        .iter()
        .filter_map(|d| {
            let p = d.delta_pct?;
            let ci = d
                .ci_pct
                .map(|c| format!(" [{:+.1}, {:+.1}]", c.lo, c.hi))
                .unwrap_or_default();
            Some((
                format!(
                    "{} {}: {}{ci}",
                    c.variants[d.variant].label, d.metric, d.verdict
                ),
                p,
                match d.decision {
                    Decision::Slower | Decision::Higher => 1,
                    Decision::Faster | Decision::Lower => 2,
                    _ => 5,
                },
            ))
        })
        .collect();
    svg::hbars(
        &format!(
            "Change against the baseline, with the {:.0}% CI and the verdict",
            100.0 * c.bootstrap.confidence
        ),
        "delta of the median (%), the interval as a whisker",
        &rows,
        &intervals,
        vec![
            (1, "slower / higher".into(), Mark::Box),
            (2, "faster / lower".into(), Mark::Box),
            (5, "equivalent or undecided".into(), Mark::Box),
        ],
    )
}

/// The alignment RFC's ranking: variants by the primary metric.
pub(crate) fn ranking_chart(c: &Comparison) -> Option<String> {
    if c.ranking.is_empty() {
        return None;
    }
    let unit = c.primary_unit();
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
pub(crate) fn profile_diff_chart(c: &Comparison) -> Option<String> {
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
        &[],
        vec![
            (1, "grew".into(), Mark::Box),
            (2, "shrank".into(), Mark::Box),
        ],
    ))
}

/// Boots as groups: each boot's runs, and its median.
pub(crate) fn merge_chart(m: &Merged, primary: &str) -> String {
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
pub(crate) fn sweep_chart(s: &Sweep) -> String {
    let unit = s
        .steps
        .first()
        .and_then(|x| x.result.metrics.first())
        .map(|m| m.unit.clone())
        .unwrap_or_default();
    let on: Vec<&crate::experiments::audit_sweep::Step> =
        s.steps.iter().filter(|x| x.config.enabled == 1).collect();
    let mut pts = Vec::new();
    let mut err = Vec::new();
    for st in &on {
        if let Some(sm) = sweep_median(st) {
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
    if let Some(f) = s.fits.iter().find(|f| f.metric == "time") {
        let (lo, hi) = (
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let grid: Vec<f64> = (0..=20).map(|i| lo + (hi - lo) * i as f64 / 20.0).collect();
        let band = crate::stats::regression::mean_band((f.intercept, f.slope), &xs, &ys, &grid);
        if let Some(band) = band {
            series.extend(fitted_line(f, &grid, band));
            caption = format!(
                ": {} {unit} per rule [{}]",
                fmt_num(f.slope),
                f.slope_ci95
                    .map(|(a, b)| format!("{}, {}", fmt_num(a), fmt_num(b)))
                    .unwrap_or_default()
            );
        }
    }
    series.extend(sweep_baselines(s, &on));
    svg::xy(
        &format!("Cost of audit syscall-exit rules{caption}"),
        "syscost exit rules loaded",
        &format!("time ({unit})"),
        &series,
        true,
    )
}

/// A sweep step's summary of its first metric.
fn sweep_median(st: &crate::experiments::audit_sweep::Step) -> Option<crate::stats::Summary> {
    st.result.metrics.first().and_then(|m| m.summary.clone())
}

/// The sweep's lines to read the rules' cost against: audit off (with and without a task
/// rule) and audit on without rules.
fn sweep_baselines(s: &Sweep, on: &[&crate::experiments::audit_sweep::Step]) -> Vec<Series> {
    let mut out = Vec::new();
    if let Some(b) = s
        .steps
        .iter()
        .find(|x| x.config.enabled == 0 && x.config.task_never)
        .and_then(sweep_median)
    {
        out.push(Series::HLine {
            class: 2,
            label: "audit off (never,task)".into(),
            y: b.median,
        });
    }
    if let Some(b) = s
        .steps
        .iter()
        .find(|x| x.config.enabled == 0 && !x.config.task_never)
        .and_then(sweep_median)
    {
        out.push(Series::HLine {
            class: 1,
            label: "audit off (no task rule)".into(),
            y: b.median,
        });
    }
    if let Some(b) = on
        .iter()
        .find(|x| x.config.rules == 0)
        .and_then(|x| sweep_median(x))
    {
        out.push(Series::HLine {
            class: 3,
            label: "audit on, 0 rules".into(),
            y: b.median,
        });
    }
    out
}

/// The sweep's least-squares line over `grid` and its 95% band of the mean response.
fn fitted_line(
    f: &crate::experiments::audit_sweep::Fit,
    grid: &[f64],
    band: Vec<(f64, f64)>,
) -> [Series; 2] {
    [
        Series::Band {
            class: 0,
            label: "95% band of the line".into(),
            x: grid.to_vec(),
            lower: band.iter().map(|b| b.0).collect(),
            upper: band.iter().map(|b| b.1).collect(),
        },
        Series::Line {
            class: 0,
            label: "least-squares line".into(),
            pts: grid
                .iter()
                .map(|x| (*x, f.intercept + f.slope * x))
                .collect(),
            dashed: false,
        },
    ]
}

/// The uprobe thread's scaling as charts: total and per-CPU throughput against threads.
pub(crate) fn scale_charts(s: &Scale) -> Vec<String> {
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
pub(crate) fn correlate_chart(c: &CorrelationResult) -> String {
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
        &super::metric_label(&c.x, &c.x_unit),
        &super::metric_label(&c.y, &c.y_unit),
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

/// Lines per set, reachable sets highlighted, the associativity as a line.
pub(crate) fn cachesets_chart(a: &Analysis) -> String {
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
