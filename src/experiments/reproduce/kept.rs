//! A reproduction kept as it runs, as a campaign is: its plan (the investigation, the campaign
//! that repeats it and that campaign's command), each boot saved in its state as it ends, so
//! that a killed `reproduce` goes on with `reproduce resume` from the boots it made, none made
//! twice, and scores them as one run would have ([`crate::experiments::boots::life`]).

use crate::boot::lava::Lab;
use crate::experiments::boots::kept::{Planned, RunKind};
use crate::experiments::boots::life::Boots;
use crate::experiments::boots::{Backend, BootRecord, LavaRun};
use crate::experiments::campaign::{Campaign, CampaignPlan, Rounds};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A reproduction to run: which investigation, the campaign that repeats it, and that
/// campaign's command line (shown, and kept in the result to run again or change).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReproducePlan {
    /// The investigation's name (`uprobe-thread`).
    pub investigation: String,
    pub campaign: CampaignPlan,
    /// The words after `syscost` of the campaign it runs.
    pub command: Vec<String>,
}

impl Planned for ReproducePlan {
    const KIND: RunKind = RunKind::Reproduction;
    fn backend(&self) -> &Backend {
        &self.campaign.boot.backend
    }
}

impl ReproducePlan {
    /// Its investigation, from the catalogue.
    pub(crate) fn investigation(&self) -> Result<&'static super::Investigation> {
        super::named(&self.investigation).map_err(anyhow::Error::msg)
    }
}

/// A reproduction's boots: its investigation's rule sets written into the run's own files
/// (where its arms read them, so a resume finds them however long after), then its
/// campaign's rounds.
pub(crate) struct Reproducing;

impl Boots<ReproducePlan> for Reproducing {
    type Ready = <Rounds as Boots<CampaignPlan>>::Ready;
    type Made = Campaign;

    fn prepare(
        &mut self,
        plan: &mut ReproducePlan,
        files: &Path,
    ) -> Result<(Self::Ready, Option<Lab>)> {
        let inv = plan.investigation()?;
        crate::experiments::boots::kept::make_dir(files)?;
        for (file, text) in inv.rules {
            crate::core::write_atomic(&files.join(file), text.as_bytes())?;
        }
        for a in &mut plan.campaign.boot.arms {
            let shipped = a.rules.as_deref().and_then(Path::file_name).filter(|name| {
                inv.rules
                    .iter()
                    .any(|(f, _)| std::ffi::OsStr::new(f) == *name)
            });
            if let Some(name) = shipped {
                a.rules = Some(files.join(name));
            }
        }
        Rounds.prepare(&mut plan.campaign, files)
    }

    fn boot(
        &mut self,
        plan: &ReproducePlan,
        ready: &Self::Ready,
        kept: &[BootRecord],
        lava: Option<LavaRun>,
        on_boot: &mut dyn FnMut(&BootRecord),
    ) -> Result<Campaign> {
        Rounds.boot(&plan.campaign, ready, kept, lava, on_boot)
    }
}
