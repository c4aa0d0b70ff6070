//! Human-readable output: the run table in the spirit of `perf stat`, and the environment.

pub mod format;
pub mod html;
pub mod svg;

use crate::environment::Environment;
use crate::results::{Metric, RunResult};
use crate::core::num::{fmt_num, group_thousands};
use format::{Format, Grid};

fn label(m: &Metric) -> String {
    format!("{} ({})", m.name, m.unit)
}

/// One table row; a metric without value shows its status and a footnote number for the
/// reason, collected in `notes` (identical reasons share a number).
fn metric_row(m: &Metric, notes: &mut Vec<String>) -> Vec<String> {
    let Some(s) = &m.summary else {
        let status = m.status.clone().unwrap_or_else(|| "<no value>".into());
        let mut mark = String::new();
        if let Some(r) = &m.reason {
            let i = match notes.iter().position(|n| n == r) {
                Some(i) => i,
                None => {
                    notes.push(r.clone());
                    notes.len() - 1
                }
            };
            mark = format!("[{}]", i + 1);
        }
        let mut row = vec![label(m), status];
        row.extend(std::iter::repeat_n(String::new(), 6));
        row.push(mark);
        return row;
    };
    let ci = s
        .ci95
        .map(|(lo, hi)| format!("[{}, {}]", fmt_num(lo), fmt_num(hi)))
        .unwrap_or_else(|| "n/a (n=1)".into());
    let note = match m.running_pct {
        Some(p) if p < 99.5 => format!("({p:.2}% running, scaled)"),
        _ => String::new(),
    };
    vec![
        label(m),
        fmt_num(s.median),
        fmt_num(s.mean),
        fmt_num(s.min),
        fmt_num(s.max),
        fmt_num(s.pstdev),
        format!("{:.2}%", s.pstdev_pct),
        ci,
        note,
    ]
}

/// The run's header lines: what was measured, how, and how the statistics are taken.
pub fn run_preamble(r: &RunResult) -> Vec<String> {
    let o = &r.options;
    let cpus = o
        .cpus
        .as_ref()
        .map(|c| format!("CPU {c}"))
        .unwrap_or_else(|| "not pinned".into());
    let sched = o
        .fifo
        .map(|p| format!("SCHED_FIFO {p}"))
        .unwrap_or_else(|| "SCHED_OTHER".into());
    let replication = r
        .metrics
        .first()
        .map(|m| m.replication.as_str())
        .unwrap_or("run");
    let clocksource = r
        .environment
        .clocksource
        .as_deref()
        .map(|c| format!(", clocksource {c}"))
        .unwrap_or_default();
    let mut notes: Vec<&String> = r.runs.iter().flat_map(|x| &x.notes).collect();
    notes.sort();
    notes.dedup();
    let mut lines = vec![
        format!(
            " Per-{op} statistics for {w}",
            op = r.op_name,
            w = r.workload.describe()
        ),
        format!(
            " {runs} run(s) x {samples} sample(s) x {ops} {op}s ({how}), {warm} warm-up \
             sample(s) per run, {cpus}, {sched}",
            op = r.op_name,
            runs = o.runs,
            samples = o.samples,
            ops = group_thousands(&o.ops_per_sample.to_string()),
            how = if o.calibrated { "calibrated" } else { "--ops" },
            warm = o.warmup,
        ),
        format!(
            " Timed by {}{clocksource}; statistics over {replication}s (n={}); pstdev is the \
             population standard deviation, ±% is pstdev/mean; CI: 95% of the mean (Student t)",
            r.clock,
            r.metrics
                .first()
                .and_then(|m| m.summary.as_ref())
                .map(|s| s.n)
                .unwrap_or(0),
        ),
    ];
    lines.extend(notes.into_iter().map(|n| format!(" {n}")));
    lines
}

/// The run table: one row per metric, per operation, with notes (reasons for missing values,
/// the empty-loop overhead, warnings) under it.
pub fn run_grid(r: &RunResult) -> Grid {
    let mut g = Grid::new(&[
        "metric", "median", "mean", "min", "max", "pstdev", "±%", "95% CI", "",
    ])
    .right(1..=7);
    let mut notes = Vec::new();
    for m in &r.metrics {
        g.row(metric_row(m, &mut notes));
    }
    g.notes = notes
        .iter()
        .enumerate()
        .map(|(i, n)| format!(" [{}] {n}", i + 1))
        .collect();
    if let Some(oh) = r.overhead.first().and_then(|m| m.summary.as_ref()) {
        g.notes.push(String::new());
        g.notes.push(format!(
            " Empty loop (loop + clock + counter reads, same harness): {} ns/{} median; {}",
            fmt_num(oh.median),
            r.op_name,
            if r.options.subtract_overhead {
                "subtracted from every per-op value above"
            } else {
                "not subtracted (--subtract-overhead)"
            }
        ));
    }
    let mut warnings: Vec<&String> = r.warnings.iter().collect();
    warnings.extend(r.environment.warnings.iter());
    if !warnings.is_empty() {
        g.notes.push(String::new());
        g.notes.push(" Warnings:".into());
        for w in warnings {
            g.notes.push(format!("   - {w}"));
        }
    }
    g
}

/// The top of a profile: the functions with the largest self share.
pub fn profile_grid(p: &crate::profile::Profile, top: usize) -> Grid {
    let mut g = Grid::new(&["self", "total", "function", ""])
        .right([0, 1])
        .title(format!(
            " Where the time goes: {} samples of {}",
            p.samples, p.event
        ));
    for f in p.functions.iter().take(top) {
        g.row(vec![
            format!("{:.2}%", f.self_pct),
            format!("{:.2}%", f.total_pct),
            f.name.clone(),
            f.space.clone(),
        ]);
    }
    g.notes = p.notes.iter().map(|n| format!(" {n}")).collect();
    g
}

/// The run in a text format (JSON is the result itself).
pub fn run_text(r: &RunResult, format: Format) -> String {
    let mut grids = vec![run_grid(r)];
    if let Some(p) = &r.profile {
        grids.push(profile_grid(p, 15));
    }
    format::render(format, &run_preamble(r), &grids)
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `syscost env` as text: one `key  value` line per field.
pub fn env_text(e: &Environment) -> String {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut row = |k: &str, v: String| lines.push((k.to_string(), v));
    row("host", opt(&e.hostname));
    row("boot id", opt(&e.boot_id));
    row(
        "kernel",
        format!("{} {}", opt(&e.kernel_release), opt(&e.kernel_version)),
    );
    row("cmdline", opt(&e.cmdline));
    let cfg: Vec<String> = e.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row(
        &format!("config ({})", opt(&e.config_source)),
        if cfg.is_empty() {
            "unavailable".into()
        } else {
            cfg.join(" ")
        },
    );
    let c = &e.cpu;
    row("cpu", opt(&c.model_name));
    row(
        "cpu id",
        format!(
            "vendor {} family {} model {} stepping {} microcode {}",
            opt(&c.vendor),
            opt(&c.family),
            opt(&c.model),
            opt(&c.stepping),
            opt(&c.microcode)
        ),
    );
    row("virtualized", c.virtualized.to_string());
    row("online cpus", opt(&c.online));
    row("smt active", opt(&c.smt_active));
    for cache in &c.caches {
        row(
            &format!("L{} {}", cache.level, cache.type_.to_lowercase()),
            format!(
                "{}: {} sets x {} ways x {} B lines (shared by CPUs {})",
                opt(&cache.size),
                opt(&cache.sets),
                opt(&cache.ways),
                opt(&cache.line_size),
                opt(&cache.shared_cpus)
            ),
        );
    }
    let gov: Vec<String> = c
        .governors
        .iter()
        .map(|(g, l)| format!("{g} (CPUs {l})"))
        .collect();
    row(
        "governor",
        if gov.is_empty() {
            "none (no cpufreq)".into()
        } else {
            gov.join(", ")
        },
    );
    row("boost", opt(&c.boost));
    row("clocksource", opt(&e.clocksource));
    row(
        "isolated cpus",
        e.isolated_cpus.clone().unwrap_or_else(|| "none".into()),
    );
    row(
        "nohz_full",
        e.nohz_full.clone().unwrap_or_else(|| "none".into()),
    );
    let vulns: Vec<String> = e
        .vulnerabilities
        .iter()
        .filter(|(_, v)| v.as_str() != "Not affected")
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    row(
        "mitigations",
        if vulns.is_empty() {
            "none needed".into()
        } else {
            vulns.join("; ")
        },
    );
    match (&e.audit.status, &e.audit.error) {
        (Some(s), _) => {
            let lists: Vec<String> = s.rules.iter().map(|(l, n)| format!("{l} {n}")).collect();
            row(
                "audit",
                format!(
                    "enabled={}{} rules={}{} backlog={} lost={} auditd pid={}",
                    s.enabled,
                    if s.locked() { " (locked)" } else { "" },
                    s.rule_count(),
                    if lists.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lists.join(", "))
                    },
                    s.backlog,
                    s.lost,
                    s.pid
                ),
            );
            row(
                "audit residue",
                match e.audit.residue {
                    Some(true) => "yes: audit has been enabled in this boot".into(),
                    _ => "unknown (`syscost audit residue` measures it)".into(),
                },
            );
        }
        (None, err) => row("audit", format!("unknown: {}", opt(err))),
    }
    row(
        "hardware PMU",
        if e.hardware_pmu {
            "present".into()
        } else {
            "absent".into()
        },
    );
    row("perf_event_paranoid", opt(&e.perf_event_paranoid));
    row("kptr_restrict", opt(&e.kptr_restrict));
    row("perf max sample rate", opt(&e.perf_event_max_sample_rate));
    row(
        "sched_rt runtime/period",
        format!(
            "{} / {} us",
            opt(&e.sched_rt_runtime_us),
            opt(&e.sched_rt_period_us)
        ),
    );
    row("ASLR", opt(&e.aslr));
    row("load average", opt(&e.loadavg));
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in &lines {
        out.push_str(&format!("{k:<width$}  {v}\n"));
    }
    if !e.warnings.is_empty() {
        out.push_str("\nWarnings (noisy set-up):\n");
        for w in &e.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out
}

#[cfg(test)]
mod snapshots {
    //! The run table in every text format, for a fixed result (no clock, no machine).
    use super::*;
    use crate::counters::{EventStatus, RawCount, events::parse_event};
    use crate::core::{Envelope, Kind, ToolInfo};
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
                runs: 3,
                samples: 2,
                warmup: 1,
                ops_per_sample: 1_000_000,
                calibrated: true,
                sample_time_ns: 100_000_000,
                cpus: Some(crate::core::CpuList::parse("1").unwrap()),
                fifo: None,
                subtract_overhead: false,
            },
            clock: crate::runner::CLOCK.into(),
            events,
            environment: env,
            runs,
            metrics: m,
            overhead: o,
            profile: None,
            warnings: vec![],
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
