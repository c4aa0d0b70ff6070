//! One side of a comparison, from a result file or from a configuration measured by `ab`,
//! and the check that the sides measure the same thing.

use crate::core::input::{Opt, spelled};
use crate::results::validity::Perturbation;
use crate::results::view::ResultView;
use crate::results::{Metric, MetricKind, RunResult};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// One side of a comparison: a result file, or one configuration measured by `syscost ab`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub label: String,
    /// Where it came from: a file path, or `ab`.
    pub source: String,
    /// The unit of replication: `run`, `sample` or `boot`.
    pub unit: String,
    pub workload: crate::workloads::RecordedWorkload,
    pub op_name: String,
    pub subtract_overhead: bool,
    pub created_unix: u64,
    pub kernel: Option<String>,
    pub host: Option<String>,
    /// Operations per sample, when known (sets the floor of the perturbation check).
    pub ops_per_sample: Option<f64>,
    pub metrics: Vec<Metric>,
    /// Units whose invariant counters moved.
    pub perturbed: Vec<Perturbation>,
    /// Units left out (by --drop-perturbed or --best-of).
    pub dropped: Vec<u32>,
    pub warnings: Vec<String>,
    /// Where the time went, if the result was profiled.
    #[serde(default)]
    pub profile: Option<crate::profile::Profile>,
    /// Paced rounds (`ab`): this variant's per-round changes against the baseline, slot by
    /// slot (see `results::slots`); the paired analysis uses them where a metric has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_changes: Vec<crate::results::slots::RoundChanges>,
}

impl Variant {
    pub(crate) fn from_view(v: &ResultView) -> Variant {
        let unit = v
            .metrics
            .first()
            .map(|m| m.replication.clone())
            .unwrap_or_else(|| "run".into());
        Variant {
            label: v.label(),
            source: v.path.display().to_string(),
            unit,
            workload: v.workload.clone(),
            op_name: v.op_name.clone(),
            subtract_overhead: v.subtract_overhead(),
            created_unix: v.created_unix,
            kernel: v.environment.kernel_release.clone(),
            host: v.environment.hostname.clone(),
            ops_per_sample: v.options.get("ops_per_sample").and_then(|x| x.as_f64()),
            metrics: v.metrics.clone(),
            perturbed: Vec::new(),
            dropped: Vec::new(),
            warnings: v.warnings.clone(),
            profile: v.profile.clone(),
            round_changes: Vec::new(),
        }
    }

    pub(crate) fn from_run(label: &str, source: &str, r: &RunResult) -> Variant {
        Variant {
            label: label.to_string(),
            source: source.to_string(),
            unit: r
                .metrics
                .first()
                .map(|m| m.replication.clone())
                .unwrap_or_else(|| "run".into()),
            workload: r.workload.clone().into(),
            op_name: r.op_name.clone(),
            subtract_overhead: r.options.subtract_overhead,
            created_unix: r.created_unix,
            kernel: r.environment.kernel_release.clone(),
            host: r.environment.hostname.clone(),
            ops_per_sample: Some(r.options.ops_per_sample as f64),
            metrics: r.metrics.clone(),
            perturbed: Vec::new(),
            dropped: Vec::new(),
            warnings: r.warnings.clone(),
            profile: r.profile.clone(),
            round_changes: Vec::new(),
        }
    }

    /// A variant of getpid's per-call `time`, one value per run, as if measured: for tests and
    /// for calibrating the verdicts on synthetic data (benches/verdicts.rs).
    pub fn of_times(label: &str, times: &[f64]) -> Variant {
        Variant {
            label: label.into(),
            source: label.into(),
            unit: "run".into(),
            workload: crate::workloads::WorkloadSpec::Syscall(crate::workloads::syscall::Params {
                syscall: "getpid".into(),
            })
            .into(),
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
                None,
            )],
            perturbed: Vec::new(),
            dropped: Vec::new(),
            warnings: Vec::new(),
            profile: None,
            round_changes: Vec::new(),
        }
    }

    pub(crate) fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.name == name && m.summary.is_some())
    }

    /// Number of units of the primary metric.
    pub(crate) fn n(&self, primary: &str) -> usize {
        self.metric(primary).map(|m| m.values.len()).unwrap_or(0)
    }
}

/// Which workload parameters differ, as "key: a vs b".
fn workload_diff(base: &Variant, v: &Variant) -> String {
    let (a, b) = (base.workload.json(), v.workload.json());
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return "workload".into();
    };
    let shown = |x: Option<&serde_json::Value>| x.map(|x| x.to_string()).unwrap_or("-".into());
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: {} vs {}", shown(a.get(k)), shown(b.get(k))))
        .collect();
    keys.dedup();
    keys.join(", ")
}

/// What results are checked for: compared against each other, or merged as boots of one
/// configuration (measured apart in time by design: no warning of drift between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Compare,
    Merge,
}

impl Purpose {
    fn verb(self) -> &'static str {
        match self {
            Purpose::Compare => "compare",
            Purpose::Merge => "merge",
        }
    }
}

/// Refuse variants that do not measure the same thing, naming what differs.
pub fn check_comparable(
    variants: &[Variant],
    force: bool,
    configurations: bool,
    purpose: Purpose,
) -> Result<Vec<String>> {
    let verb = purpose.verb();
    let mut warnings = Vec::new();
    let Some(base) = variants.first() else {
        bail!("nothing to compare");
    };
    for v in &variants[1..] {
        let mut diffs = Vec::new();
        if v.workload != base.workload && !configurations {
            diffs.push(format!("workload ({})", workload_diff(base, v)));
        }
        if v.subtract_overhead != base.subtract_overhead {
            diffs.push(format!(
                "{} ({} vs {})",
                spelled(Opt::SubtractOverhead),
                base.subtract_overhead,
                v.subtract_overhead
            ));
        }
        if v.op_name != base.op_name {
            diffs.push(format!("operation ({} vs {})", base.op_name, v.op_name));
        }
        if !diffs.is_empty() {
            let msg = format!(
                "{} and {} measure different things: {}",
                base.label,
                v.label,
                diffs.join("; ")
            );
            let forced = spelled(Opt::Force);
            if !force {
                bail!("{msg}; use {forced} to {verb} them anyway");
            }
            warnings.push(format!("compared with {forced} although {msg}"));
        }
        if v.unit != base.unit {
            warnings.push(format!(
                "{} is replicated by {} and {} by {}: compare like with like where possible",
                base.label, base.unit, v.label, v.unit
            ));
        }
        if v.unit == "sample" || base.unit == "sample" {
            warnings.push(
                crate::said!(
                    "a result with a single run is compared sample by sample; samples of one \
                     process are not independent, so p-values are optimistic: use ",
                    Opt::Runs,
                    " 5 or more"
                )
                .spell(spelled),
            );
        }
        let apart = v.created_unix.abs_diff(base.created_unix);
        let interleaved = v.source == "ab" || base.source == "ab" || base.unit == "boot";
        if purpose == Purpose::Compare && !interleaved && apart > 300 {
            warnings.push(format!(
                "{} and {} were measured {} min apart: this machine's speed can drift more than \
                 the noise threshold in that time; `syscost ab` measures configurations \
                 interleaved",
                base.label,
                v.label,
                apart / 60
            ));
        }
        if v.host != base.host && v.host.is_some() && base.host.is_some() {
            warnings.push(format!(
                "{} and {} come from different hosts",
                base.label, v.label
            ));
        }
    }
    warnings.dedup();
    Ok(warnings)
}
