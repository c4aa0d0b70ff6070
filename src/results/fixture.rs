//! A fixed run result for the tests of the layers above (no clock, no machine).

use super::{EventRecord, RunOptions, RunRecord, RunResult, Sample, metrics};
use crate::core::{Envelope, Kind, ToolInfo};
use crate::counters::{EventStatus, RawCount, events::parse_event};
use crate::environment::Environment;
use crate::workloads::{WorkloadSpec, syscall};

/// A run result of getpid with fixed figures: 3 runs of 2 samples (and a warm-up sample), cycles
/// not supported, task-clock and context-switches counted.
pub(crate) fn fixed_result() -> RunResult {
    let events = vec![
        EventRecord {
            spec: parse_event("cycles").unwrap(),
            group: 0,
            status: EventStatus::NotSupported("no hardware PMU on this machine".into()),
        },
        EventRecord {
            spec: parse_event("task-clock").unwrap(),
            group: 1,
            status: EventStatus::Counting,
        },
        EventRecord {
            spec: parse_event("context-switches").unwrap(),
            group: 2,
            status: EventStatus::Counting,
        },
    ];
    let sample = |wall: u64, cs: u64| Sample {
        ops: 1_000_000,
        wall_ns: wall,
        start_ns: None,
        counts: vec![
            None,
            Some(RawCount {
                value: wall - 1000,
                enabled: wall,
                running: wall,
            }),
            Some(RawCount {
                value: cs,
                enabled: wall,
                running: wall,
            }),
        ],
    };
    let runs: Vec<RunRecord> = (0..3u32)
        .map(|i| RunRecord {
            index: i,
            pid: 100 + i,
            cpu_first: Some(1),
            cpu_last: Some(1),
            sched: "SCHED_OTHER".into(),
            warmup: vec![sample(110_000_000, 2)],
            samples: vec![
                sample(100_000_000 + 1_000_000 * i as u64, 1),
                sample(101_000_000 + 500_000 * i as u64, 0),
            ],
            overhead: vec![sample(400_000, 0)],
            workload_metrics: Default::default(),
            notes: Vec::new(),
            waits: false,
            missed_lines: Vec::new(),
            own_objects: None,
            placement: None,
        })
        .collect();
    let (m, o) = metrics::analyze(&runs, &events, "call", false);
    let env = Environment {
        kernel_release: Some("6.18.0-test".into()),
        clocksource: Some("tsc".into()),
        warnings: vec!["no hardware PMU: cycles cannot be counted here".into()],
        ..Environment::default()
    };
    RunResult {
        envelope: Envelope {
            tool: ToolInfo {
                name: "syscost".into(),
                version: "test".into(),
            },
            ..Envelope::new(Kind::Run)
        },
        created_unix: 0,
        workload: WorkloadSpec::Syscall(syscall::Params {
            syscall: "getpid".into(),
        }),
        op_name: "call".into(),
        options: RunOptions {
            until_pct: None,
            interleaved: None,
            estimator: Default::default(),
            runs: 3,
            samples: 2,
            warmup: 1,
            ops_per_sample: 1_000_000,
            sizes: Vec::new(),
            calibrated: true,
            workload_base: false,
            sample_time_ns: 100_000_000,
            cpus: Some(crate::core::CpuList::parse("1").unwrap()),
            fifo: None,
            subtract_overhead: false,
            copies: 1,
            copy_mode: Default::default(),
        },
        clock: super::CLOCK.into(),
        events,
        environment: env,
        runs,
        metrics: m,
        overhead: o,
        profile: None,
        emulated_sets: None,
        emulated_functions: None,
        emulated_windows: None,
        warnings: vec![],
        notes: Vec::new(),
        thinned: None,
    }
}
