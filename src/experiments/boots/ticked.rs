//! Runs whose exact counts rest on windows an interrupt lengthened. The plugin leaves an
//! interrupt out of its window, but the task can still pay for it on its own path: a clock
//! read the tick lands in is retried (12 instructions of a getpid at audit=1), and a uprobe's
//! task runs 639 to 673 instructions more on its return from a tick, a different number each
//! time. A run with windows of two sizes that no interrupt landed in takes its slope from those
//! alone (`emulated.rs`); a run without them but with three windows on one whole line
//! (`stats::slope::held`) is confirmed by its windows. A run with neither (a loaded host: five
//! of a uprobe run's six windows ticked) has a slope nothing confirms, 1,386.40 for 1,380 a
//! hit. Such a run's exact counts are left out while another run of the result holds its own
//! line, and said when none does; its other figures (the models, lines moved) stay, as do the
//! exact counts of workloads that never hold a line (two producers contending).

use crate::core::input::{Opt, spelled};
use crate::counters::emulated::is_exact_count;
use crate::results::RunResult;
use crate::results::metrics::windows_of;
use crate::stats::slope;

/// Leave out, in `r`, the exact counts of the runs (by index) in `ticked` whose windows hold
/// no line of their own, where another run's do. What the result should say of it.
pub(super) fn leave_out_unheld(r: &mut RunResult, ticked: &[u32]) -> Vec<String> {
    if ticked.is_empty() {
        return Vec::new();
    }
    let (mut left_out, mut doubtful) = (0usize, 0usize);
    let exact = (r.events.iter().enumerate())
        .filter(|(_, e)| e.spec.is_emulated() && is_exact_count(&e.spec.name))
        .map(|(i, _)| i);
    for i in exact.collect::<Vec<_>>() {
        let held = |run: &crate::results::RunRecord| {
            !ticked.contains(&run.index) || {
                let w: Vec<(u64, u64)> = windows_of(&run.samples, i).collect();
                w.is_empty() || slope::held(&w)
            }
        };
        let unheld: Vec<usize> = (0..r.runs.len()).filter(|&k| !held(&r.runs[k])).collect();
        if unheld.len() == r.runs.len() {
            doubtful = doubtful.max(unheld.len());
            continue;
        }
        left_out = left_out.max(unheld.len());
        for k in unheld {
            for s in &mut r.runs[k].samples {
                s.counts[i] = None;
            }
        }
    }
    let runs = r.runs.len();
    let mut said = Vec::new();
    if left_out > 0 {
        said.push(format!(
            "emulated counts: the exact counts of {left_out} of {runs} run(s) left out: an \
             interrupt lengthened their windows (no two sizes of windows free of interrupts, \
             no three windows on one whole line), and the other runs' windows hold their line"
        ));
    }
    if doubtful > 0 {
        said.push(format!(
            "emulated counts: the exact counts of {doubtful} of {runs} run(s) rest on windows \
             an interrupt lengthened (no two sizes of windows free of interrupts, no three \
             windows on one whole line): they may be over by what a timer tick cost the task \
             on its return; measure on a quieter host, or with more {}",
            spelled(Opt::Samples)
        ));
    }
    said
}
