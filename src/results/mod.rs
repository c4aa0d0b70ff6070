//! Result files: everything a run measured (every raw sample of every run), the options, the
//! environment, and the summaries derived from them, in a versioned JSON schema that later
//! commands (compare, merge, report) read back.

pub mod metrics;
pub mod view;

use crate::counters::{EventSpec, EventStatus, RawCount};
use crate::environment::Environment;
use crate::workloads::WorkloadSpec;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

pub use metrics::{Metric, MetricKind};

/// The `schema` field of every syscost result file.
pub const SCHEMA: &str = "syscost-result";
/// The schema version this build writes; it reads this version and older ones.
pub const VERSION: u32 = 1;

/// One timed batch: `ops` operations between two clock and counter readings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub ops: u64,
    /// Wall time of the batch, CLOCK_MONOTONIC, in ns.
    pub wall_ns: u64,
    /// One entry per event of the result's `events` list; `null` when the event is not counted.
    pub counts: Vec<Option<RawCount>>,
}

/// One run: one worker process, like one repetition of `perf stat -r`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub index: u32,
    pub pid: u32,
    /// The CPU the worker was on when it started and when it finished measuring.
    pub cpu_first: Option<usize>,
    pub cpu_last: Option<usize>,
    /// The scheduling policy the worker measured under, e.g. `SCHED_OTHER` or `SCHED_FIFO 50`.
    pub sched: String,
    /// Samples discarded as warm-up (kept for inspection, excluded from every statistic).
    pub warmup: Vec<Sample>,
    pub samples: Vec<Sample>,
    /// Samples of the empty loop, same harness and batch size: the measurement overhead.
    pub overhead: Vec<Sample>,
    /// Per-run metrics the workload reported itself (see `Workload::run_metrics`).
    #[serde(default)]
    pub workload_metrics: std::collections::BTreeMap<String, f64>,
    /// Facts the workload reported (e.g. the file system measured).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// How the run was set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub runs: u32,
    pub samples: u32,
    pub warmup: u32,
    pub ops_per_sample: u64,
    /// True when `ops_per_sample` came from calibration, false when the user gave `--ops`.
    pub calibrated: bool,
    /// Target duration of one sample used by calibration, ns.
    pub sample_time_ns: u64,
    /// CPUs the workers were pinned to (`None`: not pinned).
    pub cpus: Option<crate::runner::CpuList>,
    /// SCHED_FIFO priority (`None`: the default policy).
    pub fifo: Option<i32>,
    /// Whether reported per-op values have the empty-loop overhead subtracted.
    pub subtract_overhead: bool,
}

/// An event and whether it was counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    #[serde(flatten)]
    pub spec: EventSpec,
    /// The group the event was opened in (index into the event groups).
    pub group: usize,
    pub status: EventStatus,
}

/// The tool that wrote a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub fn this() -> ToolInfo {
        ToolInfo {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// A `syscost run` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub version: u32,
    /// Always `run` for this type; other commands write other kinds.
    pub kind: String,
    pub tool: ToolInfo,
    /// Seconds since the epoch when the run finished.
    pub created_unix: u64,
    pub workload: WorkloadSpec,
    /// What one operation is ("call", "iteration").
    pub op_name: String,
    pub options: RunOptions,
    /// The clock that timed the samples.
    pub clock: String,
    pub events: Vec<EventRecord>,
    pub environment: Environment,
    pub runs: Vec<RunRecord>,
    /// Per-op metrics summarised over the units of replication; derived from `runs` (see
    /// [`metrics::analyze`]) and stored for readers that do not recompute.
    pub metrics: Vec<Metric>,
    /// The empty-loop overhead per op, summarised the same way.
    pub overhead: Vec<Metric>,
    /// Where the time went (`--profile`), from a separate profiling run.
    #[serde(default)]
    pub profile: Option<crate::profile::Profile>,
    /// What the reader should know before trusting the figures.
    pub warnings: Vec<String>,
}

/// Seconds since the epoch, for the `created_unix` of results.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Check, before measuring, that `path` can be written: a run that fails at the end because of
/// a typo in `-o` wastes the user's time.
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!(
            "cannot write results to {}: it is a directory; give a file name",
            path.display()
        );
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        bail!(
            "cannot write results to {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    tempfile::Builder::new()
        .prefix(".syscost-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "cannot write results to {}: directory {} is not writable",
                path.display(),
                dir.display()
            )
        })?;
    Ok(())
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over `path`. Readers see the old file or the new one, never half of one; the
/// temporary file is removed if anything fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".syscost-")
        .suffix(".tmp")
        // An ordinary file for its reader (0666 less the umask), not tempfile's private 0600.
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

impl RunResult {
    /// Flag runs whose invariant counters moved (see `compare::validity`) in the warnings, and
    /// with `drop` leave them out of every metric.
    pub fn check_perturbed(&mut self, threshold_pct: f64, drop: bool) {
        if self.runs.len() < 3 {
            return;
        }
        let floor = 1.0 / self.options.ops_per_sample.max(1) as f64;
        let flagged = crate::compare::validity::find(&self.metrics, threshold_pct, floor);
        let mut units: Vec<u32> = flagged.iter().map(|p| p.unit).collect();
        units.sort();
        units.dedup();
        for p in &flagged {
            self.warnings
                .push(format!("perturbed {}", p.describe("run")));
        }
        if drop && !units.is_empty() {
            let keep: Vec<RunRecord> = self
                .runs
                .iter()
                .enumerate()
                .filter(|(i, _)| !units.contains(&(*i as u32)))
                .map(|(_, r)| r.clone())
                .collect();
            let (m, o) = metrics::analyze(
                &keep,
                &self.events,
                &self.op_name,
                self.options.subtract_overhead,
            );
            self.metrics = m;
            if let Some((part, n)) = self.workload.parts() {
                metrics::add_per_part(&mut self.metrics, part, n);
            }
            if let Some(t) = self.workload.threads() {
                metrics::add_throughput(&mut self.metrics, t);
            }
            self.overhead = o;
            self.warnings.push(format!(
                "--drop-perturbed: {} of {} runs left out of the statistics (still in the file)",
                units.len(),
                self.runs.len()
            ));
        }
    }

    /// Serialise as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result types serialise")
    }

    /// Write to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut s = self.to_json();
        s.push('\n');
        write_atomic(path, s.as_bytes())
    }

    /// Read a result file, with one clear error naming the file and the problem.
    pub fn load(path: &Path) -> Result<RunResult> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_json(&text).with_context(|| format!("{}", path.display()))
    }

    /// Parse a result from JSON text, checking the schema and version first.
    pub fn from_json(text: &str) -> Result<RunResult> {
        if text.trim().is_empty() {
            bail!("the file is empty, not a syscost result");
        }
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            if e.is_eof() {
                anyhow::anyhow!("the JSON is truncated ({e}); the file was cut short")
            } else {
                anyhow::anyhow!("not valid JSON: {e}")
            }
        })?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => bail!("schema '{other}' is not a syscost result ('{SCHEMA}')"),
            None => bail!("not a syscost result: it has no \"schema\": \"{SCHEMA}\" field"),
        }
        let version = value
            .get("version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| anyhow::anyhow!("the result has no schema version"))?;
        if version > VERSION as u64 {
            bail!(
                "written by a newer syscost (schema version {version}; this syscost reads up to \
                 {VERSION}): upgrade syscost to read it"
            );
        }
        match value.get("kind").and_then(|k| k.as_str()) {
            Some("run") => {}
            Some(k) => bail!("this is a '{k}' result, not a 'run' result"),
            None => bail!("the result has no kind"),
        }
        serde_json::from_value(value)
            .map_err(|e| anyhow::anyhow!("the result is damaged or incomplete: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "only the result remains: {names:?}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_ne!(
            mode & 0o044,
            0,
            "readable beyond its owner under a usual umask: {mode:o}"
        );
    }

    #[test]
    fn writability_checked_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable(&dir.path().join("ok.json")).is_ok());
        let e = check_writable(&dir.path().join("missing/x.json")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = check_writable(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn bad_files_are_refused_clearly() {
        let msg = |t: &str| format!("{:#}", RunResult::from_json(t).unwrap_err());
        assert!(msg("").contains("empty"));
        assert!(msg("{\"schema\": \"syscost-res").contains("truncated"));
        assert!(msg("[1,2]").contains("not a syscost result"));
        assert!(msg("{\"schema\":\"other\"}").contains("not a syscost result"));
        assert!(
            msg("{\"schema\":\"syscost-result\",\"version\":99,\"kind\":\"run\"}")
                .contains("newer syscost")
        );
        assert!(
            msg("{\"schema\":\"syscost-result\",\"version\":1,\"kind\":\"run\"}")
                .contains("damaged or incomplete")
        );
    }
}
