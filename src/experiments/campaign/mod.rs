//! `syscost campaign`: N boots of M kernels (or kernel command lines, or audit states), in
//! rounds that boot every arm once in a shuffled order, each boot measured by a syscost
//! command inside it, then compared with boots as the units, paired by round. The audit
//! series' method (12 boots of each of 4 kernels) and the alignment RFC's ranking of many
//! builds, as one command. The boots run in QEMU (this module) or, on this machine itself,
//! one after another by kexec ([`kexec`]).

pub(crate) mod analysis;
pub(crate) mod ask;
pub(crate) mod kexec;
pub(crate) mod placed;

pub(crate) use analysis::analyse;

use crate::boot::qemu::Machine;
use crate::compare::{self, Comparison};
use crate::core::{Envelope, Kind};
use crate::experiments::boots::plan::order;
use crate::experiments::boots::schedule::{self, Schedule};
use crate::experiments::boots::{
    Arm, ArmEntry, BootPlan, BootRecord, LavaRun, checks, life, start,
};
use crate::results::functions::EmulatedFunctions;
use crate::results::sets::EmulatedSets;
use crate::stats::Summary;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// A campaign to run: its boots, its rounds, and how the arms are compared.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CampaignPlan {
    pub boot: BootPlan,
    /// Rounds: each boots every arm once.
    pub rounds: u32,
    pub options: compare::Options,
    /// The arms are a series in order: each is also compared with the one before it.
    #[serde(default)]
    pub steps: bool,
}

impl crate::experiments::boots::kept::Planned for CampaignPlan {
    const KIND: crate::experiments::boots::kept::RunKind =
        crate::experiments::boots::kept::RunKind::Campaign;
    fn backend(&self) -> &crate::experiments::boots::Backend {
        &self.boot.backend
    }
}

impl CampaignPlan {
    /// Its rounds: each a shuffle of the arms seeded by the campaign's seed.
    pub(crate) fn schedule(&self) -> Schedule {
        let arms = &self.boot.arms;
        Schedule {
            arms: arms.iter().map(|a| a.name.clone()).collect(),
            order: order(arms.len(), self.rounds, self.boot.seed),
            retries: self.boot.retries,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum BootFigure {
    /// `run`: the median of its runs.
    #[default]
    RunMedian,
    /// `audit sweep`: the cost per rule its sweep fitted.
    SweepSlope,
    /// `probe`: the time each hit added.
    ProbeHit,
}

impl BootFigure {
    fn of(kind: Kind) -> BootFigure {
        match kind {
            Kind::AuditSweep => BootFigure::SweepSlope,
            Kind::Probe => BootFigure::ProbeHit,
            _ => BootFigure::RunMedian,
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            BootFigure::RunMedian => "the median of its runs",
            BootFigure::SweepSlope => "the cost per rule its audit sweep fitted",
            BootFigure::ProbeHit => "the time each probe hit added",
        }
    }
}

/// An arm's primary figure over its good boots (one value per boot: see [`BootFigure`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ArmFigures {
    pub arm: String,
    /// The kernel releases its boots ran (one, unless the image changed).
    pub releases: Vec<String>,
    pub good_boots: usize,
    /// Rounds whose boot (every try of it) failed.
    pub failed_boots: usize,
    /// Rounds never booted: the campaign stopped before them.
    #[serde(default)]
    pub unbooted: usize,
    /// Per good boot, in round order.
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
    /// Its other per-operation metrics (perf counters and their ratios), where measured.
    #[serde(default)]
    pub counters: Vec<CounterFigure>,
    /// Modelled L1 misses by set per operation (`--cache-model`): for each cache, the median
    /// boot's, whose own are its median run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sets: Option<EmulatedSets>,
    /// Kernel instructions per operation by function, each function's median over the boots
    /// (`--emulated-profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<EmulatedFunctions>,
}

/// An arm's figure for one counter (or a ratio of two): the median over its good boots of
/// each boot's median, or, when no boot counted it, why not (perf's status and reason).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CounterFigure {
    pub name: String,
    pub unit: String,
    /// The boots that counted it.
    pub boots: usize,
    pub median: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The result of a campaign (kind `campaign`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Campaign {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub id: String,
    pub created_unix: u64,
    pub via: String,
    /// The virtual machine of QEMU boots; none for kexec or a LAVA board.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// Where LAVA jobs ran: the lab, the device type, how it boots, and the one device every
    /// job stayed on (`pin`), when the boots were LAVA jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lava: Option<crate::experiments::boots::LavaTarget>,
    /// The machine syscost ran the campaign on (for QEMU boots, the host of the guests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::environment::Environment>,
    pub arms: Vec<Arm>,
    /// How each arm's kernel started (QEMU boots).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<ArmEntry>,
    /// The command every arm is measured by but those with their own (`Arm::measure`).
    pub measure: Vec<String>,
    /// How often a boot placed its arm's audit rule entries (a record before this existed:
    /// once a boot).
    #[serde(default)]
    pub placement: crate::experiments::boots::PlaceEach,
    pub seed: u64,
    /// Per round, the arms in the order they were booted.
    pub order: Vec<Vec<String>>,
    pub boots: Vec<BootRecord>,
    /// The metric the figures and the comparison are of, and its unit.
    pub metric: String,
    pub unit: String,
    /// What one boot's value of it is.
    #[serde(default)]
    pub boot_figure: BootFigure,
    pub figures: Vec<ArmFigures>,
    /// Each arm against the first with boots as units, paired by round; `None` when fewer
    /// than two arms have 3 good boots.
    pub comparison: Option<Comparison>,
    /// With `--steps`: each arm against the one before it (exact counts by the range rule), in
    /// the arms' order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<crate::compare::trend::Trend>,
    /// Where every run placed the rule entries anew: each arm's modelled misses against the
    /// first arm's over their runs paired run by run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placed: Vec<placed::PlacedDelta>,
    /// The level those are decided at.
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Every planned boot measured.
    pub complete: bool,
    pub warnings: Vec<String>,
}

/// An arm needs this many good boots for a verdict.
pub(crate) const MIN_BOOTS: usize = 3;

/// An arm whose boots count emulated instructions needs this many for a verdict: its exact
/// counts' boot-to-boot range (`stats::exact`); its times stay undecided with so few.
pub(crate) const MIN_EXACT_BOOTS: usize = crate::stats::exact::MIN_BOOTS;

/// The comparison's options: the signed-rank test on boots paired by round.
fn default_alpha() -> f64 {
    0.05
}

pub(crate) fn compare_options(alpha: f64, noise_pct: f64, seed: u64) -> compare::Options {
    compare::Options {
        test: crate::stats::registry::TestKind::SignedRank,
        alpha,
        noise_pct,
        seed,
        ..compare::Options::default()
    }
}

/// Run a campaign in QEMU: build the initramfs, take each kernel's vmlinux out for its PVH
/// entry, boot the schedule, compare. `rules`: what [`crate::experiments::boots::checks::check`]
/// returned for the plan
/// (the caller checks before it keeps anything). An arm whose first boot fails in the guest
/// (its setup or its measuring command) is stopped there; the campaign stops when fewer than
/// two arms are left. `kept`: the boots of an interrupted run of the same plan; a boot they
/// finished is not booted again, and `progress` hears of the new ones only.
pub(crate) fn run(
    plan: &CampaignPlan,
    rules: &[(String, String)],
    kept: &[BootRecord],
    lava: Option<LavaRun>,
    progress: &mut dyn FnMut(&BootRecord),
) -> Result<Campaign> {
    let schedule = plan.schedule();
    let mut booter = start::start(&plan.boot, rules, lava.into())?;
    let (boots, stopped) = schedule.run(&mut booter, kept, progress)?;
    let mut c = analyse(plan, schedule.named_order(), boots)?;
    c.entries = booter.entries();
    c.warnings.extend(stopped_warnings(plan, &stopped));
    Ok(c)
}

/// A campaign's rounds as a kept run's boots ([`life::live`]): its arms' kernels fetched
/// into the run's files and the plan checked, then the rounds booted on QEMU or in its lab.
pub(crate) struct Rounds;

impl life::Boots<CampaignPlan> for Rounds {
    /// The rules files each arm loads, by name.
    type Ready = Vec<(String, String)>;
    type Made = Campaign;

    fn prepare(
        &mut self,
        plan: &mut CampaignPlan,
        files: &std::path::Path,
    ) -> Result<(Self::Ready, Option<crate::boot::lava::Lab>)> {
        checks::fetch_kernels(&mut plan.boot, files)?;
        let rules = checks::check(&plan.boot)?;
        Ok((rules, start::open_lab(&mut plan.boot.backend)?))
    }

    fn boot(
        &mut self,
        plan: &CampaignPlan,
        rules: &Self::Ready,
        kept: &[BootRecord],
        lava: Option<LavaRun>,
        on_boot: &mut dyn FnMut(&BootRecord),
    ) -> Result<Campaign> {
        run(plan, rules, kept, lava, on_boot)
    }
}

/// Why each stopped arm stopped.
fn stopped_warnings(plan: &CampaignPlan, stopped: &[Option<String>]) -> Vec<String> {
    let mut out: Vec<String> = plan
        .boot
        .arms
        .iter()
        .zip(stopped)
        .filter_map(|(a, s)| {
            s.as_ref().map(|why| {
                format!(
                    "{}: stopped after its first boot, which failed in the guest ({why}): its \
                     setup or measuring command fails in every boot",
                    a.name
                )
            })
        })
        .collect();
    if schedule::too_few_left(stopped) {
        out.push(match plan.boot.arms.len() {
            1 => "no arm was left: the campaign stopped".into(),
            _ => "fewer than two arms were left to compare: the campaign stopped".into(),
        });
    }
    out
}
