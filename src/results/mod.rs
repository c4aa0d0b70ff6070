//! Result files: everything a run measured (every raw sample of every run), the options, the
//! environment, and the summaries derived from them, in a versioned JSON schema that later
//! commands (compare, merge, report) read back.
//!
//! - [`RunResult`] and its records; [`metrics`]: the per-op metrics derived from raw samples;
//! - [`validity`]: runs whose invariant counters moved;
//! - [`load`]: the one loader of result files of every kind, with one error type;
//! - [`slots`]: the per-round changes of paced rounds, sample slot by sample slot;
//! - [`thin`]: reading only some of the raw samples, for readers that do not need them all;
//! - [`view`]: the light reading the comparison commands stream from large files.

#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod functions;
pub(crate) mod load;
pub(crate) mod metrics;
pub(crate) mod sets;
pub(crate) mod slots;
pub(crate) mod thin;
pub(crate) mod validity;
pub(crate) mod view;

use crate::core::{CpuList, Envelope, Kind};
use crate::counters::{EventSpec, EventStatus, RawCount};
use crate::environment::Environment;
use crate::workloads::WorkloadSpec;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub(crate) use load::{Accept, LoadError};
pub(crate) use metrics::{Metric, MetricKind};

/// The clock that times every sample (`std::time::Instant` is CLOCK_MONOTONIC on Linux).
pub(crate) const CLOCK: &str = "CLOCK_MONOTONIC (clock_gettime via the vDSO)";

/// One timed batch: `ops` operations between two clock and counter readings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub ops: u64,
    /// Wall time of the batch, CLOCK_MONOTONIC, in ns.
    pub wall_ns: u64,
    /// One entry per event of the result's `events` list; `null` when the event is not counted.
    pub counts: Vec<Option<RawCount>>,
    /// When the batch started, CLOCK_MONOTONIC in ns (absent in files written before it was
    /// kept): places the samples of interleaved runs on one time line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<u64>,
}

/// How finely the arms of an interleaved design alternate within a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Grain {
    /// Run after run: each arm's run is done before the next arm's starts (A B, B A, ...).
    Runs,
    /// Sample after sample: the arms' runs of a round are alive together, and their samples
    /// alternate (A B, B A, ...), so a drift slower than a sample falls on every arm alike.
    #[default]
    Samples,
}

impl Grain {
    pub fn describe(self) -> &'static str {
        match self {
            Grain::Runs => "runs alternate within each round",
            Grain::Samples => "the runs of a round alternate sample by sample",
        }
    }
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
    #[serde(deserialize_with = "thin::other_samples")]
    pub warmup: Vec<Sample>,
    #[serde(deserialize_with = "thin::samples")]
    pub samples: Vec<Sample>,
    /// Samples of the empty loop, same harness and batch size: the measurement overhead.
    #[serde(deserialize_with = "thin::other_samples")]
    pub overhead: Vec<Sample>,
    /// Per-run metrics the workload reported itself (see `Workload::run_metrics`).
    #[serde(default)]
    pub workload_metrics: std::collections::BTreeMap<String, f64>,
    /// Facts the workload reported (e.g. the file system measured).
    #[serde(default)]
    pub notes: Vec<String>,
    /// One operation waited by its nature where this run ran (see
    /// `Workload::waits_where_it_ran`): its context switches are part of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits: bool,
    /// Under the emulator's cache models: the L1d lines that missed most in its sample
    /// windows, per operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed_lines: Vec<sets::MissedLine>,
    /// Under the emulator: where the worker's own kernel objects were (its task, audit
    /// context, credentials and stack), to name the lines that missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_objects: Option<crate::audit::own::OwnObjects>,
    /// Where the audit exit rules' entries were in this run, when the guest placed them anew
    /// before it (`campaign --placement run`, see `audit::anew`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::audit::addresses::Placement>,
}

impl RunRecord {
    /// Every batch of the run in the order its worker timed them: warm-up, samples, overhead.
    pub(crate) fn batches(&self) -> impl Iterator<Item = &Sample> {
        self.warmup
            .iter()
            .chain(&self.samples)
            .chain(&self.overhead)
    }

    /// [`RunRecord::batches`], to change.
    pub(crate) fn batches_mut(&mut self) -> impl Iterator<Item = &mut Sample> {
        let samples = self.warmup.iter_mut().chain(&mut self.samples);
        samples.chain(&mut self.overhead)
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one_copy() -> u32 {
    1
}

/// How the run was set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub runs: u32,
    /// `--until`: the precision the runs were added for (percent half-width), if adaptive.
    #[serde(default)]
    pub until_pct: Option<f64>,
    pub samples: u32,
    pub warmup: u32,
    pub ops_per_sample: u64,
    /// Sized by count (an exact counter's windows): the samples (and overhead batches) were
    /// these multiples of `ops_per_sample` in turn, and each exact count's figure is its slope
    /// over them. Empty: every batch was `ops_per_sample`, sized by time or as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<u64>,
    /// True when `ops_per_sample` came from calibration, false when the user gave `--ops`
    /// or it is the workload's own base for an exact count (`workload_base`).
    pub calibrated: bool,
    /// Sized by count, `ops_per_sample` is the workload's base (`Spec::COUNTED_OPS`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workload_base: bool,
    /// Target duration of one sample used by calibration, ns.
    pub sample_time_ns: u64,
    /// CPUs the workers were pinned to (`None`: not pinned).
    pub cpus: Option<CpuList>,
    /// SCHED_FIFO priority (`None`: the default policy).
    pub fifo: Option<i32>,
    /// Whether reported per-op values have the empty-loop overhead subtracted.
    pub subtract_overhead: bool,
    /// `--copies`: copies of the workload run at once (1 for results without it).
    #[serde(default = "one_copy")]
    pub copies: u32,
    #[serde(default)]
    pub copy_mode: crate::workloads::CopyMode,
    /// How each run's samples make its value (`mean` in files written before the choice).
    #[serde(default)]
    pub estimator: metrics::Estimator,
    /// Interleaved with other configurations (`ab`, sweeps): how finely; `None` for a plan
    /// measured alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<Grain>,
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

/// A result's emulated windows: one per timed batch, and how many of them were left out of
/// the counts because another task (a kworker, the boot's own work) ran in them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatedWindows {
    pub windows: usize,
    pub left_out: usize,
    /// Sample windows left out because an interrupt landed in them, while windows of two
    /// sizes or more that none landed in made each run's slope (an interrupt can lengthen the
    /// task's own path: a clock read it lands in is retried).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interrupted: usize,
    /// The interrupts the plugin left out of the kept sample windows' counts; `None`: the
    /// counts include them (the guest could not tell the plugin its kernel's entry points).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<InterruptsLeftOut>,
}

/// Interrupts left out of emulated counts: how many, their instructions (kernel and user
/// together), over how many operations of the windows they landed in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptsLeftOut {
    pub interrupts: u64,
    pub instructions: u64,
    pub ops: u64,
}

impl InterruptsLeftOut {
    /// Their instructions per operation of the windows.
    pub fn instructions_per_op(&self) -> f64 {
        self.instructions as f64 / self.ops.max(1) as f64
    }
}

/// A `syscost run` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Schema, version, kind (`run`) and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
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
    /// [`metrics::analyze_with`]) and stored for readers that do not recompute.
    pub metrics: Vec<Metric>,
    /// The empty-loop overhead per op, summarised the same way.
    pub overhead: Vec<Metric>,
    /// Where the time went (`--profile`), from a separate profiling run.
    #[serde(default)]
    pub profile: Option<crate::profile::Profile>,
    /// Modelled L1 misses by set per operation (a campaign's `--cache-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated_sets: Option<sets::EmulatedSets>,
    /// Kernel instructions per operation by function (a campaign's `--emulated-profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated_functions: Option<functions::EmulatedFunctions>,
    /// The batch windows the emulator counted, and those left out because another task ran
    /// in them (a campaign's `--emulated-counters`, when context switches were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated_windows: Option<EmulatedWindows>,
    /// What the reader should know before trusting the figures.
    pub warnings: Vec<String>,
    /// What was set up for the runs (the audit rules they ran under).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Set when this copy was read with only some of each run's raw samples (see [`thin`]):
    /// how many were kept of how many. Never written.
    #[serde(skip)]
    pub thinned: Option<thin::Thinning>,
}

/// The smallest change of an exact count's cost per operation between window sizes that is
/// flagged (`RunResult::size_bends`): below it a figure prints the same either way.
const BEND_FLOOR: f64 = 0.005;

impl RunResult {
    /// Flag runs whose invariant counters moved (see [`validity`]) in the warnings, and
    /// with `drop` leave them out of every metric.
    pub(crate) fn check_perturbed(&mut self, threshold_pct: f64, drop: bool) {
        if self.runs.len() < 3 {
            return;
        }
        let floor = 1.0 / self.options.ops_per_sample.max(1) as f64;
        let flagged = validity::find(&self.metrics, threshold_pct, floor);
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
            self.analyse(&keep);
            self.warnings.push(format!(
                "{}: {} of {} runs left out of the statistics (still in the file)",
                crate::core::input::spelled(crate::core::input::Opt::DropPerturbed),
                units.len(),
                self.runs.len()
            ));
        }
    }

    /// Warnings for the exact counts whose cost per operation depends on the window's size
    /// alike in every run (`stats::slope::bends`): a figure that is not a line's slope, flagged
    /// rather than passed off as one.
    pub(crate) fn size_bends(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, ev) in self.events.iter().enumerate() {
            if !ev.spec.is_emulated() {
                continue;
            }
            let windows: Vec<Vec<(u64, u64)>> = (self.runs.iter())
                .map(|r| metrics::windows_of(&r.samples, i).collect())
                .collect();
            let Some(b) = crate::stats::slope::bends(&windows, BEND_FLOOR) else {
                continue;
            };
            let (op, ops) = (&self.op_name, crate::core::plural(&self.op_name));
            out.push(format!(
                "{} depends on the window's length in every run: {} per {op} between the smaller \
                 windows, {} between the larger ({} to {} {ops}, the medians of the runs): a \
                 cache still filling, or a cost paid once in thousands of {ops}; its figure is \
                 the slope over every window, not one {op}'s cost. {} larger shows whether it \
                 settles",
                ev.spec.name,
                crate::core::fmt_num(b.small),
                crate::core::fmt_num(b.large),
                crate::core::num::group_thousands(&b.sizes.0.to_string()),
                crate::core::num::group_thousands(&b.sizes.1.to_string()),
                crate::core::input::spelled(crate::core::input::Opt::Ops),
            ));
        }
        out
    }

    /// The per-op metrics and the overhead again from the runs, as the run computed them
    /// (after counts were added to the samples: the emulator's, counted outside the guest).
    pub(crate) fn recompute(&mut self) {
        let runs = std::mem::take(&mut self.runs);
        self.analyse(&runs);
        self.runs = runs;
    }

    /// The per-op metrics and the overhead from `runs`, as the run computed them.
    fn analyse(&mut self, runs: &[RunRecord]) {
        let (m, o) = metrics::analyze_with(
            runs,
            &self.events,
            &self.op_name,
            self.options.subtract_overhead,
            self.options.estimator,
        );
        self.metrics = m;
        metrics::add_derived(&mut self.metrics, &self.workload);
        self.overhead = o;
    }

    /// Serialise as pretty JSON.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result types serialise")
    }

    /// Write to `path` atomically.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let mut s = self.to_json();
        s.push('\n');
        crate::core::write_atomic(path, s.as_bytes())
    }

    /// Read a result file, with one clear error naming the file and the problem.
    pub fn load(path: &Path) -> Result<RunResult, LoadError> {
        RunResult::decode(&load::open_checked(path, Self::ACCEPT)?, None)
    }

    /// Read a result file keeping at most `budget` raw samples of each run's lists (0: none),
    /// for readers that print no figure from them (`show`) or only draw them (`report`); the
    /// metrics are read whole. [`RunResult::thinned`] says what was left out.
    pub fn load_thinned(path: &Path, budget: usize) -> Result<RunResult, LoadError> {
        RunResult::decode(&load::open_checked(path, Self::ACCEPT)?, Some(budget))
    }

    /// Decode a checked file (whole, or with a budget of raw samples as [`load_thinned`]) and
    /// summarise its metrics again from their values.
    ///
    /// [`load_thinned`]: RunResult::load_thinned
    pub(crate) fn decode(
        checked: &load::Checked,
        budget: Option<usize>,
    ) -> Result<RunResult, LoadError> {
        let mut r: RunResult = match budget {
            None => checked.decode()?,
            Some(b) => {
                let (r, thinning) = thin::with_budget(b, || checked.decode::<RunResult>());
                let mut r = r?;
                r.thinned = thinning.dropped_any().then_some(thinning);
                r
            }
        };
        load::resummarise(checked.name(), &mut r.metrics)?;
        load::resummarise(checked.name(), &mut r.overhead)?;
        Ok(r)
    }

    /// Parse a result from JSON text, checking the envelope first.
    pub fn from_json(text: &str) -> Result<RunResult, LoadError> {
        let kind = load::check_text("the result", text, Self::ACCEPT)?;
        load::decode("the result", kind, text)
    }

    const ACCEPT: Accept = Accept {
        kinds: &[Kind::Run],
        wanted: "a result of `syscost run -o`",
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture with an exact count joined: each run three windows of 256, 512 and 1,024
    /// calls counting `count(calls)`.
    fn counted(count: impl Fn(u64) -> u64) -> RunResult {
        let mut r = fixture::fixed_result();
        r.events.push(EventRecord {
            spec: EventSpec::emulated("L1-dcache-load-misses:k (emulated)", true),
            group: 9,
            status: crate::counters::EventStatus::Counting,
        });
        for run in &mut r.runs {
            let first = run.samples[0].clone();
            run.samples = [256, 512, 1024]
                .map(|n| {
                    let mut s = first.clone();
                    s.ops = n;
                    s.counts.push(Some(crate::counters::RawCount {
                        value: count(n),
                        enabled: 1,
                        running: 1,
                    }));
                    s
                })
                .to_vec();
        }
        r.recompute();
        r
    }

    #[test]
    fn a_count_that_bends_with_the_window_is_flagged_not_averaged_quietly() {
        // A cache still filling: 2 misses more a call over the first 700 calls of a window.
        let filling = counted(|n| 4 * n + 2 * n.min(700) + 30);
        let said = filling.size_bends();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with("L1-dcache-load-misses:k (emulated) depends on the window"));
        assert!(
            said[0].contains("6.00 per call between the smaller windows"),
            "{}",
            said[0]
        );
        // A line: its slope, whole, and nothing said.
        let line = counted(|n| 4 * n + 30);
        assert!(line.size_bends().is_empty());
        let m = line
            .metrics
            .iter()
            .find(|m| m.name.starts_with("L1-dcache-load-misses"));
        assert_eq!(m.unwrap().values, [4.0, 4.0, 4.0]);
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
