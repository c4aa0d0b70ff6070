//! A campaign: the audit series' table over boots per arm (boots, min, mean, median, max,
//! pstdev), the counters per arm, each arm against the first with boots as units paired by
//! round, the ranking of many arms, the order the boots ran in, where a boot's time went,
//! whether the vCPU pinning held, and every failed boot with its reason.

use super::Render;
use super::format::{Cell, Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::{Section, compare_section};
use crate::core::Kind;
use crate::core::num::fmt_num;
use crate::counters::emulated::Geometry;
use crate::experiments::boots::{Arm, BootRecord, BootSplit, Outcome};
use crate::experiments::campaign::{Campaign, CounterFigure};
use crate::results::functions::{EmulatedAtomics, EmulatedFunctions};
use crate::results::sets::EmulatedSets;

/// One cache's misses by set, of an arm's modelled sets.
type SetsOf = fn(&EmulatedSets) -> &Vec<f64>;

/// Functions a campaign's profile table shows.
const FUNCTIONS_SHOWN: usize = 15;
/// Functions the step table shows per step.
const STEP_FUNCTIONS_SHOWN: usize = 5;

/// The least change of a function's instructions per operation a step's profile shows.
const MOVED: f64 = 0.01;

/// The functions whose count moved by [`MOVED`] or more from `a` to `b`, most first (what `perf
/// diff` of the two would show, exactly).
pub(super) fn moved_between<'a>(
    a: &'a EmulatedFunctions,
    b: &'a EmulatedFunctions,
) -> Vec<&'a str> {
    let mut names = moved_most(&[("a", a), ("b", b)], usize::MAX);
    names.retain(|n| (b.per_op(n) - a.per_op(n)).abs() >= MOVED);
    names
}

/// A change of a function's count as the step tables show it, rounded first (+0.00, not -0.00).
pub(super) fn count_change(d: f64) -> Cell {
    let d = (d * 100.0).round() / 100.0 + 0.0;
    Cell::shown(d, format!("{d:+.2}"))
}

/// The `n` functions whose count moved most from the first arm to any other (with one arm,
/// the ones with the most), then by the first arm's count.
fn moved_most<'a>(arms: &[(&str, &'a EmulatedFunctions)], n: usize) -> Vec<&'a str> {
    let base = arms[0].1;
    let mut names: Vec<&str> = arms
        .iter()
        .flat_map(|(_, f)| f.functions.iter().map(|x| x.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let moved = |name: &str| {
        let others = arms[1..]
            .iter()
            .map(|(_, f)| (f.per_op(name) - base.per_op(name)).abs());
        others.fold(0.0, f64::max)
    };
    names.sort_by(|a, b| {
        moved(b)
            .total_cmp(&moved(a))
            .then(base.per_op(b).total_cmp(&base.per_op(a)))
            .then(a.cmp(b))
    });
    names.truncate(n);
    names
}

impl Campaign {
    /// One row per arm: its boots and the spread of the per-boot values.
    pub(crate) fn figures_grid(&self) -> Grid {
        // Rounds never booted only when the campaign stopped before them.
        let never = self.figures.iter().any(|f| f.unbooted > 0);
        let mut head = vec!["arm", "kernel", "boots", "failed"];
        head.extend(never.then_some("never booted"));
        head.extend(["min", "mean", "median", "max", "pstdev"]);
        let mut g = Grid::new(&head).right(2..=head.len() - 1).title(format!(
            " {} ({}) per arm, one value per boot ({})",
            self.metric,
            self.unit,
            self.boot_figure.describe()
        ));
        for f in &self.figures {
            let mut row: Vec<Cell> = vec![
                f.arm.clone().into(),
                f.releases.join(", ").into(),
                Cell::Int(f.good_boots as i64),
                Cell::Int(f.failed_boots as i64),
            ];
            if never {
                row.push(Cell::Int(f.unbooted as i64));
            }
            match &f.summary {
                Some(s) => row.extend(super::compare::spread_cells(s)),
                None => row.extend(std::iter::repeat_n(Cell::Missing, 5)),
            }
            g.row(row);
        }
        g
    }

    /// One row per counter, a column per arm: the median over the arm's boots, or the status
    /// perf gave it (`<not supported>`) with its reason as a numbered note.
    pub(crate) fn counters_grid(&self) -> Option<Grid> {
        let mut names: Vec<(&str, &str)> = Vec::new();
        for c in self.figures.iter().flat_map(|f| &f.counters) {
            if !names.iter().any(|(n, _)| *n == c.name) {
                names.push((&c.name, &c.unit));
            }
        }
        if names.is_empty() {
            return None;
        }
        let mut headers = vec!["counter"];
        headers.extend(self.figures.iter().map(|f| f.arm.as_str()));
        let mut g = Grid::new(&headers)
            .right(1..headers.len())
            .title(self.counters_title());
        let (mut same, mut uncounted) = (Vec::new(), Vec::new());
        for (name, unit) in names {
            let label = super::metric_label(name, unit);
            let cells: Vec<Option<&CounterFigure>> = (self.figures.iter())
                .map(|f| f.counters.iter().find(|c| c.name == name))
                .collect();
            match Across::of(&cells) {
                // A figure no arm's boots moved is one number, and one no arm counted a name.
                Across::Same(v) => same.push(format!("{label} {}", fmt_num(v))),
                Across::Uncounted => {
                    let status = cells[0].map(|c| status_text(c, &mut g.notes));
                    uncounted.push((status.unwrap_or_default(), label));
                }
                Across::Differs => {
                    let mut row: Vec<Cell> = vec![label.into()];
                    row.extend(cells.iter().map(|c| counter_cell(*c, &mut g.notes)));
                    g.row(row);
                }
            }
        }
        let mut statuses: Vec<&String> = uncounted.iter().map(|(s, _)| s).collect();
        statuses.sort();
        statuses.dedup();
        for status in statuses {
            let names: Vec<&str> = (uncounted.iter())
                .filter(|(s, _)| s == status)
                .map(|(_, n)| n.as_str())
                .collect();
            g.notes
                .push(format!(" {status} in every arm: {}", names.join(", ")));
        }
        if !same.is_empty() {
            g.notes
                .push(format!(" the same in every arm: {}", same.join(", ")));
        }
        Some(g)
    }

    /// Per arm and modelled cache, the sets with the most misses per operation: the
    /// syscall-latency post's crowded sets, for the real kernel's objects.
    pub(crate) fn sets_grid(&self) -> Option<Grid> {
        let model = self.machine.as_ref()?.cache_model.as_ref()?;
        let mut g = Grid::new(&["arm", "cache", "misses", "most missed sets (set: misses)"])
            .right([2])
            .title(format!(
                " Modelled L1 misses per operation by set (L1d: loads; {} model: L1d {}, L1i {}{}; the \
                 median run of the median boot, so the misses are the counters table's figure)",
                model.name,
                geometry_words(model.l1d),
                geometry_words(model.l1i),
                model
                    .l2
                    .map(|g| format!(", L2 {}", geometry_words(g)))
                    .unwrap_or_default()
            ));
        for f in &self.figures {
            let Some(sets) = &f.sets else { continue };
            for (cache, misses) in [("L1d", &sets.l1d), ("L1i", &sets.l1i)] {
                let most = EmulatedSets::crowded(misses, SETS_SHOWN);
                let words: Vec<String> = most
                    .iter()
                    .filter(|(_, m)| *m > 0.0)
                    .map(|(s, m)| format!("{s}: {}", crate::core::num::fmt_num(*m)))
                    .collect();
                g.row([
                    f.arm.clone().into(),
                    cache.into(),
                    Cell::Num(misses.iter().sum()),
                    words.join(", ").into(),
                ]);
            }
        }
        Some(g)
    }

    /// Each arm's rules-file sweep (`-- audit sweep --audit-rules FILE`): its first measured
    /// boot's ranking of the rules (emulated counts agree from boot to boot within a tick).
    pub(crate) fn rules_grids(&self) -> Vec<Grid> {
        let sweep_of = |arm: &str| {
            self.boots
                .iter()
                .filter(|b| b.arm == arm)
                .filter_map(|b| b.result())
                .find_map(|r| {
                    let s: crate::experiments::audit_sweep::Sweep =
                        serde_json::from_value(r.clone()).ok()?;
                    Some((
                        s.rules_file?,
                        s.steps.first()?.result.metrics.first()?.unit.clone(),
                    ))
                })
        };
        self.arms
            .iter()
            .filter_map(|a| {
                let (f, unit) = sweep_of(&a.name)?;
                let mut g = super::rule_costs::ranking_grid(&f, &unit);
                g.title = g
                    .title
                    .map(|t| format!("{t}, arm {} (its first boot)", a.name));
                Some(g)
            })
            .collect()
    }

    /// Kernel instructions per operation by function (`--emulated-profile`), a column per arm,
    /// and for each arm after the first its change against the first: the functions that
    /// moved most, or with one arm the ones that run most.
    pub(crate) fn functions_grid(&self) -> Option<Grid> {
        let arms: Vec<(&str, &EmulatedFunctions)> = self
            .figures
            .iter()
            .filter_map(|f| Some((f.arm.as_str(), f.functions.as_ref()?)))
            .collect();
        let (base_name, base) = *arms.first()?;
        // A series (--steps) has each step's moves in a table of its own: each arm's change
        // against the first would repeat the difference of two columns here.
        let against_first = if self.steps.is_some() {
            &[][..]
        } else {
            &arms[1..]
        };
        let mut headers: Vec<String> = vec!["function".into()];
        headers.extend(arms.iter().map(|(a, _)| a.to_string()));
        headers.extend((against_first.iter()).map(|(a, _)| format!("{a} - {base_name}")));
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let order = if arms.len() > 1 {
            "the functions that changed most"
        } else {
            "the functions that run most"
        };
        let mut g = Grid::new(&headers).right(1..headers.len()).title(format!(
            " Kernel instructions per operation by function (emulated, exact; each function's \
             median over the boots, named from each kernel's kallsyms): {order}"
        ));
        let row = |name: &str, of: &dyn Fn(&EmulatedFunctions) -> f64| -> Vec<Cell> {
            let mut row: Vec<Cell> = vec![name.into()];
            row.extend(arms.iter().map(|(_, f)| Cell::Num(of(f))));
            row.extend((against_first.iter()).map(|(_, f)| count_change(of(f) - of(base))));
            row
        };
        g.row(row("(all)", &|f| f.total_per_op));
        let moved = |name: &str| {
            (arms[1..].iter()).any(|(_, f)| (f.per_op(name) - base.per_op(name)).abs() >= MOVED)
        };
        let names = moved_most(&arms, FUNCTIONS_SHOWN);
        let (shown, still): (Vec<&str>, Vec<&str>) =
            names.into_iter().partition(|n| arms.len() == 1 || moved(n));
        for name in &shown {
            g.row(row(name, &|f| f.per_op(name)));
        }
        if !still.is_empty() {
            g.notes.push(format!(
                " {} more of the functions that run most moved by less than {MOVED} in every arm",
                still.len()
            ));
        }
        Some(g)
    }

    /// The kernel's atomic read-modify-writes per operation by function (`--emulated-profile`),
    /// a column per arm: every function any arm ran one in, most first, with its sites and the
    /// memory they touched.
    pub(crate) fn atomics_grid(&self) -> Option<Grid> {
        self.sites_grid(
            |f| f.atomics.as_ref(),
            " Kernel atomic read-modify-writes per operation by function (emulated, exact: a LOCK \
             prefix or XCHG with memory, the median over the boots): the locks, reference counts \
             and bitmaps the path takes, and the memory they are in",
        )
    }

    /// The cache lines the measured vCPU took from the others per operation, by the kernel
    /// function that took them (`--emulated-profile` on more than one vCPU).
    pub(crate) fn moved_grid(&self) -> Option<Grid> {
        self.sites_grid(
            |f| f.moved.as_ref(),
            " Cache lines taken from other vCPUs per operation by kernel function (emulated: a \
             read of a line another vCPU wrote since this one held it, or a write to a line \
             another vCPU holds; how many follows how the host interleaves the vCPUs' threads, a \
             measurement, the median over the boots), and the memory they are in",
        )
    }

    /// What each arm's profile counted by site (`of`), per function, under `title`.
    fn sites_grid(
        &self,
        of: impl Fn(&EmulatedFunctions) -> Option<&EmulatedAtomics>,
        title: &str,
    ) -> Option<Grid> {
        let arms: Vec<(&str, &EmulatedAtomics)> = (self.figures.iter())
            .filter_map(|f| Some((f.arm.as_str(), of(f.functions.as_ref()?)?)))
            .collect();
        // None in any arm: the counters' "the same in every arm" says so in one line.
        let by: Vec<Vec<(&str, f64)>> = arms.iter().map(|(_, a)| a.by_function()).collect();
        if arms.iter().all(|(_, a)| a.total_per_op == 0.0) && by.iter().all(Vec::is_empty) {
            return None;
        }
        let mut headers: Vec<&str> = vec!["function"];
        headers.extend(arms.iter().map(|(a, _)| *a));
        headers.push("memory");
        let mut g = Grid::new(&headers).right(1..headers.len() - 1).title(title);
        let mut row: Vec<Cell> = vec!["(all)".into()];
        row.extend(arms.iter().map(|(_, a)| Cell::Num(a.total_per_op)));
        row.push("".into());
        g.row(row);
        let of = |k: usize, name: &str| (by[k].iter().find(|x| x.0 == name)).map_or(0.0, |x| x.1);
        let mut names: Vec<&str> = by.iter().flatten().map(|x| x.0).collect();
        names.sort_unstable();
        names.dedup();
        let most = |n: &str| (0..arms.len()).map(|k| of(k, n)).fold(0.0, f64::max);
        names.sort_by(|a, b| most(b).total_cmp(&most(a)).then(a.cmp(b)));
        let more = names.len().saturating_sub(FUNCTIONS_SHOWN);
        for name in names.into_iter().take(FUNCTIONS_SHOWN) {
            let mut row: Vec<Cell> = vec![name.into()];
            row.extend((0..arms.len()).map(|k| Cell::Num(of(k, name))));
            let mut memory: Vec<&str> = (arms.iter())
                .flat_map(|(_, a)| a.sites.iter().filter(|s| s.function == name))
                .map(|s| s.memory.as_str())
                .collect();
            memory.sort_unstable();
            memory.dedup();
            row.push(memory.join("; ").into());
            g.row(row);
        }
        if more > 0 {
            g.notes
                .push(format!(" {more} more functions, each with fewer"));
        }
        Some(g)
    }

    /// With `--steps`, each arm against the one before it, and with an emulated profile the
    /// functions each step moved.
    pub(crate) fn steps_grids(&self) -> Vec<Grid> {
        let Some(t) = &self.steps else {
            return Vec::new();
        };
        let mut g = t.table();
        g.title = Some(format!(
            " Each arm against the one before it ({}): {}, Holm over the {} steps{}",
            crate::core::input::spelled(crate::core::input::Opt::Steps),
            t.test,
            t.steps.len(),
            match crate::counters::emulated::is_emulated(&t.metric) {
                true => "; exact counts by the range rule, never in σ",
                false => "",
            }
        ));
        let mut out = vec![g];
        out.extend(self.step_functions_grid(t));
        out
    }

    /// The functions whose kernel instructions per operation moved at each step of `t`, most
    /// first (what `perf diff` of the two arms would show, exactly).
    fn step_functions_grid(&self, t: &crate::compare::trend::Trend) -> Option<Grid> {
        let functions = |label: &str| {
            let f = self.figures.iter().find(|f| f.arm == label)?;
            f.functions.as_ref()
        };
        let mut g = Grid::new(&["step", "function", "before", "after", "change"])
            .right(2..=4)
            .title(
                " Kernel instructions per operation by function at each step (emulated, exact; \
                 each function's median over the boots): the functions that moved most",
            );
        let profiled: Vec<(String, &EmulatedFunctions, &EmulatedFunctions)> = (t.steps.iter())
            .filter_map(|s| {
                let (a, b) = (&t.points[s.from].label, &t.points[s.to].label);
                Some((format!("{a} -> {b}"), functions(a)?, functions(b)?))
            })
            .collect();
        // A step that moved nothing is named in a note, not given a row of its own, while
        // another step moved something.
        let still = |fa: &EmulatedFunctions, fb: &EmulatedFunctions| {
            fa.total_per_op == fb.total_per_op && moved_between(fa, fb).is_empty()
        };
        let (quiet, moving): (Vec<_>, Vec<_>) =
            (profiled.iter()).partition(|(_, fa, fb)| still(fa, fb));
        let rows = if moving.is_empty() { &quiet } else { &moving };
        for (step, fa, fb) in rows {
            let names = moved_between(fa, fb);
            let mut rows = vec![("(all)", fa.total_per_op, fb.total_per_op)];
            let shown = names.iter().take(STEP_FUNCTIONS_SHOWN);
            rows.extend(shown.map(|n| (*n, fa.per_op(n), fb.per_op(n))));
            for (k, (name, x, y)) in rows.into_iter().enumerate() {
                g.row([
                    if k == 0 {
                        step.clone().into()
                    } else {
                        Cell::from("")
                    },
                    name.into(),
                    Cell::Num(x),
                    Cell::Num(y),
                    count_change(y - x),
                ]);
            }
        }
        if !moving.is_empty() && !quiet.is_empty() {
            let steps: Vec<&str> = quiet.iter().map(|(s, ..)| s.as_str()).collect();
            g.notes.push(format!(
                " no function moved at {} step(s) (the same instructions before and after): {}",
                steps.len(),
                steps.join(", ")
            ));
        }
        (!profiled.is_empty()).then_some(g)
    }

    /// Whether the boots ran under QEMU's emulator.
    fn emulated(&self) -> bool {
        self.machine.as_ref().map(|m| m.accel) == Some(crate::boot::qemu::Accel::Tcg)
    }

    fn counters_title(&self) -> String {
        let pmu = if self.emulated() {
            "; QEMU TCG gives the guest no hardware PMU: only software events count"
        } else {
            ""
        };
        format!(" Counters per operation per arm, the median over its boots{pmu}")
    }

    /// A LAVA campaign's boots, each with the job it ran as: where to read its log in the
    /// lab, the device and the worker.
    pub(crate) fn jobs_grid(&self) -> Option<Grid> {
        let mut g = Grid::new(&["arm", "round", "try", "outcome", "device", "worker", "job"])
            .right([1, 2])
            .title(" LAVA jobs, one per boot");
        for b in &self.boots {
            let Some(j) = &b.job else { continue };
            let outcome = match b.outcome {
                Outcome::Measured { .. } => "measured",
                Outcome::Failed { .. } => "failed",
            };
            g.row([
                b.arm.clone().into(),
                Cell::Int(b.round as i64),
                Cell::Int(b.attempt as i64 + 1),
                outcome.into(),
                j.device.clone().unwrap_or_default().into(),
                j.worker.clone().unwrap_or_default().into(),
                j.url.clone().into(),
            ]);
        }
        (!g.rows.is_empty()).then_some(g)
    }

    /// The boots that failed, each with its reason and the console's last line.
    pub(crate) fn failures_grid(&self) -> Option<Grid> {
        let mut g = Grid::new(&["arm", "round", "try", "reason"])
            .right([1, 2])
            .title(" Failed boots");
        for b in &self.boots {
            if let Outcome::Failed {
                reason,
                console,
                failure,
            } = &b.outcome
            {
                // A panic's reason is already the console's own words.
                let last = console
                    .last()
                    .filter(|_| *failure != crate::boot::outcome::Failure::Panicked)
                    .map(|l| format!(" (console: {l})"));
                g.row([
                    b.arm.clone().into(),
                    Cell::Int(b.round as i64),
                    Cell::Int(b.attempt as i64 + 1),
                    format!("{reason}{}", last.unwrap_or_default()).into(),
                ]);
            }
        }
        (!g.rows.is_empty()).then_some(g)
    }

    fn where_booted(&self) -> String {
        let vm = self.machine.as_ref().map(|m| {
            format!(
                "({}, {} vCPU{}, {} MiB{})",
                m.accel.name(),
                m.cpus,
                m.host_cpus
                    .as_ref()
                    .map(|c| format!(" pinned to host CPUs {c}"))
                    .unwrap_or_default(),
                m.memory_mib,
                self.entry_words()
            )
        });
        match (&self.lava, vm) {
            (Some(l), vm) => format!(
                "as LAVA jobs at {} on its {} devices{}{}",
                l.lab,
                l.device_type,
                vm.map(|v| format!(" {v}")).unwrap_or_default(),
                (l.pin.as_ref())
                    .map(|p| format!(", every job on {}", p.device))
                    .unwrap_or_default()
            ),
            (None, Some(vm)) => format!("in {} {vm}", self.via),
            (None, None) => format!("on this machine, rebooted into each arm by {}", self.via),
        }
    }

    /// How the kernels started: `, PVH entry` when every arm's did, else each arm's way.
    fn entry_words(&self) -> String {
        use crate::boot::qemu::KernelEntry;
        if self.entries.is_empty() {
            return String::new();
        }
        if self.entries.iter().all(|e| e.entry == KernelEntry::Pvh) {
            return ", kernels started at their PVH entry".into();
        }
        let each: Vec<String> = self
            .entries
            .iter()
            .map(|e| match (&e.entry, &e.why) {
                (KernelEntry::Pvh, _) => format!("{} at its PVH entry", e.arm),
                (KernelEntry::Bzimage, Some(why)) => format!("{} as a bzImage: {why}", e.arm),
                (KernelEntry::Bzimage, None) => format!("{} as a bzImage", e.arm),
            })
            .collect();
        format!("; {}", each.join("; "))
    }

    /// Where a measured boot's time went, on average: the kernel's boot, syscost's init, the
    /// measurement, and what is outside the guest's clock.
    fn time_line(&self) -> Option<String> {
        let measured = self.boots.iter().filter(|b| b.result().is_some());
        let splits: Vec<&BootSplit> = measured.filter_map(|b| b.split.as_ref()).collect();
        let s = BootSplit::mean(splits.iter().copied())?;
        let outside = match self.boots.iter().any(|b| b.job.is_some()) {
            true => {
                "the lab's queue, the job's start and download, QEMU's start and firmware, \
                     the job's end"
            }
            false => "QEMU's start, firmware, loading the kernel and initramfs, power-off",
        };
        Some(format!(
            " Time per measured boot (mean of {}): {:.1} s = {s} (outside the guest's clock: \
             {outside})",
            splits.len(),
            s.kernel + s.init + s.settle + s.measurement + s.outside
        ))
    }

    /// How the pinning held: where the vCPU threads were seen while the guests ran.
    fn pinning_line(&self) -> Option<String> {
        let pins: Vec<_> = self.boots.iter().flat_map(|b| &b.pinned).collect();
        if pins.is_empty() {
            return None;
        }
        let looks: u32 = pins.iter().map(|p| p.looks).sum();
        let there: u32 = pins.iter().map(|p| p.seen_there).sum();
        Some(if there == looks {
            format!(" Pinning held: every vCPU thread was on its host CPU in all {looks} looks")
        } else {
            format!(
                " warning: vCPU threads were off their pinned host CPUs in {} of {looks} looks \
                 (did something else change their affinity?)",
                looks - there
            )
        })
    }

    fn accel_line(&self) -> Option<String> {
        let icount = self.machine.as_ref().and_then(|m| m.icount).map(|shift| {
            format!(
                "; the guests' clocks ran on their instructions (-icount shift={shift}: {} ns \
                 each), so their times are instruction counts, not time, of every instruction \
                 the guest ran: they exceed instructions (emulated), which leaves out the \
                 interrupts in its windows, by those and by the clock reads around each batch",
                1u32 << shift
            )
        });
        let sized = crate::experiments::boots::record::count_sizing(&self.boots).map(|s| {
            format!(
                ". Sized by count: {s}, each exact count its slope over them; time under the \
                 emulator is shown and sizes nothing"
            )
        });
        self.emulated().then(|| {
            format!(
                " Emulated (QEMU TCG): figures follow the instructions executed, not this \
                 machine's hardware; compare them only with other TCG results{}{}",
                icount.unwrap_or_default(),
                sized.unwrap_or_default()
            )
        })
    }
}

impl Campaign {
    /// Each arm's modelled misses per operation of every set, L1d then L1i (`--cache-model`):
    /// the syscall-latency post's picture of a few crowded sets, for the real kernel's objects.
    fn sets_charts(&self) -> Vec<String> {
        use super::svg::{Series, xy};
        let caches: [(&str, SetsOf); 2] = [("L1d", |s| &s.l1d), ("L1i", |s| &s.l1i)];
        let mut out = Vec::new();
        for (cache, misses) in caches {
            let series: Vec<Series> = self
                .figures
                .iter()
                .enumerate()
                .filter_map(|(i, f)| {
                    let pts = misses(f.sets.as_ref()?).iter().enumerate();
                    Some(Series::Line {
                        class: i,
                        label: f.arm.clone(),
                        pts: pts.map(|(set, m)| (set as f64, *m)).collect(),
                        dashed: false,
                    })
                })
                .collect();
            if !series.is_empty() {
                let title = format!("Modelled {cache} misses per operation by set, per arm");
                out.push(xy(&title, "set", "misses per operation", &series, true));
            }
        }
        out
    }

    /// Every good boot's value per arm, with the median and the range.
    fn boots_chart(&self) -> String {
        use super::svg::{Category, Mark, categories};
        let cats: Vec<Category> = self
            .figures
            .iter()
            .enumerate()
            .map(|(i, f)| Category {
                label: f.arm.clone(),
                strip: f.values.clone(),
                dot: f.summary.as_ref().map(|s| (s.median, s.min, s.max)),
                class: if i == 0 { 5 } else { 0 },
                ..Category::default()
            })
            .collect();
        categories(
            &format!("{} per arm, one value per boot", self.metric),
            "arm (no verdict: fewer than 3 good boots per arm)",
            &format!("{} ({})", self.metric, self.unit),
            &cats,
            vec![
                (0, "median, min to max".into(), Mark::Dot),
                (5, "baseline".into(), Mark::Dot),
            ],
            None,
        )
    }
}

/// A line per arm (or build) with audit rules: how many the kernel took and whether audit
/// was on while it measured (rules are walked only with audit on).
pub(super) fn audit_lines(boots: &[BootRecord], what: &str, order: &[Arm]) -> Vec<String> {
    // Arms whose boots ran under the same audit state share a line (a series of eleven
    // kernels with one rules file said the same thing eleven times).
    let mut same: Vec<(String, Vec<String>)> = Vec::new();
    for (arm, states) in crate::experiments::boots::record::audit_by_arm(boots) {
        let said: Vec<String> = states.iter().map(|a| a.describe()).collect();
        let said = said.join("; in other boots: ");
        match same.iter_mut().find(|(s, _)| *s == said) {
            Some((_, arms)) => arms.push(arm),
            None => same.push((said, vec![arm])),
        }
    }
    let at = |arm: &String| order.iter().position(|a| &a.name == arm);
    for (_, arms) in same.iter_mut() {
        arms.sort_by_key(at);
    }
    same.sort_by_key(|(_, arms)| arms.first().and_then(at));
    same.into_iter()
        .map(|(said, arms)| match &arms[..] {
            [one] => format!(" Audit rules, {what} {one}: {said}"),
            _ => format!(" Audit rules, {what}s {}: {said}", arms.join(", ")),
        })
        .collect()
}

/// A counter across the arms, with two or more: the same median in each, counted in none, or
/// neither (a row of the table).
enum Across {
    Same(f64),
    Uncounted,
    Differs,
}

impl Across {
    fn of(cells: &[Option<&CounterFigure>]) -> Across {
        if cells.len() < 2 {
            return Across::Differs;
        }
        let medians: Vec<Option<f64>> = cells.iter().map(|c| c.and_then(|c| c.median)).collect();
        if let Some(Some(first)) = medians.first()
            && medians.iter().all(|m| *m == Some(*first))
        {
            return Across::Same(*first);
        }
        let statuses: Vec<Option<&str>> = cells
            .iter()
            .map(|c| c.and_then(|c| c.status.as_deref()))
            .collect();
        let uncounted = medians.iter().all(Option::is_none)
            && statuses[0].is_some()
            && statuses.iter().all(|s| *s == statuses[0]);
        if uncounted {
            Across::Uncounted
        } else {
            Across::Differs
        }
    }
}

/// A counter's median, or its status with the number of its reason among `notes`.
fn counter_cell(c: Option<&CounterFigure>, notes: &mut Vec<String>) -> Cell {
    let Some(c) = c else {
        return Cell::Missing;
    };
    match c.median {
        Some(m) => Cell::Num(m),
        None => status_text(c, notes).into(),
    }
}

/// A counter's status with the number of its reason among `notes` (added if new).
fn status_text(c: &CounterFigure, notes: &mut Vec<String>) -> String {
    let status = c.status.as_deref().unwrap_or("<no value>");
    let Some(reason) = &c.reason else {
        return status.into();
    };
    let i = notes.iter().position(|n| n.ends_with(reason.as_str()));
    let i = i.unwrap_or_else(|| {
        notes.push(format!(" [{}] {reason}", notes.len() + 1));
        notes.len() - 1
    });
    format!("{status} [{}]", i + 1)
}

/// How many of an arm's most missed sets the table names.
const SETS_SHOWN: usize = 6;

/// A cache geometry in words: 32 KiB 8-way, 64 sets of 64 B.
fn geometry_words(g: Geometry) -> String {
    format!(
        "{} KiB {}-way, {} sets of {} B",
        g.bytes() / 1024,
        g.ways,
        g.sets,
        g.line
    )
}

impl Render for Campaign {
    fn preamble(&self) -> Vec<String> {
        let order: Vec<String> = self.order.iter().map(|r| r.join(" ")).collect();
        let mut lines = vec![
            format!(
                " Campaign {}: {} arm(s) x {} round(s) {}, measured by `syscost {}`",
                self.id,
                self.arms.len(),
                self.order.len(),
                self.where_booted(),
                self.measure.join(" ")
            ),
            format!(
                " Each round boots every arm once, in a shuffled order (seed {}): {}",
                self.seed,
                order.join(" | ")
            ),
        ];
        for arm in &self.arms {
            if let Some(words) = &arm.measure {
                lines.push(format!(
                    " Arm {} is measured by `syscost {}`",
                    arm.name,
                    words.join(" ")
                ));
            }
        }
        lines.extend(self.accel_line());
        lines.extend(self.pinning_line());
        lines.extend(self.time_line());
        lines.extend(audit_lines(&self.boots, "arm", &self.arms));
        if self.placement == crate::experiments::boots::PlaceEach::Run {
            lines.push(
                " Placed anew each run: before every run the guest deleted its arm's audit rules \
                 and added them back, each after 0 to 3 fillers drawn by a generator seeded \
                 for the run (the same draws in every arm), so each run is a placement of the rule entries of its \
                 own, recorded in its result"
                    .into(),
            );
        }
        if !self.complete {
            lines.push(" INCOMPLETE: some boots failed (see the failed boots below)".into());
        }
        lines.extend(self.warnings.iter().map(|w| format!(" warning: {w}")));
        lines
    }

    fn grids(&self) -> Vec<Grid> {
        let mut out = vec![self.figures_grid()];
        out.extend(self.counters_grid());
        out.extend(self.sets_grid());
        out.extend(self.functions_grid());
        out.extend(self.atomics_grid());
        out.extend(self.moved_grid());
        out.extend(self.rules_grids());
        if let Some(c) = &self.comparison {
            let mut d = c.decisive_delta_grid();
            d.title = Some(format!(
                " Each arm against {}: boots are the units, {}",
                self.arms[0].name, c.analysis
            ));
            d.notes.extend(c.notes());
            // A mail shows the deltas one block a metric, and no ranking beside them.
            d.narrow = Some(c.delta_blocks());
            out.push(d);
            out.extend(c.ranking_grid().map(|r| Grid {
                narrow: Some(Vec::new()),
                ..r
            }));
        }
        out.extend(self.placed_grid());
        out.extend(self.steps_grids());
        out.extend(self.failures_grid());
        out.extend(self.jobs_grid());
        out
    }
}

impl Campaign {
    /// Each arm's modelled misses against the first arm's, placement by placement.
    fn placed_grid(&self) -> Option<Grid> {
        if self.placed.is_empty() {
            return None;
        }
        let mut g = Grid::new(&["metric", "arm", "pairs", "higher", "lower", "alike", "across placements"])
            .right([2, 3, 4, 5])
            .title(format!(
                " Each arm against {}, placement by placement: run k of a round placed the rule \
                 entries alike in every arm, so the arms' runs pair up; the boots' verdict above is \
                 on their medians",
                self.arms[0].name
            ));
        for d in &self.placed {
            g.row([
                Cell::Text(d.metric.clone()),
                Cell::Text(d.arm.clone()),
                Cell::Int(d.pairs as i64),
                Cell::Int(d.higher as i64),
                Cell::Int(d.lower as i64),
                Cell::Int(d.alike as i64),
                Cell::Text(d.said(self.alpha)),
            ]);
        }
        Some(g)
    }
}

/// A campaign: its comparison's charts and its tables.
pub(crate) const ENTRY: Entry =
    Entry::of::<Campaign>(Kind::Campaign, &["compare", "boots", "sets"]);

impl ResultKind for Campaign {
    fn kind(&self) -> Kind {
        Kind::Campaign
    }

    fn damage(&self) -> Option<String> {
        if self.arms.is_empty() {
            return Some("a campaign with no arms".into());
        }
        self.comparison
            .as_ref()
            .and_then(super::compare::comparison_damage)
    }

    fn title(&self) -> String {
        format!("Campaign {}: {}", self.id, self.measure.join(" "))
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    /// The host syscost ran on, the guests it booted (or kexec on the host), and each arm's
    /// kernel.
    fn machine_rows(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        if let Some(h) = &self.host {
            rows.push((
                "host".into(),
                format!(
                    "{}: {}, kernel {}",
                    h.hostname.as_deref().unwrap_or("?"),
                    h.cpu.model_name.as_deref().unwrap_or("CPU not recorded"),
                    h.kernel_release.as_deref().unwrap_or("?")
                ),
            ));
        }
        rows.push(("boots".into(), self.where_booted()));
        for f in &self.figures {
            rows.push((format!("arm {}", f.arm), f.releases.join(", ")));
        }
        rows
    }

    fn section(&self, s: &mut Section) {
        for line in self.preamble() {
            s.meta(&line);
        }
        s.table(&self.figures_grid());
        if let Some(g) = self.counters_grid() {
            s.table(&g);
        }
        if let Some(g) = self.sets_grid() {
            s.table(&g);
            for chart in self.sets_charts() {
                s.figure(&chart);
            }
        }
        if let Some(g) = self.functions_grid() {
            s.table(&g);
        }
        for g in [self.atomics_grid(), self.moved_grid()]
            .into_iter()
            .flatten()
        {
            s.table(&g);
        }
        match &self.comparison {
            Some(c) => compare_section(s, c),
            None => s.figure(&self.boots_chart()),
        }
        for g in self.steps_grids() {
            s.table(&g);
        }
        if let Some(f) = self.failures_grid() {
            s.table(&f);
        }
        if let Some(j) = self.jobs_grid() {
            s.table(&j);
        }
    }

    /// With a comparison, its chart (every boot's value per arm, the verdicts); without one
    /// (fewer than 3 good boots), every boot's value per arm all the same.
    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        match (name, &self.comparison) {
            ("compare", Some(c)) => Some(Ok(super::charts::compare_chart(c))),
            ("boots", None) => Some(Ok(self.boots_chart())),
            ("sets", _) => Some(self.sets_charts().into_iter().next().ok_or_else(|| {
                match self.machine.as_ref().and_then(|m| m.cache_model.as_ref()) {
                    None => crate::refused!(
                        "this campaign modelled no cache (campaign ",
                        crate::core::input::Opt::CacheModel,
                        ")"
                    ),
                    Some(_) => anyhow::anyhow!(
                        "no boot kept misses by set: another task ran in every sample window \
                         (each boot's warnings say how many were left out)"
                    ),
                }
            })),
            _ => None,
        }
    }
}
