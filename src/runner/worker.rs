//! The worker process: one run of a workload, like one repetition of `perf stat -r`.
//!
//! The parent re-executes its own binary with the hidden `__worker` subcommand, sends a
//! [`Request`] as one line of JSON on stdin and reads a [`Reply`] as JSON from stdout. A paced
//! run (the runs of a round alternating sample by sample) talks on: the worker says
//! [`Reply::Ready`] once set up, then waits for a line on stdin before each sample (and before
//! finishing) and says [`Reply::Sampled`] after it, each a line of its own. The worker pins
//! itself, takes its scheduling policy, sets the workload up, opens the counters and times the
//! batches. Its scheduling policy, affinity and perf events die with it, so nothing it sets
//! outlives the run.

use crate::core::cpus::{self, CpuList};
use crate::counters::{CounterSet, EventList, OpenOptions, RawCount, emulated};
use crate::results::{RunRecord, Sample};
use crate::workloads::{Workload, WorkloadSpec, empty::EmptyLoop};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// What the parent asks of a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    /// The parent's pid: a worker whose parent is gone stops (see [`main`]).
    pub parent: u32,
    pub workload: WorkloadSpec,
    pub events: EventList,
    pub cpus: Option<CpuList>,
    pub fifo: Option<i32>,
    /// Copies of the workload at once (see [`super::copies`]); `None` is the worker alone.
    #[serde(default)]
    pub copies: Option<u32>,
    #[serde(default)]
    pub copy_mode: crate::workloads::CopyMode,
    pub mode: Mode,
    /// Where this kernel keeps a process's objects, read once by the parent for its workers
    /// when they name the lines their windows missed in (`counters::emulated::naming_objects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<crate::audit::own::ObjectMap>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// Find how many operations make one sample last at least `target_ns`, doubling from one
    /// up to `max_ops` at most (a given `--ops`, whose length is being checked).
    Calibrate {
        target_ns: u64,
        #[serde(default)]
        max_ops: Option<u64>,
    },
    /// Measure one run.
    Measure {
        index: u32,
        ops: u64,
        warmup: u32,
        samples: u32,
        overhead_samples: u32,
        /// Sample call chains during the run (a profiling run: its timing is not used).
        #[serde(default)]
        profile: bool,
        /// Wait for the parent's word before each sample (see the module's documentation).
        #[serde(default)]
        paced: bool,
        /// Sized by count (`runner::Sizing::Count`): the samples and overhead batches are
        /// `runner::SIZE_CYCLE` times `ops` in turn.
        #[serde(default)]
        counted: bool,
    },
}

/// What a worker answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "kebab-case")]
pub(crate) enum Reply {
    Calibrated {
        ops: u64,
        batch_ns: u64,
    },
    Measured {
        run: Box<RunRecord>,
        statuses: Vec<crate::counters::EventStatus>,
        #[serde(default)]
        profile: Option<crate::profile::Profile>,
    },
    Failed {
        message: String,
    },
    /// A paced worker is set up, its counters open: it waits for the first sample's word.
    Ready,
    /// A paced worker timed the sample it was told to.
    Sampled,
}

/// Entry point of `syscost __worker`: read the request, do it, print the reply. Returns the
/// process exit status.
pub(crate) fn main() -> i32 {
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Record the signal; the worker stops at the next sample boundary and tears down.
        let _ = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize);
    }
    let mut input = String::new();
    let mut stdin = std::io::stdin().lock();
    let reply = match stdin.read_line(&mut input) {
        Err(e) => Reply::Failed {
            message: format!("worker: cannot read its request: {e}"),
        },
        Ok(_) => match serde_json::from_str::<Request>(&input) {
            Err(e) => Reply::Failed {
                message: format!("worker: malformed request: {e}"),
            },
            Ok(req) => match serve(&req, &signal, &mut stdin) {
                Ok(r) => r,
                Err(e) => Reply::Failed {
                    message: format!("{e:#}"),
                },
            },
        },
    };
    let sig = signal.load(Ordering::Relaxed);
    let out = serde_json::to_string(&reply).expect("replies serialise");
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{out}");
    let _ = stdout.flush();
    if sig != 0 {
        return 128 + sig as i32;
    }
    match reply {
        Reply::Failed { .. } => 1,
        _ => 0,
    }
}

fn serve(req: &Request, signal: &AtomicUsize, input: &mut dyn BufRead) -> Result<Reply> {
    // If syscost itself is killed (even with SIGKILL), its worker must not run on, perhaps at
    // SCHED_FIFO 99: the kernel sends it SIGTERM when the parent dies, handled like any stop.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    if std::os::unix::process::parent_id() != req.parent {
        bail!("syscost exited before its worker started");
    }
    if let Some(c) = &req.cpus {
        cpus::set_affinity(c).with_context(|| format!("cannot pin the worker to CPUs {c}"))?;
    }
    if let Some(prio) = req.fifo {
        set_fifo(prio)?;
    }
    // The policy it has, not the one asked for: one inherited (a counting guest's init runs
    // its measurement at SCHED_FIFO, `chrt`) is the worker's too.
    let sched = cpus::policy_of_this_process();
    let mut workload: Box<dyn crate::workloads::Workload> = if let Some(n) = req.copies {
        let cpus = match &req.cpus {
            Some(c) => c.clone(),
            None => cpus::allowed_cpus().context("reading the CPUs this worker may use")?,
        };
        Box::new(super::copies::Copies::new(
            &req.workload,
            n,
            req.copy_mode,
            cpus,
        )?)
    } else {
        req.workload.build()?
    };
    let setup = workload.setup();
    let result = setup.and_then(|_| match &req.mode {
        Mode::Calibrate { target_ns, max_ops } => {
            calibrate(workload.as_mut(), *target_ns, *max_ops, signal)
        }
        Mode::Measure {
            index,
            ops,
            warmup,
            samples,
            overhead_samples,
            profile,
            paced,
            counted,
        } => measure(
            workload.as_mut(),
            req,
            &sched,
            Shape {
                index: *index,
                ops: *ops,
                warmup: *warmup,
                samples: *samples,
                overhead_samples: *overhead_samples,
                profile: *profile,
                counted: *counted,
            },
            paced.then_some(Pacer { input }).as_mut(),
            signal,
        ),
    });
    // Teardown on every path out of here, and its failure is reported too.
    let down = workload.teardown();
    let reply = result?;
    down.context("workload teardown failed")?;
    Ok(reply)
}

fn interrupted(signal: &AtomicUsize) -> Result<()> {
    match signal.load(Ordering::Relaxed) {
        0 => Ok(()),
        s => bail!("interrupted by signal {s}"),
    }
}

/// Switch the calling process to SCHED_FIFO at `prio`.
fn set_fifo(prio: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall with a valid pointer.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EPERM)) {
            bail!(crate::refused!(
                format!(
                    "SCHED_FIFO priority {prio} refused ({e}): it needs CAP_SYS_NICE (run as \
                     root) or an RLIMIT_RTPRIO of at least {prio} (ulimit -r); or drop "
                ),
                crate::core::input::Opt::Fifo
            ));
        }
        bail!("SCHED_FIFO priority {prio} refused: {e}");
    }
    Ok(())
}

/// pyperf's approach: double the batch until one batch lasts at least the target.
fn calibrate(
    w: &mut dyn Workload,
    target_ns: u64,
    max_ops: Option<u64>,
    signal: &AtomicUsize,
) -> Result<Reply> {
    let cap = max_ops.unwrap_or(1 << 40);
    let mut ops: u64 = 1;
    loop {
        interrupted(signal)?;
        w.before_batch(ops)?;
        let t0 = Instant::now();
        let done = w.run_batch(ops);
        let ns = t0.elapsed().as_nanos() as u64;
        w.after_batch()?;
        done?;
        if ns >= target_ns || ops >= cap {
            return Ok(Reply::Calibrated { ops, batch_ns: ns });
        }
        ops = (ops * 2).min(cap);
    }
}

/// One timed batch: the workload's untimed preparation, counters read, clock read, the batch,
/// clock read, counters read, the workload's untimed clean-up. Nothing else happens between
/// the two clock readings.
/// One timed batch. `mark`: the batch's position in its run, when its window is marked for
/// the emulator's counting (see `counters::emulated`); the marks lie inside the clock reads.
fn timed_batch(
    w: &mut dyn Workload,
    counters: &mut CounterSet,
    ops: u64,
    (before, after): (&mut [Option<RawCount>], &mut [Option<RawCount>]),
    mark: Option<usize>,
) -> Result<Sample> {
    w.before_batch(ops)?;
    let start_ns = monotonic_ns();
    counters.read_into(before).context("reading counters")?;
    let t0 = Instant::now();
    if let Some(k) = mark {
        emulated::begin(k);
    }
    let done = w.run_batch(ops);
    if let Some(k) = mark {
        emulated::end(k);
    }
    let t1 = Instant::now();
    let read = counters.read_into(after).context("reading counters");
    w.after_batch()?;
    done?;
    read?;
    let counts = before
        .iter()
        .zip(after.iter())
        .map(|(b, a)| match (b, a) {
            (Some(b), Some(a)) => Some(a.since(b)),
            _ => None,
        })
        .collect();
    Ok(Sample {
        ops,
        wall_ns: (t1 - t0).as_nanos() as u64,
        counts,
        start_ns,
    })
}

/// CLOCK_MONOTONIC now, in ns: `Instant` reads the same clock but does not show its value.
fn monotonic_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    (unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } == 0)
        .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A paced worker's side of the conversation: it waits for the parent's word on stdin and
/// answers on stdout, one line each.
struct Pacer<'a> {
    input: &'a mut dyn BufRead,
}

impl Pacer<'_> {
    fn say(&mut self, reply: &Reply) -> Result<()> {
        let line = serde_json::to_string(reply).expect("replies serialise");
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")
            .and_then(|_| out.flush())
            .context("cannot answer syscost")
    }

    fn wait(&mut self) -> Result<()> {
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) => bail!("syscost stopped the run"),
            Ok(_) => Ok(()),
            Err(e) => bail!("cannot hear from syscost: {e}"),
        }
    }
}

/// Whether the run's time was taken counted or uncounted, for a workload that counting
/// perturbs.
fn counting_note(req: &Request) -> Option<String> {
    let why = req.workload.counting_perturbs()?;
    Some(if req.events.groups.is_empty() {
        format!("Timed uncounted, as lmbench times it: {why}. -e EVENTS counts them, at that cost")
    } else {
        format!(
            "Counted, so the time includes the counters' cost: {why}. Without -e the time is \
             taken uncounted, as lmbench takes it"
        )
    })
}

/// What one measured run consists of.
struct Shape {
    index: u32,
    ops: u64,
    warmup: u32,
    samples: u32,
    overhead_samples: u32,
    profile: bool,
    counted: bool,
}

fn measure(
    w: &mut dyn Workload,
    req: &Request,
    sched: &str,
    shape: Shape,
    mut pacer: Option<&mut Pacer>,
    signal: &AtomicUsize,
) -> Result<Reply> {
    let Shape {
        index,
        ops,
        warmup,
        samples,
        overhead_samples,
        profile,
        counted,
    } = shape;
    let mut counters = CounterSet::open(
        &req.events,
        OpenOptions {
            inherit: req.workload.inherit(),
        },
    );
    let statuses = counters.statuses().to_vec();
    let n = counters.len();
    let (mut before, mut after) = (vec![None; n], vec![None; n]);
    let mut run = RunRecord {
        index,
        pid: std::process::id(),
        cpu_first: cpus::current_cpu(),
        cpu_last: None,
        sched: sched.to_string(),
        warmup: Vec::with_capacity(warmup as usize),
        samples: Vec::with_capacity(samples as usize),
        overhead: Vec::with_capacity(overhead_samples as usize),
        workload_metrics: Default::default(),
        notes: Vec::new(),
        waits: false,
        missed_lines: Vec::new(),
        own_objects: None,
        placement: None,
    };
    let mut recorder = if profile {
        Some(crate::profile::Recorder::start(req.workload.inherit())?)
    } else {
        None
    };
    // In a campaign guest counting under the emulator: every batch of the run, in order, and
    // (read before the counters start) where this process's kernel objects are, to name the
    // lines its windows missed in.
    let mark = emulated::marking() && !profile;
    if mark && emulated::naming_objects() {
        run.own_objects = Some(crate::audit::own::OwnObjects::here(req.objects.as_ref()));
    }
    counters.enable().context("enabling counters")?;
    if let Some(p) = pacer.as_mut() {
        p.say(&Reply::Ready)?;
    }
    // The batches and the overhead loop are the measurement's span, warm-up first.
    let _span = mark.then(emulated::Span::open);
    for i in 0..warmup + samples {
        if let Some(p) = pacer.as_mut() {
            p.wait()?;
        }
        interrupted(signal)?;
        let window = mark.then_some(i as usize);
        let size = match i.checked_sub(warmup) {
            Some(k) => super::sample_ops(ops, counted, k as usize),
            None => ops,
        };
        let s = timed_batch(w, &mut counters, size, (&mut before, &mut after), window)?;
        if let Some(r) = recorder.as_mut() {
            r.drain();
        }
        if i < warmup {
            run.warmup.push(s);
        } else {
            run.samples.push(s);
        }
        if let Some(p) = pacer.as_mut() {
            p.say(&Reply::Sampled)?;
        }
    }
    run.cpu_last = cpus::current_cpu();
    // The other runs of the round are still alive: finishing (and the overhead samples) waits
    // for the word, given to one worker at a time.
    if let Some(p) = pacer.as_mut() {
        p.wait()?;
    }
    w.finish()?;
    run.workload_metrics = w.run_metrics().into_iter().collect();
    run.notes = w.notes();
    run.notes.extend(counting_note(req));
    run.waits = w.waits_where_it_ran();
    let mut empty = EmptyLoop;
    for j in 0..overhead_samples {
        interrupted(signal)?;
        let window = mark.then_some((warmup + samples + j) as usize);
        let s = timed_batch(
            &mut empty,
            &mut counters,
            super::sample_ops(ops, counted, j as usize),
            (&mut before, &mut after),
            window,
        )?;
        run.overhead.push(s);
    }
    counters.disable().context("disabling counters")?;
    let profile = recorder.map(|r| r.finish());
    Ok(Reply::Measured {
        run: Box::new(run),
        statuses,
        profile,
    })
}
