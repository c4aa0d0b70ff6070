//! `syscost bisect`: parse the builds and the measuring command, run the bisection (saving
//! every boot in its state file as it ends, so `bisect resume` goes on after Ctrl-C or a
//! crash), show it and record every boot in the history. `bisect step` classifies one build
//! for `git bisect run`; `bisect git` drives git bisect itself (`git.rs`); what
//! both take is in `common.rs`.

mod common;
mod git;
mod step;

use crate::cli::campaign::name_value;
use crate::cli::kept_run::{Shown, drop_run, made, record_boot, standing};
use crate::cli::*;
use crate::core::input::Opt;
use crate::experiments::bisect::{self, BisectPlan, builds};
use crate::experiments::boots::kept::{self, Kept, RunKind};
use crate::experiments::boots::start::open_lab;
use crate::experiments::boots::{Arm, BootRecord};
use anyhow::Context;
use common::{Common, boot_line, ends_equal, metric_refused};
pub(crate) use git::{GitArgs, StepArgs};
use std::cell::RefCell;
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
    pub appends: Vec<String>,
    /// Audit rules set up in a build's guest before measuring: NAME=FILE, as campaign's: its
    /// settings apply in the guest, audit turned on for the measurement when the boot has it
    /// off and the file has no -e; audit=0 on the build's line is refused.
    #[arg(long = "audit-rules", value_name = "NAME=FILE")]
    pub rules: Vec<String>,
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
        let args: Vec<String> = std::env::args()
            .skip_while(|a| a != "bisect")
            .skip(1)
            .collect();
        let seed = self
            .common
            .shared
            .seed
            .unwrap_or_else(crate::core::now_unix);
        let plan = self.plan(seed)?;
        let mut s = State::new(plan.id.clone(), seed, args, Some(plan));
        Shown::of(&self.common.shared)?.keep_in(&mut s)?;
        start(&state, s)
    }

    fn plan(&self, seed: u64) -> Result<BisectPlan> {
        let c = &self.common;
        let mut builds = builds::read(self.builds.as_deref().context("give --builds")?)?;
        for a in &self.appends {
            let (name, args) = name_value("--append", a)?;
            let b = build_named(&mut builds, "--append", name)?;
            b.append = format!("{} {args}", b.append).trim().into();
        }
        for r in &self.rules {
            let (name, file) = name_value("--audit-rules", r)?;
            build_named(&mut builds, "--audit-rules", name)?.rules = Some(file.into());
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

/// Run (or go on with) the bisection `s`, saving every boot in `state` (and a LAVA one's jobs
/// as they are submitted: those a killed run left are in `s`); remove it at the end.
fn start(state: &Path, mut s: State) -> Result<()> {
    let (shown, mut plan) = Shown::kept(&mut s)?;
    let replay = std::mem::take(&mut s.boots);
    let seed = s.seed;
    if let Some(o) = &shown.output {
        crate::core::check_writable(o)?;
    }
    let lab = open_lab(&mut plan.boot.backend)?;
    // A bisection whose boots cannot be kept is refused before its first boot.
    let dir = state.parent().filter(|d| !d.as_os_str().is_empty());
    kept::check_dir(dir.unwrap_or(Path::new(".")), Opt::State)?;
    eprintln!(
        "syscost: bisection {} of {} builds by {}, seed {seed}; its boots are saved in {}",
        plan.id,
        plan.boot.arms.len(),
        plan.metric,
        state.display()
    );
    s.plan = Some(plan.clone());
    let saved = RefCell::new(s);
    let made = made(&plan.boot.backend);
    let mut on_boot = |b: &BootRecord, all: &[BootRecord]| {
        eprintln!("syscost: {}", boot_line(b));
        let mut saved = saved.borrow_mut();
        record_boot(b, &shown.keep, (RunKind::Bisection, &saved.id), &made);
        saved.boots = all.to_vec();
        if let Err(e) = kept::save(&*saved, state) {
            eprintln!("syscost: warning: {e:#}");
        }
    };
    let lava = lab.map(|lab| kept::lava_run(lab, &saved, state));
    let ran = bisect::run(&plan, replay, lava, &mut on_boot);
    if ran.is_err() && !state.exists() {
        // Nothing kept to resume: nothing for its jobs either.
        kept::forget(state);
    }
    let b = ran.map_err(|e| refused(e, state))?;
    show(&b, shown.format, &shown.output)?;
    kept::forget(state);
    ends_equal(&b)
}

/// A figure no boot can give refuses the bisection: it keeps no state (its boots are in the
/// history), so the next bisection is not blocked by it.
fn refused(e: anyhow::Error, state: &Path) -> anyhow::Error {
    let Some(said) = metric_refused(&e) else {
        return e;
    };
    kept::forget(state);
    anyhow::anyhow!("{said} (nothing of this bisection is kept)")
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
    outln!(
        "bisection {}: syscost bisect {}",
        s.id,
        crate::cli::args::shown_words(&s.args)
    );
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
    start(path, s)
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

fn build_named<'a>(builds: &'a mut [Arm], flag: &str, name: &str) -> Result<&'a mut Arm> {
    let names: Vec<String> = builds.iter().map(|a| a.name.clone()).collect();
    builds.iter_mut().find(|a| a.name == name).ok_or_else(|| {
        anyhow::anyhow!(
            "{flag} {name}=...: no build is named {name} (builds: {})",
            names.join(" ")
        )
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A figure no boot can give refuses the bisection and drops its state; any other error
    /// keeps it, to resume.
    #[test]
    fn a_refused_figure_leaves_no_state_and_names_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("bisect.json");
        std::fs::write(&state, "{}").unwrap();
        let other = refused(anyhow::anyhow!("QEMU is gone"), &state);
        assert_eq!(other.to_string(), "QEMU is gone");
        assert!(state.exists(), "kept for bisect resume");
        let missing = bisect::NoSuchFigure {
            build: "v2".into(),
            why: "its result has no figure nope (it has: time)".into(),
        };
        let e = refused(missing.into(), &state).to_string();
        assert!(e.starts_with("v2: its result has no figure nope"), "{e}");
        assert!(e.contains("give --metric one of those"), "{e}");
        assert!(!state.exists());
    }
}
