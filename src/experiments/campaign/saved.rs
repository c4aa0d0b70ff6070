//! A QEMU campaign's boots, kept as each ends: a state file per campaign, so that a kill, a
//! power cut or an analysis that fails loses no boot, and `campaign resume` boots only what the
//! campaign still lacks. The state is what every kept run holds ([`Kept`]: the plan itself, so
//! no resume changes an option, even one whose default a newer syscost changed; what it shows
//! and records; the seed and every boot so far), the directory it ran in (its relative paths)
//! and the process that runs it.

use super::CampaignPlan;
use crate::experiments::boots::Backend;
use crate::experiments::boots::kept::{self, Kept, KeptRun, Planned, RunKind, state_home};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A campaign in progress, as saved: what every kept run holds, the directory it was started
/// in and the process that runs it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Saved {
    #[serde(flatten)]
    pub kept: Kept<CampaignPlan>,
    /// The directory the campaign was started in (its paths may be relative to it).
    pub dir: PathBuf,
    /// The process running it, `(pid, start time)`, while it runs.
    pub owner: (u32, u64),
}

/// Where QEMU campaigns keep their states: `campaigns` under [`state_home`].
pub(crate) fn default_dir() -> Result<PathBuf> {
    Ok(state_home(crate::core::input::Opt::State)?.join("campaigns"))
}

impl Saved {
    /// A new campaign's state, owned by this process.
    pub(crate) fn new(id: String, seed: u64, args: Vec<String>) -> Result<Saved> {
        Ok(Saved {
            kept: Kept::new(id, seed, args, None),
            dir: std::env::current_dir().context("cannot read the current directory")?,
            owner: crate::audit::session::me(),
        })
    }

    /// The state's file in `dir`.
    pub(crate) fn path(&self, dir: &Path) -> PathBuf {
        file_of(dir, &self.kept.id)
    }

    /// Whether the process that started it still runs it.
    pub(crate) fn running(&self) -> bool {
        self.owner != crate::audit::session::me()
            && crate::audit::session::alive(self.owner.0, self.owner.1)
    }

    /// Take it over for this process (a resume).
    pub(crate) fn adopt(&mut self) {
        self.owner = crate::audit::session::me();
    }

    /// Keep this new campaign's state in `dir` under an ID no other campaign has: its own, or
    /// with this process's id added when another campaign, started in the same second with
    /// the same seed, has it. The first state is linked into place whole, so two campaigns
    /// can never both take one ID (each would keep the other's boots over its own).
    pub(crate) fn claim(&mut self, dir: &Path) -> Result<()> {
        let id = self.kept.id.clone();
        for candidate in [id.clone(), format!("{id}-{}", std::process::id())] {
            self.kept.id = candidate;
            if kept::create_new(self, &self.path(dir))? {
                return Ok(());
            }
        }
        bail!(
            "campaign {id}: its state and {} are both taken in {}: start it again",
            self.kept.id,
            dir.display()
        )
    }

    /// Write it atomically, in a directory only its owner reads (its command line may name a
    /// history URL with a password).
    pub(crate) fn save(&self, dir: &Path) -> Result<()> {
        kept::save(self, &self.path(dir))
    }
}

impl KeptRun for Saved {
    type Plan = CampaignPlan;
    fn kept(&self) -> &Kept<CampaignPlan> {
        &self.kept
    }
    fn kept_mut(&mut self) -> &mut Kept<CampaignPlan> {
        &mut self.kept
    }
}

impl Planned for CampaignPlan {
    const KIND: RunKind = RunKind::Campaign;
    fn backend(&self) -> &Backend {
        &self.boot.backend
    }
}

/// The state file of campaign `id` in `dir`.
pub(crate) fn file_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// Every campaign state in `dir`, oldest first; a file that is not one is named in an error.
pub(crate) fn list(dir: &Path) -> Result<Vec<Saved>> {
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

fn load(path: &Path) -> Result<Saved> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not a campaign's state", path.display()))
}

/// The campaign `id` names, or the only one there is (`None`: none is kept).
pub(crate) fn pick(dir: &Path, id: Option<&str>) -> Result<Option<Saved>> {
    let all = list(dir)?;
    let ids = |v: &[Saved]| {
        v.iter()
            .map(|s| s.kept.id.clone())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Some(id) = id {
        let found = all.into_iter().find(|s| s.kept.id == id);
        return found
            .map(Some)
            .with_context(|| format!("no campaign {id} is kept in {}", dir.display()));
    }
    match all.len() {
        0 => Ok(None),
        1 => Ok(all.into_iter().next()),
        _ => bail!(
            "{} campaigns are kept in {} ({}): name one, e.g. `syscost campaign resume {}`",
            all.len(),
            dir.display(),
            ids(&all),
            all[0].kept.id
        ),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// Two campaigns started in the same second with the same seed: each keeps its own state
    /// (one of them under its process's id), never the other's.
    #[test]
    fn campaigns_started_in_one_second_keep_separate_states() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("campaigns");
        let mut first = Saved::new("5-9".into(), 9, vec!["first".into()]).unwrap();
        let mut second = Saved::new("5-9".into(), 9, vec!["second".into()]).unwrap();
        first.claim(&d).unwrap();
        second.claim(&d).unwrap();
        assert_eq!(first.kept.id, "5-9");
        assert_eq!(second.kept.id, format!("5-9-{}", std::process::id()));
        for s in [&first, &second] {
            let kept = load(&s.path(&d)).unwrap();
            assert_eq!(kept.kept.args, s.kept.args, "{}", s.kept.id);
        }
        let mut third = Saved::new("5-9".into(), 9, Vec::new()).unwrap();
        let e = third.claim(&d).unwrap_err().to_string();
        assert!(e.contains("both taken"), "{e}");
        assert_eq!(list(&d).unwrap().len(), 2, "the refused one left nothing");
    }

    #[test]
    fn a_state_round_trips_and_is_found_by_id_or_alone() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("campaigns");
        crate::experiments::boots::kept::check_dir(&d, crate::core::input::Opt::State).unwrap();
        let a = Saved::new("1-7".into(), 7, vec!["--arm".into(), "a=k".into()]).unwrap();
        a.save(&d).unwrap();
        assert!(!a.running(), "this process is not another that runs it");
        assert!(pick(&dir.path().join("none"), None).unwrap().is_none());
        let got = pick(&d, None).unwrap().unwrap();
        assert_eq!(
            (got.kept.id.as_str(), got.kept.seed, got.kept.args),
            ("1-7", 7, a.kept.args.clone())
        );
        Saved::new("2-7".into(), 7, Vec::new())
            .unwrap()
            .save(&d)
            .unwrap();
        let err = pick(&d, None).unwrap_err().to_string();
        assert!(
            err.contains("2 campaigns") && err.contains("1-7 2-7"),
            "{err}"
        );
        assert_eq!(pick(&d, Some("2-7")).unwrap().unwrap().kept.id, "2-7");
        assert!(pick(&d, Some("3-7")).is_err());
        std::fs::write(d.join("x.json"), "{").unwrap();
        assert!(list(&d).unwrap_err().to_string().contains("x.json"));
    }
}
