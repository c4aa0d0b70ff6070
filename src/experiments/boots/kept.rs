//! Where boots are kept between processes: the state of a campaign or a bisection that a
//! kill, a power cut or a failed analysis must not lose, in a directory only its owner reads
//! (a kept command line may name a history URL with a password).
//!
//! Both kinds of kept run share one life, written here once over [`KeptRun`]: saved
//! atomically after every boot and every LAVA job submitted ([`save`], [`lava_run`]), with
//! its own files beside its state ([`files_of`]: kernels fetched by URL, what a lab on this
//! machine fetches), and forgotten whole at its end or when dropped ([`forget`]).

use super::{Backend, BootRecord, JobEvent, LavaRun, PendingJob};
use crate::boot::lava::Lab;
use crate::core::input::Opt;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// What a kept run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunKind {
    Campaign,
    Bisection,
    Reproduction,
}

impl RunKind {
    /// Its name in messages: `campaign`, `bisection`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            RunKind::Campaign => "campaign",
            RunKind::Bisection => "bisection",
            RunKind::Reproduction => "reproduction",
        }
    }

    /// The command that runs it, resumes it and drops it: `campaign`, `bisect`, `reproduce`.
    pub(crate) fn command(self) -> &'static str {
        match self {
            RunKind::Campaign => "campaign",
            RunKind::Bisection => "bisect",
            RunKind::Reproduction => "reproduce",
        }
    }

    /// The directory under the state home its states are kept in, one file each (a
    /// bisection keeps one state, `bisect.json`, beside these).
    pub(crate) fn states(self) -> &'static str {
        match self {
            RunKind::Campaign => "campaigns",
            RunKind::Bisection => "bisections",
            RunKind::Reproduction => "reproductions",
        }
    }

    /// The key of the history tag, and the word of its LAVA jobs' names, that name the run:
    /// `campaign`, `bisect`.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            RunKind::Campaign => "campaign",
            RunKind::Bisection => "bisect",
            RunKind::Reproduction => "reproduce",
        }
    }

    /// Whether its boots are recorded in the history as they end (a reproduction's are not).
    pub(crate) fn records(self) -> bool {
        self != RunKind::Reproduction
    }

    /// The history tag that names an arm's boots: `arm` in a campaign, `build` in a bisection.
    pub(crate) fn arm_tag(self) -> &'static str {
        match self {
            RunKind::Campaign | RunKind::Reproduction => "arm",
            RunKind::Bisection => "build",
        }
    }
}

/// What a kept run runs: a campaign's or a bisection's plan.
pub(crate) trait Planned {
    const KIND: RunKind;
    /// How it boots.
    fn backend(&self) -> &Backend;
}

/// What every kept run holds, campaign or bisection: its id, seed, plan, boots so far and LAVA
/// jobs pending (no command line: a resume and a status read the plan; states written before
/// kept the words too, which are ignored). A kind of run that keeps more holds it beside this
/// (`#[serde(flatten)]`), so its state file stays one flat object.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub(crate) struct Kept<P> {
    pub id: String,
    pub seed: u64,
    /// The plan it runs, as it started, so a resume keeps every option and the id (none in
    /// states written before plans were kept, which a resume refuses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<P>,
    /// Every boot so far.
    pub boots: Vec<BootRecord>,
    /// The LAVA jobs submitted and not yet read back: a resume waits for them instead of
    /// submitting them again; a drop cancels them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<PendingJob>,
    /// What the command shows and records at the end, in the command's own type (the layer
    /// that defines it is above this one), so that a resume reads no command line again;
    /// null in states written before it was kept.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub shown: serde_json::Value,
}

impl<P: Planned> Kept<P> {
    /// A new run's state, with no boot yet.
    pub(crate) fn new(id: String, seed: u64, plan: Option<P>) -> Kept<P> {
        Kept {
            id,
            seed,
            plan,
            boots: Vec::new(),
            jobs: Vec::new(),
            shown: serde_json::Value::Null,
        }
    }

    /// How it boots, when its plan is kept.
    pub(crate) fn backend(&self) -> Option<&Backend> {
        self.plan.as_ref().map(P::backend)
    }
}

/// The state of a campaign or a bisection in progress, as the shared life needs it: the
/// [`Kept`] it holds, and what else it saves with it.
pub(crate) trait KeptRun: Serialize {
    type Plan: Planned;
    const KIND: RunKind = <Self::Plan as Planned>::KIND;
    fn kept(&self) -> &Kept<Self::Plan>;
    fn kept_mut(&mut self) -> &mut Kept<Self::Plan>;
}

impl<P: Planned + Serialize> KeptRun for Kept<P> {
    type Plan = P;
    fn kept(&self) -> &Kept<P> {
        self
    }
    fn kept_mut(&mut self) -> &mut Kept<P> {
        self
    }
}

/// A kept run's own files, beside its state file `state`: its arms' kernels fetched from URLs,
/// and the files a LAVA lab on this machine fetches (a killed run's jobs still fetch them).
pub(crate) fn files_of(state: &Path) -> PathBuf {
    state.with_extension("files")
}

/// Write `run`'s state to `path` atomically, in a directory only its owner reads.
pub(crate) fn save<K: KeptRun>(run: &K, path: &Path) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    make_dir(dir.unwrap_or(Path::new(".")))?;
    crate::core::write_atomic(path, serde_json::to_string(run)?.as_bytes()).with_context(|| {
        format!(
            "cannot keep the {}'s boots in {}",
            K::KIND.noun(),
            path.display()
        )
    })
}

/// Write a new run's state to `path` unless a file is there: linked into place whole, so two
/// runs can never both take one path (`Ok(false)`: another has it).
pub(crate) fn create_new<K: KeptRun>(run: &K, path: &Path) -> Result<bool> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    make_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, serde_json::to_string(run)?.as_bytes())
        .with_context(|| format!("cannot write a temporary file in {}", dir.display()))?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error).with_context(|| {
            format!(
                "cannot keep the {}'s boots in {}",
                K::KIND.noun(),
                path.display()
            )
        }),
    }
}

/// What a kept run's LAVA boots need besides the plan: the `lab`, the files beside its state
/// at `path`, the jobs a killed run submitted, and each job kept in the state as it is
/// submitted and read back.
pub(crate) fn lava_run<'a, K: KeptRun>(
    lab: Lab,
    run: &'a RefCell<K>,
    path: &'a Path,
) -> LavaRun<'a> {
    let (tag, pending) = {
        let r = run.borrow();
        (
            format!("{} {}", K::KIND.tag(), r.kept().id),
            r.kept().jobs.clone(),
        )
    };
    LavaRun {
        lab,
        tag,
        files: files_of(path),
        pending,
        on_job: Box::new(move |event: JobEvent| {
            let mut r = run.borrow_mut();
            event.apply(&mut r.kept_mut().jobs);
            if let Err(e) = save(&*r, path) {
                eprintln!("syscost: warning: {e:#}");
            }
        }),
    }
}

/// Remove a kept run's state at `path` and its files: it ended, was dropped, or can never
/// go on (its boots stay in the history).
pub(crate) fn forget(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(files_of(path));
}

/// Where syscost keeps the state of what it runs across processes (campaigns, bisections):
/// `$XDG_STATE_HOME/syscost`, else `~/.local/state/syscost`; `opt` picks another place.
pub(crate) fn state_home(opt: Opt) -> Result<PathBuf> {
    crate::core::places::syscost_dir(crate::core::places::Kept::State)
        .ok_or_else(|| crate::refused!("no HOME to keep the boots under: give ", opt))
}

/// Refuse, before any boot, a state directory the boots cannot be kept in; `opt` picks
/// another.
pub(crate) fn check_dir(dir: &Path, opt: Opt) -> Result<()> {
    let refused = || {
        crate::refused!(
            format!("cannot keep the boots in {}: give ", dir.display()),
            opt,
            " in a directory this user can write"
        )
    };
    make_dir(dir).with_context(refused)?;
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .with_context(refused)
}

/// Create `dir` (and its parents) readable by its owner alone, if it is not there.
pub(crate) fn make_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[derive(Serialize)]
    struct Plan;

    impl Planned for Plan {
        const KIND: RunKind = RunKind::Bisection;
        fn backend(&self) -> &Backend {
            unreachable!("no plan is kept in these tests")
        }
    }

    /// A kept run is saved in a directory only its owner reads, its files beside it, and
    /// forgotten whole: state and files.
    #[test]
    fn a_kept_run_is_saved_beside_its_files_and_forgotten_whole() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state/b.json");
        let run = Kept::<Plan>::new("7".into(), 3, None);
        save(&run, &path).unwrap();
        let mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"id":"7","seed":3,"boots":[]}"#
        );
        assert_eq!(files_of(&path), tmp.path().join("state/b.files"));
        std::fs::create_dir(files_of(&path)).unwrap();
        std::fs::write(files_of(&path).join("vmlinux"), "x").unwrap();
        forget(&path);
        assert!(!path.exists() && !files_of(&path).exists());
        let refused = save(&run, Path::new("/proc/nope/b.json")).unwrap_err();
        assert!(format!("{refused:#}").contains("/proc/nope"), "{refused:#}");
        assert_eq!(
            (Kept::<Plan>::KIND.noun(), Kept::<Plan>::KIND.tag()),
            ("bisection", "bisect")
        );
    }

    #[test]
    fn a_directory_that_cannot_exist_is_refused() {
        let err = check_dir(Path::new("/proc/nope/campaigns"), Opt::State).unwrap_err();
        let said = format!("{err:#}");
        assert!(
            said.contains("cannot keep the boots in /proc/nope/campaigns"),
            "{said}"
        );
    }
}
