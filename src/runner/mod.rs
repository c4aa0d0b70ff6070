//! The runner: calibrates the batch size, then runs each repetition in a fresh worker process
//! (like `perf stat -r`), and assembles the result. It knows nothing of the workload beyond its
//! [`WorkloadSpec`].

pub mod cpus;
pub mod scale;
pub mod worker;

pub use cpus::CpuList;

use crate::counters::{EventList, EventStatus};
use crate::environment::Environment;
use crate::results::{self, EventRecord, RunOptions, RunRecord, RunResult, ToolInfo};
use crate::signals;
use crate::workloads::WorkloadSpec;
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use worker::{Mode, Reply, Request};

/// The clock that times every sample (`std::time::Instant` is CLOCK_MONOTONIC on Linux).
pub const CLOCK: &str = "CLOCK_MONOTONIC (clock_gettime via the vDSO)";

/// What to measure and how.
#[derive(Clone, Debug)]
pub struct Plan {
    pub workload: WorkloadSpec,
    pub events: EventList,
    pub cpus: Option<CpuList>,
    pub fifo: Option<i32>,
    pub runs: u32,
    pub samples: u32,
    pub warmup: u32,
    /// Target duration of one sample for calibration.
    pub sample_time: Duration,
    /// Operations per sample; `None` calibrates.
    pub ops: Option<u64>,
    /// Empty-loop samples per run for the overhead figure.
    pub overhead_samples: u32,
    pub subtract_overhead: bool,
    /// A shell command run before each run, outside any timed region (perf stat --pre).
    pub pre: Option<String>,
    /// After the measured runs, one more run sampling call chains for the profile.
    pub profile: bool,
}

/// Progress notifications. They are sent only while no worker is measuring, so whatever draws
/// them never runs beside a timed region.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    Calibrating,
    Calibrated { ops: u64 },
    RunFinished { index: u32, of: u32 },
}

/// Validate a plan before anything runs; every message says what to change.
pub fn validate(plan: &Plan) -> Result<()> {
    if plan.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if plan.samples == 0 {
        bail!("--samples must be at least 1");
    }
    if plan.ops == Some(0) {
        bail!("--ops must be at least 1");
    }
    if plan.sample_time.is_zero() {
        bail!("--sample-time must be longer than zero");
    }
    if let Some(c) = &plan.cpus {
        cpus::check_allowed(c).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// Find the batch size: `--ops` as given, or calibrated in a worker of its own.
pub fn batch_size(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<(u64, bool)> {
    if let Some(ops) = plan.ops {
        return Ok((ops, false));
    }
    progress(Progress::Calibrating);
    let reply = spawn(&request(
        plan,
        Mode::Calibrate {
            target_ns: plan.sample_time.as_nanos() as u64,
        },
    ))?;
    match reply {
        Reply::Calibrated { ops, .. } => {
            progress(Progress::Calibrated { ops });
            Ok((ops, true))
        }
        other => bail!("unexpected reply from the calibration worker: {other:?}"),
    }
}

/// Run the plan's --pre command, if any.
fn pre(plan: &Plan) -> Result<()> {
    let Some(cmd) = &plan.pre else { return Ok(()) };
    let status = Command::new("/bin/sh")
        .args(["-c", cmd])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("cannot run --pre '{cmd}'"))?;
    signals::check()?;
    if !status.success() {
        bail!("--pre '{cmd}' failed: {status}");
    }
    Ok(())
}

/// One run in a fresh worker.
pub fn measure(plan: &Plan, ops: u64, index: u32) -> Result<(RunRecord, Vec<EventStatus>)> {
    pre(plan)?;
    let req = request(
        plan,
        Mode::Measure {
            index,
            ops,
            warmup: plan.warmup,
            samples: plan.samples,
            overhead_samples: plan.overhead_samples,
            profile: false,
        },
    );
    match spawn(&req)? {
        Reply::Measured { run, statuses, .. } => Ok((*run, statuses)),
        other => bail!("unexpected reply from worker {index}: {other:?}"),
    }
}

/// One more run, sampling call chains: its timing is not used, so the sampling never perturbs
/// the measured runs.
pub fn profile_run(plan: &Plan, ops: u64) -> Result<crate::profile::Profile> {
    pre(plan)?;
    let req = request(
        plan,
        Mode::Measure {
            index: plan.runs,
            ops,
            warmup: 0,
            samples: plan.samples.max(1),
            overhead_samples: 0,
            profile: true,
        },
    );
    match spawn(&req)? {
        Reply::Measured {
            profile: Some(mut p),
            ..
        } => {
            p.notes.push(
                "taken in a run of its own after the measured runs; its sampling did not \
                 touch them"
                    .into(),
            );
            Ok(p)
        }
        other => bail!("unexpected reply from the profiling worker: {other:?}"),
    }
}

/// Calibrate if needed, run every repetition, and build the result.
pub fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<RunResult> {
    validate(plan)?;
    let environment = Environment::collect();
    let (ops, calibrated) = batch_size(plan, progress)?;
    let mut runs = Vec::with_capacity(plan.runs as usize);
    let mut statuses = Vec::new();
    for index in 0..plan.runs {
        let (run, s) = measure(plan, ops, index)?;
        if statuses.is_empty() {
            statuses = s;
        }
        runs.push(run);
        progress(Progress::RunFinished {
            index,
            of: plan.runs,
        });
    }
    let mut result = assemble(plan, ops, calibrated, runs, statuses, environment);
    if plan.profile {
        result.profile = Some(profile_run(plan, ops)?);
    }
    Ok(result)
}

/// The order in which round `round` visits `n` configurations: forwards on even rounds,
/// backwards on odd ones (A B, B A, ...: ABBA), so drift falls on every configuration alike.
pub fn round_order(round: u32, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// Run several plans of the same shape interleaved, as `syscost ab` does: every round visits
/// every plan, in alternating order (A B, B A, ...: ABBA), so drift of the machine's speed
/// over time falls on all of them alike. Each plan is calibrated on its own first.
pub fn run_interleaved(
    plans: &[Plan],
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    let Some(first) = plans.first() else {
        bail!("nothing to measure");
    };
    for p in plans {
        validate(p)?;
        if p.runs != first.runs {
            bail!(
                "every configuration needs the same number of runs to be interleaved ({} vs {})",
                first.runs,
                p.runs
            );
        }
    }
    let environment = Environment::collect();
    let mut sizes = Vec::new();
    for p in plans {
        sizes.push(batch_size(p, progress)?);
    }
    let mut runs: Vec<Vec<RunRecord>> = vec![Vec::new(); plans.len()];
    let mut statuses: Vec<Vec<EventStatus>> = vec![Vec::new(); plans.len()];
    let total = first.runs * plans.len() as u32;
    let mut done = 0;
    for round in 0..first.runs {
        for k in round_order(round, plans.len()) {
            let (run, s) = measure(&plans[k], sizes[k].0, round)?;
            if statuses[k].is_empty() {
                statuses[k] = s;
            }
            runs[k].push(run);
            progress(Progress::RunFinished {
                index: done,
                of: total,
            });
            done += 1;
        }
    }
    let mut results: Vec<RunResult> = plans
        .iter()
        .zip(&sizes)
        .zip(runs.into_iter().zip(statuses))
        .map(|((p, (ops, cal)), (r, s))| assemble(p, *ops, *cal, r, s, environment.clone()))
        .collect();
    for ((p, (ops, _)), r) in plans.iter().zip(&sizes).zip(results.iter_mut()) {
        if p.profile {
            r.profile = Some(profile_run(p, *ops)?);
        }
    }
    Ok(results)
}

/// Build the result of a plan from its runs.
pub fn assemble(
    plan: &Plan,
    ops: u64,
    calibrated: bool,
    runs: Vec<RunRecord>,
    statuses: Vec<EventStatus>,
    environment: Environment,
) -> RunResult {
    let mut events = Vec::new();
    for (g, group) in plan.events.groups.iter().enumerate() {
        for spec in group {
            let status = statuses
                .get(events.len())
                .cloned()
                .unwrap_or_else(|| EventStatus::Failed("no status from the worker".into()));
            events.push(EventRecord {
                spec: spec.clone(),
                group: g,
                status,
            });
        }
    }
    let op_name = plan.workload.op_name().to_string();
    let (mut metrics, overhead) =
        results::metrics::analyze(&runs, &events, &op_name, plan.subtract_overhead);
    if let Some((part, n)) = plan.workload.parts() {
        results::metrics::add_per_part(&mut metrics, part, n);
    }
    if let Some(t) = plan.workload.threads() {
        results::metrics::add_throughput(&mut metrics, t);
    }
    let mut result = RunResult {
        schema: results::SCHEMA.into(),
        version: results::VERSION,
        kind: "run".into(),
        tool: ToolInfo::this(),
        created_unix: crate::results::now_unix(),
        workload: plan.workload.clone(),
        op_name,
        options: RunOptions {
            runs: plan.runs,
            samples: plan.samples,
            warmup: plan.warmup,
            ops_per_sample: ops,
            calibrated,
            sample_time_ns: plan.sample_time.as_nanos() as u64,
            cpus: plan.cpus.clone(),
            fifo: plan.fifo,
            subtract_overhead: plan.subtract_overhead,
        },
        clock: CLOCK.into(),
        events,
        environment,
        runs,
        metrics,
        overhead,
        profile: None,
        warnings: Vec::new(),
    };
    result.warnings = run_warnings(&result);
    result
}

fn request(plan: &Plan, mode: Mode) -> Request {
    Request {
        parent: std::process::id(),
        workload: plan.workload.clone(),
        events: plan.events.clone(),
        cpus: plan.cpus.clone(),
        fifo: plan.fifo,
        mode,
    }
}

/// Start a worker, hand it the request, wait for its reply.
fn spawn(req: &Request) -> Result<Reply> {
    signals::check()?;
    let exe = std::env::current_exe().context("cannot find syscost's own executable")?;
    let mut child = Command::new(exe)
        .arg("__worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start a worker process")?;
    let _guard = signals::ChildGuard::new(child.id());
    let input = serde_json::to_vec(req).expect("requests serialise");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&input)
            .context("cannot send the request to the worker")?;
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout
            .read_to_string(&mut out)
            .context("cannot read the worker's reply")?;
    }
    let status = child.wait().context("waiting for the worker")?;
    signals::check()?;
    let reply: Reply = match serde_json::from_str(out.trim()) {
        Ok(r) => r,
        Err(_) => bail!("the worker process died ({status}) without a reply"),
    };
    match reply {
        Reply::Failed { message } => bail!("{message}"),
        r => Ok(r),
    }
}

/// Warnings about this run's figures (the environment's own warnings are in the environment).
fn run_warnings(r: &RunResult) -> Vec<String> {
    let mut w = Vec::new();
    if r.options.cpus.is_none() {
        w.push(
            "workers were not pinned (--cpu): migrations and frequency changes add noise".into(),
        );
    }
    let hw_unsupported: Vec<&str> = r
        .events
        .iter()
        .filter(|e| !e.spec.is_software() && !e.status.is_counting())
        .map(|e| e.spec.name.as_str())
        .collect();
    // Without a PMU the environment's warning already says so.
    if !hw_unsupported.is_empty() && r.environment.hardware_pmu {
        w.push(format!(
            "not counted on this machine: {} (reasons under the table)",
            hw_unsupported.join(", ")
        ));
    }
    for m in &r.metrics {
        if let Some(p) = m.running_pct
            && p < 99.5
        {
            w.push(format!(
                "{} was multiplexed (on the PMU {p:.1}% of the time); its value is scaled",
                m.name
            ));
        }
    }
    let shortest = r
        .runs
        .iter()
        .flat_map(|run| &run.samples)
        .map(|s| s.wall_ns)
        .min()
        .unwrap_or(u64::MAX);
    if shortest < 1_000_000 {
        w.push(format!(
            "the shortest sample lasted {:.1} µs: timer and counter reads weigh on short \
             samples; use a longer --sample-time or a larger --ops",
            shortest as f64 / 1000.0
        ));
    }
    if let Some(cs) = r
        .metrics
        .iter()
        .find(|m| m.name == "context-switches")
        .and_then(|m| m.summary.as_ref())
        && cs.median > 0.05
    {
        w.push(format!(
            "the loop sleeps: {} context switches per {}: it waits (for I/O, a lock, the \
             scheduler), so the figures measure the wait, not only the kernel path (on ext4, \
             O_TRUNC then close of a written file waits for a block write: try a tmpfs such as \
             /dev/shm)",
            crate::report::fmt_num(cs.median),
            r.op_name
        ));
    }
    if r.runs.len() == 1 {
        w.push(
            "a single run: statistics are over its samples, which share one process and one \
             placement in memory; use --runs 5 or more for run-to-run variation"
                .into(),
        );
    }
    let moved = r
        .runs
        .iter()
        .filter(|run| run.cpu_first.is_some() && run.cpu_first != run.cpu_last)
        .count();
    if moved > 0 {
        w.push(format!(
            "{moved} run(s) ended on another CPU than they started on: pin with --cpu"
        ));
    }
    w
}
