//! Correlating two per-run (or per-boot) metrics across results, as the syscall-latency post correlated cycles
//! with L1d misses and with cacheline-spread.

use crate::core::input::{Opt, spelled};
use crate::core::{Envelope, Kind};
use crate::results::view::ResultView;
use crate::stats::anova;
use crate::stats::correlation::{Correlation, correlate, correlate_within};
use crate::stats::regression::fit;
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// One pair of values and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Point {
    pub x: f64,
    pub y: f64,
    /// `file#unit`.
    pub source: String,
}

/// A `syscost correlate` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CorrelationResult {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub x: String,
    pub y: String,
    pub x_unit: String,
    pub y_unit: String,
    /// `run` or `boot`.
    pub unit: String,
    pub files: Vec<String>,
    pub points: Vec<Point>,
    pub correlation: Correlation,
    /// Correlated within files (each file centred on its own means), not pooled.
    #[serde(default)]
    pub within: bool,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Least-squares line y = slope * x + intercept.
    pub slope: f64,
    pub intercept: f64,
}

/// Pair metric `x` with metric `y` unit by unit in every file.
pub(crate) fn run(
    views: &[ResultView],
    x: &str,
    y: &str,
    within: bool,
) -> Result<CorrelationResult> {
    if views.is_empty() {
        bail!("correlate needs at least one result");
    }
    let mut points = Vec::new();
    let mut file_of = Vec::new();
    let (mut xu, mut yu, mut unit) = (String::new(), String::new(), String::new());
    for (fi, v) in views.iter().enumerate() {
        let find = |name: &str| {
            v.metric(name)
                .filter(|m| m.summary.is_some())
                .ok_or_else(|| {
                    let names: Vec<&str> = v
                        .metrics
                        .iter()
                        .filter(|m| m.summary.is_some())
                        .map(|m| m.name.as_str())
                        .collect();
                    anyhow::anyhow!(
                        "{}: no metric '{name}' with values; it has: {}",
                        v.path.display(),
                        names.join(", ")
                    )
                })
        };
        let (mx, my) = (find(x)?, find(y)?);
        xu = mx.unit.clone();
        yu = my.unit.clone();
        unit = mx.replication.clone();
        for (vx, ux) in mx.values.iter().zip(&mx.units) {
            if let Some(i) = my.units.iter().position(|u| u == ux) {
                points.push(Point {
                    x: *vx,
                    y: my.values[i],
                    source: format!("{}#{ux}", v.label()),
                });
                file_of.push(fi);
            }
        }
    }
    let xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.y).collect();
    // Products of such values overflow f64: no per-op figure is anywhere near.
    for p in &points {
        for (name, v) in [(x, p.x), (y, p.y)] {
            if v.abs() > 1e150 {
                bail!(
                    "{}: {name} has the value {v:e}, too large to correlate; the file is damaged",
                    p.source
                );
            }
        }
    }
    let mut warnings = Vec::new();
    if views.len() > 1 && !within && files_differ(&xs, &ys, &file_of) {
        warnings.push(
            crate::said!(
                "the files' means differ more than their runs do: a pooled correlation can be \
                 one of the files, not of the runs; ",
                Opt::Within,
                " correlates within each file"
            )
            .spell(spelled),
        );
    }
    let c = if within {
        correlate_within(&xs, &ys, &file_of)
    } else {
        correlate(&xs, &ys)
    };
    let Some(c) = c else {
        if xs.len() < 3 {
            bail!(
                "only {} pair(s) of {x} and {y}: a correlation needs at least 3 (more runs, or \
                 more files)",
                xs.len()
            );
        }
        bail!(
            "{x} or {y} does not vary across the {} pairs: r is undefined",
            xs.len()
        );
    };
    // The line drawn under the scatter plot; r != undefined above means x varies.
    let line = fit(&xs, &ys).ok_or_else(|| anyhow::anyhow!("{x} does not vary: no line fits"))?;
    Ok(CorrelationResult {
        envelope: Envelope::new(Kind::Correlate),
        x: x.into(),
        y: y.into(),
        x_unit: xu,
        y_unit: yu,
        unit,
        files: views.iter().map(|v| v.path.display().to_string()).collect(),
        points,
        correlation: c,
        within,
        warnings,
        slope: line.slope,
        intercept: line.intercept,
    })
}

/// Whether x or y varies more between files than within them (the between-file variance
/// component exceeds the within-file one).
fn files_differ(xs: &[f64], ys: &[f64], file_of: &[usize]) -> bool {
    let files = file_of.iter().max().map_or(0, |m| m + 1);
    [xs, ys].iter().any(|v| {
        let groups: Vec<Vec<f64>> = (0..files)
            .map(|f| {
                v.iter()
                    .zip(file_of)
                    .filter(|(_, g)| **g == f)
                    .map(|(x, _)| *x)
                    .collect()
            })
            .filter(|g: &Vec<f64>| !g.is_empty())
            .collect();
        let refs: Vec<&[f64]> = groups.iter().map(|g| g.as_slice()).collect();
        anova::components(&refs).is_some_and(|c| c.between > c.within)
    })
}
