//! `syscost bisect`: parse the builds and the measuring command, run the bisection (saving
//! every boot in its state file as it ends, so `bisect resume` goes on after Ctrl-C or a
//! crash), show it and record every boot in the history. `bisect step` classifies one build
//! for `git bisect run`; `bisect git` drives git bisect itself (`git.rs`); what
//! both take is in `common.rs`.

mod common;
mod git;
mod step;

use crate::cli::kept_run::{
    Made, Shown, UNPLANNED, drop_run, made, planned, record_boot, standing,
};
use crate::cli::named::{Named, named};
use crate::cli::*;
use crate::core::input::Opt;
use crate::experiments::bisect::{self, BisectPlan, builds};
use crate::experiments::boots::BootRecord;
use crate::experiments::boots::kept::{self, Kept, RunKind};
use crate::experiments::boots::life::{self, Start};
use anyhow::Context;
use common::{Common, boot_line, ends_equal, metric_refused};
pub(crate) use git::{GitArgs, StepArgs};
use std::path::Path;
pub(crate) use step::StepStatus;

pub(super) const BISECT_EXAMPLES: &str = "Examples:
  syscost bisect --accel tcg --emulated-counters --builds /srv/kernels -- run syscall --runs 1
      the images of a directory in version order, first good, last bad: each build tried is
      booted once, its kernel instructions per getpid counted exactly
  syscost bisect --accel tcg --builds builds.list --good v6.12.100 --bad v6.12.117 \\
      -- run syscall --runs 3
      timed: each step boots the build between fresh boots of both ends until Student's t
      decides at its share of the error bound (--error-bound, 5%)
  git bisect start BAD GOOD && git bisect run syscost bisect step --accel tcg \\
      --emulated-counters --good-image ../good.bzImage --bad-image ../bad.bzImage \\
      --build 'make -j8 bzImage' --image arch/x86/boot/bzImage -- run syscall --runs 1
      a kernel tree: exit 0 good, 1 bad, 125 skip (the build or boot failed, or undecided)
  syscost bisect git --good v6.11 --bad v6.12 --build 'make -j8 bzImage' \\
      --image arch/x86/boot/bzImage --accel tcg --emulated-counters -- run syscall --runs 1
      the same, git bisect driven by syscost, the ends built first
  syscost bisect status | resume | abort
      an interrupted bisection: where it stands, go on from its saved boots, or drop it";

/// What bisect does besides starting one.
#[derive(Subcommand, Debug)]
pub enum BisectAction {
    /// Classify the build in the current directory against the ends, for `git bisect run`:
    /// run --build, boot --image between the ends' boots, exit 0 (good), 1 (bad), 125 (skip:
    /// it did not build or boot, or stayed undecided) or 128 (the ends do not differ, or syscost
    /// failed: git bisect run stops). The ends' boots are kept in --state for the next step.
    Step(Box<StepArgs>),
    /// Drive `git bisect` in the kernel tree in the current directory: build both ends with
    /// --build, then `git bisect run` this syscost's `bisect step`, show every step, and `git
    /// bisect reset`.
    Git(Box<GitArgs>),
    /// One step of `bisect git`, as it hands git bisect run a step: the plan it wrote to
    /// FILE (what `bisect step` takes, typed).
    #[command(hide = true)]
    StepPlan(StepPlanArg),
    /// Where the interrupted bisection in --state stands.
    Status(StateArg),
    /// Go on with the interrupted bisection in --state: its saved boots are taken again, the
    /// rest booted.
    Resume(StateArg),
    /// Drop the interrupted bisection in --state (its boots stay in the history).
    Abort(StateArg),
}

#[derive(Args, Debug)]
pub struct StepPlanArg {
    /// The step's plan, as `bisect git` wrote it.
    #[arg(value_name = "FILE")]
    pub plan: PathBuf,
}

#[derive(Args, Debug)]
pub struct StateArg {
    /// The bisection's state file [default: $XDG_STATE_HOME/syscost/bisect.json, else
    /// ~/.local/state/syscost/bisect.json].
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub action: Option<BisectAction>,
    /// The builds in order: a list file, one per line, `[NAME=]KERNEL [kernel command-line
    /// words]` (# comments), or a directory of kernel images (vmlinuz-*, bzImage*) sorted by
    /// the versions in their names.
    #[arg(long, value_name = "FILE|DIR", required = true)]
    pub builds: Option<PathBuf>,
    /// The good end: a build's name [default: the first].
    #[arg(long, value_name = "NAME")]
    pub good: Option<String>,
    /// The bad end: a build's name, after the good end [default: the last].
    #[arg(long, value_name = "NAME")]
    pub bad: Option<String>,
    /// Kernel command-line additions of a build: NAME=ARGS.
    #[arg(long = "append", value_name = "NAME=ARGS")]
    pub appends: Vec<Named<String>>,
    /// Audit rules set up in a build's guest before measuring: NAME=FILE, as campaign's: its
    /// settings apply in the guest, audit turned on for the measurement when the boot has it
    /// off and the file has no -e; audit=0 on the build's line is refused.
    #[arg(long = "audit-rules", value_name = "NAME=FILE")]
    pub rules: Vec<Named<PathBuf>>,
    #[command(flatten)]
    pub every: crate::cli::campaign::EveryArm,
    #[command(flatten)]
    pub state: StateArg,
    #[command(flatten)]
    pub common: Common,
}

/// An interrupted bisection: its command line, plan and every boot so far.
type State = Kept<BisectPlan>;

impl BisectArgs {
    pub(super) fn run(self) -> Result<()> {
        let state = self.state.path()?;
        match self.action {
            Some(BisectAction::Step(s)) => return s.run(),
            Some(BisectAction::Git(g)) => return g.run(),
            Some(BisectAction::StepPlan(p)) => return step::StepPlan::load(&p.plan)?.run(),
            Some(BisectAction::Status(s)) => return status(&s.path()?),
            Some(BisectAction::Resume(s)) => return resume(&s.path()?),
            Some(BisectAction::Abort(s)) => return abort(&s.path()?),
            None => {}
        }
        if state.exists() {
            anyhow::bail!(
                "a bisection is in progress ({}): `syscost bisect resume` goes on with it, \
                 `syscost bisect status` says where it stands, `syscost bisect abort` drops it",
                state.display()
            );
        }
        let seed = self
            .common
            .shared
            .seed
            .unwrap_or_else(crate::core::now_unix);
        let plan = self.plan(seed)?;
        let mut s = State::new(plan.id.clone(), seed, Some(plan));
        Shown::of(&self.common.shared)?.keep_in(&mut s)?;
        start(&state, s, Start::New)
    }

    fn plan(&self, seed: u64) -> Result<BisectPlan> {
        let c = &self.common;
        let mut builds = builds::read(self.builds.as_deref().context("give --builds")?)?;
        for Named { name, value } in &self.appends {
            let b = named(&mut builds, Opt::Append, "build", name)?;
            b.append = format!("{} {value}", b.append).trim().into();
        }
        for Named { name, value } in &self.rules {
            named(&mut builds, Opt::AuditRules, "build", name)?.rules = Some(value.clone());
        }
        self.every.apply(&mut builds);
        let index = |flag: &str, name: &Option<String>, default: usize| match name {
            None => Ok(default),
            Some(n) => builds
                .iter()
                .position(|b| &b.name == n)
                .ok_or_else(|| anyhow::anyhow!("{flag} {n}: no build is named so (see --builds)")),
        };
        let good = index("--good", &self.good, 0)?;
        let bad = index("--bad", &self.bad, builds.len() - 1)?;
        if good == bad {
            anyhow::bail!(
                "--good and --bad both name {}: the ends must be two builds, the good one older",
                builds[good].name
            );
        }
        if good > bad {
            anyhow::bail!(
                "--good {} comes after --bad {} in the builds' order: the good end is the older build \
                 (the figure as it was), the bad end the newer (as it became)",
                builds[good].name,
                builds[bad].name
            );
        }
        c.plan(builds, good, bad, seed)
    }
}

/// Run (or go on with) the bisection `s`, kept in `state` (its life: [`life::live`]): every
/// boot saved as it ends (and a LAVA one's jobs as they are submitted: those a killed run left
/// are in `s`), recorded in the history, and the state removed once it is shown.
fn start(state: &Path, mut s: State, begin: Start) -> Result<()> {
    let (shown, plan) = Shown::kept(&mut s)?;
    if let Some(o) = &shown.output {
        crate::core::check_writable(o)?;
    }
    let made = made(&plan.boot.backend);
    s.plan = Some(plan);
    let run = bisect::KeptBisection {
        kept: s,
        path: state.to_path_buf(),
    };
    let mut watch = Watching { shown, made };
    let b = life::live(run, begin, &mut bisect::Search, &mut watch).map_err(refused)?;
    ends_equal(&b)
}

/// What a bisection says, records and shows at each point of its life.
struct Watching {
    shown: Shown,
    made: Made<'static>,
}

impl life::Watch<bisect::KeptBisection, bisect::Bisection> for Watching {
    fn started(&mut self, run: &bisect::KeptBisection, plan: &BisectPlan) {
        eprintln!(
            "syscost: bisection {} of {} builds by {}, seed {}; its boots are saved in {}",
            plan.id,
            plan.boot.arms.len(),
            plan.metric,
            run.kept.seed,
            run.path.display()
        );
    }

    fn booted(&mut self, id: &str, b: &BootRecord) {
        eprintln!("syscost: {}", boot_line(b));
        record_boot(b, &self.shown.keep, (RunKind::Bisection, id), &self.made);
    }

    fn finish(&mut self, _: &bisect::KeptBisection, b: &mut bisect::Bisection) -> Result<()> {
        show(b, self.shown.format, &self.shown.output)
    }
}

/// A figure no boot can give refuses the bisection, saying which figures there are: it keeps
/// no state (the life forgets it; its boots are in the history), so the next bisection is not
/// blocked by it.
fn refused(e: anyhow::Error) -> anyhow::Error {
    match metric_refused(&e) {
        Some(said) => anyhow::anyhow!("{said} (nothing of this bisection is kept)"),
        None => e,
    }
}

impl StateArg {
    fn path(&self) -> Result<PathBuf> {
        if let Some(p) = &self.state {
            return Ok(p.clone());
        }
        Ok(kept::state_home(Opt::State)?.join("bisect.json"))
    }
}

fn load_state(path: &Path) -> Result<Option<State>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{}: not a bisection's state", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn status(path: &Path) -> Result<()> {
    let Some(s) = load_state(path)? else {
        outln!(
            "no bisection in progress ({} does not exist)",
            path.display()
        );
        return Ok(());
    };
    let plan = s.plan.as_ref().map_or_else(
        || UNPLANNED.into(),
        |p| {
            let figure = if p.exact { "exact" } else { "timed" };
            let name = |i: usize| p.boot.arms.get(i).map_or("?", |a| a.name.as_str());
            let (good, bad) = (name(p.good), name(p.bad));
            format!(
                "{} ({figure}) from {good} to {bad}, {}",
                p.metric,
                planned(&p.boot)
            )
        },
    );
    outln!("bisection {}: {plan}", s.id);
    for line in standing(&s) {
        outln!("{line}");
    }
    outln!("`syscost bisect resume` goes on from them; `syscost bisect abort` drops them");
    Ok(())
}

fn resume(path: &Path) -> Result<()> {
    let s = load_state(path)?.with_context(|| {
        format!(
            "no bisection in progress ({} does not exist): nothing to resume",
            path.display()
        )
    })?;
    eprintln!(
        "syscost: resuming bisection {} from {} saved boot(s)",
        s.id,
        s.boots.len()
    );
    start(path, s, Start::Resumed)
}

fn abort(path: &Path) -> Result<()> {
    match load_state(path)? {
        Some(s) => drop_run(&s, path)?,
        None => outln!(
            "no bisection in progress ({} does not exist): nothing to abort",
            path.display()
        ),
    }
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A figure no boot can give refuses the bisection, naming the option (the life forgets
    /// its state: `bisect::Search` calls it fatal); any other error is said as it is.
    #[test]
    fn a_refused_figure_names_the_option() {
        let other = refused(anyhow::anyhow!("QEMU is gone"));
        assert_eq!(other.to_string(), "QEMU is gone");
        let missing = bisect::NoSuchFigure {
            build: "v2".into(),
            why: "its result has no figure nope (it has: time)".into(),
        };
        let missing = anyhow::Error::from(missing);
        use crate::experiments::boots::life::Boots;
        assert!(bisect::Search.fatal(&missing));
        let e = refused(missing).to_string();
        assert!(e.starts_with("v2: its result has no figure nope"), "{e}");
        assert!(e.contains("give --metric one of those"), "{e}");
        assert!(e.ends_with("(nothing of this bisection is kept)"), "{e}");
    }
}
