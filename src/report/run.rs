//! A run: the table in the spirit of `perf stat`, per operation, with the spread over runs,
//! counters that are not counted and why, and the profile's top functions.

use super::Render;
use super::charts::{profile_chart, run_chart};
use super::format::{Cell, Format, Grid};
use super::kind::{Entry, Loaded, Reading, ResultKind, SAMPLES_DRAWN};
use super::section::Section;
use crate::core::Kind;
use crate::core::input::{Opt, spelled};
use crate::core::num::{fmt_num, group_thousands};
use crate::results::load::{Checked, LoadError};
use crate::results::{Metric, RunResult};
use crate::stats::Interval;

fn label(m: &Metric) -> String {
    super::metric_label(&m.name, &m.unit)
}

/// One table row; a metric without value shows its status and a footnote number for the
/// reason, collected in `notes` (identical reasons share a number).
fn metric_row(m: &Metric, notes: &mut Vec<String>) -> Vec<Cell> {
    let Some(s) = &m.summary else {
        let status = m.status.clone().unwrap_or_else(|| "<no value>".into());
        let mut mark = String::new();
        if let Some(r) = &m.reason {
            // Results written before reasons stopped naming their event began "cycles: ...":
            // the row names the event, so one reason is one footnote.
            let r = r.strip_prefix(&format!("{}: ", m.name)).unwrap_or(r);
            let i = match notes.iter().position(|n| n == r) {
                Some(i) => i,
                None => {
                    notes.push(r.to_string());
                    notes.len() - 1
                }
            };
            mark = format!("[{}]", i + 1);
        }
        let mut row = vec![label(m).into(), status.into()];
        row.extend(std::iter::repeat_n(Cell::from(""), 6));
        row.push(mark.into());
        return row;
    };
    let ci = s.ci95.map_or_else(
        || "n/a (n=1)".into(),
        |(lo, hi)| Cell::Interval(Interval::new(lo, hi)),
    );
    let note = match m.running_pct {
        Some(p) if p < 99.5 => format!("({p:.2}% running, scaled)"),
        _ => String::new(),
    };
    vec![
        label(m).into(),
        Cell::Num(s.median),
        Cell::Num(s.mean),
        Cell::Num(s.min),
        Cell::Num(s.max),
        Cell::Num(s.pstdev),
        Cell::Pct(s.pstdev_pct),
        ci,
        note.into(),
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
    let floor = if o.estimator == crate::results::metrics::Estimator::Min {
        ", each run's value its fastest sample (the floor)"
    } else {
        ""
    };
    let mut lines = vec![
        format!(
            " Per-{op} statistics for {w}",
            op = r.op_name,
            w = r.workload.describe()
        ),
        sizing_line(r, &cpus, &sched),
        format!(
            " Timed by {}{clocksource}; statistics over {replication}s (n={}){floor}; pstdev is \
             the population standard deviation, ±% is pstdev/mean; CI: 95% of the mean \
             (Student t)",
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

/// How the runs were sized: samples of one size (by time or `--ops`), or, counted exactly,
/// windows of the sizes in turn whose slope is each count's figure.
fn sizing_line(r: &RunResult, cpus: &str, sched: &str) -> String {
    let o = &r.options;
    let op = crate::core::plural(&r.op_name);
    let sized = |k: u64| group_thousands(&o.ops_per_sample.saturating_mul(k).to_string());
    let base = match (o.calibrated, o.sizes.is_empty()) {
        (true, _) => "calibrated".to_string(),
        (false, true) => spelled(Opt::Ops),
        (false, false) if !o.workload_base => {
            crate::said!("the base from ", Opt::Ops).spell(spelled)
        }
        (false, false) => format!("{}'s base for an exact count", r.workload.name()),
    };
    if o.sizes.is_empty() {
        return format!(
            " {} run(s) x {} sample(s) x {} {op} ({base}), {} warm-up sample(s) per run, {cpus}, \
             {sched}",
            o.runs,
            o.samples,
            sized(1),
            o.warmup
        );
    }
    let sizes: Vec<String> = o.sizes.iter().map(|&k| sized(k)).collect();
    format!(
        " {} run(s) x {} window(s) of {} {op} in turn ({base}), {} warm-up window(s) of {} per \
         run, {cpus}, {sched}; sized by count: each exact count is its slope over the windows, \
         so what a window pays once cancels, and time under the emulator sizes nothing",
        o.runs,
        o.samples,
        match sizes.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => sizes.join(""),
        },
        o.warmup,
        sized(1),
    )
}

/// The run table: one row per metric, per operation, with notes (reasons for missing values,
/// the empty-loop overhead, warnings) under it.
/// A run's table and its notes; the warnings go apart (a page shows them above it).
fn run_table(r: &RunResult) -> Grid {
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
                "subtracted from every per-op value above".to_string()
            } else {
                crate::said!("not subtracted (", Opt::SubtractOverhead, ")").spell(spelled)
            }
        ));
    }
    for n in &r.notes {
        g.notes.push(format!(" {n}"));
    }
    g
}

/// [`run_table`] with the run's warnings (and its set-up's) under it, for text.
pub fn run_grid(r: &RunResult) -> Grid {
    let mut g = run_table(r);
    let warnings = r.warnings.iter().chain(&r.environment.warnings);
    if let Some(notes) = super::warning_notes(warnings) {
        g.notes.push(String::new());
        g.notes.extend(notes);
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
        g.row([
            Cell::Pct(f.self_pct),
            Cell::Pct(f.total_pct),
            f.name.clone().into(),
            f.space.clone().into(),
        ]);
    }
    g.notes = p.notes.iter().map(|n| format!(" {n}")).collect();
    g
}

impl Render for RunResult {
    fn preamble(&self) -> Vec<String> {
        run_preamble(self)
    }

    fn grids(&self) -> Vec<Grid> {
        let mut grids = vec![run_grid(self)];
        if let Some(p) = &self.profile {
            grids.push(profile_grid(p, 15));
        }
        grids
    }
}

/// A run: its samples per run, its lines, its table and its profile.
pub(crate) const ENTRY: Entry = Entry::with(Kind::Run, &["run", "profile"], decode_run);

fn decode_run(c: &Checked, reading: Reading) -> Result<Loaded, LoadError> {
    Ok(Box::new(match reading {
        Reading::ForPage => RunResult::decode(c, Some(SAMPLES_DRAWN))?,
        Reading::Whole => c.decode::<RunResult>()?,
    }))
}

impl ResultKind for RunResult {
    fn kind(&self) -> Kind {
        Kind::Run
    }

    fn title(&self) -> String {
        format!("Run: {}", self.workload.describe())
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.warn(&self.warnings);
        s.warn(&self.environment.warnings);
        s.figure(&run_chart(self));
        for line in run_preamble(self) {
            s.meta(&line);
        }
        s.table(&run_table(self));
        if let Some(p) = &self.profile {
            s.figure(&profile_chart(p, &self.workload.describe()));
        }
    }

    fn environment(&self) -> Option<&crate::environment::Environment> {
        Some(&self.environment)
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        Some(match name {
            "run" => Ok(run_chart(self)),
            "profile" => match &self.profile {
                Some(p) => Ok(profile_chart(p, &self.workload.describe())),
                None => Err(crate::refused!(
                    "this run has no profile: take it with ",
                    Opt::Profile
                )),
            },
            _ => return None,
        })
    }
}
