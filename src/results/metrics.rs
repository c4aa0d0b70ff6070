//! From raw samples to per-operation metrics.
//!
//! The unit of replication is the run (one worker process): each run's samples are pooled
//! (total time / total operations, total count / total operations) and the statistics are taken
//! over runs, so a drift within a run cannot masquerade as precision. With a single run, the
//! samples of that run are the units instead, and the result says so.

use super::{EventRecord, RunRecord, Sample};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// Wall-clock time per operation.
    Time,
    /// A perf event per operation.
    Counter,
    /// A ratio of two other metrics (insn per cycle, miss %).
    Derived,
    /// A per-run figure the workload reported itself (e.g. cacheline-spread).
    Workload,
    /// An emulator's count per operation (syscost's QEMU plugin), or a ratio of two: exact
    /// but for what lands in its windows, so compared by the range rule (`stats::exact`).
    Emulated,
}

/// The status of an event that counted but has no value: perf's label for it.
pub(crate) const NOT_COUNTED: &str = "<not counted>";

/// One metric per operation, with its value for each unit of replication and their summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// `time`, an event name such as `cycles:u`, or a derived name such as `IPC`.
    pub name: String,
    /// e.g. `ns/call`, `/call`, `insn per cycle`, `%`.
    pub unit: String,
    pub kind: MetricKind,
    /// What one value stands for: `run` or `sample`.
    pub replication: String,
    /// One value per unit of replication.
    pub values: Vec<f64>,
    /// For each value, the index of its unit (run index, or sample index within a single
    /// run, or group index in a merged result), so metrics can be paired unit by unit.
    pub units: Vec<u32>,
    /// `None` when there are no values (the event was not counted).
    pub summary: Option<Summary>,
    /// Why there is no value, as perf labels it (`<not supported>`, `<not counted>`).
    pub status: Option<String>,
    pub reason: Option<String>,
    /// Share of the enabled time the event's group was on the PMU (100 unless multiplexed).
    pub running_pct: Option<f64>,
}

impl Metric {
    /// Whether it is decided as an exact count: the emulator's count of what the code
    /// executes. A cache model's misses are the emulator's too, but they move with where the
    /// objects were placed: they are compared as measurements.
    pub(crate) fn is_exact_count(&self) -> bool {
        self.kind == MetricKind::Emulated && crate::counters::emulated::is_exact_count(&self.name)
    }

    /// A metric with a value for each unit, summarised; `units` defaults to 0, 1, 2, ...
    pub(crate) fn of_values(
        name: impl Into<String>,
        unit: impl Into<String>,
        kind: MetricKind,
        replication: impl Into<String>,
        values: Vec<f64>,
        units: Option<Vec<u32>>,
    ) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            kind,
            replication: replication.into(),
            summary: Summary::of(&values),
            units: units.unwrap_or_else(|| (0..values.len() as u32).collect()),
            values,
            status: None,
            reason: None,
            running_pct: None,
        }
    }
}

/// Derived ratios: (name, numerator, denominator, factor, unit). `time` is the wall time.
const DERIVED: &[(&str, &str, &str, f64, &str)] = &[
    ("IPC", "instructions", "cycles", 1.0, "insn per cycle"),
    (
        "branch-miss-%",
        "branch-misses",
        "branches",
        100.0,
        "% of all branches",
    ),
    (
        "L1-dcache-miss-%",
        "L1-dcache-load-misses",
        "L1-dcache-loads",
        100.0,
        "% of all L1-dcache accesses",
    ),
    (
        "GHz",
        "cycles",
        "task-clock",
        1.0,
        "GHz (cycles per task-clock ns)",
    ),
    ("CPUs-utilized", "task-clock", "time", 1.0, "CPUs utilized"),
];

/// Whether a run's result can hold a metric named `name`: its time, an event perf or syscost's
/// emulator counts, or a ratio derived from those (`IPC:u`, `L1-dcache-miss-% (emulated)`). A
/// name none can hold is refused before a campaign or a bisection boots for it.
pub(crate) fn run_could_have(name: &str) -> bool {
    use crate::counters::emulated::Count;
    let emulated = || {
        (Count::ALL
            .iter()
            .chain(&[Count::Atomics, Count::LinesMoved]))
        .any(|c| c.parts().iter().any(|&p| c.part_name(p) == name))
            || other_l1i(name)
    };
    let event = || crate::counters::events::parse_event_list(&[name]).is_ok();
    let ratio = || {
        DERIVED.iter().any(|(d, num, ..)| {
            name.strip_prefix(d)
                .is_some_and(|suffix| run_could_have(&format!("{num}{suffix}")))
        })
    };
    name == "time" || emulated() || event() || ratio()
}

/// Whether `name` is the misses of another L1i geometry a cache model can feed beside its L1i
/// (`L1-icache-load-misses-1x512x64:k (emulated)`).
fn other_l1i(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("L1-icache-load-misses-") else {
        return false;
    };
    let geometry = rest.split([':', ' ']).next().unwrap_or_default();
    let parts: Vec<&str> = geometry.split('x').collect();
    let whole = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let suffix = &rest[geometry.len()..];
    parts.len() == 3
        && parts.iter().all(whole)
        && [":u (emulated)", ":k (emulated)", " (emulated)"].contains(&suffix)
}

/// Pooled totals over a set of samples.
struct Pool {
    ops: f64,
    wall: f64,
    /// Per event: (scaled total, operations in the samples that counted it).
    counts: Vec<Option<(f64, f64)>>,
}

fn pool(samples: &[Sample], n_events: usize) -> Pool {
    let mut p = Pool {
        ops: 0.0,
        wall: 0.0,
        counts: vec![None; n_events],
    };
    for s in samples {
        p.ops += s.ops as f64;
        p.wall += s.wall_ns as f64;
        for (i, c) in s.counts.iter().enumerate().take(n_events) {
            if let Some(v) = c.as_ref().and_then(|c| c.scaled()) {
                let e = p.counts[i].get_or_insert((0.0, 0.0));
                e.0 += v;
                e.1 += s.ops as f64;
            }
        }
    }
    p
}

/// Per-op values of one pool: index 0 is time, then one per event (`None`: not counted).
fn per_op(p: &Pool) -> Vec<Option<f64>> {
    let mut v = Vec::with_capacity(p.counts.len() + 1);
    v.push((p.ops > 0.0).then(|| p.wall / p.ops));
    v.extend(
        p.counts
            .iter()
            .map(|c| c.and_then(|(sum, ops)| (ops > 0.0).then(|| sum / ops))),
    );
    v
}

/// How one run's samples make the run's value. `Default` is what files written before the
/// choice used (`mean`); the command line's default is `median` (see `cli::args`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Total time and counts over total operations, as perf stat reports.
    #[default]
    Mean,
    /// The median sample by time per op (the two middle ones pooled for an even count):
    /// a sample hit by a neighbour does not move the run.
    Median,
    /// The fastest sample: the run without interference, if any sample had none.
    Min,
}

/// The samples an estimator keeps: all of them, or the median or fastest by time per op.
/// Counters are pooled over the same samples, so every metric of a run describes one moment.
fn chosen(samples: &[Sample], estimator: Estimator) -> Vec<Sample> {
    if estimator == Estimator::Mean || samples.len() < 2 {
        return samples.to_vec();
    }
    let mut order: Vec<usize> = (0..samples.len()).collect();
    let t = |s: &Sample| s.wall_ns as f64 / s.ops.max(1) as f64;
    order.sort_by(|&a, &b| t(&samples[a]).total_cmp(&t(&samples[b])));
    let pick: Vec<usize> = match estimator {
        Estimator::Min => vec![order[0]],
        _ if order.len() % 2 == 1 => vec![order[order.len() / 2]],
        _ => vec![order[order.len() / 2 - 1], order[order.len() / 2]],
    };
    pick.into_iter().map(|i| samples[i].clone()).collect()
}

/// Compute the per-op metrics and the overhead metrics of a set of runs, each run's value the
/// pooled mean of its samples (see [`analyze_with`]).
#[cfg(test)]
pub(crate) fn analyze(
    runs: &[RunRecord],
    events: &[EventRecord],
    op_name: &str,
    subtract_overhead: bool,
) -> (Vec<Metric>, Vec<Metric>) {
    analyze_with(runs, events, op_name, subtract_overhead, Estimator::Mean)
}

/// Compute the per-op metrics and the overhead metrics of a set of runs, each run's value taken
/// by `estimator` from its samples.
pub(crate) fn analyze_with(
    runs: &[RunRecord],
    events: &[EventRecord],
    op_name: &str,
    subtract_overhead: bool,
    estimator: Estimator,
) -> (Vec<Metric>, Vec<Metric>) {
    let exact: Vec<Exact> = events
        .iter()
        .map(|e| Exact::of(&e.spec.name, e.spec.is_emulated()))
        .collect();
    let (measured, overhead) = units_of(runs, &exact, subtract_overhead, estimator);
    let running = running_shares(runs, events.len());
    let replication = if runs.len() == 1 { "sample" } else { "run" };
    let build = |u: &Units, is_overhead: bool| -> Vec<Metric> {
        let mut out = vec![time_metric(u, op_name, replication)];
        for (i, ev) in events.iter().enumerate() {
            let running_pct = (!is_overhead && running[i].1 > 0)
                .then(|| 100.0 * running[i].0 as f64 / running[i].1 as f64);
            out.push(event_metric(u, i, ev, op_name, replication, running_pct));
        }
        if !is_overhead {
            out.extend(derived(&u.values, &u.ids, events, replication));
            out.extend(workload_metrics(runs, replication));
        }
        out
    };
    (build(&measured, false), build(&overhead, true))
}

/// Per unit of replication, its per-op values (time, then each event), with the unit's id (the
/// run's index, or the sample's position in a single run).
#[derive(Default)]
struct Units {
    values: Vec<Vec<Option<f64>>>,
    ids: Vec<u32>,
}

impl Units {
    /// Column `j` over the units that have it, with their ids.
    fn column(&self, j: usize) -> (Vec<f64>, Vec<u32>) {
        self.values
            .iter()
            .zip(&self.ids)
            .filter_map(|(u, id)| u[j].map(|v| (v, *id)))
            .unzip()
    }
}

/// The measured units and the overhead units (one per run that measured its overhead).
/// `exact[i]`: event `i` is an emulator's count, pooled over every window of a run that
/// counted it whatever sample time's estimator chose: a window another task ran in has no
/// count, and the run keeps its figure while any window counted. Windows of different sizes
/// (sized by count) give such a count as its slope over them ([`exact_fits`]).
fn units_of(
    runs: &[RunRecord],
    exact: &[Exact],
    subtract_overhead: bool,
    estimator: Estimator,
) -> (Units, Units) {
    let n = exact.len();
    let by_sample = runs.len() == 1;
    let (mut measured, mut overhead) = (Units::default(), Units::default());
    for run in runs {
        let mut oh = per_op(&pool(&run.overhead, n));
        for (i, fit, _) in exact_fits(&run.overhead, exact) {
            oh[i + 1] = Some(fit.slope());
        }
        if !run.overhead.is_empty() {
            overhead.values.push(oh.clone());
            overhead.ids.push(run.index);
        }
        let fits = exact_fits(&run.samples, exact);
        let values: Vec<Vec<Option<f64>>> = if by_sample {
            let one = |s: &Sample| {
                let mut v = per_op(&pool(std::slice::from_ref(s), n));
                for (i, fit, on) in &fits {
                    // A window off an exact count's line had other work in it: no value, as
                    // it is no point of the line.
                    let c = (s.counts[*i].map(|c| c.value))
                        .filter(|&c| on.as_ref().is_none_or(|on| on.contains(&(s.ops, c))));
                    v[i + 1] = c.and_then(|c| fit.per_op(s.ops, c));
                }
                v
            };
            run.samples.iter().map(one).collect()
        } else {
            let mut p = pool(&chosen(&run.samples, estimator), n);
            let every = pool(&run.samples, n);
            for (i, _) in exact.iter().enumerate().filter(|(_, e)| **e != Exact::No) {
                p.counts[i] = every.counts[i];
            }
            let mut v = per_op(&p);
            for (i, fit, _) in &fits {
                v[i + 1] = Some(fit.slope());
            }
            vec![v]
        };
        for (k, mut v) in values.into_iter().enumerate() {
            measured
                .ids
                .push(if by_sample { k as u32 } else { run.index });
            if subtract_overhead && !run.overhead.is_empty() {
                for (x, o) in v.iter_mut().zip(&oh) {
                    if let (Some(x), Some(o)) = (x.as_mut(), o) {
                        *x -= o;
                    }
                }
            }
            measured.values.push(v);
        }
    }
    (measured, overhead)
}

/// Whether an event is an emulator's count, and of which kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exact {
    No,
    /// A count of what the code executes: only what else runs in a window adds to it, so its
    /// line is drawn through the windows most of them lie on, none below it
    /// (`stats::slope::on_the_line`).
    Count,
    /// A cache model's misses, which vary from call to call: its line is drawn through every
    /// window.
    Modelled,
    /// The lines taken from other vCPUs, which follow how the host interleaves the vCPUs (in
    /// slices of its scheduler, not of the operations): every window's lines over every
    /// window's operations, no line, never below 0.
    Shared,
}

impl Exact {
    fn of(name: &str, emulated: bool) -> Exact {
        use crate::counters::emulated::{is_lines_moved, is_modelled};
        match (emulated, is_modelled(name)) {
            (false, _) => Exact::No,
            (true, _) if is_lines_moved(name) => Exact::Shared,
            (true, false) => Exact::Count,
            (true, true) => Exact::Modelled,
        }
    }
}

/// An exact event's line: its fit, and for a count the windows it is drawn through
/// (operations, count).
type Line = (usize, crate::stats::slope::Fit, Option<Vec<(u64, u64)>>);

/// Each exact event's line over `samples` (event index, fit, the windows on it), where its
/// counted windows have two sizes or more: its figure is then the slope, and what a window
/// pays once cancels.
fn exact_fits(samples: &[Sample], exact: &[Exact]) -> Vec<Line> {
    use crate::stats::slope::{Fit, on_the_line};
    (exact.iter().enumerate())
        .filter_map(|(i, e)| match e {
            Exact::No | Exact::Shared => None,
            Exact::Count => {
                let on = on_the_line(windows_of(samples, i));
                Some((i, Fit::of(on.iter().copied())?, Some(on)))
            }
            Exact::Modelled => Some((i, Fit::of(windows_of(samples, i))?, None)),
        })
        .collect()
}

/// Event `i`'s counted windows among `samples`: (operations, count).
pub(crate) fn windows_of(samples: &[Sample], i: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
    samples
        .iter()
        .filter_map(move |s| Some((s.ops, s.counts.get(i).copied().flatten()?.value)))
}

/// Each event's (running, enabled) time summed over every sample: how much of the time it was
/// on the PMU.
fn running_shares(runs: &[RunRecord], n: usize) -> Vec<(u128, u128)> {
    let mut running = vec![(0u128, 0u128); n];
    for s in runs.iter().flat_map(|r| &r.samples) {
        for (i, c) in s.counts.iter().enumerate().take(n) {
            if let Some(c) = c {
                running[i].0 += c.running as u128;
                running[i].1 += c.enabled as u128;
            }
        }
    }
    running
}

fn time_metric(u: &Units, op_name: &str, replication: &str) -> Metric {
    let (time, idx) = u.column(0);
    Metric {
        name: "time".into(),
        unit: format!("ns/{op_name}"),
        kind: MetricKind::Time,
        replication: replication.into(),
        summary: Summary::of(&time),
        values: time,
        units: idx,
        status: None,
        reason: None,
        running_pct: None,
    }
}

/// Event `i`'s metric, with why it has no values when it has none.
fn event_metric(
    u: &Units,
    i: usize,
    ev: &EventRecord,
    op_name: &str,
    replication: &str,
    running_pct: Option<f64>,
) -> Metric {
    let (values, idx) = u.column(i + 1);
    let base = ev.spec.base_name();
    let unit = if base == "task-clock" || base == "cpu-clock" {
        format!("ns/{op_name}")
    } else {
        format!("/{op_name}")
    };
    let (status, reason) = if !ev.status.is_counting() {
        (
            Some(ev.status.label().to_string()),
            ev.status.reason().map(String::from),
        )
    } else if values.is_empty() && ev.spec.is_emulated() {
        (
            Some(NOT_COUNTED.to_string()),
            Some(
                "every window was left out: another task ran in each (context switches \
                 counted in the batch)"
                    .to_string(),
            ),
        )
    } else if values.is_empty() {
        (
            Some(NOT_COUNTED.to_string()),
            Some(
                "the event's group never got onto the PMU (running time 0): fewer events per \
                 group may fit"
                    .to_string(),
            ),
        )
    } else {
        (None, None)
    };
    Metric {
        name: ev.spec.name.clone(),
        unit,
        kind: if ev.spec.is_emulated() {
            MetricKind::Emulated
        } else {
            MetricKind::Counter
        },
        replication: replication.into(),
        summary: Summary::of(&values),
        values,
        units: idx,
        status,
        reason,
        running_pct,
    }
}

/// Ratios between metrics of the same unit and the same modifiers (`instructions:u` goes with
/// `cycles:u`).
fn derived(
    units: &[Vec<Option<f64>>],
    ids: &[u32],
    events: &[EventRecord],
    replication: &str,
) -> Vec<Metric> {
    let index_of = |name: &str| -> Option<usize> {
        if name == "time" {
            return Some(0);
        }
        events
            .iter()
            .position(|e| e.spec.name == name && e.status.is_counting())
            .map(|i| i + 1)
    };
    let mut out = Vec::new();
    for (name, num, den, factor, unit) in DERIVED {
        for ev in events.iter().filter(|e| e.spec.base_name() == *num) {
            let suffix = &ev.spec.name[num.len()..];
            let den_name = if *den == "time" {
                "time".to_string()
            } else {
                format!("{den}{suffix}")
            };
            let (Some(a), Some(b)) = (index_of(&ev.spec.name), index_of(&den_name)) else {
                continue;
            };
            let (values, idx): (Vec<f64>, Vec<u32>) = units
                .iter()
                .zip(ids)
                .filter_map(|(u, id)| match (u[a], u[b]) {
                    (Some(x), Some(y)) if y != 0.0 => Some((factor * x / y, *id)),
                    _ => None,
                })
                .unzip();
            if values.is_empty() {
                continue;
            }
            out.push(Metric {
                name: format!("{name}{suffix}"),
                unit: unit.to_string(),
                // A ratio of two emulated counts is as exact as they are.
                kind: if ev.spec.is_emulated() {
                    MetricKind::Emulated
                } else {
                    MetricKind::Derived
                },
                replication: replication.into(),
                summary: Summary::of(&values),
                values,
                units: idx,
                status: None,
                reason: None,
                running_pct: None,
            });
        }
    }
    out
}

/// The figures a workload's shape adds to its metrics: time per part (per rule walked, ...)
/// and throughput for workloads of several producers.
pub(crate) fn add_derived(metrics: &mut Vec<Metric>, workload: &crate::workloads::WorkloadSpec) {
    if let Some((part, n)) = workload.parts() {
        add_per_part(metrics, part, n);
    }
    if let Some(t) = workload.threads() {
        add_throughput(metrics, t);
    }
}

/// Add `time-per-PART` (e.g. ns per rule of a replica walk): the time metric divided by the
/// number of parts in one operation.
pub(crate) fn add_per_part(metrics: &mut Vec<Metric>, part: &str, count: f64) {
    let Some(time) = metrics.iter().find(|m| m.name == "time").cloned() else {
        return;
    };
    if count <= 0.0 {
        return;
    }
    let values: Vec<f64> = time.values.iter().map(|v| v / count).collect();
    metrics.insert(
        1,
        Metric::of_values(
            format!("time-per-{part}"),
            format!("ns/{part}"),
            MetricKind::Derived,
            time.replication.clone(),
            values,
            Some(time.units.clone()),
        ),
    );
}

/// Add throughput figures for a workload of `threads` producers: `throughput` (M ops/s over
/// all producers) and `throughput-per-cpu`, per unit of replication, from the time per op.
pub(crate) fn add_throughput(metrics: &mut Vec<Metric>, threads: u32) {
    let Some(time) = metrics.iter().find(|m| m.name == "time").cloned() else {
        return;
    };
    let total: Vec<f64> = time.values.iter().map(|ns| 1000.0 / ns).collect();
    let per: Vec<f64> = total.iter().map(|v| v / threads.max(1) as f64).collect();
    for (i, (name, unit, values)) in [
        ("throughput", "M/s", total),
        ("throughput-per-cpu", "M/s per CPU", per),
    ]
    .into_iter()
    .enumerate()
    {
        metrics.insert(
            1 + i,
            Metric::of_values(
                name,
                unit,
                MetricKind::Derived,
                time.replication.clone(),
                values,
                Some(time.units.clone()),
            ),
        );
    }
}

/// The workload's own per-run metrics: one value per run (with a single run, that run's value
/// stands alone).
fn workload_metrics(runs: &[RunRecord], replication: &str) -> Vec<Metric> {
    let mut names: Vec<&String> = runs
        .iter()
        .flat_map(|r| r.workload_metrics.keys())
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let (values, idx): (Vec<f64>, Vec<u32>) = runs
                .iter()
                .filter_map(|r| r.workload_metrics.get(name).map(|v| (*v, r.index)))
                .unzip();
            Metric::of_values(
                name.clone(),
                "per run",
                MetricKind::Workload,
                if runs.len() == 1 { "run" } else { replication },
                values,
                Some(idx),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{
        EventStatus, RawCount,
        events::{EventSpec, parse_event},
    };

    fn ev(name: &str, status: EventStatus) -> EventRecord {
        EventRecord {
            spec: parse_event(name).unwrap(),
            group: 0,
            status,
        }
    }

    fn sample(ops: u64, wall: u64, counts: &[Option<u64>]) -> Sample {
        Sample {
            ops,
            wall_ns: wall,
            start_ns: None,
            counts: counts
                .iter()
                .map(|c| {
                    c.map(|v| RawCount {
                        value: v,
                        enabled: 1000,
                        running: 1000,
                    })
                })
                .collect(),
        }
    }

    fn run(index: u32, samples: Vec<Sample>, overhead: Vec<Sample>) -> RunRecord {
        RunRecord {
            index,
            pid: 1,
            cpu_first: None,
            cpu_last: None,
            sched: "SCHED_OTHER".into(),
            warmup: vec![],
            samples,
            overhead,
            workload_metrics: Default::default(),
            notes: Vec::new(),
            waits: false,
            missed_lines: Vec::new(),
            own_objects: None,
            placement: None,
        }
    }

    // The replica run: samples of 68-70 ns with one hit by a neighbour at 88. The
    // pooled mean moves; the median and the fastest sample do not, and the counters are taken
    // from the very samples the time was.
    #[test]
    fn estimators_resist_a_spike_and_keep_counters_with_their_samples() {
        let events = vec![ev("task-clock", EventStatus::Counting)];
        let samples = vec![
            sample(100, 6900, &[Some(6800)]),
            sample(100, 8800, &[Some(7000)]),
            sample(100, 6800, &[Some(6700)]),
            sample(100, 7000, &[Some(6950)]),
        ];
        let runs = vec![run(0, samples.clone(), vec![]), run(1, samples, vec![])];
        let value =
            |e: Estimator, j: usize| analyze_with(&runs, &events, "walk", false, e).0[j].values[0];
        assert_eq!(value(Estimator::Mean, 0), 73.75, "(69 + 88 + 68 + 70) / 4");
        assert_eq!(
            value(Estimator::Median, 0),
            69.5,
            "the middle two: 69 and 70"
        );
        assert_eq!(
            value(Estimator::Median, 1),
            68.75,
            "their task-clock: 68 and 69.5"
        );
        assert_eq!(value(Estimator::Min, 0), 68.0);
        assert_eq!(
            value(Estimator::Min, 1),
            67.0,
            "the fastest sample's own task-clock"
        );
        assert_eq!(
            analyze(&runs, &events, "walk", false).0[0].values,
            analyze_with(&runs, &events, "walk", false, Estimator::Mean).0[0].values
        );
    }

    // The campaign that lost its exact count: the median sample by time was a window another
    // task ran in (no emulated count), while two other windows counted.
    #[test]
    fn exact_counts_pool_every_counted_window_whatever_time_chose() {
        let events = vec![EventRecord {
            spec: EventSpec::emulated_all("instructions (emulated)"),
            group: 1,
            status: EventStatus::Counting,
        }];
        let samples = vec![
            sample(100, 6800, &[Some(31_400)]),
            sample(100, 6900, &[None]),
            sample(100, 7000, &[Some(31_600)]),
        ];
        let runs = vec![run(0, samples.clone(), vec![]), run(1, samples, vec![])];
        for e in [Estimator::Mean, Estimator::Median, Estimator::Min] {
            let m = &analyze_with(&runs, &events, "call", false, e).0[1];
            assert_eq!(
                m.values,
                [315.0, 315.0],
                "{e:?}: both counted windows, pooled"
            );
            assert_eq!(m.kind, MetricKind::Emulated);
        }
        let none = vec![run(0, vec![sample(100, 6900, &[None])], vec![]); 2];
        let m = &analyze_with(&none, &events, "call", false, Estimator::Median).0[1];
        assert!(m.values.is_empty());
        let why = m.reason.as_deref().unwrap();
        assert!(why.contains("window") && !why.contains("PMU"), "{why}");
    }

    #[test]
    fn windows_sized_by_count_give_each_exact_count_its_slope() {
        let events = vec![
            ev("task-clock", EventStatus::Counting),
            EventRecord {
                spec: EventSpec::emulated("instructions:k (emulated)", true),
                group: 1,
                status: EventStatus::Counting,
            },
        ];
        // 305 instructions a call and 43 a window (the marks, the call into the loop); a
        // window another task ran in has no count and is left out of the line.
        let w = |n: u64, count: Option<u64>| sample(n, 700 * n, &[Some(690 * n), count]);
        let sized = vec![
            w(256, Some(305 * 256 + 43)),
            w(512, Some(305 * 512 + 43)),
            w(1024, None),
            w(1024, Some(305 * 1024 + 43)),
        ];
        let runs = vec![run(0, sized.clone(), vec![]), run(1, sized.clone(), vec![])];
        let m = &analyze_with(&runs, &events, "call", false, Estimator::Median).0;
        assert_eq!(
            m[2].values,
            [305.0, 305.0],
            "whole, the window's own cost cancelled"
        );
        assert_eq!(m[0].values, [700.0, 700.0], "time is pooled as before");
        // One run: each window is a unit, its count less the line's fixed cost over its calls.
        let one = &analyze_with(&runs[..1], &events, "call", false, Estimator::Median).0;
        assert_eq!(one[2].values, [305.0, 305.0, 305.0]);
        assert_eq!(one[2].units, [0, 1, 3]);
        // Windows of one size (sized by time): the pooled ratio, its fixed cost in it.
        let timed = vec![run(0, vec![w(256, Some(305 * 256 + 43)); 2], vec![]); 2];
        let m = &analyze_with(&timed, &events, "call", false, Estimator::Median).0;
        assert!(
            m[2].values[0] > 305.16 && m[2].values[0] < 305.17,
            "{:?}",
            m[2].values
        );
        // One run whose window of 512 had other work in it (a task's periodic work, 1,000
        // more): off the line, it is no unit, and the run's figure is the line's, whole.
        let polluted = vec![
            w(256, Some(305 * 256 + 43)),
            w(512, Some(305 * 512 + 43 + 1000)),
            w(1024, Some(305 * 1024 + 43)),
            w(256, Some(305 * 256 + 43)),
        ];
        let one = &analyze_with(
            &[run(0, polluted, vec![])],
            &events,
            "call",
            false,
            Estimator::Median,
        )
        .0;
        assert_eq!(one[2].values, [305.0, 305.0, 305.0]);
        assert_eq!(one[2].units, [0, 2, 3]);
    }

    /// The lines taken from other vCPUs are every window's lines over every window's calls:
    /// no line through them (how many a window takes follows the host's slices, not the
    /// calls), never below 0.
    #[test]
    fn lines_moved_are_a_ratio_of_sums() {
        let events = vec![EventRecord {
            spec: EventSpec::emulated("lines-moved:k (emulated)", true),
            group: 1,
            status: EventStatus::Counting,
        }];
        // A slope through these would be negative: (9 - 12) / (1024 - 256).
        let w = |n: u64, c: u64| sample(n, 700 * n, &[Some(c)]);
        let runs = vec![run(0, vec![w(256, 12), w(1024, 9)], vec![]); 2];
        let m = &analyze_with(&runs, &events, "call", false, Estimator::Median).0;
        assert_eq!(m[1].values, [21.0 / 1280.0, 21.0 / 1280.0]);
    }

    #[test]
    fn runs_are_pooled_then_summarised() {
        let events = vec![
            ev("task-clock", EventStatus::Counting),
            ev("cycles", EventStatus::NotSupported("no PMU".into())),
        ];
        let runs = vec![
            run(
                0,
                vec![
                    sample(100, 1000, &[Some(900), None]),
                    sample(100, 3000, &[Some(2900), None]),
                ],
                vec![sample(100, 100, &[Some(90), None])],
            ),
            run(
                1,
                vec![sample(200, 4000, &[Some(3800), None])],
                vec![sample(100, 300, &[Some(290), None])],
            ),
        ];
        let (m, oh) = analyze(&runs, &events, "call", false);
        let time = &m[0];
        assert_eq!(time.replication, "run");
        assert_eq!(time.values, vec![20.0, 20.0], "4000 ns / 200 calls per run");
        assert_eq!(m[1].values, vec![19.0, 19.0]);
        assert_eq!(m[2].status.as_deref(), Some("<not supported>"));
        assert!(m[2].values.is_empty() && m[2].summary.is_none());
        let cpus = m.iter().find(|x| x.name == "CPUs-utilized").unwrap();
        assert_eq!(cpus.values, vec![0.95, 0.95]);
        assert!(m.iter().all(|x| x.name != "IPC"), "no IPC without cycles");
        assert_eq!(oh[0].values, vec![1.0, 3.0]);
        assert_eq!(time.units, vec![0, 1]);

        let (sub, _) = analyze(&runs, &events, "call", true);
        assert_eq!(
            sub[0].values,
            vec![19.0, 17.0],
            "each run minus its own overhead"
        );
    }

    #[test]
    fn the_names_a_run_could_have_are_known_before_it_runs() {
        for name in [
            "time",
            "task-clock",
            "instructions:k",
            "instructions (emulated)",
            "conditional-branches:u (emulated)",
            "atomics:k (emulated)",
            "L1-dcache-miss-% (emulated)",
            "IPC:u",
            "CPUs-utilized",
        ] {
            assert!(run_could_have(name), "{name}");
        }
        for name in ["nonsense", "instructions (emulated", "IPCx", "time:u"] {
            assert!(!run_could_have(name), "{name}");
        }
    }

    #[test]
    fn a_single_run_is_summarised_over_samples() {
        let events = vec![
            ev("instructions:u", EventStatus::Counting),
            ev("cycles:u", EventStatus::Counting),
        ];
        let runs = vec![run(
            0,
            vec![
                sample(10, 100, &[Some(40), Some(20)]),
                sample(10, 200, &[Some(60), Some(20)]),
            ],
            vec![],
        )];
        let (m, _) = analyze(&runs, &events, "op", false);
        assert_eq!(m[0].replication, "sample");
        assert_eq!(m[0].values, vec![10.0, 20.0]);
        let ipc = m.iter().find(|x| x.name == "IPC:u").unwrap();
        assert_eq!(ipc.values, vec![2.0, 3.0]);
        assert_eq!(m[1].running_pct, Some(100.0));
    }

    #[test]
    fn multiplexed_counts_are_scaled() {
        let events = vec![ev("branches", EventStatus::Counting)];
        let s = Sample {
            ops: 10,
            wall_ns: 10,
            start_ns: None,
            counts: vec![Some(RawCount {
                value: 50,
                enabled: 200,
                running: 100,
            })],
        };
        let (m, _) = analyze(&[run(0, vec![s], vec![])], &events, "op", false);
        assert_eq!(
            m[1].values,
            vec![10.0],
            "50 counted in half the time -> 100"
        );
        assert_eq!(m[1].running_pct, Some(50.0));
    }
}
