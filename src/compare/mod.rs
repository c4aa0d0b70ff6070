//! Comparing results: per-metric deltas with a bootstrap confidence interval, a significance
//! test, the effect in units of the baseline's noise, and a verdict that also needs the delta
//! to clear a noise threshold; rankings of many variants; merging boots; correlating metrics.
//!
//! The unit of replication is what the result says it is: runs for a `run` result (each run a
//! separate process), boots for a `merged` one. Samples within a run are never treated as
//! independent.

pub(crate) mod correlate;
pub(crate) mod decision;
pub(crate) mod groups;
pub(crate) mod merge;
pub(crate) mod profile_diff;
pub(crate) mod trend;
pub(crate) mod variant;

// The stages of one comparison, in order.
mod adjust;
mod decide;
mod estimate;
mod explain;
mod prepare;
mod rank;
#[cfg(test)]
pub(crate) mod tests;

pub use decision::Decision;
pub(crate) use profile_diff::{FunctionDelta, profile_diff};
pub use variant::{Variant, check_comparable};

pub(crate) use decide::smallest_p;

use crate::core::Envelope;
use crate::stats::Interval;
use crate::stats::registry::TestKind;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// How to compare.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Options {
    pub test: TestKind,
    pub alpha: f64,
    /// A delta smaller than this (percent) is never called a change.
    pub noise_pct: f64,
    /// Emulated (exact) counts closer than this (percent) are equal: the resolution of the
    /// range rule (`stats::exact`).
    pub exact_floor_pct: f64,
    pub resamples: usize,
    pub seed: u64,
    /// The metric that ranks variants; Holm corrects it as a family of its own.
    pub primary: String,
    /// `--time auto`: a primary `time` becomes task-clock when the workers were preempted
    /// (see `auto_time`).
    pub time_auto: bool,
    pub force: bool,
    pub drop_perturbed: bool,
    /// Threshold of the perturbation check, percent of the median.
    pub perturbed_pct: f64,
    /// Keep only the best (lowest primary metric) N units of each variant.
    pub best_of: Option<usize>,
    /// The variants are configurations measured by `syscost ab`: different workload
    /// parameters are the point, not a mistake.
    pub configurations: bool,
    /// The variants were measured interleaved: unit i of each is from round i, so the
    /// analysis pairs them (see `stats::paired`).
    pub paired: bool,
    /// Treat the samples of a one-run result as units (they are not independent: warned).
    pub samples_as_units: bool,
    /// How finely the paired rounds alternated, when known (`ab` says; files do not).
    pub grain: Option<crate::results::Grain>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            test: TestKind::MannWhitney,
            alpha: 0.05,
            noise_pct: 2.0,
            exact_floor_pct: EXACT_FLOOR_PCT,
            resamples: 10_000,
            seed: 42,
            primary: "time".into(),
            force: false,
            drop_perturbed: false,
            perturbed_pct: 10.0,
            best_of: None,
            configurations: false,
            paired: false,
            samples_as_units: false,
            grain: None,
            time_auto: false,
        }
    }
}

/// The default resolution of emulated counts, percent. The plugin leaves out the interrupts
/// that land in a window (timer ticks, which come on the host's clock and used to move a
/// count by up to 0.2% between boots the host ran at different speeds), so boots of one
/// kernel count the same instructions per getpid to 0.0001 here (305.00 on Debian's 6.1 cloud
/// kernel; what is left is each window's fixed marks over batches that calibration sized
/// differently). 0.01% is 0.03 instructions of that getpid: a one-instruction change decides
/// with two boots per side on any path under 10,000 instructions per operation. A boot whose
/// interrupts could not be left out says so, and its own range still bars a change within it.
pub(crate) const EXACT_FLOOR_PCT: f64 = 0.01;

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
    /// The change in percent: unpaired, 100 * (median - base median) / base median; paired,
    /// the Hodges-Lehmann estimate (or the mean, with t) of the per-round change.
    pub delta_pct: Option<f64>,
    /// The interval of `delta_pct` at the comparison's confidence (1 - alpha): the bootstrap
    /// percentile interval unpaired, the Hodges-Lehmann (or t) interval paired.
    #[serde(alias = "ci95_pct")]
    pub ci_pct: Option<Interval>,
    /// The interval at 1 - 2 alpha, for the equivalence test (TOST).
    #[serde(default)]
    pub ci_equivalence_pct: Option<Interval>,
    /// Units behind the test: pairs (rounds) paired, the smaller sample unpaired.
    #[serde(default)]
    pub n: usize,
    pub p: Option<f64>,
    /// p after the multiple-comparison correction.
    pub p_adjusted: Option<f64>,
    /// (median - base median) in units of the baseline's pstdev.
    pub effect_sigma: Option<f64>,
    /// The baseline's pstdev as a percentage of its mean: its run-to-run noise.
    pub base_pstdev_pct: f64,
    #[serde(default = "no_test")]
    pub decision: Decision,
    /// The decision in words, e.g. "slower, inside the 2% noise threshold".
    pub verdict: String,
}

fn no_test() -> Decision {
    Decision::NoTest
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

/// How the two sides' units were compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pairing {
    /// Round by round: each round's change B/A.
    Paired,
    /// As independent samples.
    Unpaired,
}

/// A `syscost compare` (or `ab`) result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub test: String,
    /// `paired by round` or `unpaired`, with what was analysed.
    #[serde(default)]
    pub analysis: String,
    /// Whether the rounds were paired (their CIs then come from the paired test, not the
    /// bootstrap); `None` in a result written before this was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<Pairing>,
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

pub(crate) fn lower_is_better(metric: &str) -> bool {
    let base = metric.split(':').next().unwrap_or(metric);
    matches!(base, "time" | "task-clock" | "cpu-clock" | "cycles")
}

/// Compare every variant against the first, in stages: prepare (checks, `--time auto`,
/// perturbed and best-of units), estimate (each metric's delta, interval and test), adjust
/// (Holm), decide, rank, and explain (the warnings and the words of the result).
pub fn compare(variants: Vec<Variant>, opts: &Options) -> Result<Comparison> {
    let prepared = prepare::prepare(variants, opts)?;
    let opts = &prepared.opts;
    let mut estimated = estimate::estimate(&prepared.tested, opts);
    let families = adjust::holm_families(&mut estimated.deltas, &opts.primary);
    decide::decide(&mut estimated, &families, &prepared.tested, opts);
    let ranking = rank::rank(&prepared.shown, &opts.primary);
    Ok(explain::comparison(prepared, estimated, ranking))
}
