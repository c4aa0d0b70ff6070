//! Interleaved designs: every round visits every arm once, in alternating order (A B, B A, ...:
//! ABBA), so drift of the machine's speed over time falls on every arm alike. `syscost ab`, the
//! audit sweep's steps, thread sweeps and `probe`'s with/without runs all go through
//! [`interleave`]; the first three through [`run_interleaved_with`], which adds calibration,
//! a hook that puts the machine in an arm's state before each of its runs, and the results.
//! [`run_interleaved`] can go finer ([`Grain::Samples`]): the runs of a round alive together,
//! alternating sample by sample (see [`super::paced`]).

use super::{
    Calibration, Executor, Plan, Progress, Workers, assemble, batch_size, check_batch_length,
    validate,
};
use crate::core::input::{Opt, spelled};
use crate::counters::EventStatus;
use crate::environment::Environment;
use crate::results::{Grain, RunRecord, RunResult};
use anyhow::{Result, bail};
use std::time::Instant;

/// The order in which round `round` visits `n` arms: forwards on even rounds, backwards on odd
/// ones (A B, B A, ...: ABBA).
pub fn round_order(round: u32, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// What an interleaved design is asked as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Run arm `arm` in round `round`.
    Visit { round: u32, arm: usize },
    /// `rounds` rounds are done (0 before the first): answer whether to run another.
    Between { rounds: u32 },
}

/// Run rounds of `n` arms in alternating order for as long as `step(Event::Between)` answers
/// true; returns the number of rounds run. What `step(Event::Visit)` answers is not used.
pub(crate) fn interleave_with(
    n: usize,
    mut step: impl FnMut(Event) -> Result<bool>,
) -> Result<u32> {
    let mut round = 0;
    while step(Event::Between { rounds: round })? {
        for arm in round_order(round, n) {
            step(Event::Visit { round, arm })?;
        }
        round += 1;
    }
    Ok(round)
}

/// Visit `n` arms in `rounds` rounds, in alternating order: `visit(round, arm)`.
pub fn interleave(
    rounds: u32,
    n: usize,
    mut visit: impl FnMut(u32, usize) -> Result<()>,
) -> Result<()> {
    interleave_with(n, |e| match e {
        Event::Between { rounds: done } => Ok(done < rounds),
        Event::Visit { round, arm } => visit(round, arm).map(|_| true),
    })?;
    Ok(())
}

/// The precision reached so far, as the half-width of a 95% interval in percent: of the time
/// per op with one arm; with several, the widest of each arm's paired change against the
/// first (the Hodges-Lehmann interval of the per-round log ratios, slot by slot for paced
/// rounds). Infinite while no interval can be had.
fn precision(results: &[RunResult]) -> f64 {
    let time = |r: &RunResult| -> Option<Vec<(u32, f64)>> {
        let m = r.metrics.iter().find(|m| m.name == "time")?;
        Some(
            m.units
                .iter()
                .copied()
                .zip(m.values.iter().copied())
                .collect(),
        )
    };
    let Some(base) = results.first().and_then(time) else {
        return f64::INFINITY;
    };
    if results.len() == 1 {
        let values: Vec<f64> = base.iter().map(|x| x.1).collect();
        return crate::stats::Summary::of(&values)
            .and_then(|s| s.ci95.map(|(lo, hi)| 50.0 * (hi - lo) / s.median.abs()))
            .filter(|h| h.is_finite())
            .unwrap_or(f64::INFINITY);
    }
    let mut widest: f64 = 0.0;
    for r in &results[1..] {
        let Some(other) = time(r) else {
            return f64::INFINITY;
        };
        // Paced rounds: the change as the comparison will take it, slot by slot.
        let by_slot = crate::results::slots::round_changes(&results[0], r)
            .into_iter()
            .find(|c| c.metric == "time")
            .map(|c| c.log_ratios);
        let d: Vec<f64> = by_slot.unwrap_or_else(|| {
            base.iter()
                .filter_map(|(u, a)| {
                    let b = other.iter().find(|x| x.0 == *u)?.1;
                    (*a > 0.0 && b > 0.0).then(|| (b / a).ln())
                })
                .collect()
        });
        let half = crate::stats::paired::hodges_lehmann(&d, 0.95)
            .and_then(|h| h.interval)
            .map(|i| 50.0 * (i.hi.exp() - i.lo.exp()))
            .unwrap_or(f64::INFINITY);
        widest = widest.max(half);
    }
    widest
}

/// Batch sizes for paced rounds: the two samples of a slot should last about as long, so they
/// share the machine's moment alike (a neighbour's burst is as likely to fall in either).
/// Calibrations that double the batch size land a factor of two apart for nearly equal
/// workloads calibrated at different moments of a drifting machine (65 and 130 ms samples for
/// +2% apart, measured here). So every arm is calibrated twice, in alternating order (A B, B A),
/// and its batch is sized to the sample time from its faster estimate of the time per
/// operation. Arms of one configuration (an A/A pair) take one size, from the fastest estimate
/// of any of them: sized apart (a burst hit both calibrations of one arm: 242,456 against
/// 98,103 ops, measured here), their samples would not last alike, which biases the floor.
/// `--ops` sizes are kept.
fn paced_sizes(
    exec: &mut dyn Executor,
    plans: &[Plan],
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<(u64, bool)>> {
    let mut per_op: Vec<Option<f64>> = vec![None; plans.len()];
    for pass in 0..2 {
        for k in round_order(pass, plans.len()) {
            if plans[k].ops.is_some() {
                continue;
            }
            progress(Progress::Calibrating);
            let Calibration { ops, batch_ns } = exec.calibrate(&plans[k])?;
            let ns = batch_ns.max(1) as f64 / ops.max(1) as f64;
            per_op[k] = Some(per_op[k].map_or(ns, |x| x.min(ns)));
        }
    }
    let per_op: Vec<Option<f64>> = plans
        .iter()
        .map(|p| {
            let alike = plans.iter().zip(&per_op).filter(|(q, _)| same_batch(p, q));
            alike.filter_map(|(_, ns)| *ns).reduce(f64::min)
        })
        .collect();
    let mut sizes = Vec::with_capacity(plans.len());
    for (p, ns) in plans.iter().zip(per_op) {
        sizes.push(match (p.ops, ns) {
            (Some(ops), _) => {
                check_batch_length(exec, p, ops)?;
                (ops, false)
            }
            (None, Some(ns)) => {
                let ops = ((p.sample_time.as_nanos() as f64 / ns).ceil() as u64).max(1);
                progress(Progress::Calibrated { ops });
                (ops, true)
            }
            (None, None) => unreachable!("every arm without a given batch size was calibrated"),
        });
    }
    Ok(sizes)
}

/// Whether two arms are one configuration as far as their batch is concerned: the same
/// workload and parameters, events, CPUs, policy and sample time.
fn same_batch(p: &Plan, q: &Plan) -> bool {
    p.workload == q.workload
        && p.events == q.events
        && p.cpus == q.cpus
        && p.fifo == q.fifo
        && p.sample_time == q.sample_time
        && p.ops == q.ops
}

/// Why the arms cannot alternate sample by sample, if they cannot.
pub(crate) fn paced_blocker(plans: &[Plan]) -> Option<String> {
    // Each check says what would go wrong.
    let said = |s: crate::core::input::Said| Some(s.spell(spelled));
    if plans.iter().any(|p| p.copies.is_some()) {
        return said(crate::said!(
            Opt::Copies,
            " run continuously, so two runs alive together would compete"
        ));
    }
    if plans.iter().any(|p| p.pre.is_some()) {
        return said(crate::said!(
            Opt::Pre,
            " runs before each run, which must then be alone"
        ));
    }
    super::audit_rules::blocker(plans)
        .or_else(|| plans.iter().find_map(|p| p.workload.not_paced()))
        .map(String::from)
}

/// How the arms of a design share their batch size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// Each plan is calibrated on its own (different workloads: `ab`, thread counts).
    PerArm,
    /// The first plan's batch size serves every arm (one workload in different machine
    /// states: the audit sweep), so every arm times the same number of operations.
    Shared,
}

/// Run plans of the same shape interleaved in worker processes, each calibrated on its own,
/// alternating at `grain` (see [`design`]). Plans that cannot alternate sample by sample (see
/// [`paced_blocker`]) alternate run by run, and their results say why.
pub fn run_interleaved(
    plans: &[Plan],
    grain: Grain,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    design(
        &mut Workers,
        plans,
        Batch::PerArm,
        grain,
        &mut |_| Ok(()),
        progress,
    )
}

/// Run `plans` interleaved run by run: calibrate (per arm or once), then every round runs
/// every plan once in alternating order, calling `before(arm)` first each time (to set the
/// machine's state for that arm), then the profiling runs the plans ask for, each after its
/// `before`. Returns one result per plan, in the plans' order.
pub fn run_interleaved_with(
    exec: &mut dyn Executor,
    plans: &[Plan],
    batch: Batch,
    before: &mut dyn FnMut(usize) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    design(exec, plans, batch, Grain::Runs, before, progress)
}

/// The interleaved design behind both, in the plans' audit states when they have rules (see
/// [`super::audit_rules`]: each arm's before its runs, and the notes of what was loaded in
/// its result).
fn design(
    exec: &mut dyn Executor,
    plans: &[Plan],
    batch: Batch,
    grain: Grain,
    before: &mut dyn FnMut(usize) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    let mut audit = super::audit_rules::AuditArms::prepare(plans)?;
    let before = &mut |k: usize| -> Result<()> {
        if let Some(a) = audit.as_mut() {
            a.apply(k)?;
        }
        before(k)
    };
    let mut results = measured_design(exec, plans, batch, grain, before, progress)?;
    if let Some(a) = audit {
        a.finish(&mut results)?;
    }
    Ok(results)
}

/// With [`Grain::Samples`] and two or more plans, each round's runs are measured together by
/// [`Executor::measure_paced`] (`before` is then not called for them: the arms share the
/// machine's state).
fn measured_design(
    exec: &mut dyn Executor,
    plans: &[Plan],
    batch: Batch,
    grain: Grain,
    before: &mut dyn FnMut(usize) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    let first = check_plans(plans)?;
    let environment = Environment::collect();
    let (grain, unpaced) = match (grain, paced_blocker(plans)) {
        (Grain::Samples, Some(why)) => (Grain::Runs, Some(why)),
        (g, _) => (g, None),
    };
    let interleaved = (plans.len() > 1).then_some(grain);
    let paced = interleaved == Some(Grain::Samples);
    let sizes = batch_sizes(exec, plans, batch, paced, progress)?;
    let assemble_all = |m: &Measured| -> Vec<RunResult> {
        plans
            .iter()
            .zip(&sizes)
            .zip(m.runs.iter().zip(&m.statuses))
            .map(|((p, (ops, cal)), (r, s))| {
                let (r, s, e) = (r.clone(), s.clone(), environment.clone());
                assemble(p, *ops, *cal, r, s, e, interleaved)
            })
            .collect()
    };
    let started = Instant::now();
    let mut stopped = None;
    let mut m = Measured {
        runs: vec![Vec::new(); plans.len()],
        statuses: vec![Vec::new(); plans.len()],
        total: first.runs * plans.len() as u32,
        done: 0,
    };
    interleave_with(plans.len(), |e| match e {
        Event::Between { rounds } => {
            if rounds < first.runs {
                return Ok(true);
            }
            let Some(u) = first.until else {
                return Ok(false);
            };
            let half = precision(&assemble_all(&m));
            match until_stop(&u, half, started, rounds) {
                None => m.total += plans.len() as u32,
                Some(why) => stopped = Some(why),
            }
            Ok(stopped.is_none())
        }
        Event::Visit { round, arm } => {
            let measured = if !paced {
                before(arm)?;
                vec![(arm, exec.measure(&plans[arm], sizes[arm].0, round)?)]
            } else if round_order(round, plans.len())[0] == arm {
                // The round's first visit measures every arm at once.
                let arms: Vec<(&Plan, u64)> =
                    plans.iter().zip(&sizes).map(|(p, s)| (p, s.0)).collect();
                exec.measure_paced(&arms, round)?
                    .into_iter()
                    .enumerate()
                    .collect()
            } else {
                Vec::new()
            };
            m.record(measured, progress);
            Ok(true)
        }
    })?;
    let mut results = assemble_all(&m);
    let said = unpaced.map(|why| {
        format!("the configurations alternated run by run, not sample by sample: {why}")
    });
    for r in results.iter_mut() {
        r.warnings.extend(said.iter().chain(&stopped).cloned());
    }
    profiles(exec, plans, &sizes, &mut results, before)?;
    Ok(results)
}

/// The profiling runs the plans ask for, each after its `before`.
fn profiles(
    exec: &mut dyn Executor,
    plans: &[Plan],
    sizes: &[(u64, bool)],
    results: &mut [RunResult],
    before: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<()> {
    for (k, ((p, (ops, _)), r)) in plans.iter().zip(sizes).zip(results.iter_mut()).enumerate() {
        if p.profile {
            before(k)?;
            r.profile = Some(exec.profile(p, *ops)?);
        }
    }
    Ok(())
}

/// Every plan valid, and all with the same number of runs; returns the first.
fn check_plans(plans: &[Plan]) -> Result<&Plan> {
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
    Ok(first)
}

/// Each arm's batch size and whether it was calibrated.
fn batch_sizes(
    exec: &mut dyn Executor,
    plans: &[Plan],
    batch: Batch,
    paced: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<(u64, bool)>> {
    match batch {
        Batch::PerArm if paced => paced_sizes(exec, plans, progress),
        Batch::PerArm => plans
            .iter()
            .map(|p| batch_size(exec, p, progress))
            .collect(),
        Batch::Shared => Ok(vec![batch_size(exec, &plans[0], progress)?; plans.len()]),
    }
}

/// `--until`: why the rounds stop at interval half-width `half` after `rounds`, or `None` to
/// add one more.
fn until_stop(u: &super::Until, half: f64, started: Instant, rounds: u32) -> Option<String> {
    let why = if half <= u.pct {
        format!("±{half:.2}% reached")
    } else if started.elapsed() >= u.max_time {
        crate::said!(Opt::MaxTime, format!(" reached at ±{half:.2}%")).spell(spelled)
    } else if rounds >= u.max_runs {
        format!("the cap of {} runs reached at ±{half:.2}%", u.max_runs)
    } else {
        return None;
    };
    Some(
        crate::said!(
            Opt::Until,
            format!(" {}%: {why} after {rounds} run(s) per configuration", u.pct)
        )
        .spell(spelled),
    )
}

/// The runs measured so far, per arm, with the counters' statuses of each arm's first run.
struct Measured {
    runs: Vec<Vec<RunRecord>>,
    statuses: Vec<Vec<EventStatus>>,
    /// Runs planned (grows as --until adds rounds) and done, for the progress line.
    total: u32,
    done: u32,
}

impl Measured {
    fn record(
        &mut self,
        measured: Vec<(usize, (RunRecord, Vec<EventStatus>))>,
        progress: &mut dyn FnMut(Progress),
    ) {
        for (k, (run, s)) in measured {
            if self.statuses[k].is_empty() {
                self.statuses[k] = s;
            }
            self.runs[k].push(run);
            progress(Progress::RunFinished {
                index: self.done,
                of: self.total,
            });
            self.done += 1;
        }
    }
}

#[cfg(test)]
pub(crate) mod unit {
    //! The runner's designs with an in-process fake executor (like hyperfine's mock executor):
    //! no worker process, no root, no clock.
    use super::*;
    use crate::counters::RawCount;
    use crate::profile::Profile;
    use crate::results::Sample;
    use crate::workloads::{WorkloadSpec, syscall};
    use std::time::Duration;

    /// Answers every run at once: `ns_per_op[name]` per operation for the plan's syscall, and
    /// remembers the order of the runs and of the hooks.
    struct Fake {
        log: Vec<String>,
        calibrations: u32,
    }

    fn name_of(plan: &Plan) -> String {
        match &plan.workload {
            WorkloadSpec::Syscall(p) => p.syscall.clone(),
            w => w.name().to_string(),
        }
    }

    impl Executor for Fake {
        fn calibrate(&mut self, plan: &Plan) -> Result<Calibration> {
            self.calibrations += 1;
            let ops = if name_of(plan) == "getpid" { 1000 } else { 500 };
            // The first calibration of an arm finds it 10% slower than the second.
            let slow = if self.calibrations <= 2 { 1.1 } else { 1.0 };
            Ok(Calibration {
                ops,
                batch_ns: (plan.sample_time.as_nanos() as f64 * slow) as u64,
            })
        }

        fn measure(
            &mut self,
            plan: &Plan,
            ops: u64,
            index: u32,
        ) -> Result<(RunRecord, Vec<EventStatus>)> {
            let name = name_of(plan);
            self.log.push(format!("{name}#{index}"));
            let per_op = match name.as_str() {
                "getpid" => 100 + u64::from(index),
                // Two alternating values: the interval of the mean narrows as 1/sqrt(n).
                "gettid" => 100 + u64::from(index % 2),
                _ => 150 + u64::from(index),
            };
            let sample = |k: u64| Sample {
                ops,
                wall_ns: ops * per_op + k,
                start_ns: None,
                counts: vec![Some(RawCount {
                    value: ops * 2,
                    enabled: 1,
                    running: 1,
                })],
            };
            let run = RunRecord {
                index,
                pid: 1,
                cpu_first: Some(0),
                cpu_last: Some(0),
                sched: "SCHED_OTHER".into(),
                warmup: vec![sample(0)],
                samples: (0..plan.samples as u64).map(sample).collect(),
                overhead: Vec::new(),
                workload_metrics: Default::default(),
                notes: Vec::new(),
                waits: false,
                missed_lines: Vec::new(),
                own_objects: None,
                placement: None,
            };
            Ok((run, vec![EventStatus::Counting]))
        }

        fn measure_paced(
            &mut self,
            arms: &[(&Plan, u64)],
            index: u32,
        ) -> Result<Vec<(RunRecord, Vec<EventStatus>)>> {
            let names: Vec<String> = arms.iter().map(|(p, _)| name_of(p)).collect();
            self.log.push(format!("paced {}#{index}", names.join("+")));
            let mut runs = Vec::new();
            for (p, ops) in arms {
                runs.push(self.measure(p, *ops, index)?);
                self.log.pop();
            }
            Ok(runs)
        }

        fn profile(&mut self, plan: &Plan, _ops: u64) -> Result<Profile> {
            self.log.push(format!("{}#profile", name_of(plan)));
            Ok(Profile::default())
        }
    }

    /// Calibrations of getpid at 100 ns a call, but 10% slower on the calls listed: a burst.
    struct Bursty {
        calls: u32,
        slow: Vec<u32>,
    }

    impl Executor for Bursty {
        fn calibrate(&mut self, _plan: &Plan) -> Result<Calibration> {
            self.calls += 1;
            let ns = if self.slow.contains(&self.calls) {
                110
            } else {
                100
            };
            Ok(Calibration {
                ops: 1000,
                batch_ns: 1000 * ns,
            })
        }
        fn measure(&mut self, _: &Plan, _: u64, _: u32) -> Result<(RunRecord, Vec<EventStatus>)> {
            unreachable!("only calibrated")
        }
        fn measure_paced(
            &mut self,
            _: &[(&Plan, u64)],
            _: u32,
        ) -> Result<Vec<(RunRecord, Vec<EventStatus>)>> {
            unreachable!("only calibrated")
        }
        fn profile(&mut self, _: &Plan, _: u64) -> Result<crate::profile::Profile> {
            unreachable!("only calibrated")
        }
    }

    #[test]
    fn arms_of_one_configuration_get_one_batch_size() {
        // The order is A B, then B A: calls 1 and 4 are A's, and a burst hits both.
        let plans = [plan("getpid", 3), plan("getpid", 3)];
        let mut bursty = Bursty {
            calls: 0,
            slow: vec![1, 4],
        };
        let sizes = paced_sizes(&mut bursty, &plans, &mut |_| {}).unwrap();
        assert_eq!(bursty.calls, 4);
        assert_eq!(sizes[0], sizes[1], "an A/A pair sized apart");
        // Different configurations keep their own estimates.
        let plans = [plan("getpid", 3), plan("getppid", 3)];
        let mut bursty = Bursty {
            calls: 0,
            slow: vec![1, 4],
        };
        let sizes = paced_sizes(&mut bursty, &plans, &mut |_| {}).unwrap();
        assert!(sizes[0].0 < sizes[1].0, "{sizes:?}");
    }

    pub(crate) fn plan(syscall: &str, runs: u32) -> Plan {
        Plan {
            workload: WorkloadSpec::Syscall(syscall::Params {
                syscall: syscall.into(),
            }),
            events: crate::counters::parse_event_list(&["context-switches"]).unwrap(),
            cpus: None,
            fifo: None,
            runs,
            samples: 3,
            warmup: 1,
            sample_time: Duration::from_millis(10),
            ops: None,
            sizing: super::super::Sizing::Time,
            overhead_samples: 0,
            subtract_overhead: false,
            pre: None,
            profile: false,
            until: None,
            estimator: Default::default(),
            copies: None,
            copy_mode: Default::default(),
            audit_rules: None,
        }
    }

    #[test]
    fn rounds_alternate_and_every_run_is_reported() {
        let mut order = Vec::new();
        interleave(3, 3, |r, k| {
            order.push((r, k));
            Ok(())
        })
        .unwrap();
        let ks: Vec<usize> = order.iter().map(|x| x.1).collect();
        assert_eq!(ks, [0, 1, 2, 2, 1, 0, 0, 1, 2]);
    }

    #[test]
    fn arms_are_interleaved_calibrated_and_assembled() {
        let mut fake = Fake {
            log: Vec::new(),
            calibrations: 0,
        };
        let mut a = plan("getpid", 4);
        a.profile = true;
        let plans = [a, plan("getppid", 4)];
        let mut hooks = Vec::new();
        let mut finished = 0;
        let results = run_interleaved_with(
            &mut fake,
            &plans,
            Batch::PerArm,
            &mut |k| {
                hooks.push(k);
                Ok(())
            },
            &mut |p| {
                if let Progress::RunFinished { of, .. } = p {
                    assert_eq!(of, 8);
                    finished += 1;
                }
            },
        )
        .unwrap();
        assert_eq!(finished, 8);
        assert_eq!(fake.calibrations, 2);
        assert_eq!(
            fake.log,
            [
                "getpid#0",
                "getppid#0",
                "getppid#1",
                "getpid#1",
                "getpid#2",
                "getppid#2",
                "getppid#3",
                "getpid#3",
                "getpid#profile"
            ]
        );
        // Before every run its arm's state is set, and again before the profiling run.
        assert_eq!(hooks, [0, 1, 1, 0, 0, 1, 1, 0, 0]);
        assert_eq!(results.len(), 2);
        let time = |r: &RunResult| r.metrics[0].summary.clone().unwrap();
        assert_eq!(results[0].runs.len(), 4);
        assert_eq!(results[0].options.ops_per_sample, 1000);
        assert_eq!(results[1].options.ops_per_sample, 500);
        // Run i costs 100 + i ns per op for getpid and 150 + i for getppid.
        assert!(
            (time(&results[0]).median - 101.5).abs() < 0.01,
            "{:?}",
            time(&results[0])
        );
        assert!((time(&results[1]).median - 151.5).abs() < 0.01);
        assert!(results[0].profile.is_some() && results[1].profile.is_none());
        assert_eq!(results[0].envelope.kind, crate::core::Kind::Run);
    }

    #[test]
    fn paced_rounds_measure_every_arm_together_unless_they_cannot() {
        let mut fake = Fake {
            log: Vec::new(),
            calibrations: 0,
        };
        let plans = [plan("getpid", 3), plan("getppid", 3)];
        let mut hooks = 0;
        let mut finished = Vec::new();
        let results = design(
            &mut fake,
            &plans,
            Batch::PerArm,
            Grain::Samples,
            &mut |_| {
                hooks += 1;
                Ok(())
            },
            &mut |p| {
                if let Progress::RunFinished { index, of } = p {
                    finished.push((index, of));
                }
            },
        )
        .unwrap();
        assert_eq!(
            fake.log,
            [
                "paced getpid+getppid#0",
                "paced getpid+getppid#1",
                "paced getpid+getppid#2"
            ]
        );
        // The arms share the machine's state: no hook.
        assert_eq!(hooks, 0);
        // Each arm calibrated twice, sized from its faster estimate (the second, here: the
        // first found the machine 10% slower): the sample time exactly.
        assert_eq!(fake.calibrations, 4);
        assert_eq!(results[0].options.ops_per_sample, 1000);
        assert_eq!(results[1].options.ops_per_sample, 500);
        assert_eq!(finished, (0..6).map(|i| (i, 6)).collect::<Vec<_>>());
        for r in &results {
            assert_eq!(r.runs.len(), 3);
            assert_eq!(r.options.interleaved, Some(Grain::Samples));
            assert!(r.warnings.iter().all(|w| !w.contains("run by run")));
        }
        // --copies cannot take turns: runs alternate, and the results say why.
        fake.log.clear();
        let copies: Vec<Plan> = plans
            .iter()
            .map(|p| Plan {
                copies: Some(2),
                ..p.clone()
            })
            .collect();
        let results = design(
            &mut fake,
            &copies,
            Batch::PerArm,
            Grain::Samples,
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(fake.log[..2], ["getpid#0", "getppid#0"]);
        assert_eq!(results[0].options.interleaved, Some(Grain::Runs));
        assert!(
            results[1]
                .warnings
                .iter()
                .any(|w| w.contains("run by run, not sample by sample: --copies")),
            "{:?}",
            results[1].warnings
        );
        // One plan alone is not interleaved at all.
        let alone = design(
            &mut fake,
            &plans[..1],
            Batch::PerArm,
            Grain::Samples,
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(alone[0].options.interleaved, None);
    }

    #[test]
    fn a_shared_batch_is_calibrated_once_and_runs_must_match() {
        let mut fake = Fake {
            log: Vec::new(),
            calibrations: 0,
        };
        let plans = [plan("getppid", 2), plan("getpid", 2), plan("getpid", 2)];
        let results = run_interleaved_with(
            &mut fake,
            &plans,
            Batch::Shared,
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(fake.calibrations, 1);
        assert!(results.iter().all(|r| r.options.ops_per_sample == 500));
        let uneven = [plan("getpid", 2), plan("getpid", 3)];
        let e = run_interleaved_with(
            &mut fake,
            &uneven,
            Batch::Shared,
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("same number of runs"), "{e}");
    }

    #[test]
    fn adaptive_runs_stop_on_precision_or_at_a_limit() {
        let mut fake = Fake {
            log: Vec::new(),
            calibrations: 0,
        };
        let mut p = plan("gettid", 5);
        p.until = Some(crate::runner::Until {
            pct: 0.3,
            max_time: std::time::Duration::from_secs(3600),
            max_runs: 1000,
        });
        let mut reported = 0;
        let r = run_interleaved_with(
            &mut fake,
            std::slice::from_ref(&p),
            Batch::PerArm,
            &mut |_| Ok(()),
            &mut |e| {
                if let Progress::RunFinished { index, of } = e {
                    assert!(index < of);
                    reported += 1;
                }
            },
        )
        .unwrap();
        // Values alternating 100 and 101: the 95% half-width over the median, 100 t s /
        // sqrt(n) / median, is 0.3136% at 13 runs and 0.2981% at 14 (scipy 1.17.1,
        // stats.t.ppf(0.975, n - 1)): it stops at 14.
        let n = r[0].runs.len();
        assert_eq!(n, 14, "{:?}", r[0].warnings);
        assert_eq!(reported, n);
        assert_eq!(r[0].options.runs as usize, n);
        assert_eq!(r[0].options.until_pct, Some(0.3));
        let why = r[0].warnings.last().unwrap();
        assert!(
            why.starts_with("--until 0.3%: ±0.") && why.contains("reached after 14"),
            "{why}"
        );
        // A precision out of reach stops at the cap.
        p.until = Some(crate::runner::Until {
            pct: 1e-6,
            max_time: std::time::Duration::from_secs(3600),
            max_runs: 8,
        });
        let r = run_interleaved_with(
            &mut fake,
            std::slice::from_ref(&p),
            Batch::PerArm,
            &mut |_| Ok(()),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r[0].runs.len(), 8);
        assert!(
            r[0].warnings
                .last()
                .unwrap()
                .contains("the cap of 8 runs reached")
        );
        // Without --until the design runs exactly --runs rounds.
        p.until = None;
        let r = run_interleaved_with(&mut fake, &[p], Batch::PerArm, &mut |_| Ok(()), &mut |_| {});
        assert_eq!(r.unwrap()[0].runs.len(), 5);
    }

    #[test]
    fn a_failing_hook_stops_the_design() {
        let mut fake = Fake {
            log: Vec::new(),
            calibrations: 0,
        };
        let plans = [plan("getpid", 3), plan("getppid", 3)];
        let e = run_interleaved_with(
            &mut fake,
            &plans,
            Batch::PerArm,
            &mut |k| {
                if k == 1 {
                    bail!("cannot set arm 1")
                } else {
                    Ok(())
                }
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "cannot set arm 1");
        assert_eq!(fake.log, ["getpid#0"]);
    }
}
