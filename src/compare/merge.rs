//! Merging results of one workload taken in different boots (or on different days): each
//! source stays a group, the boot becomes the unit of replication (its value: the median of its
//! runs), and the variance is split into within-boot and between-boot parts.

use super::variant::Purpose;
use super::{Variant, check_comparable};
use crate::core::{Envelope, Kind};
use crate::results::Metric;
use crate::results::view::{EnvSummary, Group, ResultView};
use crate::stats::{anova, median};
use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// How much of a metric's spread comes from within boots and how much from between them: the
/// variance components of a one-way random-effects ANOVA (method of moments, see
/// `stats::anova`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct VarianceSplit {
    pub metric: String,
    /// sqrt of the within-boot variance (the pooled mean square within).
    pub within_pstdev: f64,
    /// sqrt of the between-boot variance component ((MSB - MSW) / n0, clamped at 0).
    pub between_pstdev: f64,
    /// between / (within + between), of the variances, in percent.
    pub between_share_pct: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct EnvOut {
    pub kernel_release: Option<String>,
    pub hostname: Option<String>,
    pub boot_id: Option<String>,
    pub hardware_pmu: bool,
}

/// A `syscost merge` result. It keeps each source's per-run metrics (not its raw samples) so
/// it stays small however large the sources are; the sources remain the record of the samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Merged {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub created_unix: u64,
    pub workload: crate::workloads::RecordedWorkload,
    pub op_name: String,
    pub options: serde_json::Value,
    pub environment: EnvOut,
    pub groups: Vec<Group>,
    /// One value per boot (the median of the boot's runs), `replication: "boot"`.
    pub metrics: Vec<Metric>,
    pub variance: Vec<VarianceSplit>,
    pub warnings: Vec<String>,
}

fn groups_of(v: &ResultView) -> Vec<Group> {
    if v.kind == crate::core::Kind::Merged {
        return v.groups.clone();
    }
    vec![Group {
        label: v.label(),
        source: v.path.display().to_string(),
        created_unix: v.created_unix,
        kernel_release: v.environment.kernel_release.clone(),
        boot_id: v.environment.boot_id.clone(),
        runs: v.runs.len(),
        metrics: v.metrics.clone(),
    }]
}

/// One warning per boot that several results share (a merge of 1,000 copies of one file
/// printed 499,500 pairwise warnings).
fn shared_boots(groups: &[Group]) -> Vec<String> {
    let mut by_boot: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for g in groups {
        if let Some(b) = g.boot_id.as_deref() {
            by_boot.entry(b).or_default().push(&g.label);
        }
    }
    let shared = by_boot.into_iter().filter(|(_, l)| l.len() > 1);
    shared
        .map(|(boot, labels)| {
            let shown: Vec<&str> = labels.iter().take(5).copied().collect();
            let more = if labels.len() > 5 {
                format!(" and {} more", labels.len() - 5)
            } else {
                String::new()
            };
            format!(
                "{} results come from the same boot (boot id {boot}): {}{more}; they are not \
                 independent boots",
                labels.len(),
                shown.join(", ")
            )
        })
        .collect()
}

/// How a metric's variance splits between boots and runs within a boot.
fn variance_split(metric: &str, groups: &[&[f64]]) -> VarianceSplit {
    let (within, between) = anova::components(groups)
        .map(|c| (c.within, c.between))
        .unwrap_or((0.0, 0.0));
    VarianceSplit {
        metric: metric.to_string(),
        within_pstdev: within.sqrt(),
        between_pstdev: between.sqrt(),
        between_share_pct: if within + between > 0.0 {
            100.0 * between / (within + between)
        } else {
            0.0
        },
    }
}

/// Merge results of the same workload; merged inputs contribute their groups.
pub(crate) fn merge(views: &[ResultView], force: bool) -> Result<Merged> {
    if views.len() < 2 {
        bail!("merge needs at least two results (one per boot)");
    }
    let variants: Vec<Variant> = views.iter().map(Variant::from_view).collect();
    let mut warnings = check_comparable(&variants, force, false, Purpose::Merge)?;
    let groups: Vec<Group> = views.iter().flat_map(groups_of).collect();
    warnings.extend(shared_boots(&groups));
    let first = &groups[0];
    let mut metrics = Vec::new();
    let mut variance = Vec::new();
    for m0 in first.metrics.iter().filter(|m| m.summary.is_some()) {
        let per_group: Vec<&Metric> = groups
            .iter()
            .filter_map(|g| {
                g.metrics
                    .iter()
                    .find(|m| m.name == m0.name && m.summary.is_some())
            })
            .collect();
        if per_group.len() != groups.len() {
            warnings.push(format!(
                "{} is missing from some results: left out of the merge",
                m0.name
            ));
            continue;
        }
        let values: Vec<f64> = per_group.iter().map(|m| median(&m.values)).collect();
        let groups: Vec<&[f64]> = per_group.iter().map(|m| m.values.as_slice()).collect();
        variance.push(variance_split(&m0.name, &groups));
        metrics.push(Metric::of_values(
            m0.name.clone(),
            m0.unit.clone(),
            m0.kind,
            "boot",
            values,
            None,
        ));
    }
    let env: &EnvSummary = &views[0].environment;
    Ok(Merged {
        envelope: Envelope::new(Kind::Merged),
        created_unix: crate::core::now_unix(),
        workload: views[0].workload.clone(),
        op_name: views[0].op_name.clone(),
        options: views[0].options.clone(),
        environment: EnvOut {
            kernel_release: env.kernel_release.clone(),
            hostname: env.hostname.clone(),
            boot_id: None,
            hardware_pmu: env.hardware_pmu,
        },
        groups,
        metrics,
        variance,
        warnings,
    })
}
