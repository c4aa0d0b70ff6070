//! The cost of each rule of a rules file (an audit sweep over it), costliest first, in the
//! shape of the audit series' table: the set's total against audit on without rules and
//! against audit off, each rule's added cost with its interval, how the kernel walks it, and
//! the cheaper rewrite for the rules every syscall pays for.

use super::format::{Cell, Grid};
use crate::compare::Delta;
use crate::core::fmt_num;
use crate::core::input::{Opt, spelled};
use crate::experiments::rule_costs::{EMULATED, FileSweep, RuleCost};

/// The ranking, with the totals, refusals and advice as notes.
pub(crate) fn ranking_grid(f: &FileSweep, time_unit: &str) -> Grid {
    let metric = f.ranking_metric();
    let unit = if metric == EMULATED {
        "instructions/call"
    } else {
        time_unit
    };
    let mut g = Grid::new(&[
        "rank",
        "line",
        &format!("+{metric} ({unit})"),
        "95% CI",
        "walked",
        "rule",
    ])
    .right(0..=3)
    .title(format!(
        " Cost of each rule of {}, costliest first (the step with it against the step \
             before it)",
        f.source
    ));
    // A file of one rule: its figure includes the filters starting (note [1]).
    let flag = if f.first_includes_start() { " [1]" } else { "" };
    for (i, r) in f.ranked().into_iter().enumerate() {
        let walked = format!("{}{flag}", r.walk.describe());
        g.row([
            Cell::Int(i as i64 + 1),
            Cell::Int(r.line as i64),
            r.cost(metric).map_or(Cell::Missing, Cell::Num),
            Cell::interval(r.cost_ci(metric)),
            walked.into(),
            crate::core::printable(&r.text).into(),
        ]);
    }
    notes(f, metric, unit, &mut g);
    g
}

fn notes(f: &FileSweep, metric: &str, unit: &str, g: &mut Grid) {
    g.notes.push(String::new());
    if f.first_includes_start() {
        g.notes.push(
            " [1] the only rule: its figure includes the filters starting to run (with no rule \
             at all, the kernel skips them)"
                .into(),
        );
    } else if let (Some(step), Some(first)) = (
        f.first_step.iter().find(|d| d.metric == metric),
        f.rules.first().and_then(|r| r.cost(metric)),
    ) {
        let start = step.delta_pct.map(|p| p / 100.0 * step.base_median - first);
        g.notes.push(format!(
            " The filters starting to run (the first rule's step against none, less that \
             rule's own cost, measured on top of the others): {}",
            start.map_or("-".into(), |s| format!("{:+} {unit}", fmt_num(s)))
        ));
    }
    for (title, deltas) in [
        ("The whole set against audit on without rules", &f.set_cost),
        (
            "The whole set against audit off (the baseline)",
            &f.set_total,
        ),
    ] {
        if let Some(d) = deltas.iter().find(|d| d.metric == metric) {
            g.notes.push(total_line(title, d));
        }
    }
    g.notes.extend(noise_notes(f, metric));
    let costly: Vec<&RuleCost> = f
        .ranked()
        .into_iter()
        .filter(|r| r.advice.is_some())
        .collect();
    for r in costly.iter().take(5) {
        g.notes.push(format!(
            " line {}: {}",
            r.line,
            r.advice.as_deref().unwrap_or_default()
        ));
    }
    for r in &f.refused {
        g.notes
            .push(format!(" line {} left out: {}", r.number, r.reason));
    }
}

/// What a timed sweep's intervals leave undecided: rules whose interval holds zero, and rules
/// with none.
fn noise_notes(f: &FileSweep, metric: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Emulated counts are exact (but for a timer tick): only timed costs can be noise.
    let timed: Vec<&RuleCost> = f.rules.iter().filter(|_| metric != EMULATED).collect();
    let unsure = timed
        .iter()
        .filter(|r| {
            r.cost_ci(metric)
                .is_some_and(|(lo, hi)| lo <= 0.0 && hi >= 0.0)
        })
        .count();
    let without = timed.iter().filter(|r| r.cost_ci(metric).is_none()).count();
    if unsure > 0 {
        out.push(
            crate::said!(
                format!(
                    " {unsure} of {} rules' intervals hold zero: those costs are inconclusive, \
                     below this measurement's noise (their order in the ranking is not a \
                     finding); more ",
                    f.rules.len()
                ),
                Opt::Runs,
                " narrow them, and campaign ",
                Opt::EmulatedCounters,
                " counts each rule exactly"
            )
            .spell(spelled),
        );
    }
    if without > 0 {
        out.push(
            crate::said!(
                format!(
                    " {without} of {} rules have no interval (shown as -): too few runs to give \
                     one, so their costs are not findings; give more ",
                    f.rules.len()
                ),
                Opt::Runs,
                ", or count each rule exactly with campaign ",
                Opt::EmulatedCounters
            )
            .spell(spelled),
        );
    }
    out
}

fn total_line(title: &str, d: &Delta) -> String {
    format!(
        " {title}: {:+} {} ({}, CI {}): {}",
        fmt_num(d.median - d.base_median),
        d.unit,
        d.delta_pct.map_or("-".into(), |p| format!("{p:+.2}%")),
        d.ci_pct
            .map_or("-".into(), |c| format!("[{:+.2}%, {:+.2}%]", c.lo, c.hi)),
        d.verdict
    )
}
