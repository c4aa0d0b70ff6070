//! Every rendering of every result kind. A result type never prints itself: each kind has one
//! file here implementing [`Render`] (its preamble and tables), and the text formats of
//! [`format`] (one file each: table, CSV, Markdown, LKML; JSON is the result serialised) lay
//! them out; [`html`] draws the page of `syscost report` from results of any kind ([`loaded`]) with the
//! [`charts`], drawn by [`svg`].

pub mod cachesets;
pub mod charts;
pub mod compare;
pub mod correlate;
pub mod env;
pub mod format;
pub mod html;
pub mod kcidb;
pub mod loaded;
pub mod merge;
pub mod probe;
pub mod run;
pub mod scale;
pub mod svg;
pub mod sweep;
pub mod trend;

pub use env::env_text;
pub use run::{profile_grid, run_grid, run_preamble};

use format::{Format, Grid};

/// A result as text: free lines first, then tables with their titles and notes.
pub trait Render {
    /// Lines above the tables.
    fn preamble(&self) -> Vec<String> {
        Vec::new()
    }
    /// The tables, each with its title and notes.
    fn grids(&self) -> Vec<Grid>;
    /// The whole text in a format; the default lays the preamble and tables out through the
    /// format's layout. JSON is not text: it is the result serialised ([`format::json`]).
    fn text(&self, format: Format) -> String {
        format::render(format, &self.preamble(), &self.grids())
    }
}

/// The run in a text format (JSON is the result itself).
pub fn run_text(r: &crate::results::RunResult, format: Format) -> String {
    r.text(format)
}

#[cfg(test)]
mod snapshots {
    //! The run table in every text format, for a fixed result (no clock, no machine).
    use super::*;
    use crate::core::{Envelope, Kind, ToolInfo};
    use crate::counters::{EventStatus, RawCount, events::parse_event};
    use crate::environment::Environment;
    use crate::results::RunResult;
    use crate::results::{EventRecord, RunOptions, RunRecord, Sample, metrics};
    use crate::workloads::{WorkloadSpec, syscall};

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
                estimator: Default::default(),
                runs: 3,
                samples: 2,
                warmup: 1,
                ops_per_sample: 1_000_000,
                calibrated: true,
                sample_time_ns: 100_000_000,
                cpus: Some(crate::core::CpuList::parse("1").unwrap()),
                fifo: None,
                subtract_overhead: false,
                copies: 1,
                copy_mode: Default::default(),
            },
            clock: crate::runner::CLOCK.into(),
            events,
            environment: env,
            runs,
            metrics: m,
            overhead: o,
            profile: None,
            warnings: vec![],
            thinned: None,
        }
    }

    #[test]
    fn run_table_in_every_format() {
        let r = fixed_result();
        for (name, f) in [
            ("table", Format::Table),
            ("csv", Format::Csv),
            ("markdown", Format::Markdown),
            ("lkml", Format::Lkml),
        ] {
            insta::assert_snapshot!(format!("run_{name}"), run_text(&r, f));
        }
        assert!(run_text(&r, Format::Lkml).is_ascii());
    }
}
