//! One step of a git bisection, typed: the ends, the build command, where the steps' shared
//! state is kept, the plan of the bisection of a candidate between the ends, and what it shows
//! and records. `bisect step` makes one from its flags; `bisect git` writes one for `git
//! bisect run` to hand each step (`bisect step-plan FILE`), so no command composes another's
//! words.

use super::common::git;
use super::common::{boot_line, ends_equal, metric_refused, other_said, step_status};
use crate::cli::kept_run::{Shown, made, record_boot};
use crate::cli::*;
use crate::experiments::bisect::{self, BisectPlan, Bisection, Step};
use crate::experiments::boots::kept::RunKind;
use crate::experiments::boots::start::open_lab;
use crate::experiments::boots::{BootRecord, LavaRun};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The exit status git bisect run reads from a step: 0 good, 1 bad, 125 skip, 128 and above
/// stop the bisection (the ends do not differ, or syscost failed: a plain error's 1 would read
/// as bad).
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub(crate) struct StepStatus(pub i32, pub String);

/// The status of a step that cannot go on.
pub(super) const STOP: i32 = 128;
const SKIP: i32 = 125;

/// An end of the bisection: its image and rules file, built before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct End {
    pub image: PathBuf,
    pub rules: Option<PathBuf>,
}

/// A step: the candidate is the commit checked out, built by `build` (or its image as it is).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StepPlan {
    /// Good, then bad.
    pub ends: [End; 2],
    pub build: Option<String>,
    /// Where the steps' shared state is kept.
    pub state: PathBuf,
    /// Its builds: good, the candidate (named and its image kept by the step), bad.
    pub plan: BisectPlan,
    pub shown: Shown,
}

/// What the steps of one `git bisect run` share.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct StepState {
    pub(super) id: String,
    pub(super) seed: u64,
    /// What the ends' boots were of: each end's image and rules (path, size, modification
    /// time), the command line and the measuring command. A step of other ends starts anew.
    pub(super) ends: Vec<String>,
    /// The ends' boots and the last round they took.
    pub(super) end_boots: Vec<BootRecord>,
    pub(super) end_rounds: u32,
    /// Every step so far: its commit and its evidence.
    pub(super) steps: Vec<Step>,
    #[serde(default)]
    pub(super) result: Option<Bisection>,
}

impl StepPlan {
    /// The plan kept in `file` (by `bisect git`).
    pub(super) fn load(file: &Path) -> Result<StepPlan> {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the step's plan {}", file.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a bisection step's plan", file.display()))
    }

    /// Run it, its answer as git bisect run reads it: an exit status.
    pub(super) fn run(self) -> Result<()> {
        match self.step() {
            Ok(0) => Ok(()),
            Ok(code) => Err(StepStatus(code, format!("exit {code}")).into()),
            Err(e) if e.is::<StepStatus>() || e.is::<crate::signals::Interrupted>() => Err(e),
            Err(e) => Err(StepStatus(STOP, format!("error: {e:#}; git bisect run stops")).into()),
        }
    }

    fn step(mut self) -> Result<i32> {
        let ends = self.ends_key();
        let mut state = load(&self.state)?
            .filter(|s| s.ends == ends)
            .unwrap_or_else(|| {
                let seed = self.plan.boot.seed;
                StepState {
                    id: format!("{}-{seed}", crate::core::now_unix()),
                    seed,
                    ends,
                    ..StepState::default()
                }
            });
        let name = build_name().unwrap_or_else(|| "candidate".into());
        let candidate = &mut self.plan.boot.arms[1];
        if let Some(cmd) = &self.build {
            match build_here(cmd, &candidate.kernel)? {
                Some(kept) => candidate.kernel = kept,
                None => return Ok(SKIP),
            }
        }
        if !candidate.kernel.is_file() {
            let at = candidate.kernel.display();
            eprintln!("syscost: {name}: no image at {at}: skipped");
            return Ok(SKIP);
        }
        candidate.name = name;
        let b = self.bisect(&state)?;
        show(&b, self.shown.format, &self.shown.output)?;
        save_step(&mut state, &b);
        save(&self.state, &state)?;
        ends_equal(&b).map_err(|e| StepStatus(STOP, format!("{e:#}")))?;
        if let Some(said) = other_said(&b) {
            eprintln!("syscost: {said}");
        }
        Ok(step_status(&b))
    }

    fn ends_key(&self) -> Vec<String> {
        let file = |p: Option<&PathBuf>| match p.map(|p| (p, std::fs::metadata(p))) {
            Some((p, Ok(m))) => format!("{} {} {:?}", p.display(), m.len(), m.modified().ok()),
            Some((p, Err(_))) => p.display().to_string(),
            None => String::new(),
        };
        let [good, bad] = &self.ends;
        vec![
            file(Some(&good.image)),
            file(good.rules.as_ref()),
            file(Some(&bad.image)),
            file(bad.rules.as_ref()),
            self.plan.boot.arms[1].append.clone(),
            self.plan.boot.measure.join(" "),
        ]
    }

    /// The candidate between the ends, the ends' boots taken from the state when it has them.
    fn bisect(&self, state: &StepState) -> Result<Bisection> {
        let mut plan = self.plan.clone();
        plan.boot.seed = state.seed;
        plan.options.seed = state.seed;
        plan.id = state.id.clone();
        let lab = open_lab(&mut plan.boot.backend)?;
        let made = made(&plan.boot.backend);
        let mut on_boot = |b: &BootRecord, _: &[BootRecord]| {
            eprintln!("syscost: {}", boot_line(b));
            let run = (RunKind::Bisection, state.id.as_str());
            record_boot(b, &self.shown.keep, run, &made);
        };
        let files = crate::boot::workdir()?;
        // One step a process: no state to keep its jobs in (a killed step is tried again).
        let lava = lab.map(|lab| LavaRun {
            lab,
            tag: format!("{} {}", RunKind::Bisection.tag(), plan.id),
            files: files.path().to_path_buf(),
            pending: Vec::new(),
            on_job: Box::new(|_| {}),
        });
        bisect::run(&plan, state.end_boots.clone(), lava, &mut on_boot)
            .map_err(|e| metric_refused(&e).unwrap_or(e))
    }
}

/// Keep the ends' boots (the first time) and this step's evidence.
fn save_step(state: &mut StepState, b: &Bisection) {
    if state.end_boots.is_empty() {
        state.end_rounds = b.end_rounds;
        state.end_boots = b
            .boots
            .iter()
            .filter(|x| x.round <= b.end_rounds)
            .cloned()
            .collect();
    }
    for s in &b.steps {
        state.steps.push(Step {
            number: state.steps.len() + 1,
            ..s.clone()
        });
    }
    state.result = Some(b.clone());
}

pub(super) fn load(path: &Path) -> Result<Option<StepState>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(serde_json::from_str(&t).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn save(path: &Path, s: &StepState) -> Result<()> {
    crate::core::write_atomic(path, serde_json::to_string(s)?.as_bytes())
}

/// The commit checked out here built by the user's command `cmd`, leaving `image`: taken from
/// syscost's store of builds when it was built before, else built and kept there
/// (`kbuild::tree`); the image to boot, or `None` when it does not build.
pub(super) fn build_here(cmd: &str, image: &Path) -> Result<Option<PathBuf>> {
    use crate::kbuild::tree::{Made, TreeBuild};
    let b = TreeBuild {
        dir: std::env::current_dir()?,
        commit: git(&["rev-parse", "HEAD"])?,
        command: cmd.to_string(),
        image: image.to_path_buf(),
    };
    let short = &b.commit[..b.commit.len().min(12)];
    if let Some(k) = b.kept()? {
        eprintln!(
            "syscost: {short} was built before by this command: booting its kept image {}",
            k.image.display()
        );
        return Ok(Some(k.image));
    }
    eprintln!("syscost: building {short}: {cmd}");
    match b.build()? {
        Made::Kept(k) | Made::Built(k) => Ok(Some(k.image)),
        Made::Failed(why) => {
            eprintln!(
                "syscost: --build: {why}: skipped, as git bisect skips a commit that does not \
                 build"
            );
            Ok(None)
        }
    }
}

/// The current commit's short hash, when the current directory is a git tree.
pub(super) fn build_name() -> Option<String> {
    git(&["rev-parse", "--short", "HEAD"]).ok()
}
