//! Comparing results: per-metric deltas with a bootstrap confidence interval, a significance
//! test, the effect in units of the baseline's noise, and a verdict that also needs the delta
//! to clear a noise threshold; rankings of many variants; merging boots; correlating metrics.
//!
//! The unit of replication is what the result says it is: runs for a `run` result (each run a
//! separate process), boots for a `merged` one. Samples within a run are never treated as
//! independent.

pub mod correlate;
pub mod merge;
pub mod profile_diff;
pub mod variant;

pub use profile_diff::{FunctionDelta, profile_diff};
pub use variant::{Variant, check_comparable};

use crate::core::{Envelope, Kind};
use crate::results::validity;
use crate::stats::significance::{TestKind, bootstrap_delta_pct, holm, mann_whitney, welch};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// How to compare.
#[derive(Clone, Debug)]
pub struct Options {
    pub test: TestKind,
    pub alpha: f64,
    /// A delta smaller than this (percent) is never called a change.
    pub noise_pct: f64,
    pub resamples: usize,
    pub seed: u64,
    /// The metric that ranks variants and is tested without correction.
    pub primary: String,
    pub force: bool,
    pub drop_perturbed: bool,
    /// Threshold of the perturbation check, percent of the median.
    pub perturbed_pct: f64,
    /// Keep only the best (lowest primary metric) N units of each variant.
    pub best_of: Option<usize>,
    /// The variants are configurations measured by `syscost ab`: different workload
    /// parameters are the point, not a mistake.
    pub configurations: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            test: TestKind::MannWhitney,
            alpha: 0.05,
            noise_pct: 2.0,
            resamples: 10_000,
            seed: 42,
            primary: "time".into(),
            force: false,
            drop_perturbed: false,
            perturbed_pct: 10.0,
            best_of: None,
            configurations: false,
        }
    }
}

/// One metric of one variant against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub metric: String,
    pub unit: String,
    /// Index into `variants` (0 is the baseline).
    pub variant: usize,
    pub base_median: f64,
    pub base_mean: f64,
    pub median: f64,
    pub mean: f64,
    /// 100 * (median - base median) / base median.
    pub delta_pct: Option<f64>,
    /// Bootstrap 95% interval of `delta_pct`.
    pub ci95_pct: Option<(f64, f64)>,
    pub p: Option<f64>,
    /// p after the multiple-comparison correction.
    pub p_adjusted: Option<f64>,
    /// (median - base median) in units of the baseline's pstdev.
    pub effect_sigma: Option<f64>,
    /// The baseline's pstdev as a percentage of its mean: its run-to-run noise.
    pub base_pstdev_pct: f64,
    pub verdict: String,
}

/// A variant's place when ranked by the primary metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rank {
    pub rank: usize,
    pub variant: usize,
    pub label: String,
    pub median: f64,
    pub delta_pct: f64,
}

/// The bootstrap's settings, reported so the output can be reproduced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInfo {
    pub resamples: usize,
    pub seed: u64,
    pub generator: String,
    pub confidence: f64,
}

/// A `syscost compare` (or `ab`) result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub test: String,
    pub alpha: f64,
    pub noise_threshold_pct: f64,
    pub bootstrap: BootstrapInfo,
    pub correction: String,
    pub primary_metric: String,
    pub variants: Vec<Variant>,
    pub deltas: Vec<Delta>,
    pub ranking: Vec<Rank>,
    /// Functions whose share of the profile grew or shrank most (both results profiled).
    #[serde(default)]
    pub profile_diff: Vec<FunctionDelta>,
    pub warnings: Vec<String>,
}

/// Apply --drop-perturbed and --best-of to a variant (flags are always computed).
fn prepare(v: &mut Variant, opts: &Options) {
    let floor = v.ops_per_sample.map(|o| 1.0 / o).unwrap_or(0.0);
    v.perturbed = validity::find(&v.metrics, opts.perturbed_pct, floor);
    let mut drop: Vec<u32> = Vec::new();
    if opts.drop_perturbed {
        drop.extend(v.perturbed.iter().map(|p| p.unit));
    }
    if let Some(k) = opts.best_of
        && let Some(m) = v.metric(&opts.primary)
    {
        let mut pairs: Vec<(f64, u32)> = m
            .values
            .iter()
            .zip(&m.units)
            .filter(|(_, u)| !drop.contains(u))
            .map(|(x, u)| (*x, *u))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        drop.extend(pairs.iter().skip(k).map(|(_, u)| *u));
    }
    drop.sort();
    drop.dedup();
    if !drop.is_empty() {
        validity::retain_units(&mut v.metrics, |u| !drop.contains(&u));
    }
    v.dropped = drop;
}

fn lower_is_better(metric: &str) -> bool {
    let base = metric.split(':').next().unwrap_or(metric);
    matches!(base, "time" | "task-clock" | "cpu-clock" | "cycles")
}

/// Compare every variant against the first.
pub fn compare(mut variants: Vec<Variant>, opts: &Options) -> Result<Comparison> {
    if variants.len() < 2 {
        bail!("compare needs at least two results: a baseline and one to compare with it");
    }
    let mut warnings = check_comparable(&variants, opts.force, opts.configurations)?;
    for v in variants.iter_mut() {
        prepare(v, opts);
    }
    if variants[0].metric(&opts.primary).is_none() {
        let names: Vec<&str> = variants[0]
            .metrics
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        bail!(
            "{} has no metric '{}'; it has: {}",
            variants[0].label,
            opts.primary,
            names.join(", ")
        );
    }

    let base = &variants[0];
    let mut deltas = Vec::new();
    for (vi, v) in variants.iter().enumerate().skip(1) {
        for bm in base.metrics.iter().filter(|m| m.summary.is_some()) {
            let Some(om) = v.metric(&bm.name) else {
                continue;
            };
            let (bs, os) = (bm.summary.as_ref().unwrap(), om.summary.as_ref().unwrap());
            let delta_pct = (bs.median != 0.0).then(|| 100.0 * (os.median - bs.median) / bs.median);
            let ci = bootstrap_delta_pct(&bm.values, &om.values, opts.resamples, opts.seed, 0.95);
            let p = match opts.test {
                TestKind::MannWhitney => mann_whitney(&bm.values, &om.values).map(|x| x.1),
                TestKind::Welch => welch(&bm.values, &om.values).map(|x| x.2),
            };
            let effect = (bs.pstdev > 0.0).then(|| (os.median - bs.median) / bs.pstdev);
            deltas.push(Delta {
                metric: bm.name.clone(),
                unit: bm.unit.clone(),
                variant: vi,
                base_median: bs.median,
                base_mean: bs.mean,
                median: os.median,
                mean: os.mean,
                delta_pct,
                ci95_pct: ci,
                p,
                p_adjusted: None,
                effect_sigma: effect,
                base_pstdev_pct: bs.pstdev_pct,
                verdict: String::new(),
            });
        }
    }
    // Holm-Bonferroni in two families: the primary metric across variants, and every other
    // metric across variants.
    for primary in [true, false] {
        let idx: Vec<usize> = deltas
            .iter()
            .enumerate()
            .filter(|(_, d)| (d.metric == opts.primary) == primary && d.p.is_some())
            .map(|(i, _)| i)
            .collect();
        let ps: Vec<f64> = idx.iter().map(|&i| deltas[i].p.unwrap()).collect();
        for (i, adj) in idx.iter().zip(holm(&ps)) {
            deltas[*i].p_adjusted = Some(adj);
        }
    }
    for d in deltas.iter_mut() {
        let (n1, n2) = (base.n(&d.metric), variants[d.variant].n(&d.metric));
        d.verdict = verdict(d, opts, n1, n2);
    }

    let mut ranking = Vec::new();
    if variants.len() > 2 {
        let bmed = base
            .metric(&opts.primary)
            .unwrap()
            .summary
            .as_ref()
            .unwrap()
            .median;
        let mut r: Vec<(usize, f64)> = variants
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                v.metric(&opts.primary)
                    .and_then(|m| m.summary.as_ref())
                    .map(|s| (i, s.median))
            })
            .collect();
        r.sort_by(|a, b| a.1.total_cmp(&b.1));
        ranking = r
            .into_iter()
            .enumerate()
            .map(|(rank, (i, med))| Rank {
                rank: rank + 1,
                variant: i,
                label: variants[i].label.clone(),
                median: med,
                delta_pct: 100.0 * (med - bmed) / bmed,
            })
            .collect();
    }
    for v in &variants {
        if !v.perturbed.is_empty() && !opts.drop_perturbed {
            warnings.push(format!(
                "{}: {} perturbed {}(s) kept (--drop-perturbed leaves them out)",
                v.label,
                v.perturbed.len(),
                v.unit
            ));
        }
    }
    Ok(Comparison {
        envelope: Envelope::new(Kind::Compare),
        test: opts.test.describe().into(),
        alpha: opts.alpha,
        noise_threshold_pct: opts.noise_pct,
        bootstrap: BootstrapInfo {
            resamples: opts.resamples,
            seed: opts.seed,
            generator: "PCG64 (rand_pcg)".into(),
            confidence: 0.95,
        },
        correction: format!(
            "Holm-Bonferroni, in two families: the primary metric ({}) across variants, and \
             all other metrics across variants",
            opts.primary
        ),
        primary_metric: opts.primary.clone(),
        profile_diff: profile_diff(&variants),
        variants,
        deltas,
        ranking,
        warnings,
    })
}

/// The smallest two-sided p-value Mann-Whitney U can give for samples of n1 and n2 without
/// ties: 2 / C(n1 + n2, n1).
pub fn min_mann_whitney_p(n1: usize, n2: usize) -> f64 {
    let (k, n) = (n1.min(n2), n1 + n2);
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

fn verdict(d: &Delta, opts: &Options, n1: usize, n2: usize) -> String {
    if n1.min(n2) < 2 {
        return "too few units".into();
    }
    if opts.test == TestKind::MannWhitney && min_mann_whitney_p(n1, n2) >= opts.alpha {
        // With 3 runs against 3, no difference however large reaches p < 0.05: say so rather
        // than "no change".
        return format!("too few runs (min p {:.2})", min_mann_whitney_p(n1, n2));
    }
    let (Some(delta), Some(p)) = (d.delta_pct, d.p_adjusted) else {
        return "no test".into();
    };
    let significant = p < opts.alpha;
    // The delta must clear the fixed threshold and the baseline's own run-to-run spread: two
    // invocations minutes apart on a drifting machine differ by about that much unchanged.
    let big = delta.abs() >= opts.noise_pct.max(d.base_pstdev_pct);
    let excludes_zero = d.ci95_pct.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0);
    if significant && big && excludes_zero {
        match (lower_is_better(&d.metric), delta > 0.0) {
            (true, true) => "slower",
            (true, false) => "faster",
            (false, true) => "higher",
            (false, false) => "lower",
        }
        .into()
    } else if significant && excludes_zero {
        "within noise".into()
    } else {
        "no change".into()
    }
}

#[cfg(test)]
pub(crate) mod unit {
    use super::*;
    use crate::results::{Metric, MetricKind};
    use rand::{RngExt, SeedableRng};

    /// A variant with one `time` metric of `times` (one per run), for tests.
    pub(crate) fn variant(label: &str, times: &[f64]) -> Variant {
        let units: Vec<u32> = (0..times.len() as u32).collect();
        Variant {
            label: label.into(),
            source: label.into(),
            unit: "run".into(),
            workload: serde_json::json!({"workload": "syscall", "syscall": "getpid"}),
            op_name: "call".into(),
            subtract_overhead: false,
            created_unix: 0,
            kernel: None,
            host: None,
            ops_per_sample: Some(1e6),
            metrics: vec![Metric::of_values(
                "time",
                "ns/call",
                MetricKind::Time,
                "run",
                times.to_vec(),
                Some(units),
            )],
            perturbed: vec![],
            dropped: vec![],
            warnings: vec![],
            profile: None,
        }
    }

    fn normal(rng: &mut rand_pcg::Pcg64, mean: f64, sd: f64) -> f64 {
        // Box-Muller
        let u1: f64 = rng.random_range(f64::EPSILON..1.0);
        let u2: f64 = rng.random_range(0.0..1.0);
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    #[test]
    fn a_a_comparisons_rarely_call_a_change() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
        let opts = Options {
            resamples: 500,
            ..Options::default()
        };
        let trials = 400;
        let mut changed = 0;
        let mut significant = 0;
        for _ in 0..trials {
            let a: Vec<f64> = (0..8).map(|_| normal(&mut rng, 100.0, 3.0)).collect();
            let b: Vec<f64> = (0..8).map(|_| normal(&mut rng, 100.0, 3.0)).collect();
            let c = compare(vec![variant("a", &a), variant("b", &b)], &opts).unwrap();
            let d = &c.deltas[0];
            if d.verdict == "slower" || d.verdict == "faster" {
                changed += 1;
            }
            if d.p_adjusted.unwrap() < 0.05 {
                significant += 1;
            }
        }
        let rate = changed as f64 / trials as f64;
        assert!(rate <= 0.05, "A/A called a change in {changed} of {trials}");
        let sig = significant as f64 / trials as f64;
        assert!(
            sig <= 0.08,
            "the test's own false-positive rate is near alpha: {sig}"
        );
    }

    #[test]
    fn a_shift_is_detected_with_a_ci_excluding_zero() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(2);
        let a: Vec<f64> = (0..8).map(|_| normal(&mut rng, 100.0, 1.0)).collect();
        let b: Vec<f64> = (0..8).map(|_| normal(&mut rng, 110.0, 1.0)).collect();
        let c = compare(
            vec![variant("a", &a), variant("b", &b)],
            &Options::default(),
        )
        .unwrap();
        let d = &c.deltas[0];
        assert_eq!(d.verdict, "slower");
        let (lo, hi) = d.ci95_pct.unwrap();
        assert!(lo > 0.0 && hi > lo, "{lo} {hi}");
        assert!(d.effect_sigma.unwrap() > 5.0);
        let w = compare(
            vec![variant("a", &a), variant("b", &b)],
            &Options {
                test: TestKind::Welch,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(w.deltas[0].verdict, "slower");
        assert!(w.test.contains("Welch"));
    }

    #[test]
    fn too_few_runs_is_said_not_hidden() {
        assert!((min_mann_whitney_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_mann_whitney_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        let c = compare(
            vec![
                variant("a", &[100.0, 101.0, 99.0]),
                variant("b", &[200.0, 201.0, 199.0]),
            ],
            &Options::default(),
        )
        .unwrap();
        assert!(
            c.deltas[0].verdict.starts_with("too few runs"),
            "{}",
            c.deltas[0].verdict
        );
    }

    #[test]
    fn a_small_significant_shift_stays_within_noise() {
        let a = [100.0, 100.1, 99.9, 100.05, 99.95, 100.02, 99.98, 100.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.01).collect();
        let c = compare(
            vec![variant("a", &a), variant("b", &b)],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(
            c.deltas[0].verdict, "within noise",
            "1% is under the 2% threshold"
        );
    }

    #[test]
    fn different_workloads_are_refused_unless_forced() {
        let a = variant("a.json", &[1.0, 2.0, 3.0]);
        let mut b = variant("b.json", &[1.0, 2.0, 3.0]);
        b.workload = serde_json::json!({"workload": "syscall", "syscall": "getppid"});
        let e = compare(vec![a.clone(), b.clone()], &Options::default()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("syscall") && msg.contains("getppid") && msg.contains("--force"),
            "{msg}"
        );
        let c = compare(
            vec![a, b],
            &Options {
                force: true,
                ..Options::default()
            },
        )
        .unwrap();
        assert!(c.warnings.iter().any(|w| w.contains("--force")));
    }

    #[test]
    fn ranking_and_best_of() {
        let c = compare(
            vec![
                variant("base", &[10.0, 10.1, 9.9, 10.0]),
                variant("fast", &[8.0, 8.1, 7.9, 8.0]),
                variant("slow", &[12.0, 12.1, 11.9, 30.0]),
            ],
            &Options {
                best_of: Some(3),
                ..Options::default()
            },
        )
        .unwrap();
        let order: Vec<&str> = c.ranking.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(order, vec!["fast", "base", "slow"]);
        assert!((c.ranking[0].delta_pct + 20.0).abs() < 1e-9);
        assert_eq!(c.variants[2].dropped, vec![3], "the worst run is left out");
    }
}
