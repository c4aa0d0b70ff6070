//! A light reading of result files for the commands that compare them (compare, merge,
//! correlate): the per-op metrics, options and environment summary, streamed from disk without
//! keeping the raw samples, so files of millions of samples load quickly in little memory.

use super::{Metric, SCHEMA, VERSION};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One run's identity (its samples are skipped while reading).
#[derive(Clone, Debug, Deserialize)]
pub struct RunMeta {
    pub index: u32,
    #[serde(default)]
    pub pid: u32,
}

/// The parts of the environment comparisons show.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct EnvSummary {
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
pub struct Group {
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
    version: Option<u64>,
    kind: Option<String>,
    #[serde(default)]
    created_unix: u64,
    workload: Option<serde_json::Value>,
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
pub struct ResultView {
    pub path: PathBuf,
    /// `run` or `merged`.
    pub kind: String,
    pub created_unix: u64,
    pub workload: serde_json::Value,
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
    pub fn label(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }

    /// Whether the per-op values had the empty-loop overhead subtracted.
    pub fn subtract_overhead(&self) -> bool {
        self.options
            .get("subtract_overhead")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }

    /// The metric named `name`, if the result has it.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Read `path`, with one error naming the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<ResultView> {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        if file.metadata().map(|m| m.len()).unwrap_or(1) == 0 {
            bail!(
                "{}: the file is empty, not a syscost result",
                path.display()
            );
        }
        let reader = std::io::BufReader::with_capacity(1 << 20, file);
        let raw: Raw = serde_json::from_reader(reader).map_err(|e| {
            let what = if e.is_eof() {
                format!("the JSON is truncated ({e}); the file was cut short")
            } else if e.is_syntax() {
                format!("not valid JSON ({e})")
            } else {
                format!("not a syscost result, or a damaged one ({e})")
            };
            anyhow::anyhow!("{}: {what}", path.display())
        })?;
        let fail = |msg: String| -> anyhow::Error { anyhow::anyhow!("{}: {msg}", path.display()) };
        match raw.schema.as_deref() {
            Some(SCHEMA) => {}
            Some(other) => return Err(fail(format!("schema '{other}' is not a syscost result"))),
            None => {
                return Err(fail(format!(
                    "not a syscost result: it has no \"schema\": \"{SCHEMA}\" field"
                )));
            }
        }
        let version = raw
            .version
            .ok_or_else(|| fail("the result has no schema version".into()))?;
        if version > VERSION as u64 {
            return Err(fail(format!(
                "written by a newer syscost (schema version {version}; this syscost reads up to \
                 {VERSION}): upgrade syscost to read it"
            )));
        }
        let kind = raw.kind.unwrap_or_default();
        if kind != "run" && kind != "merged" {
            return Err(fail(format!(
                "a '{kind}' result cannot be compared; give results of `syscost run` or \
                 `syscost merge`"
            )));
        }
        let missing = |f: &str| fail(format!("the result is incomplete: it has no \"{f}\""));
        Ok(ResultView {
            path: path.to_path_buf(),
            created_unix: raw.created_unix,
            workload: raw.workload.ok_or_else(|| missing("workload"))?,
            op_name: raw.op_name.unwrap_or_else(|| "op".into()),
            options: raw.options.unwrap_or(serde_json::Value::Null),
            metrics: raw.metrics.ok_or_else(|| missing("metrics"))?,
            warnings: raw.warnings,
            environment: raw.environment.unwrap_or_default(),
            runs: raw.runs.unwrap_or_default(),
            groups: raw.groups.unwrap_or_default(),
            profile: raw.profile,
            kind,
        })
    }
}
