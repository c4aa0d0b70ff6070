//! `syscost bisect`: the first build in an ordered list of kernel builds where a figure
//! changed, with boots as the units. The ends are booted first and must differ; then each
//! step boots the build in the middle of the range still open ([`search`]) and classifies it
//! good or bad ([`decide`]): by one boot when the figure is an exact emulated count, or by
//! rounds that boot it between fresh boots of both ends when it is timed, adding rounds until
//! Student's t decides at the step's share of the error bound. A build that is not a kernel
//! or does not boot is skipped and stepped around, as `git bisect skip` does.
//!
//! The boots run in QEMU through the [`Booter`] campaigns use (or as LAVA jobs), each build's boot in a round
//! tried as the boot schedule tries every slot ([`schedule::boot_slot`]); every boot is
//! handed to the caller as it ends (to record and to save), and boots saved before (an
//! interrupted bisection's, or a `git bisect run` step's ends) are taken instead of booted
//! again, so the same seed takes the same path.

pub mod builds;
pub(crate) mod decide;
mod git_answer;
pub(crate) mod search;

use crate::compare;
use crate::core::{Envelope, Kind};
use crate::experiments::boots::schedule;
use crate::experiments::boots::schedule::Boot;
use crate::experiments::boots::{Arm, Backend, BootPlan, BootRecord, LavaRun, checks, plan, start};
use crate::stats::Interval;
use crate::stats::exact;
use anyhow::{Result, bail};
use decide::{Budget, Class, Decision};
use serde::{Deserialize, Serialize};

/// A bisection to run: its builds are the boot plan's arms, in order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BisectPlan {
    pub boot: BootPlan,
    /// The error bound (as alpha), the noise threshold and the exact counts' resolution.
    pub options: compare::Options,
    pub good: usize,
    pub bad: usize,
    /// The figure bisected, and whether it is an exact (emulated) count.
    pub metric: String,
    pub exact: bool,
    /// The most rounds a timed step (or the ends' check) takes.
    pub max_rounds: usize,
    pub id: String,
}

impl BisectPlan {
    /// A bisection of `builds` between `good` and `bad` (indices into them), each boot as
    /// `boots` asks, seeded by `seed`, naming a wrong build with at most `error_bound`'s
    /// chance, a timed step taking at most `max_rounds` rounds.
    pub(crate) fn new(
        boots: &crate::experiments::boots::ask::BootAsk,
        (builds, good, bad): (Vec<crate::experiments::boots::Arm>, usize, usize),
        (error_bound, max_rounds): (f64, usize),
        seed: u64,
        measured: &dyn crate::experiments::boots::ask::MeasureCheck,
    ) -> Result<BisectPlan> {
        let boot = boots.plan(builds, seed, measured)?;
        let metric = boots.metric();
        Ok(BisectPlan {
            boot,
            options: boots.options(error_bound, seed),
            good,
            bad,
            exact: crate::counters::emulated::is_emulated(&metric),
            metric,
            max_rounds,
            id: format!("{}-{seed}", crate::core::now_unix()),
        })
    }
}

impl crate::experiments::boots::kept::Planned for BisectPlan {
    const KIND: crate::experiments::boots::kept::RunKind =
        crate::experiments::boots::kept::RunKind::Bisection;
    fn backend(&self) -> &Backend {
        &self.boot.backend
    }
}

/// A bisection kept as it runs, one at a time: its state in one file (`bisect.json`), its
/// boots replayed by slot when it goes on ([`crate::experiments::boots::life`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct KeptBisection {
    #[serde(flatten)]
    pub kept: crate::experiments::boots::kept::Kept<BisectPlan>,
    /// Its state's file (not kept: where it was found or is to be).
    #[serde(skip)]
    pub path: std::path::PathBuf,
}

impl crate::experiments::boots::kept::KeptRun for KeptBisection {
    type Plan = BisectPlan;
    fn kept(&self) -> &crate::experiments::boots::kept::Kept<BisectPlan> {
        &self.kept
    }
    fn kept_mut(&mut self) -> &mut crate::experiments::boots::kept::Kept<BisectPlan> {
        &mut self.kept
    }
}

impl crate::experiments::boots::life::Keep for KeptBisection {
    fn path(&self) -> std::path::PathBuf {
        self.path.clone()
    }

    /// Its file, linked into place whole: one bisection at a time.
    fn claim(&mut self) -> Result<()> {
        if !crate::experiments::boots::kept::create_new(self, &self.path)? {
            bail!(
                "a bisection is in progress ({}): `syscost bisect resume` goes on with it, \
                 `syscost bisect status` says where it stands, `syscost bisect abort` drops it",
                self.path.display()
            );
        }
        Ok(())
    }

    /// One bisection is kept at a time: no ID names it.
    fn named(&self) -> String {
        String::new()
    }
}

/// A bisection's boots: its lab opened, then the search, its kept boots replayed slot by slot.
/// A figure no boot can give ([`NoSuchFigure`]) ends it for good.
pub(crate) struct Search;

impl crate::experiments::boots::life::Boots<BisectPlan> for Search {
    type Ready = ();
    type Made = Bisection;

    fn prepare(
        &mut self,
        plan: &mut BisectPlan,
        _files: &std::path::Path,
    ) -> Result<((), Option<crate::boot::lava::Lab>)> {
        Ok(((), start::open_lab(&mut plan.boot.backend)?))
    }

    fn boot(
        &mut self,
        plan: &BisectPlan,
        _: &(),
        kept: &[BootRecord],
        lava: Option<LavaRun>,
        on_boot: &mut dyn FnMut(&BootRecord),
    ) -> Result<Bisection> {
        run(plan, kept.to_vec(), lava, &mut |b, _| on_boot(b))
    }

    fn fatal(&self, e: &anyhow::Error) -> bool {
        e.is::<NoSuchFigure>()
    }
}

/// The ends' boots and whether they differ.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Ends {
    pub good: Vec<f64>,
    pub bad: Vec<f64>,
    pub differ: bool,
    /// The change from the good end to the bad, percent of the good end's, with its interval
    /// (timed: Student's t at the bound; exact: every cross-boot change).
    pub change_pct: f64,
    pub interval_pct: Option<Interval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
}

/// One build tried.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Step {
    pub number: usize,
    pub build: String,
    pub index: usize,
    /// Its boots (the ends' boots beside it not counted) and the figure of each.
    pub boots: usize,
    pub values: Vec<f64>,
    /// Rounds it was booted in, with both ends (timed).
    #[serde(default)]
    pub rounds: usize,
    pub decision: Decision,
    /// The build between the ends whose exact count this one's is (class `other`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

pub(crate) use search::Finding;

/// One of several steps of the figure: where it is, and the figure on each side (the median
/// of `last_good`'s boots, `from`, and of `first_bad`'s, `to`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Moved {
    #[serde(flatten)]
    pub at: Finding,
    pub from: f64,
    pub to: f64,
}

/// What the bisection found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// The ends do not differ: nothing to bisect.
    EndsEqual,
    /// The ends' exact counts differ by no more than twice the tolerance (`change` and
    /// `tolerance` in the figure's unit): a build between them could count as both, so none is
    /// tried.
    Unplaceable { change: f64, tolerance: f64 },
    /// The ends' timed change is too small for their boot-to-boot spread to place a build
    /// between them within `step_rounds` rounds a step: about `need` rounds would (`None`:
    /// more than a step may take).
    Underpowered {
        need: Option<usize>,
        step_rounds: usize,
    },
    /// The figure moves in one step, the ends' change.
    Step(Finding),
    /// The figure moves in more than one step (exact counts: a build counted neither end's
    /// figure), each its own finding, in order.
    Steps(Vec<Moved>),
}

impl Found {
    /// Each step found, in order (none when nothing was searched).
    pub(crate) fn findings(&self) -> Vec<&Finding> {
        match self {
            Found::Step(f) => vec![f],
            Found::Steps(steps) => steps.iter().map(|m| &m.at).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether the ends were too close or too noisy to search between.
    pub(crate) fn unsearched(&self) -> bool {
        matches!(
            self,
            Found::EndsEqual | Found::Unplaceable { .. } | Found::Underpowered { .. }
        )
    }
}

/// A finding as a result file holds it: one step is `build` (the first bad build known) or
/// `range` (one of several), so readers of `found.first_bad` read it as they always have.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "found")]
enum OnDisk {
    EndsEqual,
    Unplaceable {
        change: f64,
        tolerance: f64,
    },
    Underpowered {
        need: Option<usize>,
        #[serde(default)]
        step_rounds: usize,
    },
    Steps {
        steps: Vec<Moved>,
    },
    Build {
        last_good: String,
        first_bad: String,
    },
    Range {
        last_good: String,
        first_bad: String,
        between: Vec<String>,
    },
}

impl Serialize for Found {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let on_disk = match self.clone() {
            Found::EndsEqual => OnDisk::EndsEqual,
            Found::Unplaceable { change, tolerance } => OnDisk::Unplaceable { change, tolerance },
            Found::Underpowered { need, step_rounds } => OnDisk::Underpowered { need, step_rounds },
            Found::Steps(steps) => OnDisk::Steps { steps },
            Found::Step(f) if f.exact() => OnDisk::Build {
                last_good: f.last_good,
                first_bad: f.first_bad,
            },
            Found::Step(f) => OnDisk::Range {
                last_good: f.last_good,
                first_bad: f.first_bad,
                between: f.between,
            },
        };
        on_disk.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Found {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Found, D::Error> {
        Ok(match OnDisk::deserialize(d)? {
            OnDisk::EndsEqual => Found::EndsEqual,
            OnDisk::Unplaceable { change, tolerance } => Found::Unplaceable { change, tolerance },
            OnDisk::Underpowered { need, step_rounds } => Found::Underpowered { need, step_rounds },
            OnDisk::Steps { steps } => Found::Steps(steps),
            OnDisk::Build {
                last_good,
                first_bad,
            } => Found::Step(Finding {
                last_good,
                first_bad,
                between: Vec::new(),
            }),
            OnDisk::Range {
                last_good,
                first_bad,
                between,
            } => Found::Step(Finding {
                last_good,
                first_bad,
                between,
            }),
        })
    }
}

/// Whether the change happened at one build or over several.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "shape")]
pub(crate) enum Shape {
    /// The step between the last good and the first bad build is most of the change.
    Step { share: f64 },
    /// It is less than half of it: the figure moves over several builds.
    Spread { share: f64 },
}

/// The result of a bisection (kind `bisection`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Bisection {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub id: String,
    pub created_unix: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::boot::qemu::Machine>,
    /// The LAVA server the boots ran on, when they were LAVA jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::environment::Environment>,
    pub builds: Vec<Arm>,
    pub good: usize,
    pub bad: usize,
    pub measure: Vec<String>,
    pub metric: String,
    pub unit: String,
    pub exact: bool,
    /// Exact counts closer than this percentage are equal.
    pub resolution_pct: f64,
    pub seed: u64,
    /// How the error bound is shared out (timed steps).
    pub budget: Budget,
    pub max_rounds: usize,
    pub ends: Ends,
    /// The last round the ends' check took (the steps' rounds come after it).
    pub end_rounds: u32,
    pub steps: Vec<Step>,
    pub found: Found,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    pub boots: Vec<BootRecord>,
    pub warnings: Vec<String>,
}

/// A measured boot whose result lacks the figure bisected: every boot would lack it, so the
/// bisection is refused.
#[derive(Debug, thiserror::Error)]
#[error("{build}: {why}")]
pub(crate) struct NoSuchFigure {
    pub build: String,
    /// What the result has instead.
    pub why: String,
}

/// What the bisection does with each boot as it ends (show it, record it, save it).
pub(crate) type OnBoot<'a> = dyn FnMut(&BootRecord, &[BootRecord]) + 'a;

/// Boots builds by index, taking saved boots first, and reads each boot's figure.
struct Boots<'p, 'a> {
    plan: &'p BisectPlan,
    booter: Box<dyn Boot + 'p>,
    saved: Vec<BootRecord>,
    boots: Vec<BootRecord>,
    unit: String,
    round: u32,
    on_boot: &'a mut OnBoot<'a>,
}

impl Boots<'_, '_> {
    /// A new round number: the boots of one round are paired.
    fn round(&mut self) -> u32 {
        self.round += 1;
        self.round
    }

    /// Boot build `i` in `round` (its saved tries first): its figure, or why there is none.
    /// Each try is handed on once it ends, so a state saved then never holds half a boot. A
    /// measured boot without the figure is refused: every boot would lack it.
    fn boot(&mut self, i: usize, round: u32) -> Result<std::result::Result<f64, String>> {
        let name = self.plan.boot.arms[i].name.clone();
        let start = self.boots.len();
        let saved = schedule::tries(&self.saved, &name, round);
        self.boots.extend(saved.into_iter().cloned());
        let before = self.boots.len();
        let (slot, retries) = ((i, name.as_str()), self.plan.boot.retries);
        schedule::boot_slot(
            self.booter.as_mut(),
            slot,
            round,
            retries,
            &mut self.boots,
            &mut |_| {},
        )?;
        for k in before..self.boots.len() {
            (self.on_boot)(&self.boots[k], &self.boots[..=k]);
        }
        let Some(last) = self.boots[start..].last() else {
            return Ok(Err("not booted".into()));
        };
        match (last.figure(&self.plan.metric), last.result()) {
            (Ok((v, unit)), _) => {
                self.unit = unit;
                Ok(Ok(v))
            }
            (Err(why), Some(_)) => Err(NoSuchFigure { build: name, why }.into()),
            (Err(why), None) => Ok(Err(why)),
        }
    }
}

/// Per build, why it is skipped (it cannot boot), and the builds' rules by name as JSON.
type Checked = (Vec<Option<String>>, Vec<(String, String)>);

/// Check each build: one that cannot boot is skipped, with why; an end that cannot is refused.
fn skipped_builds(plan: &BisectPlan) -> Result<Checked> {
    checks::check_setup(&plan.boot)?;
    let tree = checks::guest_tree(&plan.boot)?;
    let mut skip = Vec::new();
    let mut rules = Vec::new();
    for (i, a) in plan.boot.arms.iter().enumerate() {
        if plan.boot.arms[..i].iter().any(|b| b.name == a.name) {
            bail!(
                "build {}: the name is given twice (name builds NAME=KERNEL)",
                a.name
            );
        }
        match checks::check_arm(a, plan.boot.rules_errors, tree.as_ref()) {
            Ok(r) => {
                rules.extend(r.map(|r| (a.name.clone(), r)));
                skip.push(None);
            }
            Err(e) if i == plan.good || i == plan.bad => {
                bail!(
                    "the {} end, {}, cannot be booted: {}",
                    end_word(i == plan.good),
                    e.arm,
                    e.why
                )
            }
            Err(e) => skip.push(Some(e.why)),
        }
    }
    Ok((skip, rules))
}

fn end_word(good: bool) -> &'static str {
    if good { "good" } else { "bad" }
}

/// Run a bisection: the ends, then the steps; `saved`: boots saved before, taken instead of
/// booting their builds again in their rounds; `lava`: the lab of a LAVA bisection.
pub(crate) fn run<'p>(
    plan: &'p BisectPlan,
    saved: Vec<BootRecord>,
    lava: Option<LavaRun<'p>>,
    on_boot: &mut OnBoot,
) -> Result<Bisection> {
    if plan.good >= plan.bad || plan.bad >= plan.boot.arms.len() {
        bail!("the good end must come before the bad end in the builds' order");
    }
    let (skip, rules) = skipped_builds(plan)?;
    let mut boots = Boots {
        plan,
        booter: Box::new(start::start(&plan.boot, &rules, lava.into())?),
        saved,
        boots: Vec::new(),
        unit: String::new(),
        round: 0,
        on_boot,
    };
    let budget = Budget::new(
        plan.options.alpha,
        plan.bad - plan.good - 1,
        plan.max_rounds,
    );
    let ends = ends(&mut boots, &budget)?;
    let end_rounds = boots.round;
    // Decided once, from the ends: whether there is anything to search.
    let stopped = match ends.differ {
        false => Some(Found::EndsEqual),
        true => unplaceable(plan, &ends, &budget),
    };
    let mut s = search::Search::new(plan.boot.arms.len(), plan.good, plan.bad);
    let mut steps: Vec<Step> = Vec::new();
    while let Some(probe) = s.next().filter(|_| stopped.is_none()) {
        let i = probe.build;
        let (mut step, outcome) = match &skip[i] {
            Some(why) => (
                step_of(plan, i, Decision::skipped(why)),
                search::Outcome::Unplaced,
            ),
            None => {
                let bounds = (
                    values_of(plan, &ends, &steps, probe.lo),
                    values_of(plan, &ends, &steps, probe.hi),
                );
                classify(&mut boots, probe, &ends, bounds, &budget)?
            }
        };
        s.record(i, outcome);
        placed(plan, &s, &mut step, outcome);
        steps.push(Step {
            number: steps.len() + 1,
            ..step
        });
    }
    let found = match stopped {
        Some(why) => (why, None),
        None => found_of(plan, &ends, &steps, &s),
    };
    Ok(finish(
        plan,
        boots,
        budget,
        (ends, end_rounds),
        steps,
        found,
    ))
}

/// Build `i` tried, with no boot yet, as `decision` has it.
fn step_of(plan: &BisectPlan, i: usize, decision: Decision) -> Step {
    Step {
        number: 0,
        build: plan.boot.arms[i].name.clone(),
        index: i,
        boots: 0,
        values: Vec::new(),
        rounds: 0,
        decision,
        same_as: None,
    }
}

/// Boot the ends, round by round in a shuffled order: two rounds for exact counts (their
/// boot-to-boot range), else until Student's t tells them apart or the rounds are spent.
fn ends(b: &mut Boots, budget: &Budget) -> Result<Ends> {
    let plan = b.plan;
    let (least, most) = match plan.exact {
        true => (exact::MIN_BOOTS, exact::MIN_BOOTS),
        false => (decide::MIN_ROUNDS, plan.max_rounds),
    };
    let mut rounds: Vec<(f64, f64)> = Vec::new();
    let mut tries = 0;
    while rounds.len() < most && tries < most + plan.boot.retries as usize + 1 {
        tries += 1;
        let round = b.round();
        let order = shuffled(&[plan.good, plan.bad], plan.boot.seed, round);
        let mut got = [None; 2];
        for i in order {
            match b.boot(i, round)? {
                Ok(v) => got[usize::from(i == plan.bad)] = Some(v),
                Err(why) => end_failed(plan, i, &why),
            }
        }
        if let [Some(g), Some(bad)] = got {
            rounds.push((g, bad));
        }
        let tested = (!plan.exact).then(|| decide::ends_timed(&rounds, budget.per_look));
        if let Some(Some((true, _))) = tested {
            break;
        }
    }
    if rounds.len() < least {
        bail!(
            "the ends measured in {} round(s) of {tries}: at least {least} are needed",
            rounds.len()
        );
    }
    Ok(ends_of(plan, &rounds, budget))
}

/// An end that did not measure: the bisection goes on with the next round.
fn end_failed(plan: &BisectPlan, i: usize, why: &str) {
    let name = &plan.boot.arms[i].name;
    eprintln!(
        "syscost: the {} end, {name}, did not measure: {why}",
        end_word(i == plan.good)
    );
}

/// Whether the ends differ, and the change between them with its interval.
fn ends_of(plan: &BisectPlan, rounds: &[(f64, f64)], budget: &Budget) -> Ends {
    let good: Vec<f64> = rounds.iter().map(|r| r.0).collect();
    let bad: Vec<f64> = rounds.iter().map(|r| r.1).collect();
    let g = crate::stats::mean(&good);
    let change_pct = 100.0 * (crate::stats::mean(&bad) - g) / g;
    if plan.exact {
        let rule = crate::stats::exact::range_rule(&good, &bad, plan.options.exact_floor_pct);
        return Ends {
            differ: rule.is_some_and(|r| r.apart()),
            interval_pct: rule.map(|r| r.cross),
            change_pct,
            p: None,
            good,
            bad,
        };
    }
    let d: Vec<f64> = rounds.iter().map(|(g, b)| b - g).collect();
    let t = crate::stats::paired::paired_t(&d, 1.0 - budget.bound);
    let tested = decide::ends_timed(rounds, budget.per_look);
    let beyond_noise = change_pct.abs() >= plan.options.noise_pct;
    Ends {
        differ: tested.is_some_and(|(d, _)| d) && beyond_noise,
        interval_pct: t.map(|t| t.interval.map(|x| 100.0 * x / g)),
        change_pct,
        p: tested.and_then(|(_, p)| p),
        good,
        bad,
    }
}

/// The builds of a round in the order they boot: a shuffle seeded by the bisection's seed and
/// the round.
fn shuffled(builds: &[usize], seed: u64, round: u32) -> Vec<usize> {
    let order = plan::order(builds.len(), 1, seed ^ (u64::from(round) << 32));
    order[0].iter().map(|&k| builds[k]).collect()
}

/// Why ends that differ cannot place a build between them, if they cannot: exact counts within
/// twice the tolerance, or a timed change too small for a step's rounds.
fn unplaceable(plan: &BisectPlan, ends: &Ends, budget: &Budget) -> Option<Found> {
    if plan.exact {
        let floor = plan.options.exact_floor_pct;
        let (change, tolerance) = decide::exact_unplaceable(&ends.good, &ends.bad, floor)?;
        return Some(Found::Unplaceable { change, tolerance });
    }
    let rounds: Vec<(f64, f64)> = ends
        .good
        .iter()
        .copied()
        .zip(ends.bad.iter().copied())
        .collect();
    let need = decide::timed_rounds_needed(&rounds, budget.per_look);
    (need.is_none_or(|n| n > plan.max_rounds)).then_some(Found::Underpowered {
        need,
        step_rounds: plan.max_rounds,
    })
}

/// The boots' figures of build `i`: an end's, or those of the step that measured it.
fn values_of(plan: &BisectPlan, ends: &Ends, steps: &[Step], i: usize) -> Vec<f64> {
    match i {
        i if i == plan.good => ends.good.clone(),
        i if i == plan.bad => ends.bad.clone(),
        i => (steps.iter().find(|s| s.index == i)).map_or_else(Vec::new, |s| s.values.clone()),
    }
}

/// A step's class once the search placed it: as the good end, as the bad end, or (exact) as
/// neither, then named with the build between whose count it shares, if any.
fn placed(plan: &BisectPlan, s: &search::Search, step: &mut Step, outcome: search::Outcome) {
    let class = match s.level_of(step.index) {
        None => return,
        Some(l) if Some(l) == s.level_of(plan.good) => Class::Good,
        Some(l) if Some(l) == s.level_of(plan.bad) => Class::Bad,
        Some(_) => Class::Other,
    };
    if let (Class::Other, search::Outcome::Same(j)) = (&class, outcome) {
        step.same_as = Some(plan.boot.arms[j].name.clone());
    }
    step.decision.class = class;
}

/// Classify the build `probe` tries: one boot against the boots of the two measured builds it
/// lies between (`bounds`, exact), or rounds with both ends until the step decides or its rounds
/// are spent (timed).
fn classify(
    b: &mut Boots,
    probe: search::Probe,
    ends: &Ends,
    bounds: (Vec<f64>, Vec<f64>),
    budget: &Budget,
) -> Result<(Step, search::Outcome)> {
    let (plan, i) = (b.plan, probe.build);
    let mut step = step_of(plan, i, Decision::undecided());
    if plan.exact {
        let round = b.round();
        step.boots = 1;
        let x = match b.boot(i, round)? {
            Ok(x) => x,
            Err(why) => {
                step.decision = Decision::skipped(&why);
                return Ok((step, search::Outcome::Unplaced));
            }
        };
        step.values.push(x);
        let floor = plan.options.exact_floor_pct;
        let (equals, d) = decide::exact(x, (&bounds.0, &bounds.1), (&ends.good, &ends.bad), floor);
        step.decision = d;
        let outcome = match equals {
            decide::Equals::Lo => search::Outcome::Same(probe.lo),
            decide::Equals::Hi => search::Outcome::Same(probe.hi),
            decide::Equals::Neither => search::Outcome::New,
            decide::Equals::Both => search::Outcome::Unplaced,
        };
        return Ok((step, outcome));
    }
    let step = timed_step(b, step, budget)?;
    let outcome = match step.decision.class {
        Class::Good => search::Outcome::Same(plan.good),
        Class::Bad => search::Outcome::Same(plan.bad),
        _ => search::Outcome::Unplaced,
    };
    Ok((step, outcome))
}

/// A timed step: rounds of the good end, the build and the bad end in a shuffled order until
/// Student's t decides or the rounds are spent.
fn timed_step(b: &mut Boots, mut step: Step, budget: &Budget) -> Result<Step> {
    let (plan, i) = (b.plan, step.index);
    let mut rounds = Vec::new();
    while step.rounds < plan.max_rounds {
        let round = b.round();
        step.rounds += 1;
        let mut got = [None; 3];
        for k in shuffled(&[plan.good, i, plan.bad], plan.boot.seed, round) {
            let at = if k == plan.good {
                0
            } else if k == i {
                1
            } else {
                2
            };
            let v = b.boot(k, round)?;
            step.boots += usize::from(k == i);
            if let (1, Err(why)) = (at, &v) {
                step.decision = Decision::skipped(why);
                return Ok(step);
            }
            got[at] = v.ok();
        }
        if let [Some(g), Some(c), Some(bad)] = got {
            step.values.push(c);
            rounds.push((g, c, bad));
        }
        if let Some(d) = decide::timed(&rounds, budget.per_look) {
            let decided = d.class != Class::Undecided;
            step.decision = d;
            if decided {
                break;
            }
        }
    }
    if step.values.len() < decide::MIN_ROUNDS {
        step.decision.class = Class::Undecided;
    }
    Ok(step)
}

/// Whether the change between the last good build and the first bad one (`good`, `bad`: the
/// ends, or builds some step tried) is most of the ends' change, from their positions (0 at
/// the good end's figure, 1 at the bad end's).
pub(crate) fn shape_of(steps: &[Step], good: usize, bad: usize) -> Option<Shape> {
    let at = |i: usize, end: f64| {
        let step = steps.iter().find(|st| st.index == i);
        step.map_or(Some(end), |st| st.decision.position)
    };
    let share = at(bad, 1.0)? - at(good, 0.0)?;
    Some(match share >= 0.5 {
        true => Shape::Step { share },
        false => Shape::Spread { share },
    })
}

/// What the search found (the ends differed by enough to search), and (one timed step)
/// whether it is most of the change.
fn found_of(
    plan: &BisectPlan,
    ends: &Ends,
    steps: &[Step],
    s: &search::Search,
) -> (Found, Option<Shape>) {
    let name = |i: usize| plan.boot.arms[i].name.clone();
    let value = |i: usize| crate::stats::median(&values_of(plan, ends, steps, i));
    match &s.found()[..] {
        [f] => {
            let shape = f.exact().then(|| shape_of(steps, f.last_good, f.first_bad));
            (Found::Step(f.clone().map(name)), shape.flatten())
        }
        several => (
            Found::Steps(
                (several.iter())
                    .map(|f| Moved {
                        from: value(f.last_good),
                        to: value(f.first_bad),
                        at: f.clone().map(name),
                    })
                    .collect(),
            ),
            None,
        ),
    }
}

/// The result: what the search found, and whether the change is one step.
fn finish(
    plan: &BisectPlan,
    b: Boots,
    budget: Budget,
    (ends, end_rounds): (Ends, u32),
    steps: Vec<Step>,
    (found, shape): (Found, Option<Shape>),
) -> Bisection {
    let created_unix = crate::core::now_unix();
    Bisection {
        envelope: Envelope::new(Kind::Bisection),
        id: plan.id.clone(),
        created_unix,
        machine: plan.boot.backend.machine().cloned(),
        lab: match &plan.boot.backend {
            Backend::Lava(t) => Some(t.lab.clone()),
            _ => None,
        },
        host: Some(crate::environment::Environment::collect()),
        builds: plan.boot.arms.clone(),
        good: plan.good,
        bad: plan.bad,
        measure: plan.boot.measure.clone(),
        metric: plan.metric.clone(),
        unit: b.unit,
        exact: plan.exact,
        resolution_pct: plan.options.exact_floor_pct,
        seed: plan.boot.seed,
        budget,
        max_rounds: plan.max_rounds,
        ends,
        end_rounds,
        steps,
        found,
        shape,
        boots: b.boots,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A finding reads from and writes to a result file in the shapes result files have
    /// always had (`found.first_bad` of a `build` or `range`, `found.steps[k]` with its
    /// figures), whichever step it is.
    #[test]
    fn findings_keep_the_result_file_s_shapes() {
        let shapes = [
            r#"{"found":"ends-equal"}"#,
            r#"{"found":"unplaceable","change":1.0,"tolerance":0.5}"#,
            r#"{"found":"underpowered","need":12,"step_rounds":8}"#,
            r#"{"found":"build","last_good":"b2","first_bad":"b3"}"#,
            r#"{"found":"range","last_good":"b1","first_bad":"b4","between":["b2","b3"]}"#,
            r#"{"found":"steps","steps":[{"last_good":"b1","first_bad":"b2","from":1.0,"to":2.0},{"last_good":"b4","first_bad":"b6","between":["b5"],"from":2.0,"to":3.0}]}"#,
        ];
        for json in shapes {
            let found: Found = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&found).unwrap(), json);
        }
        let exact: Found = serde_json::from_str(shapes[3]).unwrap();
        let range: Found = serde_json::from_str(shapes[4]).unwrap();
        let steps: Found = serde_json::from_str(shapes[5]).unwrap();
        assert!(matches!(&exact, Found::Step(f) if f.exact() && f.first_bad == "b3"));
        assert!(matches!(&range, Found::Step(f) if !f.exact() && f.between == ["b2", "b3"]));
        let ends: Vec<_> = (steps.findings().iter())
            .map(|f| (f.last_good.as_str(), f.first_bad.as_str()))
            .collect();
        assert_eq!(ends, [("b1", "b2"), ("b4", "b6")]);
        // Written before step_rounds was kept.
        let old: Found = serde_json::from_str(r#"{"found":"underpowered","need":null}"#).unwrap();
        assert_eq!(
            old,
            Found::Underpowered {
                need: None,
                step_rounds: 0
            }
        );
        assert!(old.unsearched() && old.findings().is_empty());
    }

    fn tried(index: usize, position: f64, class: Class) -> Step {
        Step {
            number: index,
            build: format!("b{index}"),
            index,
            boots: 1,
            values: vec![position],
            rounds: 0,
            decision: Decision {
                class,
                position: Some(position),
                p: None,
                bar: 0.01,
            },
            same_as: None,
        }
    }

    #[test]
    fn a_change_spread_over_several_builds_is_not_called_one_step() {
        // A figure that climbs evenly over 7 builds: the search ends between b3 and b4, a
        // sixth of the change apart.
        let ramp = [
            tried(3, 0.5 - 0.01, Class::Good),
            tried(4, 0.667, Class::Bad),
        ];
        match shape_of(&ramp, 3, 4) {
            Some(Shape::Spread { share }) => assert!((share - 0.177).abs() < 1e-9, "{share}"),
            s => panic!("{s:?}"),
        }
        // One step: the last good build at the good end's figure, the first bad at the bad's.
        let step = [tried(3, 0.0, Class::Good), tried(4, 0.99, Class::Bad)];
        assert!(matches!(shape_of(&step, 3, 4), Some(Shape::Step { .. })));
        // Next to an end, the end's own position counts.
        assert!(matches!(
            shape_of(&step[..1], 3, 6),
            Some(Shape::Step { .. })
        ));
    }
}
