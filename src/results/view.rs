//! A light reading of result files for the commands that compare them (compare, merge,
//! correlate): the per-op metrics, options and environment summary, streamed from disk without
//! keeping the raw samples, so files of millions of samples load quickly in little memory.

use super::Metric;
use super::load::{self, Accept, LoadError};
use crate::core::Kind;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One run's identity (its samples are skipped while reading): read only so that a run
/// without its index is refused as a damaged file, as the full reading refuses it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct RunMeta {
    #[allow(dead_code)]
    pub index: u32,
}

/// The parts of the environment comparisons show.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct EnvSummary {
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub kernel_release: Option<String>,
    #[serde(default)]
    pub boot_id: Option<String>,
    #[serde(default)]
    pub hardware_pmu: bool,
}

/// A group (one boot) of a merged result.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
pub(crate) struct Group {
    pub label: String,
    pub source: String,
    pub created_unix: u64,
    pub kernel_release: Option<String>,
    pub boot_id: Option<String>,
    pub runs: usize,
    /// The source's metrics: one value per run.
    pub metrics: Vec<Metric>,
}

#[derive(Debug, Deserialize)]
struct Raw {
    schema: Option<String>,
    #[serde(default, deserialize_with = "whole_number")]
    version: Option<u64>,
    kind: Option<String>,
    #[serde(default)]
    created_unix: u64,
    workload: Option<crate::workloads::RecordedWorkload>,
    #[serde(default)]
    op_name: Option<String>,
    #[serde(default)]
    options: Option<serde_json::Value>,
    #[serde(default)]
    metrics: Option<Vec<Metric>>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    environment: Option<EnvSummary>,
    #[serde(default)]
    runs: Option<Vec<RunMeta>>,
    #[serde(default)]
    groups: Option<Vec<Group>>,
    #[serde(default)]
    profile: Option<crate::profile::Profile>,
}

/// What compare, merge and correlate need of a `run` or `merged` result.
#[derive(Clone, Debug)]
pub(crate) struct ResultView {
    pub path: PathBuf,
    /// `run` or `merged`.
    pub kind: Kind,
    pub created_unix: u64,
    pub workload: crate::workloads::RecordedWorkload,
    pub op_name: String,
    pub options: serde_json::Value,
    pub metrics: Vec<Metric>,
    pub warnings: Vec<String>,
    pub environment: EnvSummary,
    pub runs: Vec<RunMeta>,
    pub groups: Vec<Group>,
    pub profile: Option<crate::profile::Profile>,
}

impl ResultView {
    /// The file's name, for tables.
    pub(crate) fn label(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }

    /// Whether the per-op values had the empty-loop overhead subtracted.
    pub(crate) fn subtract_overhead(&self) -> bool {
        self.options
            .get("subtract_overhead")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }

    /// The metric named `name`, if the result has it.
    pub(crate) fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Read `path`, with one error naming the file and what is wrong with it.
    pub(crate) fn load(path: &Path) -> Result<ResultView, LoadError> {
        let raw: Raw = load::stream(path)?;
        Self::of_raw(path, raw)
    }

    /// A result's JSON text (e.g. from the history store), named `name` in messages.
    /// A view of the figures a result of another kind comes to (one value each: an audit
    /// sweep's cost per rule, a probe's cost per hit), so its boots compare like runs.
    pub(crate) fn of_figures(
        name: &str,
        kind: Kind,
        created_unix: u64,
        workload: crate::workloads::RecordedWorkload,
        environment: EnvSummary,
        metrics: Vec<Metric>,
    ) -> ResultView {
        ResultView {
            path: PathBuf::from(name),
            kind,
            created_unix,
            workload,
            op_name: "op".into(),
            options: serde_json::Value::Null,
            metrics,
            warnings: Vec::new(),
            environment,
            runs: Vec::new(),
            groups: Vec::new(),
            profile: None,
        }
    }

    pub(crate) fn from_text(name: &str, text: &str) -> Result<ResultView, LoadError> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| LoadError::Syntax {
            path: name.to_string(),
            detail: e.to_string(),
        })?;
        Self::of_raw(Path::new(name), raw)
    }

    fn of_raw(path: &Path, raw: Raw) -> Result<ResultView, LoadError> {
        let name = path.display().to_string();
        let kind = load::check_envelope(
            &name,
            raw.schema.as_deref(),
            raw.version,
            raw.kind.as_deref(),
            Accept {
                kinds: &[Kind::Run, Kind::Merged],
                wanted: "results of `syscost run` or `syscost merge` to compare",
            },
        )?;
        let missing = |field| LoadError::Incomplete {
            path: name.clone(),
            field,
        };
        let mut metrics = raw.metrics.ok_or_else(|| missing("metrics"))?;
        load::resummarise(&name, &mut metrics)?;
        let mut groups = raw.groups.unwrap_or_default();
        for g in groups.iter_mut() {
            load::resummarise(&name, &mut g.metrics)?;
        }
        Ok(ResultView {
            path: path.to_path_buf(),
            created_unix: raw.created_unix,
            workload: raw.workload.ok_or_else(|| missing("workload"))?,
            op_name: raw.op_name.unwrap_or_else(|| "op".into()),
            options: raw.options.unwrap_or(serde_json::Value::Null),
            metrics,
            warnings: raw.warnings,
            environment: raw.environment.unwrap_or_default(),
            runs: raw.runs.unwrap_or_default(),
            groups,
            profile: raw.profile,
            kind,
        })
    }
}

/// A version that is not a whole number reads as none (and is refused as such).
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(serde_json::Value::deserialize(d)?.as_u64())
}
