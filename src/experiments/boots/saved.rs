//! A kept run's boots, kept as each ends: a state file per campaign or reproduction, so that a
//! kill, a power cut or an analysis that fails loses no boot, and a resume boots only what the
//! run still lacks. The state is what every kept run holds ([`Kept`]: the plan itself, so no
//! resume changes an option, even one whose default a newer syscost changed; what it shows
//! and records; the seed and every boot so far), the directory it ran in (its relative paths)
//! and the process that runs it.

use super::kept::{self, Kept, KeptRun, Planned, RunKind, state_home};
use super::life::Keep;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A run in progress, as saved: what every kept run holds, the directory it was started in and
/// the process that runs it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub(crate) struct Saved<P> {
    #[serde(flatten)]
    pub kept: Kept<P>,
    /// The directory the run was started in (its paths may be relative to it).
    pub dir: PathBuf,
    /// The process running it, `(pid, start time)`, while it runs.
    pub owner: (u32, u64),
    /// The directory its state is kept in (not kept: where it was found).
    #[serde(skip)]
    pub home: PathBuf,
}

/// Where runs of `kind` keep their states under [`state_home`]: `campaigns`, `reproductions`.
pub(crate) fn default_dir(kind: RunKind) -> Result<PathBuf> {
    Ok(state_home(crate::core::input::Opt::State)?.join(kind.states()))
}

impl<P: Planned + Serialize> Saved<P> {
    /// A new run's state, to be kept in `home`, owned by this process.
    pub(crate) fn new(home: &Path, id: String, seed: u64) -> Result<Saved<P>> {
        Ok(Saved {
            kept: Kept::new(id, seed, None),
            dir: std::env::current_dir().context("cannot read the current directory")?,
            owner: crate::audit::session::me(),
            home: home.to_path_buf(),
        })
    }

    /// Whether the process that started it still runs it.
    pub(crate) fn running(&self) -> bool {
        self.owner != crate::audit::session::me()
            && crate::audit::session::alive(self.owner.0, self.owner.1)
    }

    /// Take it over for this process, to resume it: refused while its own process still runs
    /// it; back in the directory it ran in (its plan's kernels and rules files, and the
    /// measuring command's own paths, may be relative to it); said on stderr.
    pub(crate) fn take_over(&mut self) -> Result<()> {
        self.refuse_running("resume")?;
        std::env::set_current_dir(&self.dir).with_context(|| {
            format!(
                "{} {}: cannot go back to {}, where it ran",
                P::KIND.noun(),
                self.kept.id,
                self.dir.display()
            )
        })?;
        eprintln!(
            "syscost: resuming {} {} from {} kept boot(s)",
            P::KIND.noun(),
            self.kept.id,
            self.kept.boots.len()
        );
        self.owner = crate::audit::session::me();
        Ok(())
    }

    /// Refuse to take a run whose process still runs it from that process: `what` it, e.g.
    /// `resume`.
    pub(crate) fn refuse_running(&self, what: &str) -> Result<()> {
        if self.running() {
            bail!(
                "{} {} is still running (process {}): it cannot be {what}d now",
                P::KIND.noun(),
                self.kept.id,
                self.owner.0
            );
        }
        Ok(())
    }
}

impl<P: Planned + Serialize> KeptRun for Saved<P> {
    type Plan = P;
    fn kept(&self) -> &Kept<P> {
        &self.kept
    }
    fn kept_mut(&mut self) -> &mut Kept<P> {
        &mut self.kept
    }
}

impl<P: Planned + Serialize> Keep for Saved<P> {
    /// Its file in its home, by its ID.
    fn path(&self) -> PathBuf {
        file_of(&self.home, &self.kept.id)
    }

    /// Keep this new run's state under an ID no other run has: its own, or with this process's
    /// id added when another run, started in the same second with the same seed, has it. The
    /// first state is linked into place whole, so two runs can never both take one ID (each
    /// would keep the other's boots over its own).
    fn claim(&mut self) -> Result<()> {
        let id = self.kept.id.clone();
        for candidate in [id.clone(), format!("{id}-{}", std::process::id())] {
            self.kept.id = candidate;
            if kept::create_new(self, &self.path())? {
                return Ok(());
            }
        }
        bail!(
            "{} {id}: its state and {} are both taken in {}: start it again",
            P::KIND.noun(),
            self.kept.id,
            self.home.display()
        )
    }
}

/// The state file of run `id` in `dir`.
pub(crate) fn file_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// Every state of a run of `P`'s kind in `dir`, oldest first; a file that is not one is named
/// in an error.
pub(crate) fn list<P: Planned + Serialize + for<'de> Deserialize<'de>>(
    dir: &Path,
) -> Result<Vec<Saved<P>>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut out = Vec::new();
    for e in entries {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "json") {
            out.push(load(&path)?);
        }
    }
    out.sort_by(|a, b| a.kept.id.cmp(&b.kept.id));
    Ok(out)
}

fn load<P: Planned + for<'de> Deserialize<'de>>(path: &Path) -> Result<Saved<P>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut s: Saved<P> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a {}'s state", path.display(), P::KIND.noun()))?;
    s.home = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    Ok(s)
}

/// The run `id` names, or the only one there is (`None`: none is kept).
pub(crate) fn pick<P: Planned + Serialize + for<'de> Deserialize<'de>>(
    dir: &Path,
    id: Option<&str>,
) -> Result<Option<Saved<P>>> {
    let all = list(dir)?;
    let ids = |v: &[Saved<P>]| {
        v.iter()
            .map(|s| s.kept.id.clone())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Some(id) = id {
        let found = all.into_iter().find(|s| s.kept.id == id);
        return found
            .map(Some)
            .with_context(|| format!("no {} {id} is kept in {}", P::KIND.noun(), dir.display()));
    }
    match all.len() {
        0 => Ok(None),
        1 => Ok(all.into_iter().next()),
        _ => bail!(
            "{} {}s are kept in {} ({}): name one, e.g. `syscost {} resume {}`",
            all.len(),
            P::KIND.noun(),
            dir.display(),
            ids(&all),
            P::KIND.command(),
            all[0].kept.id
        ),
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::boots::Backend;

    #[derive(Clone, Debug, Serialize, Deserialize)]
    struct Plan;

    impl Planned for Plan {
        const KIND: RunKind = RunKind::Campaign;
        fn backend(&self) -> &Backend {
            unreachable!("no plan is kept in these tests")
        }
    }

    type S = Saved<Plan>;

    /// Two campaigns started in the same second with the same seed, so the same id: each keeps
    /// its own state (one of them under its process's id), never the other's (told apart here
    /// by the seed each was given).
    #[test]
    fn campaigns_started_in_one_second_keep_separate_states() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("campaigns");
        let mut first = S::new(&d, "5-9".into(), 9).unwrap();
        let mut second = S::new(&d, "5-9".into(), 10).unwrap();
        first.claim().unwrap();
        second.claim().unwrap();
        assert_eq!(first.kept.id, "5-9");
        assert_eq!(second.kept.id, format!("5-9-{}", std::process::id()));
        for s in [&first, &second] {
            let kept = load::<Plan>(&s.path()).unwrap();
            assert_eq!(kept.kept.seed, s.kept.seed, "{}", s.kept.id);
        }
        let mut third = S::new(&d, "5-9".into(), 9).unwrap();
        let e = third.claim().unwrap_err().to_string();
        assert!(e.contains("both taken"), "{e}");
        assert_eq!(
            list::<Plan>(&d).unwrap().len(),
            2,
            "the refused one left nothing"
        );
    }

    #[test]
    fn a_state_round_trips_and_is_found_by_id_or_alone() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("campaigns");
        crate::experiments::boots::kept::check_dir(&d, crate::core::input::Opt::State).unwrap();
        let a = S::new(&d, "1-7".into(), 7).unwrap();
        kept::save(&a, &a.path()).unwrap();
        assert!(!a.running(), "this process is not another that runs it");
        assert!(
            pick::<Plan>(&dir.path().join("none"), None)
                .unwrap()
                .is_none()
        );
        let got = pick::<Plan>(&d, None).unwrap().unwrap();
        assert_eq!((got.kept.id.as_str(), got.kept.seed), ("1-7", 7));
        let b = S::new(&d, "2-7".into(), 7).unwrap();
        kept::save(&b, &b.path()).unwrap();
        let err = pick::<Plan>(&d, None).unwrap_err().to_string();
        assert!(
            err.contains("2 campaigns") && err.contains("1-7 2-7"),
            "{err}"
        );
        assert_eq!(
            pick::<Plan>(&d, Some("2-7")).unwrap().unwrap().kept.id,
            "2-7"
        );
        assert!(pick::<Plan>(&d, Some("3-7")).is_err());
        std::fs::write(d.join("x.json"), "{").unwrap();
        assert!(list::<Plan>(&d).unwrap_err().to_string().contains("x.json"));
    }
}
