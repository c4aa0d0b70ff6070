//! Interleaved designs: every round visits every arm once, in alternating order (A B, B A, ...:
//! ABBA), so drift of the machine's speed over time falls on every arm alike. `syscost ab`, the
//! audit sweep's steps, thread sweeps and `probe`'s with/without runs all go through
//! [`interleave`]; the first three through [`run_interleaved_with`], which adds calibration,
//! a hook that puts the machine in an arm's state before each of its runs, and the results.

use super::{Executor, Plan, Progress, Workers, assemble, batch_size, validate};
use crate::counters::EventStatus;
use crate::environment::Environment;
use crate::results::{RunRecord, RunResult};
use anyhow::{Result, bail};

/// The order in which round `round` visits `n` arms: forwards on even rounds, backwards on odd
/// ones (A B, B A, ...: ABBA).
pub fn round_order(round: u32, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// Visit `n` arms in `rounds` rounds, in alternating order: `visit(round, arm)`.
pub fn interleave(
    rounds: u32,
    n: usize,
    mut visit: impl FnMut(u32, usize) -> Result<()>,
) -> Result<()> {
    for round in 0..rounds {
        for k in round_order(round, n) {
            visit(round, k)?;
        }
    }
    Ok(())
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

/// Run plans of the same shape interleaved in worker processes (see [`run_interleaved_with`]).
pub fn run_interleaved(
    plans: &[Plan],
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<RunResult>> {
    run_interleaved_with(
        &mut Workers,
        plans,
        Batch::PerArm,
        &mut |_| Ok(()),
        progress,
    )
}

/// Run `plans` interleaved: calibrate (per arm or once), then every round runs every plan once
/// in alternating order, calling `before(arm)` first each time (to set the machine's state for
/// that arm), then the profiling runs the plans ask for, each after its `before`. Returns one
/// result per plan, in the plans' order.
pub fn run_interleaved_with(
    exec: &mut dyn Executor,
    plans: &[Plan],
    batch: Batch,
    before: &mut dyn FnMut(usize) -> Result<()>,
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
    let sizes: Vec<(u64, bool)> = match batch {
        Batch::PerArm => plans
            .iter()
            .map(|p| batch_size(exec, p, progress))
            .collect::<Result<_>>()?,
        Batch::Shared => vec![batch_size(exec, first, progress)?; plans.len()],
    };
    let mut runs: Vec<Vec<RunRecord>> = vec![Vec::new(); plans.len()];
    let mut statuses: Vec<Vec<EventStatus>> = vec![Vec::new(); plans.len()];
    let total = first.runs * plans.len() as u32;
    let mut done = 0;
    interleave(first.runs, plans.len(), |round, k| {
        before(k)?;
        let (run, s) = exec.measure(&plans[k], sizes[k].0, round)?;
        if statuses[k].is_empty() {
            statuses[k] = s;
        }
        runs[k].push(run);
        progress(Progress::RunFinished {
            index: done,
            of: total,
        });
        done += 1;
        Ok(())
    })?;
    let mut results: Vec<RunResult> = plans
        .iter()
        .zip(&sizes)
        .zip(runs.into_iter().zip(statuses))
        .map(|((p, (ops, cal)), (r, s))| assemble(p, *ops, *cal, r, s, environment.clone()))
        .collect();
    for (k, ((p, (ops, _)), r)) in plans.iter().zip(&sizes).zip(results.iter_mut()).enumerate() {
        if p.profile {
            before(k)?;
            r.profile = Some(exec.profile(p, *ops)?);
        }
    }
    Ok(results)
}

#[cfg(test)]
mod unit {
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
        fn calibrate(&mut self, plan: &Plan) -> Result<u64> {
            self.calibrations += 1;
            Ok(if name_of(plan) == "getpid" { 1000 } else { 500 })
        }

        fn measure(
            &mut self,
            plan: &Plan,
            ops: u64,
            index: u32,
        ) -> Result<(RunRecord, Vec<EventStatus>)> {
            let name = name_of(plan);
            self.log.push(format!("{name}#{index}"));
            let per_op = if name == "getpid" { 100 } else { 150 } + u64::from(index);
            let sample = |k: u64| Sample {
                ops,
                wall_ns: ops * per_op + k,
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
            };
            Ok((run, vec![EventStatus::Counting]))
        }

        fn profile(&mut self, plan: &Plan, _ops: u64) -> Result<Profile> {
            self.log.push(format!("{}#profile", name_of(plan)));
            Ok(Profile::default())
        }
    }

    fn plan(syscall: &str, runs: u32) -> Plan {
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
            overhead_samples: 0,
            subtract_overhead: false,
            pre: None,
            profile: false,
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
