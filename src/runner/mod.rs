//! The runner: calibrates the batch size, then runs each repetition in a fresh worker process
//! (like `perf stat -r`), and assembles the result. It knows nothing of the workload beyond its
//! [`WorkloadSpec`].
//!
//! Runs are carried out by an [`Executor`]: [`Workers`] starts a worker process per run (see
//! [`worker`]); tests hand in a fake that answers in-process, so the interleaving and the
//! assembly of results can be checked without root or timing. Every alternating design (`ab`,
//! the audit sweep, thread sweeps, `probe`) goes through [`interleave`].

pub(crate) mod audit_rules;
pub(crate) mod copies;
pub mod interleave;
pub(crate) mod paced;
pub(crate) mod worker;

pub(crate) use crate::core::CpuList;
pub use interleave::{interleave, round_order, run_interleaved, run_interleaved_with};

use crate::core::input::{Opt, spelled};
use crate::core::{Envelope, Kind, fmt_num, now_unix};
use crate::counters::{EventList, EventStatus};
use crate::environment::Environment;
use crate::profile::Profile;
use crate::refused;
use crate::results::metrics::Estimator;
use crate::results::{self, EventRecord, Grain, RunOptions, RunRecord, RunResult};
use crate::signals;
use crate::workloads::WorkloadSpec;
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use worker::{Mode, Reply, Request};

pub(crate) use crate::results::CLOCK;

/// The floor design: each run 100 samples of 10 ms, its value the fastest (the estimator, the
/// samples per run and the sample time). On a busy host (this project's VM) it resolved a 2%
/// change where 10 samples of 100 ms could not (docs/src/comparing.md, "Noisy machines"). `ab`'s default;
/// suggested by a run's warnings when most runs were hit.
pub(crate) const FLOOR_DESIGN: (Estimator, u32, Duration) =
    (Estimator::Min, 100, Duration::from_millis(10));

/// The floor design as command-line options, e.g. for a message.
pub(crate) fn floor_options() -> String {
    let (estimator, samples, time) = FLOOR_DESIGN;
    crate::said!(
        Opt::Estimator,
        format!(" {} ", format!("{estimator:?}").to_lowercase()),
        Opt::SampleTime,
        format!(" {} ", humantime::format_duration(time)),
        Opt::Samples,
        format!(" {samples}")
    )
    .spell(spelled)
}

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
    /// Operations per sample (the base size under [`Sizing::Count`]); `None` calibrates,
    /// or under [`Sizing::Count`] takes the workload's own.
    pub ops: Option<u64>,
    /// How the batches are sized: by time, or by count for an exact counter.
    pub sizing: Sizing,
    /// Empty-loop samples per run for the overhead figure.
    pub overhead_samples: u32,
    pub subtract_overhead: bool,
    /// A shell command run before each run, outside any timed region (perf stat --pre).
    pub pre: Option<String>,
    /// After the measured runs, one more run sampling call chains for the profile.
    pub profile: bool,
    /// How each run's samples make its value.
    pub estimator: crate::results::metrics::Estimator,
    /// Adaptive runs: `runs` is then the minimum, and rounds are added until the primary
    /// figure is precise enough or a limit is reached.
    pub until: Option<Until>,
    /// Copies of the workload run at once (`--copies`); `None`: the worker alone, unwrapped.
    pub copies: Option<u32>,
    pub copy_mode: crate::workloads::CopyMode,
    /// Audit rules loaded for this plan's runs (`--audit-rules`; see [`audit_rules`]).
    pub audit_rules: Option<crate::audit::rules_file::RuleSet>,
}

/// How the batches of a run are sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sizing {
    /// By time: every batch of a run the same size, calibrated so that one lasts
    /// `sample_time` (or `ops` as given); a figure is a run's total over its operations.
    Time,
    /// By count, for an exact counter (syscost's TCG plugin counting each batch's window: a
    /// count does not get truer by repeating it, and time under the emulator says nothing of
    /// the kernel): a run's samples are [`SIZE_CYCLE`] times the base batch in turn, and each
    /// exact count's figure is its slope over them (`stats::slope`), so what a window pays
    /// once cancels. The base: `ops` when given; calibrated to `sample_time` when `by_time`
    /// (`--sample-time` given); else the workload's own (`WorkloadSpec::counted_ops`).
    Count { by_time: bool },
}

impl Sizing {
    /// How this process sizes its batches: by count when its windows are counted exactly
    /// (a campaign guest's measurement under syscost's TCG plugin), `by_time` when a sample
    /// time was asked for all the same.
    pub(crate) fn here(by_time: bool) -> Sizing {
        if crate::counters::emulated::marking() {
            Sizing::Count { by_time }
        } else {
            Sizing::Time
        }
    }

    pub(crate) fn counted(self) -> bool {
        matches!(self, Sizing::Count { .. })
    }
}

/// Under [`Sizing::Count`], the sizes of a run's samples in turn, as multiples of the base:
/// the slope between 1 and 2 cancels what a window pays once, and a third size shows a cost
/// per operation that depends on the window's length (a cache still filling: `stats::slope`'s
/// bend).
pub(crate) const SIZE_CYCLE: [u64; 3] = [1, 2, 4];

/// The operations of a run's `k`th sample (or overhead batch) of base size `ops`; warm-up
/// batches take the base.
pub(crate) fn sample_ops(ops: u64, counted: bool, k: usize) -> u64 {
    match counted {
        true => ops.saturating_mul(SIZE_CYCLE[k % SIZE_CYCLE.len()]),
        false => ops,
    }
}

/// When adaptive runs stop (`--until PCT --max-time DURATION`). Stopping is on precision,
/// never on a p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Until {
    /// The target half-width of the 95% interval, percent of the median: of the time per op for
    /// one plan, of each variant's paired change against the first for several.
    pub pct: f64,
    /// Stop adding rounds after this long.
    pub max_time: Duration,
    /// And after this many rounds.
    pub max_runs: u32,
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
pub(crate) fn validate(plan: &Plan) -> Result<()> {
    if plan.runs == 0 {
        bail!(refused!(Opt::Runs, " must be at least 1"));
    }
    if plan.samples == 0 {
        bail!(refused!(Opt::Samples, " must be at least 1"));
    }
    if plan.ops == Some(0) {
        bail!(refused!(Opt::Ops, " must be at least 1"));
    }
    if plan.sample_time.is_zero() {
        bail!(refused!(Opt::SampleTime, " must be longer than zero"));
    }
    if plan.sample_time > MAX_BATCH {
        bail!(refused!(
            Opt::SampleTime,
            format!(
                " {}: at most {}, so that a stop (Ctrl-C) ends a run within about that long; \
                 for longer runs give more ",
                humantime::format_duration(plan.sample_time),
                humantime::format_duration(MAX_BATCH)
            ),
            Opt::Samples
        ));
    }
    for (flag, n, most) in [
        (Opt::Runs, plan.runs, MAX_RUNS),
        (Opt::Samples, plan.samples, MAX_SAMPLES),
        (Opt::Warmup, plan.warmup, MAX_SAMPLES),
        (Opt::OverheadSamples, plan.overhead_samples, MAX_SAMPLES),
    ] {
        if n > most {
            bail!(refused!(
                flag,
                format!(
                    " {}: at most {} (every sample is kept in the result)",
                    crate::core::num::group_thousands(&n.to_string()),
                    crate::core::num::group_thousands(&most.to_string())
                )
            ));
        }
    }
    if let Some(u) = plan.until {
        if !(u.pct.is_finite() && u.pct > 0.0) {
            bail!(refused!(
                Opt::Until,
                " must be a precision above 0%, like 1%"
            ));
        }
        if u.max_runs < plan.runs {
            bail!(refused!(
                Opt::Until,
                format!(": the cap of {} runs is below ", u.max_runs),
                Opt::Runs,
                format!(" {}", plan.runs)
            ));
        }
        if plan.runs < 3 {
            bail!(refused!(
                Opt::Until,
                " needs ",
                Opt::Runs,
                " 3 or more to start from: an interval needs a spread"
            ));
        }
    }
    if let Some(c) = &plan.cpus {
        crate::core::cpus::check_allowed(c, Opt::Cpu).map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

/// The most runs of a plan (each a worker process) and samples of a run (each kept in the
/// result): enough for any real experiment, and a typo such as 4000000000 is refused rather
/// than aborting on an allocation.
pub(crate) const MAX_RUNS: u32 = 100_000;
pub(crate) const MAX_SAMPLES: u32 = 100_000;

/// What a calibration found: `ops` operations made one batch last `batch_ns`, the first
/// doubling to reach the sample time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    pub ops: u64,
    pub batch_ns: u64,
}

/// What carries out the runs of a plan.
pub trait Executor {
    /// How many operations make one sample last at least the plan's sample time.
    fn calibrate(&mut self, plan: &Plan) -> Result<Calibration>;
    /// One measured run of `ops`-operation batches; `index` numbers it in its result.
    fn measure(
        &mut self,
        plan: &Plan,
        ops: u64,
        index: u32,
    ) -> Result<(RunRecord, Vec<EventStatus>)>;
    /// One run of each arm (`(plan, ops)`), alive together, their samples alternating (see
    /// [`paced`]); `index` numbers the round. The runs in the arms' order.
    fn measure_paced(
        &mut self,
        arms: &[(&Plan, u64)],
        index: u32,
    ) -> Result<Vec<(RunRecord, Vec<EventStatus>)>>;
    /// The time per operation of a batch of up to `ops` operations that lasts about 20 ms (or
    /// all of them, if sooner): how long a given `--ops` batch will take. 0 where the executor
    /// cannot tell (the in-process fakes of the tests): nothing is then refused.
    fn batch_ns_per_op(&mut self, _plan: &Plan, _ops: u64) -> Result<f64> {
        Ok(0.0)
    }
    /// One more run sampling call chains; its timing is not used.
    fn profile(&mut self, plan: &Plan, ops: u64) -> Result<Profile>;
}

/// The real executor: every run in a fresh worker process, each preceded by the plan's --pre.
pub(crate) struct Workers;

impl Executor for Workers {
    fn calibrate(&mut self, plan: &Plan) -> Result<Calibration> {
        let reply = spawn(&request(
            plan,
            Mode::Calibrate {
                target_ns: plan.sample_time.as_nanos() as u64,
                max_ops: None,
            },
        ))?;
        match reply {
            Reply::Calibrated { ops, batch_ns } => Ok(Calibration { ops, batch_ns }),
            other => bail!("unexpected reply from the calibration worker: {other:?}"),
        }
    }

    fn measure(
        &mut self,
        plan: &Plan,
        ops: u64,
        index: u32,
    ) -> Result<(RunRecord, Vec<EventStatus>)> {
        pre(plan)?;
        let placement = placed_anew(index)?;
        let req = request(plan, measuring(plan, ops, index, false));
        match spawn(&req)? {
            Reply::Measured {
                mut run, statuses, ..
            } => {
                run.placement = placement;
                Ok((*run, statuses))
            }
            other => bail!("unexpected reply from worker {index}: {other:?}"),
        }
    }

    fn measure_paced(
        &mut self,
        arms: &[(&Plan, u64)],
        index: u32,
    ) -> Result<Vec<(RunRecord, Vec<EventStatus>)>> {
        paced::measure(arms, index)
    }

    fn batch_ns_per_op(&mut self, plan: &Plan, ops: u64) -> Result<f64> {
        let probe = Mode::Calibrate {
            target_ns: 20_000_000,
            max_ops: Some(ops),
        };
        match spawn(&request(plan, probe))? {
            Reply::Calibrated { ops, batch_ns } => Ok(batch_ns as f64 / ops.max(1) as f64),
            other => bail!("unexpected reply from the calibration worker: {other:?}"),
        }
    }

    fn profile(&mut self, plan: &Plan, ops: u64) -> Result<Profile> {
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
                paced: false,
                counted: false,
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
}

/// Find the batch size: `--ops` as given, or calibrated by the executor.
pub(crate) fn batch_size(
    exec: &mut dyn Executor,
    plan: &Plan,
    progress: &mut dyn FnMut(Progress),
) -> Result<(u64, bool)> {
    if let Some(ops) = plan.ops {
        check_batch_length(exec, plan, ops)?;
        return Ok((ops, false));
    }
    if plan.sizing == (Sizing::Count { by_time: false }) {
        return Ok((plan.workload.counted_ops(), false));
    }
    progress(Progress::Calibrating);
    let ops = exec.calibrate(plan)?.ops;
    progress(Progress::Calibrated { ops });
    Ok((ops, true))
}

/// The longest a calibrated sample may be (`--sample-time`) and a given `--ops` batch may
/// last: a stop (Ctrl-C, SIGTERM, syscost's own death) is seen between batches, so it ends a
/// run within about this long.
pub(crate) const MAX_BATCH: Duration = Duration::from_secs(1);

/// Refuse a given `--ops` whose batch would outlast [`MAX_BATCH`] by far, measured by a short
/// probe batch. Workloads that must be told `--ops` (a command's runs) are exempt: one of
/// their operations is as long as the command.
fn check_batch_length(exec: &mut dyn Executor, plan: &Plan, ops: u64) -> Result<()> {
    // Under the emulator nobody stops a guest's measurement but its boot's timeout, and its
    // time says nothing of the batch: only the count sizes it. Nor does anyone stop a
    // measurement in any guest syscost booted (a probed command's own `run` there, uncounted:
    // under TCG its short probe batch read 18.6 ms a getpid, the probe's first hits'
    // translation, and refused the --ops a campaign test gives).
    if plan.workload.ops_required().is_some()
        || plan.sizing.counted()
        || crate::core::in_syscost_guest()
    {
        return Ok(());
    }
    let per_op = exec.batch_ns_per_op(plan, ops)?;
    let batch_ns = per_op * ops as f64;
    let limit = MAX_BATCH.as_nanos() as f64;
    if batch_ns > 1.5 * limit {
        let fits = (limit / per_op.max(f64::MIN_POSITIVE)).max(1.0) as u64;
        bail!(refused!(
            Opt::Ops,
            format!(
                " {ops}: one batch would take about {} here ({per_op:.1} ns per {}), and a \
                 stop (Ctrl-C) is seen only between batches; give ",
                roughly(batch_ns / 1e9),
                plan.workload.op_name()
            ),
            Opt::Ops,
            format!(
                " {} or fewer (about {} a batch), or leave ",
                crate::core::num::group_thousands(&fits.to_string()),
                humantime::format_duration(MAX_BATCH)
            ),
            Opt::Ops,
            " out to calibrate it to ",
            Opt::SampleTime
        ));
    }
    Ok(())
}

/// A long time in the unit a reader grasps: `3.2 s`, `14.5 hours`, `19,013 years`.
fn roughly(secs: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    if secs >= YEAR {
        format!(
            "{} years",
            crate::core::num::group_thousands(&format!("{:.0}", secs / YEAR))
        )
    } else if secs >= 3_600.0 {
        format!("{:.1} hours", secs / 3_600.0)
    } else {
        format!("{secs:.1} s")
    }
}

/// Run the plan's --pre command, if any.
/// Run `index`'s audit rule entries placed anew, when this process measures in a guest that
/// asked for it (see [`crate::audit::anew`]), before its worker starts.
fn placed_anew(index: u32) -> Result<Option<crate::audit::addresses::Placement>> {
    static GIVEN: std::sync::OnceLock<Option<crate::audit::anew::Anew>> =
        std::sync::OnceLock::new();
    if GIVEN.get().is_none() {
        let _ = GIVEN.set(crate::audit::anew::Anew::given()?);
    }
    GIVEN
        .get()
        .and_then(Option::as_ref)
        .map(|a| a.place(index))
        .transpose()
}

/// Run the plan's command before each run, to its end; it dies with syscost, its whole group
/// (see [`signals::Guarded`]).
fn pre(plan: &Plan) -> Result<()> {
    let Some(cmd) = &plan.pre else { return Ok(()) };
    let mut sh = Command::new("/bin/sh");
    sh.args(["-c", cmd])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let mut child = signals::Guarded::spawn(&mut sh, true).with_context(|| {
        crate::said!("cannot run ", Opt::Pre, format!(" '{cmd}'")).spell(spelled)
    })?;
    let status = (child.wait(std::time::Duration::from_millis(10), None, &mut |_| {})?)
        .map_err(|s| s.into_error(|| anyhow::anyhow!("{} '{cmd}' stopped", spelled(Opt::Pre))))?;
    if !status.success() {
        bail!(refused!(Opt::Pre, format!(" '{cmd}' failed: {status}")));
    }
    Ok(())
}

/// Calibrate if needed, run every repetition in worker processes, and build the result.
pub(crate) fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<RunResult> {
    let mut results = run_interleaved(std::slice::from_ref(plan), Grain::Runs, progress)?;
    Ok(results.remove(0))
}

/// Build the result of a plan from its runs.
pub(crate) fn assemble(
    plan: &Plan,
    ops: u64,
    calibrated: bool,
    runs: Vec<RunRecord>,
    statuses: Vec<EventStatus>,
    environment: Environment,
    interleaved: Option<Grain>,
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
    let (mut metrics, overhead) = results::metrics::analyze_with(
        &runs,
        &events,
        &op_name,
        plan.subtract_overhead,
        plan.estimator,
    );
    results::metrics::add_derived(&mut metrics, &plan.workload);
    let mut result = RunResult {
        envelope: Envelope::new(Kind::Run),
        created_unix: now_unix(),
        workload: plan.workload.clone(),
        op_name,
        options: RunOptions {
            runs: runs.len() as u32,
            until_pct: plan.until.map(|u| u.pct),
            estimator: plan.estimator,
            samples: plan.samples,
            warmup: plan.warmup,
            ops_per_sample: ops,
            sizes: match plan.sizing.counted() {
                true => SIZE_CYCLE.to_vec(),
                false => Vec::new(),
            },
            calibrated,
            workload_base: plan.sizing == (Sizing::Count { by_time: false }) && plan.ops.is_none(),
            sample_time_ns: plan.sample_time.as_nanos() as u64,
            cpus: plan.cpus.clone(),
            fifo: plan.fifo,
            subtract_overhead: plan.subtract_overhead,
            copies: plan.copies.unwrap_or(1),
            copy_mode: plan.copy_mode,
            interleaved,
        },
        clock: CLOCK.into(),
        events,
        environment,
        runs,
        metrics,
        overhead,
        profile: None,
        emulated_sets: None,
        emulated_functions: None,
        emulated_windows: None,
        warnings: Vec::new(),
        notes: Vec::new(),
        thinned: None,
    };
    result.warnings = run_warnings(&result);
    result
}

/// The worker's mode for one measured run of `plan` in batches of `ops`, numbered `index`;
/// `paced`: waiting for the parent's word before each sample.
fn measuring(plan: &Plan, ops: u64, index: u32, paced: bool) -> Mode {
    Mode::Measure {
        index,
        ops,
        warmup: plan.warmup,
        samples: plan.samples,
        overhead_samples: plan.overhead_samples,
        profile: false,
        paced,
        counted: plan.sizing.counted(),
    }
}

fn request(plan: &Plan, mode: Mode) -> Request {
    Request {
        objects: object_map(),
        parent: std::process::id(),
        workload: plan.workload.clone(),
        events: plan.events.clone(),
        cpus: plan.cpus.clone(),
        fifo: plan.fifo,
        copies: plan.copies,
        copy_mode: plan.copy_mode,
        mode,
    }
}

/// Where this kernel keeps a process's objects, when the workers name the lines their
/// windows missed in: read once by this process for all its workers (`None` when it cannot be
/// read: each worker then says why in its run).
fn object_map() -> Option<crate::audit::own::ObjectMap> {
    static MAP: std::sync::OnceLock<Option<crate::audit::own::ObjectMap>> =
        std::sync::OnceLock::new();
    *MAP.get_or_init(|| {
        crate::counters::emulated::naming_objects()
            .then(crate::audit::own::ObjectMap::given_or_here)
            .and_then(Result::ok)
    })
}

/// Start a worker process (its stdin and stdout piped), guarded so that a signal reaches it
/// and it dies with syscost, and the request's line for it.
fn start_worker(req: &Request) -> Result<(signals::Guarded, Vec<u8>)> {
    signals::check()?;
    let exe = std::env::current_exe().context("cannot find syscost's own executable")?;
    let mut c = Command::new(exe);
    c.arg("__worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let child = signals::Guarded::spawn_told(&mut c).map_err(|e| {
        anyhow::anyhow!(
            "cannot start a worker process: {e}{}",
            crate::core::limits::hint(&e, true)
        )
    })?;
    let mut line = serde_json::to_vec(req).expect("requests serialise");
    line.push(b'\n');
    Ok((child, line))
}

/// Start a worker, hand it the request, wait for its reply.
fn spawn(req: &Request) -> Result<Reply> {
    let (mut worker, input) = start_worker(req)?;
    let talk = (|| -> Result<(String, std::process::ExitStatus)> {
        if let Some(mut stdin) = worker.child().stdin.take() {
            stdin
                .write_all(&input)
                .context("cannot send the request to the worker")?;
        }
        let mut out = String::new();
        if let Some(mut stdout) = worker.child().stdout.take() {
            stdout
                .read_to_string(&mut out)
                .context("cannot read the worker's reply")?;
        }
        let status = worker.wait_end().context("waiting for the worker")?;
        Ok((out, status))
    })();
    if talk.is_err() {
        // Reap it whatever happened (it was stopped, or its pipe broke).
        worker.kill();
    }
    // A signal stops the worker (the guard passes it on), which may break the pipe to it
    // before the request is written: that is the interruption, not a failure of its own.
    signals::check()?;
    let (out, status) = talk?;
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
            crate::said!(
                "workers were not pinned (",
                Opt::Cpu,
                "): migrations and frequency changes add noise"
            )
            .spell(spelled),
        );
    }
    w.extend(counter_warnings(r));
    w.extend(short_sample_warning(r));
    w.extend(sleep_warning(r));
    w.extend(spike_warning(r));
    if r.runs.len() == 1 {
        w.push(
            crate::said!(
                "a single run: statistics are over its samples, which share one process and \
                 one placement in memory; use ",
                Opt::Runs,
                " 5 or more for run-to-run variation"
            )
            .spell(spelled),
        );
    }
    let moved = r
        .runs
        .iter()
        .filter(|run| run.cpu_first.is_some() && run.cpu_first != run.cpu_last)
        .count();
    if moved > 0 {
        w.push(
            crate::said!(
                format!("{moved} run(s) ended on another CPU than they started on: pin with "),
                Opt::Cpu
            )
            .spell(spelled),
        );
    }
    w
}

/// Hardware events not counted (with a PMU: without one the environment says so) and events
/// multiplexed off the PMU.
fn counter_warnings(r: &RunResult) -> Vec<String> {
    let mut w = Vec::new();
    let hw_unsupported: Vec<&str> = r
        .events
        .iter()
        .filter(|e| !e.spec.is_software() && !e.status.is_counting())
        .map(|e| e.spec.name.as_str())
        .collect();
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
    w
}

fn short_sample_warning(r: &RunResult) -> Option<String> {
    let shortest = r
        .runs
        .iter()
        .flat_map(|run| &run.samples)
        .map(|s| s.wall_ns)
        .min()?;
    (shortest < 1_000_000).then(|| {
        crate::said!(
            format!(
                "the shortest sample lasted {:.1} µs: timer and counter reads weigh on short \
                 samples; use a longer ",
                shortest as f64 / 1000.0
            ),
            Opt::SampleTime,
            " or a larger ",
            Opt::Ops
        )
        .spell(spelled)
    })
}

/// A loop that is not a round trip by nature but switches context: it waits.
fn sleep_warning(r: &RunResult) -> Option<String> {
    let cs = r
        .metrics
        .iter()
        .find(|m| m.name == "context-switches")?
        .summary
        .as_ref()?;
    if cs.median <= 0.05 || r.workload.waits().is_some() {
        return None;
    }
    let hint = r.workload.sleep_hint().map(|h| format!(" ({h})"));
    Some(format!(
        "the loop sleeps: {} context switches per {}: it waits (for I/O, a lock, the \
         scheduler), so the figures measure the wait, not only the kernel path{}",
        fmt_num(cs.median),
        r.op_name,
        hint.unwrap_or_default()
    ))
}

/// A sample far above its run's median: a neighbour or an interrupt took the CPU for part of
/// it. The pooled mean (--estimator mean) carries it into the run's value.
fn spike_warning(r: &RunResult) -> Option<String> {
    let spiky: Vec<String> = r.runs.iter().filter_map(spike).collect();
    if spiky.is_empty() {
        return None;
    }
    let here = if r.options.estimator == Estimator::Mean {
        ""
    } else {
        " (as it does here)"
    };
    let floor = if spiky.len() * 2 > r.runs.len() && r.options.estimator != Estimator::Min {
        format!(
            "; with most runs hit, the floor of many short samples resolves small changes: {} \
             (docs/src/comparing.md, \"Noisy machines\")",
            floor_options()
        )
    } else {
        String::new()
    };
    Some(
        crate::said!(
            format!(
                "samples more than 20% above their run's median in {}: interference; ",
                spiky.join(", ")
            ),
            Opt::Estimator,
            format!(" median or min keeps them out of the run's value{here}{floor}")
        )
        .spell(spelled),
    )
}

/// "run N (+X%)" when a run's slowest sample is more than 20% above its median.
fn spike(run: &RunRecord) -> Option<String> {
    let mut t: Vec<f64> = run
        .samples
        .iter()
        .map(|s| s.wall_ns as f64 / s.ops.max(1) as f64)
        .collect();
    if t.len() < 3 {
        return None;
    }
    t.sort_by(|a, b| a.total_cmp(b));
    let (med, max) = (t[t.len() / 2], t[t.len() - 1]);
    (med > 0.0 && max > 1.2 * med)
        .then(|| format!("run {} (+{:.0}%)", run.index, 100.0 * (max / med - 1.0)))
}
