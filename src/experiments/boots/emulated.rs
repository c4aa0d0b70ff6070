//! A boot's emulated counts joined to its result: the windows syscost's TCG plugin counted
//! (`counters::emulated`), one per batch of the measurement in the order the batches ran, become
//! events of the result (`instructions:u (emulated)`, `instructions:k (emulated)`, and the
//! others the plugin counted), with a count in every sample, so every per-op metric,
//! comparison and table takes them as it takes perf's; with the cache models, the misses by
//! set of each run's sample windows give the result's `emulated_sets` (its median run's).
//! Joined only when the windows match the batches one to one (their number, and each run's
//! windows named by consecutive slots); otherwise the result says why and keeps none.

use super::profile::{BlockSums, Names};
use super::ticked;
use crate::boot::guest::GuestSymbols;
use crate::core::Kind;
use crate::counters::emulated::{Count, Part, Refused, Window};
use crate::counters::{EventStatus, RawCount, events::EventSpec};
use crate::experiments::audit_sweep::Sweep;
use crate::experiments::probe::{ProbeCounts, ProbeResult};
use crate::profile::symbols::Kallsyms;
use crate::results::sets::{EmulatedSets, MissedLine};
use crate::results::{
    EmulatedWindows, EventRecord, InterruptsLeftOut, RunRecord, RunResult, Sample,
};
use crate::stats::slope;
use std::collections::HashMap;

/// Join `windows` to the boot's `result`: a run's, or an audit sweep's (each step's runs, and
/// then its costs and fits again, so the fits include instructions per rule); other kinds are
/// left as they are. `symbols`: the arm's kernel symbols and where this boot's text started,
/// which name the blocks of an emulated profile.
pub(crate) fn join(result: &mut serde_json::Value, windows: &[Window], symbols: Option<Rebased>) {
    match with_windows(result, windows, symbols) {
        None => {}
        Some(Ok(v)) => *result = v,
        Some(Err(why)) => {
            if let Some(w) = result.get_mut("warnings").and_then(|w| w.as_array_mut()) {
                w.push(format!("no emulated counts: {why}").into());
            }
        }
    }
}

/// `windows` join `result` (a run, an audit sweep or a probe) one to one: every batch it ran
/// has its window. A guest that receives the windows as they are counted stops waiting then.
pub(crate) fn joins(result: &serde_json::Value, windows: &[Window]) -> bool {
    matches!(with_windows(result, windows, None), Some(Ok(_)))
}

/// `result` with `windows` joined, or why they do not join; `None`: a kind no window joins.
fn with_windows(
    result: &serde_json::Value,
    windows: &[Window],
    symbols: Option<Rebased>,
) -> Option<Result<serde_json::Value, String>> {
    Some(
        match Kind::parse(result.get("kind").and_then(|k| k.as_str()).unwrap_or("")) {
            Some(Kind::Run) => {
                joined_as::<RunResult>(result, windows, |r, w| joined(&mut [r], w, symbols))
            }
            Some(Kind::AuditSweep) => joined_as::<Sweep>(result, windows, |s, w| {
                let mut steps: Vec<&mut RunResult> =
                    s.steps.iter_mut().map(|s| &mut s.result).collect();
                joined(&mut steps, w, symbols)?;
                s.refigure().map_err(|e| e.to_string())
            }),
            Some(Kind::Probe) => joined_as::<ProbeResult>(result, windows, probe_joined),
            _ => return None,
        },
    )
}

/// An arm's kernel symbols: the table one of its boots sent, and where that boot's text
/// started. Every boot of the arm runs the same kernel; KASLR moves its text as a whole.
pub(crate) struct ArmSymbols {
    text: u64,
    table: Kallsyms,
    /// Its data symbols, where the boot sent them.
    data: Option<Kallsyms>,
}

impl ArmSymbols {
    /// The table a boot sent, if it sent one.
    pub(crate) fn of(sent: &GuestSymbols) -> Option<ArmSymbols> {
        let all = unzipped(&sent.table)?;
        let split = format!("\n{}\n", crate::boot::guest::DATA_SYMBOLS);
        let (text, data) = match all.split_once(&split) {
            Some((text, data)) => (text, Some(Kallsyms::parse(data))),
            None => (all.as_str(), None),
        };
        Some(ArmSymbols {
            text: sent.text,
            table: Kallsyms::parse(text),
            data,
        })
    }

    /// The table for a boot whose text started at `text`.
    pub(crate) fn at(&self, text: u64) -> Rebased<'_> {
        Rebased {
            symbols: self,
            shift: self.text.wrapping_sub(text),
        }
    }
}

/// An arm's symbols for one boot: add `shift` to the boot's addresses to look them up.
#[derive(Clone, Copy)]
pub(crate) struct Rebased<'a> {
    symbols: &'a ArmSymbols,
    shift: u64,
}

fn unzipped(gz: &[u8]) -> Option<String> {
    use std::io::Read as _;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// `result` read as a `T`, joined by `join`, and written back, with the fields `T` does not
/// know kept as they were (what the boot added: the audit state of its arm's rules).
fn joined_as<T: serde::de::DeserializeOwned + serde::Serialize>(
    result: &serde_json::Value,
    windows: &[Window],
    join: impl FnOnce(&mut T, &[Window]) -> Result<(), String>,
) -> Result<serde_json::Value, String> {
    let mut r: T = serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
    join(&mut r, windows)?;
    let mut out = serde_json::to_value(&r).expect("results serialise");
    if let (Some(o), Some(before)) = (out.as_object_mut(), result.as_object()) {
        for (k, v) in before {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Ok(out)
}

/// The counts every window has (the plugin counts the same in all of them): its fixed counts,
/// then the misses of each other L1i geometry it modelled.
fn counted(windows: &[Window]) -> Result<Vec<Count>, String> {
    let mut counting = windows.iter().filter(|w| w.refused.is_none());
    let first = counting.clone().next();
    let n = first.map_or(0, |w| w.counts.len());
    let also: Vec<_> = first.map_or(Vec::new(), |w| w.also_l1i.iter().map(|a| a.0).collect());
    let atomics = first.is_some_and(|w| w.atomics.is_some());
    let moved = first.is_some_and(|w| w.moved.is_some());
    let same = |w: &Window| {
        w.counts.len() == n
            && w.also_l1i.iter().map(|a| a.0).eq(also.clone())
            && w.atomics.is_some() == atomics
            && w.moved.is_some() == moved
    };
    if counting.any(|w| !same(w)) || n > Count::ALL.len() {
        return Err("the plugin's windows differ in what they count".into());
    }
    let mut counts = Count::ALL[..n].to_vec();
    counts.extend(also.into_iter().map(Count::L1iMissesOf));
    counts.extend(atomics.then_some(Count::Atomics));
    counts.extend(moved.then_some(Count::LinesMoved));
    Ok(counts)
}

/// Each run of `results`, as (result, run), in the order the runs were measured: by their
/// first batch's start (interleaved steps of a sweep ran one run after another).
fn run_order(results: &[&mut RunResult]) -> Vec<(usize, usize)> {
    let mut order: Vec<(Option<u64>, usize, usize)> = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for (k, run) in r.runs.iter().enumerate() {
            order.push((run.batches().next().and_then(|s| s.start_ns), i, k));
        }
    }
    order.sort_by_key(|&(start, ..)| start);
    order.into_iter().map(|(_, i, k)| (i, k)).collect()
}

/// Join the windows, in the order their batches ran, to the runs of `results`; their blocks,
/// if the plugin counted them, become each result's emulated profile, named by `symbols`.
fn joined(
    results: &mut [&mut RunResult],
    windows: &[Window],
    symbols: Option<Rebased>,
) -> Result<(), String> {
    let batches: usize = results
        .iter()
        .flat_map(|r| &r.runs)
        .map(|run| run.batches().count())
        .sum();
    if windows.len() != batches {
        return Err(format!(
            "the plugin counted {} windows for {batches} batches",
            windows.len()
        ));
    }
    let counts = counted(windows)?;
    let counts = counts.as_slice();
    let mut joins: Vec<Joined> = results.iter().map(|r| Joined::of(r)).collect();
    let mut next = windows.iter();
    for (i, k) in run_order(results) {
        let run = &mut results[i].runs[k];
        let mine: Vec<&Window> = next.by_ref().take(run.batches().count()).collect();
        joins[i].run(run, &mine, counts)?;
    }
    for (r, j) in results.iter_mut().zip(joins) {
        add_events(r, counts);
        let unheld = ticked::leave_out_unheld(r, &j.ticked_runs);
        r.warnings.extend(unheld);
        r.emulated_sets = EmulatedSets::median(&j.sets);
        r.emulated_functions = j.blocks.named(symbols.map(|s| Names {
            text: &s.symbols.table,
            data: s.symbols.data.as_ref(),
            shift: s.shift,
        }));
        r.warnings.extend(j.blocks.warnings(symbols.is_some()));
        r.recompute();
        r.warnings.extend(r.size_bends());
        r.emulated_windows = j.switches.map(|_| EmulatedWindows {
            windows: j.windows,
            left_out: j.crowded,
            interrupted: j.ticked,
            interrupts: j.interrupts,
        });
        r.warnings
            .extend(crowded_warning(j.switches, j.crowded, j.windows));
        r.warnings.extend(j.refusals());
    }
    Ok(())
}

/// One result's join so far.
struct Joined {
    /// Its `context-switches` event, when counted.
    switches: Option<usize>,
    /// The loop switches context by nature (a round trip, a fork): its own switches are part
    /// of the operation.
    waits: bool,
    crowded: usize,
    /// Windows the plugin refused: begun while it was asleep; ended on another vCPU.
    asleep: usize,
    moved: usize,
    unspanned: usize,
    /// Sample windows an interrupt landed in, left out for those it did not.
    ticked: usize,
    /// The runs (by index) with a sample window an interrupt landed in and no two sizes of
    /// windows free of them (`ticked.rs`).
    ticked_runs: Vec<u32>,
    windows: usize,
    /// The interrupts left out of the kept sample windows, when the plugin left them out.
    interrupts: Option<InterruptsLeftOut>,
    /// Each run's misses by set per operation, for the runs whose windows modelled caches.
    sets: Vec<EmulatedSets>,
    blocks: BlockSums,
}

impl Joined {
    fn of(r: &RunResult) -> Joined {
        let switches = r
            .events
            .iter()
            .position(|e| e.spec.name == "context-switches" && e.status.is_counting());
        Joined {
            switches,
            waits: r.workload.waits().is_some(),
            crowded: 0,
            asleep: 0,
            unspanned: 0,
            moved: 0,
            ticked: 0,
            ticked_runs: Vec::new(),
            windows: 0,
            interrupts: None,
            sets: Vec::new(),
            blocks: BlockSums::default(),
        }
    }

    /// What the result says of the windows the plugin refused, and of counts that include
    /// their interrupts.
    fn refusals(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.asleep > 0 {
            out.push(format!(
                "emulated counts: {} of {} windows left out: they began while syscost's plugin \
                 was asleep (before the guest woke it, as syscost's own guest does before it \
                 measures), and nothing of them was counted",
                self.asleep, self.windows
            ));
        }
        if self.unspanned > 0 {
            out.push(format!(
                "emulated counts: {} of {} windows left out: they began outside the \
                 measurement's spans, where the coherence model does not follow the vCPUs' \
                 lines (a fault of syscost's measuring command: please report it)",
                self.unspanned, self.windows
            ));
        }
        if self.moved > 0 {
            out.push(format!(
                "emulated counts: {} of {} windows left out: the measured task moved to \
                 another vCPU during them, and the plugin counts one vCPU's windows (pin the \
                 measuring command to one CPU)",
                self.moved, self.windows
            ));
        }
        if self.interrupts.is_none() {
            out.push(
                "emulated counts include the interrupts that landed in their windows (timer \
                 ticks, on the host's clock): the guest could not tell the plugin its kernel's \
                 interrupt entries (/proc/kallsyms)"
                    .into(),
            );
        }
        out
    }

    /// Join one run's windows, which must be named by consecutive slots from its first batch;
    /// `counts`: what the plugin counted in each.
    fn run(
        &mut self,
        run: &mut RunRecord,
        windows: &[&Window],
        counts: &[Count],
    ) -> Result<(), String> {
        // Another task in a window (a kworker, the boot's own asynchronous work) adds its
        // instructions to it: such a window is left out, by the context switches counted in it.
        let allowed = self
            .switches
            .map(|i| (i, allowed_switches(run, i, self.waits || run.waits)));
        let (index, warmup, samples) = (run.index, run.warmup.len(), run.samples.len());
        let workload_batches = warmup + samples;
        // A window an interrupt was still open at the end of (its return never seen) counted
        // that interrupt's rest as the task's: left out too.
        let alone = |k: usize, s: &Sample, w: &Window| {
            w.refused.is_none()
                && !w.interrupts.as_ref().is_some_and(|q| q.open)
                && allowed.is_none_or(|(i, per_op)| {
                    let per_op = if k < workload_batches { per_op } else { 0.0 };
                    s.counts[i].is_some_and(|c| c.value as f64 <= allowance(per_op, s.ops))
                })
        };
        if let Some(k) = out_of_order(windows.iter().copied()) {
            return Err(format!("run {index}: batch {k}'s window is out of order"));
        }
        // An interrupt, left out of its window, can still lengthen the task's own path (a
        // clock read it lands in is retried: 12 instructions of a getpid at audit=1): while
        // the run has sample windows of two sizes that no interrupt landed in, those make
        // its slope, whole, and the others are left out.
        let sampled = |k: usize| (warmup..warmup + samples).contains(&k);
        let quiet = |w: &Window| w.interrupts.as_ref().is_some_and(|q| q.n == 0);
        let mut quiet_sizes: Vec<u64> = (run.batches().zip(windows).enumerate())
            .filter(|(k, (s, w))| sampled(*k) && quiet(w) && alone(*k, s, w))
            .map(|(_, (s, _))| s.ops)
            .collect();
        quiet_sizes.sort_unstable();
        quiet_sizes.dedup();
        let only_quiet = quiet_sizes.len() >= 2;
        let interrupted = |w: &Window| w.interrupts.as_ref().is_some_and(|q| q.n > 0);
        if !only_quiet && (windows.iter().enumerate()).any(|(k, w)| sampled(k) && interrupted(w)) {
            self.ticked_runs.push(index);
        }
        let mut sets = SetSums::default();
        self.blocks.run();
        for (k, (sample, w)) in run.batches_mut().zip(windows).enumerate() {
            let ticked = only_quiet && sampled(k) && !quiet(w);
            let alone = alone(k, sample, w) && !ticked;
            self.asleep += usize::from(w.refused == Some(Refused::Asleep));
            self.moved += usize::from(w.refused == Some(Refused::Moved));
            self.unspanned += usize::from(w.refused == Some(Refused::Unspanned));
            self.ticked += usize::from(ticked && w.refused.is_none());
            self.crowded += usize::from(!alone && w.refused.is_none() && !ticked);
            self.windows += 1;
            (self.blocks).window(index, k, w, sample.ops, alone && sampled(k));
            if alone && sampled(k) {
                sets.add(w, sample.ops);
                if let Some(q) = &w.interrupts {
                    let sum = self.interrupts.get_or_insert_with(Default::default);
                    sum.interrupts += q.n;
                    sum.instructions += q.counts[0][0] + q.counts[0][1];
                    sum.ops += sample.ops;
                }
            }
            let count = |value| {
                alone.then_some(RawCount {
                    value,
                    enabled: 1,
                    running: 1,
                })
            };
            let values = (counts.iter())
                .map(|kind| (w.count(*kind).unwrap_or_default(), kind))
                .flat_map(|(c, kind)| kind.parts().iter().map(move |p| count(p.of(c))));
            sample.counts.extend(values);
        }
        run.missed_lines = sets.lines_per_op();
        self.sets.extend(sets.per_op());
        Ok(())
    }
}

/// The first of `windows` not named by the slot after the one before (the marks name
/// consecutive slots from the first), if any.
fn out_of_order<'a>(windows: impl Iterator<Item = &'a Window>) -> Option<usize> {
    let mut windows = windows.peekable();
    let base = windows.peek().map_or(0, |w| w.name);
    windows
        .enumerate()
        .position(|(k, w)| w.name.wrapping_sub(base) != k as u64)
}

/// The context switches per operation a batch of `run` makes by itself: none, or for a loop
/// that switches by nature the median over the run's workload batches.
fn allowed_switches(run: &RunRecord, switches: usize, waits: bool) -> f64 {
    if !waits {
        return 0.0;
    }
    let mut per_op: Vec<f64> = run
        .warmup
        .iter()
        .chain(&run.samples)
        .filter_map(|s| Some(s.counts[switches]?.value as f64 / s.ops.max(1) as f64))
        .collect();
    per_op.sort_by(f64::total_cmp);
    per_op.get(per_op.len() / 2).copied().unwrap_or(0.0)
}

/// The switches a batch of `ops` may count and still be the measured loop's alone: its own
/// (`per_op`), rounded up, and one more; another task's visit costs two (away and back).
fn allowance(per_op: f64, ops: u64) -> f64 {
    if per_op == 0.0 {
        return 0.0;
    }
    (per_op * ops as f64).ceil() + 1.0
}

/// A probe's windows, one per run of its command in the order they ran, become its
/// instructions per run without and with the probe. The command is another process: every
/// task that ran in a window counts in it (the settling before the measurement keeps the
/// boot's own work out).
fn probe_joined(p: &mut ProbeResult, windows: &[Window]) -> Result<(), String> {
    if windows.len() != p.probed_runs.len() {
        return Err(format!(
            "the plugin counted {} windows for {} runs of the command",
            windows.len(),
            p.probed_runs.len()
        ));
    }
    if let Some(k) = out_of_order(windows.iter()) {
        return Err(format!("run {k}'s window is out of order"));
    }
    let mut counts = ProbeCounts::default();
    for (w, &probed) in windows.iter().zip(&p.probed_runs) {
        let c = w
            .count(Count::Instructions)
            .ok_or("a window without instructions")?;
        if probed {
            counts.probed.push(c);
        } else {
            counts.unprobed.push(c);
        }
    }
    p.emulated = Some(counts);
    Ok(())
}

/// The emulated events, user then kernel for each count, in a group of their own.
fn add_events(r: &mut RunResult, counts: &[Count]) {
    let group = r.events.iter().map(|e| e.group + 1).max().unwrap_or(0);
    for c in counts {
        for &part in c.parts() {
            let name = c.part_name(part);
            let spec = match part {
                Part::All => EventSpec::emulated_all(name),
                _ => EventSpec::emulated(name, part == Part::Kernel),
            };
            r.events.push(EventRecord {
                spec,
                group,
                status: EventStatus::Counting,
            });
        }
    }
}

fn crowded_warning(switches: Option<usize>, crowded: usize, windows: usize) -> Option<String> {
    match switches {
        None => Some(
            "emulated counts: windows not checked for other tasks (count context-switches, \
             in the default events)"
                .to_string(),
        ),
        Some(_) if crowded > 0 => Some(format!(
            "emulated counts: {crowded} of {windows} windows left out: another task ran in them \
             (context switches counted in the batch)"
        )),
        Some(_) => None,
    }
}

/// A window's operations and its misses by set, L1d then L1i.
type SetWindow = (u64, Vec<u64>, Vec<u64>);

/// The sample windows' misses by set and by missing L1d line, window by window.
#[derive(Default)]
struct SetSums {
    windows: Vec<SetWindow>,
    lines: HashMap<u64, u64>,
    ops: u64,
}

impl SetSums {
    fn add(&mut self, w: &Window, ops: u64) {
        if w.l1d_sets.is_empty() {
            return;
        }
        (self.windows).push((ops, w.l1d_sets.clone(), w.l1i_sets.clone()));
        for (line, n) in &w.missed_lines {
            *self.lines.entry(*line).or_default() += n;
        }
        self.ops += ops;
    }

    /// The lines that missed most over the windows, per operation, most first: as many as
    /// a window lists. (A window lists only its most missed lines, so a line's count is its
    /// total over the windows' operations, not a slope.)
    fn lines_per_op(&self) -> Vec<MissedLine> {
        let mut lines: Vec<(u64, u64)> = self.lines.iter().map(|(l, n)| (*l, *n)).collect();
        lines.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        lines.truncate(MissedLine::LISTED);
        (lines.iter())
            .map(|(l, n)| MissedLine::new(*l, *n as f64 / self.ops as f64))
            .collect()
    }

    /// Each set's misses per operation: their slope over the windows' sizes (what a window
    /// pays once, a cache state settling at its start, cancels), as the run's counts are; 0
    /// where a set's few misses at random (the kernel's stack offset moves each call's lines)
    /// take the slope below it.
    fn per_op(self) -> Option<EmulatedSets> {
        let sets = |pick: fn(&SetWindow) -> &Vec<u64>| -> Vec<f64> {
            let n = self
                .windows
                .iter()
                .map(|w| pick(w).len())
                .max()
                .unwrap_or(0);
            (0..n)
                .map(|set| {
                    let w: Vec<(u64, u64)> = (self.windows.iter())
                        .map(|w| (w.0, pick(w).get(set).copied().unwrap_or(0)))
                        .collect();
                    slope::per_op(&w).unwrap_or(0.0).max(0.0)
                })
                .collect()
        };
        (self.ops > 0).then(|| EmulatedSets {
            l1d: sets(|w| &w.1),
            l1i: sets(|w| &w.2),
        })
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::counters::emulated::Interrupts;
    use crate::results::fixture::fixed_result;

    /// The index of `r`'s context-switches event.
    fn switches_of(r: &RunResult) -> usize {
        let cs = r
            .events
            .iter()
            .position(|e| e.spec.name == "context-switches");
        cs.expect("the fixture counts context switches")
    }

    /// The fixture with no context switch in any batch: every window the worker's alone.
    fn alone_result() -> RunResult {
        let mut r = fixed_result();
        let cs = switches_of(&r);
        for run in &mut r.runs {
            run.batches_mut()
                .for_each(|s| s.counts[cs].as_mut().unwrap().value = 0);
        }
        r
    }

    /// One window per batch of `r`, named by consecutive slots in each run, with `kernel`
    /// instructions per operation.
    fn windows_of(r: &RunResult, kernel: u64) -> Vec<Window> {
        let mut out = Vec::new();
        for run in &r.runs {
            for (k, s) in run.batches().enumerate() {
                out.push(Window {
                    name: 0x1000 * (run.index as u64 + 1) + k as u64,
                    counts: vec![
                        [16 * s.ops, kernel * s.ops],
                        [2 * s.ops, 40 * s.ops],
                        [3 * s.ops, 60 * s.ops],
                    ],
                    l1d_sets: vec![0, 3 * s.ops, s.ops],
                    l1i_sets: vec![s.ops, 0, 0],
                    missed_lines: vec![(0xffff888004123440, 3 * s.ops), (0x7f00, s.ops)],
                    also_l1i: Vec::new(),
                    atomics: None,
                    moved: None,
                    blocks: vec![
                        (0xffffffffa1000010, (kernel - 5) * s.ops),
                        (0xffffffffa1000100, 5 * s.ops),
                    ],
                    // A timer tick of 2,000 instructions, left out by the plugin.
                    interrupts: Some(Interrupts {
                        n: 1,
                        counts: [[0, 2000], [0, 100], [0, 200]],
                        open: false,
                    }),
                    refused: None,
                });
            }
        }
        out
    }

    /// `r` with `windows` joined.
    fn joined_with(r: &RunResult, windows: &[Window]) -> RunResult {
        let mut v = serde_json::to_value(r).unwrap();
        join(&mut v, windows, None);
        serde_json::from_value(v).unwrap()
    }

    /// The values of `r`'s kernel instructions per operation.
    fn kernel_insns(r: &RunResult) -> Vec<f64> {
        let m = r
            .metrics
            .iter()
            .find(|m| m.name == "instructions:k (emulated)");
        m.unwrap().values.clone()
    }

    /// What a boot added to its result beside the run (its arm's audit state) survives the
    /// join, which reads the result as a run and writes it back.
    #[test]
    fn the_join_keeps_the_fields_a_run_does_not_know() {
        let r = fixed_result();
        let mut v = serde_json::to_value(&r).unwrap();
        let audit =
            serde_json::json!({"source": "a.rules", "rules": 3, "at_boot": 0, "measured": 1});
        v["arm_audit"] = audit.clone();
        join(&mut v, &windows_of(&r, 305), None);
        let names = v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].clone());
        assert!(
            names.clone().any(|n| n == "instructions (emulated)"),
            "joined"
        );
        assert_eq!(v["arm_audit"], audit);
    }

    #[test]
    fn windows_become_events_with_a_metric_per_operation() {
        let r = fixed_result();
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows_of(&r, 305), None);
        let joined: RunResult = serde_json::from_value(v).unwrap();
        let metric = |name: &str| joined.metrics.iter().find(|m| m.name == name).unwrap();
        let median = |name: &str| metric(name).summary.as_ref().unwrap().median;
        assert_eq!(median("instructions:u (emulated)"), 16.0);
        assert_eq!(median("instructions:k (emulated)"), 305.0);
        assert_eq!(median("instructions (emulated)"), 321.0, "user and kernel");
        assert_eq!(median("conditional-branches:k (emulated)"), 40.0);
        assert_eq!(
            median("branches:k (emulated)"),
            60.0,
            "all branches, after the Jcc"
        );
        assert_eq!(median("branches (emulated)"), 63.0, "user and kernel");
        for name in ["instructions:k (emulated)", "instructions (emulated)"] {
            assert_eq!(metric(name).kind, crate::results::MetricKind::Emulated);
        }
        assert_eq!(joined.events.len(), r.events.len() + 8);
        let sets = joined.emulated_sets.unwrap();
        assert_eq!(
            (sets.l1d, sets.l1i),
            (vec![0.0, 3.0, 1.0], vec![1.0, 0.0, 0.0])
        );
        let lines = &joined.runs[0].missed_lines;
        let want = [
            MissedLine::new(0xffff888004123440, 3.0),
            MissedLine::new(0x7f00, 1.0),
        ];
        assert_eq!(
            lines, &want,
            "a run's missed lines per operation, most first"
        );
        assert_eq!(lines[0].address(), Some(0xffff888004123440));
    }

    /// A window the plugin refused (begun before the guest woke it) is left out, and the
    /// result says so in syscost's own words; the others still count.
    #[test]
    fn a_window_begun_asleep_is_left_out_and_named() {
        let r = alone_result();
        let mut w = windows_of(&r, 305);
        w[1] = Window {
            name: w[1].name,
            refused: Some(Refused::Asleep),
            ..Window::default()
        };
        let joined = joined_with(&r, &w);
        assert_eq!(kernel_insns(&joined), [305.0, 305.0, 305.0]);
        let said = joined.warnings.iter().find(|w| w.contains("asleep"));
        assert!(
            said.is_some_and(|s| s.starts_with("emulated counts: 1 of ")),
            "{said:?}"
        );
        let first_sample = &joined.runs[0].samples[0];
        assert_eq!(first_sample.counts.len(), joined.events.len());
        assert!(
            first_sample.counts.last().unwrap().is_none(),
            "the refused window"
        );
    }

    /// A timer tick that lands in a clock read makes the task retry it (12 instructions more
    /// in that window, the tick itself left out): while a run has windows of two sizes that no
    /// interrupt landed in, its slope is theirs, whole, and the ticked windows are left out.
    #[test]
    fn windows_no_interrupt_landed_in_make_the_slope_when_there_are_two_sizes() {
        let mut r = alone_result();
        for run in &mut r.runs {
            let one = run.samples[0].clone();
            run.samples = [256, 512, 1024]
                .map(|n| Sample {
                    ops: n,
                    ..one.clone()
                })
                .to_vec();
        }
        let mut w = windows_of(&r, 467);
        let quiet = |w: &mut Window| w.interrupts.as_mut().unwrap().n = 0;
        w.iter_mut().for_each(quiet);
        // Run 0's 512-call window: a tick, and the retried read it caused.
        let ticked = &mut w[2];
        ticked.interrupts.as_mut().unwrap().n = 1;
        ticked.counts[0][1] += 12;
        let joined = joined_with(&r, &w);
        assert_eq!(kernel_insns(&joined), [467.0, 467.0, 467.0]);
        assert_eq!(joined.emulated_windows.unwrap().interrupted, 1);
        // With a tick in every sample window of a run, that run takes them all, and
        // its line is no three windows': its exact counts are left out while the other runs
        // hold theirs, its other figures kept.
        for k in [1, 3] {
            w[k].interrupts.as_mut().unwrap().n = 1;
        }
        let joined = joined_with(&r, &w);
        assert_eq!(kernel_insns(&joined), [467.0, 467.0]);
        let said = |j: &RunResult, what: &str| j.warnings.iter().any(|x| x.contains(what));
        assert!(
            said(&joined, "exact counts of 1 of 3 run(s) left out"),
            "{:?}",
            joined.warnings
        );
        let metric = |j: &RunResult, name: &str| -> usize {
            let m = j.metrics.iter().find(|m| m.name == name);
            m.unwrap().values.len()
        };
        assert_eq!(metric(&joined, "instructions:u (emulated)"), 3, "held");
        // Every run so: kept, and said.
        // (Each run's batches: a warm-up, its three samples, its overhead.)
        for (k, w) in w.iter_mut().enumerate() {
            w.interrupts.as_mut().unwrap().n = u64::from(k % 5 != 0);
            w.counts[0][1] += 12 * u64::from(k % 5 == 2);
        }
        let joined = joined_with(&r, &w);
        assert_eq!(kernel_insns(&joined).len(), 3, "{:?}", joined.warnings);
        assert!(
            said(&joined, "3 of 3 run(s) rest on windows"),
            "{:?}",
            joined.warnings
        );
    }

    /// The runs of two results (an audit sweep's steps) took turns: their windows are joined
    /// in the order the runs started.
    #[test]
    fn the_runs_of_several_results_take_their_windows_in_the_order_they_ran() {
        let (mut a, mut b) = (fixed_result(), fixed_result());
        for (r, offset) in [(&mut a, 0), (&mut b, 1)] {
            for (k, run) in r.runs.iter_mut().enumerate() {
                let start = 1_000 * (2 * k as u64 + offset);
                run.batches_mut().for_each(|s| s.start_ns = Some(start));
            }
        }
        let (wa, wb) = (windows_of(&a, 305), windows_of(&b, 500));
        let mut windows = Vec::new();
        let chunks = |w: &[Window], r: &RunResult| -> Vec<Vec<Window>> {
            let mut rest = w.iter().cloned();
            r.runs
                .iter()
                .map(|run| rest.by_ref().take(run.batches().count()).collect())
                .collect()
        };
        let (ca, cb) = (chunks(&wa, &a), chunks(&wb, &b));
        for (x, y) in ca.into_iter().zip(cb) {
            windows.extend(x);
            windows.extend(y);
        }
        joined(&mut [&mut a, &mut b], &windows, None).unwrap();
        let median = |r: &RunResult| {
            let m = r
                .metrics
                .iter()
                .find(|m| m.name == "instructions:k (emulated)");
            m.unwrap().summary.as_ref().unwrap().median
        };
        assert_eq!((median(&a), median(&b)), (305.0, 500.0));
    }

    /// The arm's table came from a boot whose text started at 0xffffffff81000000; this boot's
    /// started 0x20000000 higher (KASLR), and its blocks are named through the difference.
    #[test]
    fn blocks_are_named_from_the_arm_s_table_at_this_boot_s_text() {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"ffffffff81000000 do_syscall_64\nffffffff81000100 __x64_sys_getpid\n")
            .unwrap();
        let sent = GuestSymbols {
            text: 0xffffffff81000000,
            table: gz.finish().unwrap(),
        };
        let arm = ArmSymbols::of(&sent).unwrap();
        let r = fixed_result();
        let mut v = serde_json::to_value(&r).unwrap();
        join(
            &mut v,
            &windows_of(&r, 305),
            Some(arm.at(0xffffffffa1000000)),
        );
        let joined: RunResult = serde_json::from_value(v).unwrap();
        let f = joined.emulated_functions.unwrap();
        assert_eq!(f.total_per_op, 305.0);
        assert_eq!(f.per_op("do_syscall_64"), 300.0);
        assert_eq!(f.per_op("__x64_sys_getpid"), 5.0);
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows_of(&r, 305), None);
        let said = v["warnings"].to_string();
        assert!(said.contains("sent no kernel symbols"), "{said}");
    }

    #[test]
    fn a_window_another_task_ran_in_is_left_out_and_said() {
        let mut r = alone_result();
        let cs = switches_of(&r);
        r.runs[1].samples[0].counts[cs] = Some(RawCount {
            value: 1,
            enabled: 1,
            running: 1,
        });
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows_of(&r, 305), None);
        let joined: RunResult = serde_json::from_value(v).unwrap();
        let n = joined.runs[1].samples[0].counts.len();
        assert_eq!(joined.runs[1].samples[0].counts[n - 1], None);
        assert_eq!(joined.runs[1].samples[0].counts[n - 4], None);
        assert!(joined.runs[0].samples[0].counts[n - 1].is_some());
        let said = joined.warnings.join("; ");
        assert!(said.contains("1 of 12 windows left out"), "{said}");
        // The interrupts of the sample windows kept: every run's samples but the crowded one.
        let samples = r.runs.iter().flat_map(|run| &run.samples);
        let kept: Vec<u64> = samples.map(|s| s.ops).collect();
        let ops = kept.iter().sum::<u64>() - r.runs[1].samples[0].ops;
        let n = (kept.len() - 1) as u64;
        let kept = EmulatedWindows {
            windows: 12,
            left_out: 1,
            interrupted: 0,
            interrupts: Some(InterruptsLeftOut {
                interrupts: n,
                instructions: 2000 * n,
                ops,
            }),
        };
        assert_eq!(joined.emulated_windows, Some(kept));
        let insns = joined
            .metrics
            .iter()
            .find(|m| m.name == "instructions (emulated)");
        let insns = insns.unwrap();
        let runs = joined.runs.len();
        assert_eq!(
            insns.values.len(),
            runs,
            "the crowded run keeps its other windows"
        );
    }

    /// A window an interrupt was still open at the end of is left out; windows counted with
    /// their interrupts (no `Q` lines) are joined with a warning that says so.
    #[test]
    fn interrupts_left_out_are_kept_apart_and_an_open_one_leaves_its_window_out() {
        let r = alone_result();
        let mut windows = windows_of(&r, 305);
        windows[3].interrupts.as_mut().unwrap().open = true;
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows, None);
        let joined: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(joined.emulated_windows.unwrap().left_out, 1);
        assert!(
            !joined
                .warnings
                .join("; ")
                .contains("include the interrupts")
        );
        let mut windows = windows_of(&r, 305);
        windows.iter_mut().for_each(|w| w.interrupts = None);
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows, None);
        let joined: RunResult = serde_json::from_value(v).unwrap();
        assert_eq!(joined.emulated_windows.unwrap().interrupts, None);
        let said = joined.warnings.join("; ");
        assert!(said.contains("include the interrupts"), "{said}");
    }

    /// A pipe round trip switches twice per operation by itself: those switches leave no
    /// window out, another task's visit (two more) does.
    #[test]
    fn a_loop_that_switches_by_nature_is_checked_against_its_own_switches() {
        let mut r = fixed_result();
        r.workload = crate::workloads::WorkloadSpec::Ipc(crate::workloads::ipc::Params {
            op: crate::workloads::ipc::IpcOp::Pipe,
            working_set: 0,
        });
        let cs = switches_of(&r);
        for run in &mut r.runs {
            let (workload, _) = (run.warmup.len() + run.samples.len(), 0);
            for (k, s) in run.batches_mut().enumerate() {
                let own = if k < workload { 2 * s.ops } else { 0 };
                s.counts[cs].as_mut().unwrap().value = own;
            }
        }
        r.runs[0].samples[1].counts[cs].as_mut().unwrap().value += 2;
        let mut v = serde_json::to_value(&r).unwrap();
        join(&mut v, &windows_of(&r, 305), None);
        let joined: RunResult = serde_json::from_value(v).unwrap();
        let said = joined.warnings.join("; ");
        assert!(said.contains("1 of 12 windows left out"), "{said}");
        let n = joined.runs[0].samples[1].counts.len();
        assert_eq!(joined.runs[0].samples[1].counts[n - 1], None);
        assert!(joined.runs[0].samples[0].counts[n - 1].is_some());
    }

    #[test]
    fn windows_that_do_not_match_the_batches_are_refused_with_a_warning() {
        let r = fixed_result();
        let mut fewer = serde_json::to_value(&r).unwrap();
        let mut w = windows_of(&r, 305);
        w.pop();
        join(&mut fewer, &w, None);
        assert!(
            fewer["warnings"].to_string().contains("windows for"),
            "{}",
            fewer["warnings"]
        );
        let mut swapped = serde_json::to_value(&r).unwrap();
        let mut w = windows_of(&r, 305);
        w.swap(0, 1);
        join(&mut swapped, &w, None);
        assert!(swapped["warnings"].to_string().contains("out of order"));
        let untouched: RunResult = serde_json::from_value(swapped).unwrap();
        assert_eq!(untouched.events.len(), r.events.len(), "no counts joined");
    }
}
