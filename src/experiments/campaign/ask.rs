//! A campaign as asked for, typed, and the plan it makes: its arms, what every boot shares,
//! and the rounds, decided here when not asked for (the fewest whose test can decide) and
//! refused when too few to decide. The command line and a reproduction build one alike.

use super::{CampaignPlan, MIN_EXACT_BOOTS};
use crate::core::input::Opt;
use crate::counters::emulated::is_emulated;
use crate::experiments::boots::ask::{BootAsk, MeasureCheck};
use crate::experiments::boots::{Arm, PlaceEach};
use anyhow::Result;

/// The rounds of a campaign of one arm when not asked for: its figures over three boots.
pub(crate) const ONE_ARM_ROUNDS: u32 = 3;
/// The level a campaign decides at when not told.
pub(crate) const ALPHA: f64 = 0.05;

/// A campaign as asked for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CampaignAsk {
    /// Each with its own settings; the first is the baseline.
    pub arms: Vec<Arm>,
    pub boots: BootAsk,
    /// Rounds, each booting every arm once; `None`: the fewest that decide.
    pub rounds: Option<u32>,
    /// Fewer rounds than decide are taken, and no verdict given.
    pub no_verdict: bool,
    /// The arms are a series in order: each is also compared with the one before it.
    pub steps: bool,
    pub alpha: f64,
    /// `None`: [`PlaceEach::default_for`] the plan.
    pub placement: Option<PlaceEach>,
}

impl CampaignAsk {
    /// A campaign of `arms`, each boot as `boots` asks, everything else by default.
    pub(crate) fn new(arms: Vec<Arm>, boots: BootAsk) -> CampaignAsk {
        CampaignAsk {
            arms,
            boots,
            rounds: None,
            no_verdict: false,
            steps: false,
            alpha: ALPHA,
            placement: None,
        }
    }

    /// The plan, seeded by `seed`; the measuring commands checked by `measured`.
    pub(crate) fn plan(&self, seed: u64, measured: &dyn MeasureCheck) -> Result<CampaignPlan> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!(crate::refused!(
                Opt::Alpha,
                " must be between 0 and 1 (exclusive), e.g. 0.05"
            ));
        }
        let rounds = self.rounds()?;
        let mut boot = self.boots.plan(self.arms.clone(), seed, measured)?;
        boot.placement = self
            .placement
            .unwrap_or_else(|| PlaceEach::default_for(&boot));
        Ok(CampaignPlan {
            boot,
            rounds,
            options: self.boots.options(self.alpha, seed),
            steps: self.steps,
        })
    }

    /// The rounds: as asked, else the fewest that decide; fewer than decide are refused unless
    /// no verdict is asked for. Emulated counts decide with 2 boots per arm (the range rule of
    /// exact counts), timed figures with the paired test's rounds; one arm is measured, not
    /// compared, over 3 boots.
    pub(crate) fn rounds(&self) -> Result<u32> {
        let arms = self.arms.len();
        let comparisons = arms.max(2) - 1;
        let need = crate::stats::paired::pairs_to_decide(self.alpha, comparisons);
        let exact = is_emulated(&self.boots.metric());
        let default = match (arms, exact) {
            (_, true) => MIN_EXACT_BOOTS as u32,
            (1, false) => ONE_ARM_ROUNDS,
            (_, false) => need as u32,
        };
        let rounds = self.rounds.unwrap_or(default);
        if self.no_verdict || arms == 1 {
            return Ok(rounds);
        }
        if exact {
            if (rounds as usize) < MIN_EXACT_BOOTS {
                anyhow::bail!(crate::refused!(
                    Opt::Boots,
                    " ",
                    rounds,
                    ": emulated counts need ",
                    MIN_EXACT_BOOTS,
                    " boots per arm, for their boot-to-boot range, before they can be called \
                     different; use ",
                    Opt::Boots,
                    " ",
                    MIN_EXACT_BOOTS,
                    " (or add ",
                    Opt::NoVerdict,
                    " for figures alone)"
                ));
            }
            return Ok(rounds);
        }
        crate::experiments::ab::decidable(Opt::Boots, rounds as usize, comparisons, self.alpha)
            .map_err(|e| {
                let or = crate::refused!(" (or add ", Opt::NoVerdict, " for figures alone)");
                anyhow::anyhow!("{e}{or}")
            })?;
        Ok(rounds)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn ask(arms: usize) -> CampaignAsk {
        let arms = (0..arms)
            .map(|i| Arm {
                name: format!("a{i}"),
                ..Arm::default()
            })
            .collect();
        CampaignAsk::new(arms, BootAsk::new(vec!["run".into()]))
    }

    /// The rounds not asked for are the fewest that decide: the paired test's for timed
    /// arms, 2 for exact counts, 3 for one arm; fewer are refused but with no verdict.
    #[test]
    fn the_rounds_are_the_fewest_that_decide() {
        assert_eq!(ask(2).rounds().unwrap(), 6);
        assert_eq!(ask(3).rounds().unwrap(), 7);
        assert_eq!(ask(1).rounds().unwrap(), ONE_ARM_ROUNDS);
        let mut counted = ask(2);
        counted.boots.guest.emulated_counters = true;
        assert_eq!(counted.rounds().unwrap(), MIN_EXACT_BOOTS as u32);
        counted.rounds = Some(1);
        let said = counted.rounds().unwrap_err().to_string();
        assert!(said.contains("emulated counts need 2 boots"), "{said}");
        let mut timed = ask(2);
        timed.rounds = Some(3);
        let said = timed.rounds().unwrap_err().to_string();
        assert!(said.contains("-no-verdict for figures alone"), "{said}");
        timed.no_verdict = true;
        assert_eq!(timed.rounds().unwrap(), 3);
    }
}
