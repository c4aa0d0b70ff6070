//! A reproduction as text and as a section of the page: what it repeated and how, one table
//! per table of the paper (its cells beside syscost's, their ratio, class and reason), the
//! reasons in words under each table, and how many cells of each class agree.

use super::Render;
use super::format::{Cell, Format, Grid};
use super::kind::{Entry, Loaded, Reading, ResultKind};
use super::section::Section;
use crate::core::Kind;
use crate::core::num::fmt_num;
use crate::experiments::reproduce::owners::Owner;
use crate::experiments::reproduce::paper::{Class, written_value};
use crate::experiments::reproduce::placement::{ArmPlacement, Distribution, Middle};
use crate::experiments::reproduce::{Reproduction, Row};
use crate::results::load::{Checked, LoadError};
use crate::stats::correlation::Correlation;

impl Reproduction {
    /// How many cells of each scored class agree, by its error model, in a line; then the
    /// cells no error model scores.
    pub(crate) fn agreement_line(&self) -> String {
        let units = match self.placements.iter().any(|p| p.per_run()) {
            true => "placements",
            false => "boots",
        };
        let modelled = format!("within the middle 80% of the {units}");
        let direction = match units {
            "placements" => "shifted the paper's way (p < 0.05: signed-rank over placements \
                             paired run by run, Mann-Whitney over boots where unpaired)"
                .to_string(),
            _ => "shifted the paper's way (Mann-Whitney, p < 0.05, boots as units)".to_string(),
        };
        let model = |c: Class| match c {
            Class::Exact => "within their bands",
            Class::Modelled => modelled.as_str(),
            Class::Ratio => "within 10%",
            _ => direction.as_str(),
        };
        let scored: Vec<String> = (self.summary.iter())
            .filter(|s| s.class.scored())
            .map(|s| {
                let unscored = s.measured - s.scored;
                let close = match (s.class, unscored) {
                    (_, 0) => String::new(),
                    (Class::Ratio, _) => {
                        format!(", {unscored} more whose boots cannot tell them from 1: not scored")
                    }
                    _ => {
                        format!(", {unscored} more whose test could not fail or decide: not scored")
                    }
                };
                let unmeasured = match s.cells - s.measured {
                    0 => String::new(),
                    n => format!(", {n} not measured"),
                };
                let (class, agree, of) = (s.class.name(), s.agree, s.scored);
                if of == 0 && unscored > 0 && s.class != Class::Ratio {
                    return format!(
                        "{class}: {unscored} measured whose test could not fail or decide, not \
                         scored{unmeasured}"
                    );
                }
                format!(
                    "{class} {agree} of {of} {}{close}{unmeasured}",
                    model(s.class)
                )
            })
            .collect();
        let not: Vec<String> = (self.summary.iter())
            .filter(|s| !s.class.scored())
            .map(|s| format!("{} {}", s.class.name(), s.cells))
            .collect();
        let scored = match scored.is_empty() {
            true => "no cell has an error model".to_string(),
            false => scored.join("; "),
        };
        format!(
            "Agreement: {scored}{}. Not scored: {}",
            self.claims_said(),
            not.join(", ")
        )
    }

    /// How the claims fared, for the agreement line (empty without claims).
    fn claims_said(&self) -> String {
        use crate::experiments::reproduce::claims::Verdict;
        if self.claims.is_empty() {
            return String::new();
        }
        let n = |f: fn(&Verdict) -> bool| self.claims.iter().filter(|c| f(&c.verdict)).count();
        let agree = n(|v| *v == Verdict::Agrees);
        let disagree = n(|v| *v == Verdict::Disagrees);
        let open = n(|v| matches!(v, Verdict::Inconclusive(_)));
        let missing = n(|v| matches!(v, Verdict::NotMeasured(_)));
        let mut parts = vec![format!("{agree} of {} agree", agree + disagree)];
        if open > 0 {
            parts.push(format!("{open} inconclusive"));
        }
        if missing > 0 {
            parts.push(format!("{missing} not measured"));
        }
        format!("; claims of the text {}", parts.join(", "))
    }

    /// The claims of the paper's text, each with its test and what syscost found.
    fn claims_grid(&self) -> Option<Grid> {
        if self.claims.is_empty() {
            return None;
        }
        let mut g = Grid::new(&["claim", "the paper", "test", "syscost", "verdict"]).title(
            "The paper's claims beyond its tables, each put to a test that can fail (its words, \
             where they are, the test and how it decides)",
        );
        for c in &self.claims {
            g.row([
                Cell::Text(c.id.clone()),
                Cell::Text(format!("\"{}\" ({})", c.quote, c.source)),
                Cell::Text(c.rule.clone()),
                Cell::Text(if c.found.is_empty() {
                    "-".into()
                } else {
                    c.found.clone()
                }),
                Cell::Text(c.verdict.said()),
            ]);
        }
        Some(g)
    }

    fn table_grid(&self, id: &str) -> Grid {
        let info = self.tables.iter().find(|t| t.id == id);
        let mut g = Grid::new(&[
            "row", "column", "paper", "syscost", "boots", "ratio", "class", "why", "agrees",
        ])
        .right([2, 3, 4, 5]);
        if let Some(t) = info {
            g = g.title(format!("{} ({}; {})", t.caption, t.source, t.scale));
            g.notes.push(format!("measured on: {}", t.conditions));
        }
        let mut reasons: Vec<&str> = Vec::new();
        for r in self.rows.iter().filter(|r| r.table == id) {
            if !reasons.contains(&r.why.as_str()) {
                reasons.push(&r.why);
            }
            let mark = reasons.iter().position(|w| *w == r.why).unwrap_or(0) + 1;
            g.row(cells(r, mark));
        }
        for (i, w) in reasons.iter().enumerate() {
            g.notes.push(format!("[{}] {w}", i + 1));
        }
        g
    }

    /// The tables some claims' tests show (the builds ranked, each build's alignment).
    fn claim_details(&self) -> Vec<Grid> {
        let details = self
            .claims
            .iter()
            .filter_map(|c| Some((c, c.detail.as_ref()?)));
        details
            .map(|(c, d)| {
                let head: Vec<&str> = d.head.iter().map(String::as_str).collect();
                let mut g = Grid::new(&head)
                    .right(1..head.len())
                    .title(format!("{} ({})", d.title, c.id));
                for r in &d.rows {
                    g.row(r.iter().map(|x| Cell::Text(x.clone())).collect::<Vec<_>>());
                }
                g.notes.extend(d.notes.iter().cloned());
                g
            })
            .collect()
    }
}

impl Reproduction {
    /// Each arm's placements as a distribution: the modelled misses and the spread over every
    /// placement measured, and how many crowd a set past its ways.
    fn distribution_grid(&self) -> Option<Grid> {
        let arms: Vec<(&str, &Distribution)> = (self.placements.iter())
            .filter_map(|a| Some((a.arm.as_str(), a.distribution.as_ref()?)))
            .collect();
        if arms.is_empty() {
            return None;
        }
        let mut g = Grid::new(&[
            "arm",
            "placements",
            "each",
            "L1d misses/call",
            "10-90%",
            "spread",
            "10-90%",
            "crowd a set",
            "to place",
        ])
        .right([1, 3, 5, 7, 8])
        .title(
            "The placements each arm measured: its modelled L1d misses and its entries' spread, \
             the median and the middle 80%, and the placements with as many entries in one set \
             as the L1d has ways",
        );
        let middle = |m: &Middle| format!("{}-{}", fmt_num(m.low), fmt_num(m.high));
        for (arm, d) in &arms {
            g.row([
                Cell::Text(arm.to_string()),
                Cell::Int(d.placements as i64),
                Cell::Text(match d.per_run {
                    true => format!("a run ({} boots)", d.boots),
                    false => "a boot".into(),
                }),
                d.misses.map_or(Cell::Missing, |m| Cell::Num(m.median)),
                d.misses.map_or(Cell::Missing, |m| Cell::Text(middle(&m))),
                Cell::Num(d.spread.median),
                Cell::Text(middle(&d.spread)),
                Cell::Text(format!(
                    "{} ({:.0}%)",
                    d.crowded,
                    100.0 * d.crowded as f64 / d.placements.max(1) as f64
                )),
                d.seconds
                    .map_or(Cell::Missing, |s| Cell::Text(format!("{s:.2} s"))),
            ]);
        }
        for (arm, d) in &arms {
            let peaks: Vec<String> = (d.by_peak.iter())
                .map(|p| format!("{}: {} ({})", p.entries, fmt_num(p.misses), p.placements))
                .collect();
            if peaks.len() > 1 {
                g.notes.push(format!(
                    "{arm}: L1d misses a call (median) by the entries in the most crowded set \
                     (placements): {}",
                    peaks.join(", ")
                ));
            }
        }
        g.notes.push(
            "each run placed anew: before it, the guest deleted the arm's rules and added them \
             back, each after 0 to 3 fillers drawn by a generator seeded for the run (the same draws in every \
             arm), so each entry took a seeded later slot of its slab; 'to place' is the mean \
             time that took in the guest (a rule's deletion waits about 12 ms in the kernel)"
                .into(),
        );
        Some(g)
    }

    /// Each boot's rule entries over the L1d sets they can reach, beside its misses.
    fn placement_grid(&self) -> Option<Grid> {
        if self.placements.is_empty() {
            return None;
        }
        let mut g = Grid::new(&[
            "arm",
            "round",
            "slab",
            "entries",
            "sets",
            "spread",
            "most crowded (set: entries)",
            "L1d misses/call",
            "its runs",
            "most missed set: misses/call, entries",
        ])
        .right([3, 4, 5, 7])
        .title(
            "Where each boot put the rule entries (the syscall-latency post's cacheline-spread: \
             the standard deviation of the entries' first lines over the sets they can reach), \
             in a fresh slab or an aged one (filler objects allocated, half freed in a seeded \
             order, the entries loaded into the holes), and its modelled L1d misses: the median \
             of its runs, then each run's",
        );
        if self.placements.iter().any(|p| p.per_run()) {
            g.notes.push(
                "where each run placed the entries anew, a boot's row is its first placement, as \
                 its init loaded the rules, and its runs' misses are each over a placement of its \
                 own (see the placements above)"
                    .into(),
            );
        }
        for a in &self.placements {
            for b in &a.boots {
                g.row(boot_placement_row(&a.arm, b));
            }
            g.notes.push(placement_note(a));
            g.notes
                .extend(a.uniform.as_ref().map(|u| uniform_note(&a.arm, u)));
            g.notes.extend(
                (a.crowding.as_ref())
                    .map(|c| crowding_note(&a.arm, c))
                    .filter(|n| !n.is_empty()),
            );
        }
        for k in &self.kernel_placements {
            let said = correlations_said(&k.correlation, &k.peak_correlation);
            if !said.is_empty() {
                g.notes.push(format!(
                    "{} and {} pooled ({}): misses {said}",
                    k.arms[..k.arms.len() - 1].join(", "),
                    k.arms[k.arms.len() - 1],
                    k.kernel,
                ));
            }
        }
        Some(g)
    }
}

impl Reproduction {
    /// Each run's misses by whose lines they were in: what differs between a boot's runs,
    /// each a fresh worker process over the same entries.
    fn owners_grid(&self) -> Option<Grid> {
        let boots = self
            .placements
            .iter()
            .flat_map(|a| a.boots.iter().map(move |b| (a, b)));
        let runs: Vec<_> = boots
            .flat_map(|(a, b)| b.runs.iter().map(move |r| (a, b, r)))
            .collect();
        if runs.is_empty() {
            return None;
        }
        // The owners some run's lines were in, in the table's order.
        let shown: Vec<Owner> = (Owner::ALL.into_iter())
            .filter(|o| {
                runs.iter()
                    .any(|(_, _, r)| r.owners.iter().any(|(x, _)| x == o))
            })
            .collect();
        let mut head = vec!["arm", "round", "run"];
        head.extend(shown.iter().map(|o| o.label()));
        head.extend(["task_struct's set", "most missed set: its lines' owners"]);
        let mut g = Grid::new(&head).right(3..4 + shown.len()).title(
            "Whose lines each run's modelled L1d misses were in, per call: the rule entries' \
             (their 512-byte slab slots), the worker's own objects (read in the guest from its \
             task), the kernel image's static data, other kernel memory or user memory; each \
             run is a fresh worker process over the boot's entries, and where its task_struct \
             starts (the set of its first line) places every field the syscall path reads in it",
        );
        for (a, b, r) in &runs {
            let of = |o: &Owner| r.owners.iter().find(|(x, _)| x == o).map(|(_, n)| *n);
            let mut row = vec![
                Cell::Text(a.arm.clone()),
                Cell::Int(b.round.into()),
                Cell::Int(r.run.into()),
            ];
            row.extend(shown.iter().map(|o| of(o).map_or(Cell::Missing, Cell::Num)));
            row.push(r.task_set.map_or(Cell::Missing, |s| Cell::Int(s as i64)));
            row.push(Cell::Text(r.top_set.as_ref().map_or(
                "-".into(),
                |(set, owners)| {
                    let said: Vec<String> = owners
                        .iter()
                        .map(|(o, n)| format!("{} {}", o.label(), fmt_num(*n)))
                        .collect();
                    format!("{set}: {}", said.join(", "))
                },
            )));
            g.row(row);
        }
        g.notes.push(
            "Counted: the 32 lines each run missed most (the emulator lists a window's 32); \
             misses of other lines are in the run's total only"
                .into(),
        );
        let unread = runs.iter().find_map(|(_, _, r)| r.unreadable.as_ref());
        if let Some(why) = unread {
            g.notes.push(format!(
                "a worker's objects were not read, so its lines count as other kernel: {why}"
            ));
        }
        Some(g)
    }
}

/// How a boot's slab was before its entries loaded: fresh, or aged with N objects (half freed
/// in a seeded order) and how many entries took a freed slot.
fn slab(aged: Option<&crate::audit::age::Aged>) -> String {
    let Some(a) = aged else {
        return "fresh".into();
    };
    match a.reused {
        Some(r) => format!("aged {}: {r} in freed slots", a.objects),
        None => format!("aged {}", a.objects),
    }
}

/// A boot's row of the placement table: where its init put the entries, and its misses.
fn boot_placement_row(
    arm: &str,
    b: &crate::experiments::reproduce::placement::BootPlacement,
) -> [Cell; 10] {
    let crowded: Vec<String> = b.crowded.iter().map(|(s, n)| format!("{s}: {n}")).collect();
    let runs: Vec<String> = b.run_misses.iter().map(|v| fmt_num(*v)).collect();
    [
        Cell::Text(arm.to_string()),
        Cell::Int(b.round.into()),
        Cell::Text(slab(b.aged.as_ref())),
        Cell::Int(b.entries as i64),
        Cell::Int(b.reachable as i64),
        Cell::Num(b.spread),
        Cell::Text(crowded.join(", ")),
        b.misses.map_or(Cell::Missing, Cell::Num),
        Cell::Text(runs.join(", ")),
        b.most_missed.map_or(Cell::Missing, |m| {
            Cell::Text(format!(
                "{}: {}, {} entries",
                m.set,
                fmt_num(m.misses),
                m.entries
            ))
        }),
    ]
}

/// What an arm's boots say of misses against placement.
fn placement_note(a: &ArmPlacement) -> String {
    match (&a.correlation, &a.peak_correlation, &a.unreadable) {
        (_, _, Some(why)) => format!("{}: entries not read in some boots: {why}", a.arm),
        (None, None, None) => format!(
            "{}: {} boot(s): misses against placement need 3 or more boots whose placement \
             differs",
            a.arm,
            a.boots.len()
        ),
        (spread, peak, None) => format!(
            "{}: misses over {} {}",
            a.arm,
            match &a.distribution {
                Some(d) if d.per_run => format!("{} placements", d.placements),
                _ => format!("{} boots", a.boots.len()),
            },
            correlations_said(spread, peak)
        ),
    }
}

/// How many boots filled a set's ways with entries, and the misses with and without.
fn crowding_note(arm: &str, c: &crate::experiments::reproduce::placement::Crowding) -> String {
    let put = format!(
        "put {} or more entries (the L1d's ways) into one set",
        c.ways
    );
    match (c.crowded_misses, c.other_misses) {
        (Some(crowded), Some(other)) => format!(
            "{arm}: {} of {} placements {put}: their misses {} a call (median), the other \
             placements' {}",
            c.crowded,
            c.placements,
            fmt_num(crowded),
            fmt_num(other)
        ),
        (Some(m), None) | (None, Some(m)) => format!(
            "{arm}: {} of {} placements {put}; their misses {} a call (median)",
            if c.crowded == 0 { "none" } else { "all" },
            c.placements,
            fmt_num(m)
        ),
        (None, None) => String::new(),
    }
}

/// The spread a uniform placement gives, and where the paper's lies among it.
fn uniform_note(arm: &str, u: &crate::experiments::reproduce::placement::UniformSpread) -> String {
    let paper = u.paper.map_or(String::new(), |(v, share)| {
        format!(
            "; the paper's {} lies at its {:.0}th percentile",
            fmt_num(v),
            100.0 * share
        )
    });
    format!(
        "{arm}: {} entries placed uniformly at random over {} sets ({} draws) give a spread of \
         {} (5-95%: {}-{}){paper}",
        u.entries,
        u.sets,
        u.draws,
        fmt_num(u.median),
        fmt_num(u.low),
        fmt_num(u.high)
    )
}

/// Misses against spread and against the most crowded set, as a note says them (empty
/// when neither could be computed).
fn correlations_said(spread: &Option<Correlation>, peak: &Option<Correlation>) -> String {
    let r = |what: &str, c: &Correlation| {
        format!(
            "against {what}: Pearson r {:.2} (p {})",
            c.pearson_r,
            crate::core::num::fmt_p(c.pearson_p)
        )
    };
    let parts: Vec<String> = [
        spread.as_ref().map(|c| r("spread", c)),
        peak.as_ref().map(|c| r("the most crowded set", c)),
    ]
    .into_iter()
    .flatten()
    .collect();
    parts.join("; ")
}

fn cells(r: &Row, mark: usize) -> Vec<Cell> {
    // As printed when that is the figure compared; else the figure, then what was printed.
    let printed = written_value(&r.written).is_ok_and(|w| w == r.paper);
    let paper = match (r.class, r.ours) {
        (_, _) if printed => Cell::shown(r.paper, r.written.clone()),
        (Class::Ratio | Class::Time, Some(_)) => {
            Cell::shown(r.paper, format!("x{} ({})", fmt_num(r.paper), r.written))
        }
        _ => Cell::shown(r.paper, format!("{} ({})", fmt_num(r.paper), r.written)),
    };
    let ours = match (r.class, r.ours) {
        (Class::Ratio | Class::Time, Some(v)) => Cell::shown(v, format!("x{}", fmt_num(v))),
        (_, Some(v)) => Cell::Num(v),
        (_, None) => Cell::Missing,
    };
    vec![
        Cell::Text(r.row.clone()),
        Cell::Text(r.column.clone()),
        paper,
        ours,
        Cell::interval(r.boots_range),
        r.ratio
            // Rounded first: x0.00, not x-0.00.
            .map_or(Cell::Missing, |v| {
                let shown = (v * 100.0).round() / 100.0 + 0.0;
                Cell::shown(v, format!("x{shown:.2}"))
            }),
        Cell::Text(r.class.name().into()),
        Cell::Text(format!("[{mark}]")),
        Cell::Text(agrees_said(r)),
    ]
}

/// Whether a cell agrees, with an exact cell's band or a modelled cell's 10-90% range, a
/// repeat's scored cell, or why a measured cell is not scored.
fn agrees_said(r: &Row) -> String {
    let band = r
        .band
        .map(|b| format!(" (±{})", fmt_num(b)))
        .unwrap_or_default();
    let band = match (r.class, &r.over) {
        (Class::Direction, Some(over)) => format!(" ({over})"),
        _ => band,
    };
    let band = match r.middle_range {
        Some((lo, hi)) => format!(
            " ({}: {}-{})",
            r.range_of.clone().unwrap_or_else(|| format!(
                "10-90% of {}",
                r.over.as_deref().unwrap_or("the boots")
            )),
            fmt_num(lo),
            fmt_num(hi)
        ),
        None => band,
    };
    if let Some(why) = &r.unscored {
        // A modelled cell's range is still what was measured: shown beside why it decides
        // nothing.
        let range = if r.middle_range.is_some() {
            band
        } else {
            String::new()
        };
        return format!("not scored: {why}{range}");
    }
    match (r.agrees, r.class, r.ours) {
        (Some(true), ..) => format!("yes{band}"),
        (Some(false), ..) => format!("no{band}"),
        (None, Class::Repeat, _) => match &r.repeats {
            Some(at) => format!("see {at}"),
            None => "-".into(),
        },
        (None, Class::Ratio, Some(_)) => "within 10% of 1: not scored".into(),
        (None, ..) => "-".into(),
    }
}

impl Reproduction {
    /// The investigation's series build by build, when it has one.
    fn steps_grid(&self) -> Option<Grid> {
        if self.steps.is_empty() {
            return None;
        }
        let mut g = Grid::new(&[
            "build", "counter", "per call", "boots", "change", "per rule", "boots ", "change ",
        ])
        .right(2..8)
        .title(
            "The series build by build, counted exactly: per getpid with the paper's rules, and \
             per turn of the exit list's walk (the slope of an audit sweep of 0, 21 and 42 rules \
             that do not name getpid); each change is from the build above",
        );
        let num = |v: Option<f64>| v.map_or(Cell::Missing, Cell::Num);
        // Exact counts: two decimals, a change under half of the last one is none.
        let signed = |v: Option<f64>| {
            v.map_or(Cell::Missing, |v| {
                let shown = if v.abs() < 0.005 { 0.0 } else { v };
                Cell::shown(v, format!("{shown:+.2}"))
            })
        };
        for s in &self.steps {
            g.row([
                Cell::Text(s.build.clone()),
                Cell::Text(s.counter.clone()),
                num(s.per_op),
                Cell::interval(s.per_op_range),
                signed(s.change),
                num(s.per_rule),
                Cell::interval(s.per_rule_range),
                signed(s.per_rule_change),
            ]);
        }
        Some(g)
    }
}

impl Render for Reproduction {
    fn preamble(&self) -> Vec<String> {
        let boots: usize = self.campaign.figures.iter().map(|f| f.good_boots).sum();
        let mut lines = vec![
            format!("Reproduced: {} ({})", self.title, self.document),
            format!("Asked: {}", self.question),
            format!(
                "Ran: syscost {} ({boots} boots, {:.0} s)",
                shlex::try_join(self.campaign_command.iter().map(String::as_str))
                    .unwrap_or_default(),
                self.seconds
            ),
            match self.placements.iter().any(|p| p.per_run()) {
                true => {
                    "syscost: the median over the arm's boots of each boot's median run, and \
                         of a figure placement decides (misses, spread) the median over its \
                         placements, each run one; boots: the lowest and highest of those; \
                         ratio: syscost over the paper"
                }
                false => {
                    "syscost: the median over the arm's boots of each boot's median run; \
                          boots: the lowest and highest boot; ratio: syscost over the paper"
                }
            }
            .into(),
            self.agreement_line(),
        ];
        if !self.not_booted.is_empty() {
            lines.push(format!(
                "Not booted (no kernel found or built for them): {}; their cells show -",
                self.not_booted.join(", ")
            ));
        }
        lines
    }

    /// The paper's tables, then the campaign's modelled sets (where the misses are) and its
    /// failed boots, if any.
    fn grids(&self) -> Vec<Grid> {
        let mut out: Vec<Grid> = self.tables.iter().map(|t| self.table_grid(&t.id)).collect();
        out.extend(self.claims_grid());
        out.extend(self.claim_details());
        out.extend(self.steps_grid());
        out.extend(self.distribution_grid());
        out.extend(self.placement_grid());
        out.extend(self.owners_grid());
        out.extend(self.campaign.sets_grid());
        out.extend(self.campaign.failures_grid());
        out
    }
}

impl ResultKind for Reproduction {
    fn kind(&self) -> Kind {
        Kind::Reproduction
    }

    fn title(&self) -> String {
        format!("Reproduction of {}", self.title)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        for line in self.preamble() {
            s.meta(&line);
        }
        for g in self.grids() {
            s.table(&g);
        }
        s.warn(&self.campaign.warnings);
    }

    fn environment(&self) -> Option<&crate::environment::Environment> {
        self.campaign.host.as_ref()
    }

    fn chart(&self, _name: &str) -> Option<anyhow::Result<String>> {
        None
    }
}

/// A reproduction: the paper's tables beside syscost's figures.
/// A reproduction is shown scored again with the current tables and scorer
/// ([`crate::experiments::reproduce::rescored`]): a table corrected after a run costs no boot.
pub(crate) const ENTRY: Entry = Entry::with(Kind::Reproduction, &[], rescored);

fn rescored(c: &Checked, _: Reading) -> Result<Loaded, LoadError> {
    let r: Reproduction = c.decode()?;
    let r = crate::experiments::reproduce::rescored(r).map_err(|detail| LoadError::Damaged {
        path: c.name().into(),
        kind: c.kind.name().into(),
        detail,
    })?;
    Ok(Box::new(r))
}
