//! A bisection: what it found (the first bad build and the last good one, the figure at each
//! end and its change with an interval), how sure each step is (the error bound shared over
//! the steps), and every step's evidence; `--format lkml` opens with the 0-day robot's line.

use super::Render;
use super::format::{Cell, Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::boot::qemu::Accel;
use crate::core::Kind;
use crate::core::input::{Opt, spelled};
use crate::experiments::bisect::decide::Class;
use crate::experiments::bisect::{Bisection, Finding, Found, Moved, Shape};
use crate::results::functions::EmulatedFunctions;

/// A step's first bad build, or the builds it is one of when those before it were skipped.
fn first_bad_of(f: &Finding) -> String {
    match f.between.is_empty() {
        true => f.first_bad.clone(),
        false => format!("one of {}, {}", f.between.join(", "), f.first_bad),
    }
}

/// The most functions the step's profile shows.
const FUNCTIONS_SHOWN: usize = 15;

impl Bisection {
    /// The answer in one line, as the 0-day robot writes it: "first bad build X: getpid
    /// instructions +52.9% (306 to 468 per call)", or a change per step when there are several.
    pub(crate) fn headline(&self) -> String {
        let num = crate::core::fmt_num;
        let (g, b) = (
            crate::stats::median(&self.ends.good),
            crate::stats::median(&self.ends.bad),
        );
        let change = format!(
            "{} {:+.1}% ({} to {} {})",
            self.metric,
            self.ends.change_pct,
            num(g),
            num(b),
            self.unit
        );
        match &self.found {
            Found::EndsEqual => format!(
                "the ends do not differ: nothing to bisect ({} {} to {} {})",
                self.metric,
                num(g),
                num(b),
                self.unit
            ),
            Found::Unplaceable { change, tolerance } => format!(
                "the ends differ by {} {} ({} to {}), within twice the tolerance (±{}): a build \
                 between them could count as both, so none was tried{}",
                crate::core::num::fmt_signed(*change),
                self.unit,
                num(g),
                num(b),
                num(*tolerance),
                self.settle(*change)
            ),
            Found::Underpowered { need, step_rounds } => format!(
                "the ends differ ({change}), but a step of {step_rounds} rounds cannot place a \
                 build between them: at the ends' boot-to-boot spread, a build at one end \
                 reaches its step's level {}",
                match need {
                    Some(n) =>
                        format!("in about {n} rounds: give {} {n}", spelled(Opt::StepRounds)),
                    None => format!(
                        "only in more than {} rounds (the most a step takes): count exactly with \
                         {}",
                        crate::experiments::bisect::decide::MOST_ROUNDS,
                        spelled(Opt::EmulatedCounters)
                    ),
                }
            ),
            Found::Step(f) if f.exact() => format!("first bad build {}: {change}", f.first_bad),
            Found::Step(f) => format!(
                "first bad build one of {}, {} (the {} before it skipped or undecided): {change}",
                f.between.join(", "),
                f.first_bad,
                if f.between.len() == 1 {
                    "one"
                } else {
                    "builds"
                }
            ),
            Found::Steps(steps) => self.steps_line(steps),
        }
    }

    /// A figure that moves in several steps, each step's first bad build and change.
    fn steps_line(&self, steps: &[Moved]) -> String {
        let num = crate::core::fmt_num;
        let each: Vec<String> = (steps.iter())
            .map(|m| {
                format!(
                    "{} {} ({} to {})",
                    first_bad_of(&m.at),
                    crate::core::num::fmt_signed(m.to - m.from),
                    num(m.from),
                    num(m.to)
                )
            })
            .collect();
        format!(
            "{} moves in {} steps, first bad builds: {} {}",
            self.metric,
            steps.len(),
            each.join(", "),
            self.unit
        )
    }

    /// What would let ends `change` apart be placed: a finer resolution, unless the ends' own
    /// boots disagree by more.
    fn settle(&self, change: f64) -> String {
        let (g, b) = (
            crate::stats::median(&self.ends.good),
            crate::stats::median(&self.ends.bad),
        );
        let need = 100.0 * change.abs() / (g + b).abs();
        let own = crate::experiments::bisect::decide::exact_bar(
            (g + b) / 2.0,
            &self.ends.good,
            &self.ends.bad,
            0.0,
        );
        if 2.0 * own >= change.abs() {
            return format!(
                "; the ends' own boots differ by up to {}: more boots of them will not settle it",
                crate::core::fmt_num(own)
            );
        }
        format!(
            "; {} under {:.4}% (now {}%) would place it",
            spelled(Opt::ExactResolution),
            need,
            crate::core::fmt_num(self.resolution_pct)
        )
    }

    /// How sure the steps are.
    fn bound_line(&self) -> String {
        if self.exact {
            return format!(
                " Exact counts: each build decided by one boot, the same count as a measured build \
                 it lies between when within the ends' own boot-to-boot range and {}% of it, else \
                 a count of its own, which splits the search (a finding per step). Not a test: \
                 the interrupts in the windows are left out, so boots of one kernel count the same",
                crate::core::fmt_num(self.resolution_pct)
            );
        }
        let b = &self.budget;
        let taken = self
            .steps
            .iter()
            .filter(|s| !matches!(s.decision.class, Class::Skipped(_)))
            .count();
        let mut line = format!(
            " Error bound {}%: {} step(s) for {} build(s) between the ends, each at {:.3}% \
             (Student's t on rounds of good end, build and bad end, {} to {} rounds, each look at \
             {:.4}%)",
            b.bound * 100.0,
            b.steps,
            self.bad - self.good - 1,
            b.per_step * 100.0,
            crate::experiments::bisect::decide::MIN_ROUNDS,
            self.max_rounds,
            b.per_look * 100.0
        );
        if taken > b.steps {
            line.push_str(&format!(
                "; {taken} steps were measured (builds were undecided), so the bound is {:.1}%",
                b.per_step * taken as f64 * 100.0
            ));
        }
        line
    }

    fn shape_line(&self) -> Option<String> {
        match &self.shape {
            Some(Shape::Spread { share }) => Some(format!(
                " NOT ONE STEP: the last good and the first bad build are {:.0}% of the change \
                 apart; the figure moves over several builds (see each build's position)",
                share * 100.0
            )),
            Some(Shape::Step { share }) => Some(format!(
                " One step: {:.0}% of the change lies between the last good and the first bad build",
                share * 100.0
            )),
            None => None,
        }
    }

    /// The ends: boots, median, and the change with its interval.
    pub(crate) fn ends_grid(&self) -> Grid {
        let mut g = Grid::new(&["end", "build", "boots", "median", "min", "max"])
            .right(2..=5)
            .title(format!(
                " {} ({}) at the ends, one value per boot",
                self.metric, self.unit
            ));
        for (word, i, v) in [
            ("good", self.good, &self.ends.good),
            ("bad", self.bad, &self.ends.bad),
        ] {
            let s = crate::stats::Summary::of(v);
            g.row([
                Cell::from(word),
                self.builds[i].name.clone().into(),
                Cell::Int(v.len() as i64),
                s.as_ref().map_or(Cell::Missing, |s| Cell::Num(s.median)),
                s.as_ref().map_or(Cell::Missing, |s| Cell::Num(s.min)),
                s.as_ref().map_or(Cell::Missing, |s| Cell::Num(s.max)),
            ]);
        }
        let interval = self
            .ends
            .interval_pct
            .map(|i| format!(" {}", Cell::ChangeInterval(i).text()))
            .unwrap_or_default();
        let p = self
            .ends
            .p
            .map(|p| format!(", p {}", Cell::P(p).text()))
            .unwrap_or_default();
        g.notes = vec![format!(
            "change {:+.2}%{interval}{p}: {}",
            self.ends.change_pct,
            if self.ends.differ {
                "the ends differ"
            } else {
                "the ends do not differ"
            }
        )];
        g
    }

    /// Every step's evidence.
    pub(crate) fn steps_grid(&self) -> Option<Grid> {
        if self.steps.is_empty() {
            return None;
        }
        let mut g = Grid::new(&[
            "step", "build", "boots", "rounds", "median", "position", "class", "p or bar",
        ])
        .right([0, 2, 3, 4, 5, 7])
        .title(" Each build tried (position: 0 at the good end's figure, 1 at the bad end's)");
        for s in &self.steps {
            let evidence = match (&s.decision.class, s.decision.p) {
                (Class::Skipped(why), _) => Cell::from(why.lines().next().unwrap_or_default()),
                (_, Some(p)) => Cell::Text(format!(
                    "p {} < {}?",
                    Cell::P(p).text(),
                    Cell::P(s.decision.bar).text()
                )),
                (_, None) if self.exact => {
                    Cell::Text(format!("±{}", crate::core::fmt_num(s.decision.bar)))
                }
                _ => Cell::Missing,
            };
            g.row([
                Cell::Int(s.number as i64),
                s.build.clone().into(),
                Cell::Int(s.boots as i64),
                match s.rounds {
                    0 => Cell::Missing,
                    n => Cell::Int(n as i64),
                },
                match s.values.is_empty() {
                    true => Cell::Missing,
                    false => Cell::Num(crate::stats::median(&s.values)),
                },
                s.decision
                    .position
                    // Rounded first: a build at an end reads 0.000, not -0.000.
                    .map_or(Cell::Missing, |p| {
                        Cell::Text(format!("{:.3}", (p * 1e3).round() / 1e3 + 0.0))
                    }),
                match (&s.decision.class, &s.same_as) {
                    (Class::Other, Some(like)) => Cell::Text(format!("as {like}")),
                    (Class::Other, None) => "new count".into(),
                    (c, _) => c.word().into(),
                },
                evidence,
            ]);
        }
        Some(g)
    }

    /// The kernel instructions per operation of `build` by function: the median over its boots
    /// (`--emulated-profile`), if they were counted.
    fn functions_of(&self, build: &str) -> Option<EmulatedFunctions> {
        let boots: Vec<EmulatedFunctions> = (self.boots.iter())
            .filter(|b| b.arm == build)
            .filter_map(|b| b.decoded()?.ok()?.functions)
            .collect();
        EmulatedFunctions::median(&boots)
    }

    /// The steps found: each last good build and the first bad one after it.
    fn found_steps(&self) -> Vec<(&str, &str)> {
        (self.found.findings().into_iter())
            .map(|f| (f.last_good.as_str(), f.first_bad.as_str()))
            .collect()
    }

    /// With an emulated profile, one table per step found (see [`Bisection::functions_grid`]).
    pub(crate) fn functions_grids(&self) -> Vec<Grid> {
        (self.found_steps().into_iter())
            .filter_map(|(good, bad)| self.functions_grid(good, bad))
            .collect()
    }

    /// With an emulated profile, the functions whose kernel instructions per operation moved
    /// from the last good build to the first bad one, most first (what `perf diff` of the two
    /// would show, exactly): where the step's change is.
    fn functions_grid(&self, last_good: &str, first_bad: &str) -> Option<Grid> {
        let (good, bad) = (self.functions_of(last_good)?, self.functions_of(first_bad)?);
        let names = super::campaign::moved_between(&good, &bad);
        let mut g = Grid::new(&["function", last_good, first_bad, "change"])
            .right(1..=3)
            .title(format!(
                " The functions that moved from {last_good} to {first_bad}: kernel instructions \
                 per operation by function (emulated, exact; each build's median over its boots)"
            ));
        let row = |name: &str, a: f64, b: f64| {
            [
                Cell::from(name),
                Cell::Num(a),
                Cell::Num(b),
                super::campaign::count_change(b - a),
            ]
        };
        g.row(row("(all)", good.total_per_op, bad.total_per_op));
        let shown = names.len().min(FUNCTIONS_SHOWN);
        for n in &names[..shown] {
            g.row(row(n, good.per_op(n), bad.per_op(n)));
        }
        if names.len() > shown {
            g.notes = vec![format!("{} more functions moved", names.len() - shown)];
        } else if names.is_empty() {
            g.notes = vec!["no function moved by 0.01 instruction per operation or more".into()];
        }
        Some(g)
    }

    /// Each build tried, in order, with its boots' figures: the chart of the figure along the
    /// builds.
    pub(crate) fn builds_chart(&self) -> String {
        use super::svg::{Category, Mark, categories};
        let mut tried: Vec<(usize, Vec<f64>, usize)> = vec![
            (self.good, self.ends.good.clone(), 1),
            (self.bad, self.ends.bad.clone(), 2),
        ];
        for s in &self.steps {
            let class = match s.decision.class {
                Class::Good => 1,
                Class::Bad => 2,
                Class::Other => 4,
                _ => 3,
            };
            tried.push((s.index, s.values.clone(), class));
        }
        tried.sort_by_key(|t| t.0);
        let cats: Vec<Category> = tried
            .into_iter()
            .map(|(i, values, class)| Category {
                label: self.builds[i].name.clone(),
                dot: crate::stats::Summary::of(&values).map(|s| (s.median, s.min, s.max)),
                strip: values,
                class,
                ..Category::default()
            })
            .collect();
        categories(
            &format!("{} along the builds tried", self.metric),
            "build, in order",
            &format!("{} ({})", self.metric, self.unit),
            &cats,
            vec![
                (1, "good".into(), Mark::Dot),
                (2, "bad".into(), Mark::Dot),
                (3, "skipped or undecided".into(), Mark::Dot),
                (4, "neither end's count".into(), Mark::Dot),
            ],
            None,
        )
    }
}

impl Render for Bisection {
    fn preamble(&self) -> Vec<String> {
        let skipped: Vec<&str> = self
            .steps
            .iter()
            .filter(|s| matches!(s.decision.class, Class::Skipped(_)))
            .map(|s| s.build.as_str())
            .collect();
        let mut lines = vec![
            format!(" {}", self.headline()),
            format!(
                " Bisection {} of {} builds by {} per operation, measured by `syscost {}` in \
                 each boot ({}, {}), seed {}",
                self.id,
                self.builds.len(),
                self.metric,
                self.measure.join(" "),
                self.lab
                    .as_ref()
                    .map_or("QEMU".into(), |l| format!("a LAVA job on {l}")),
                self.machine.as_ref().map_or("?", |m| m.accel.name()),
                self.seed
            ),
        ];
        if let Found::Step(f) = &self.found {
            lines.push(format!(" Last good build: {}", f.last_good));
        }
        if let Found::Steps(steps) = &self.found {
            for (k, m) in steps.iter().enumerate() {
                lines.push(format!(
                    " Step {}: first bad build {}, last good build {}: {} to {} {} ({})",
                    k + 1,
                    first_bad_of(&m.at),
                    m.at.last_good,
                    crate::core::fmt_num(m.from),
                    crate::core::fmt_num(m.to),
                    self.unit,
                    crate::core::num::fmt_signed(m.to - m.from)
                ));
            }
        }
        lines.push(self.bound_line());
        let tcg = self.machine.as_ref().is_some_and(|m| m.accel == Accel::Tcg);
        if tcg && !self.exact {
            lines.push(
                " Emulated (QEMU TCG): times follow the instructions executed, not this machine's \
                 hardware"
                    .into(),
            );
        }
        if let Some(s) = crate::experiments::boots::record::count_sizing(&self.boots) {
            lines.push(format!(
                " Sized by count: {s}, each exact count its slope over them"
            ));
        }
        lines.extend(self.shape_line());
        lines.extend(super::campaign::audit_lines(
            &self.boots,
            "build",
            &self.builds,
        ));
        if !skipped.is_empty() {
            lines.push(format!(
                " Skipped (not a kernel, or did not boot): {}",
                skipped.join(", ")
            ));
        }
        lines.extend(self.warnings.iter().map(|w| format!(" warning: {w}")));
        lines
    }

    fn grids(&self) -> Vec<Grid> {
        let mut out = vec![self.ends_grid()];
        out.extend(self.steps_grid());
        out.extend(self.functions_grids());
        out
    }

    fn text(&self, format: Format) -> String {
        super::format::render(format, &self.preamble(), &self.grids())
    }
}

impl ResultKind for Bisection {
    fn kind(&self) -> Kind {
        Kind::Bisection
    }

    fn damage(&self) -> Option<String> {
        let bad_index = |i: usize| i >= self.builds.len();
        (bad_index(self.good)
            || bad_index(self.bad)
            || self.steps.iter().any(|s| bad_index(s.index)))
        .then(|| "a bisection whose ends or steps name builds it does not list".into())
    }

    fn title(&self) -> String {
        format!("Bisection {}: {}", self.id, self.headline())
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        for line in self.preamble() {
            s.meta(&line);
        }
        s.table(&self.ends_grid());
        if let Some(g) = self.steps_grid() {
            s.table(&g);
        }
        for g in self.functions_grids() {
            s.table(&g);
        }
        s.figure(&self.builds_chart());
    }

    fn environment(&self) -> Option<&crate::environment::Environment> {
        self.host.as_ref()
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "builds").then(|| Ok(self.builds_chart()))
    }
}

/// A bisection: the figure along the builds it tried.
pub(crate) const ENTRY: Entry = Entry::of::<Bisection>(Kind::Bisection, &["builds"]);
