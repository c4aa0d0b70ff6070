//! The campaign a reproduction runs, as a typed request: its arms on the kernels found or
//! built, each with its own settings (command line, rules, aged slab, measuring command), and
//! every boot under TCG as the investigation counts. The campaign's plan is made from it as
//! the command line's is, and the command a user would type to run it again is rendered from
//! it (`cli/`).

use super::{ArmSpec, Counts, Investigation, Measure, Producers, WALK_OPS, WALK_RULES};
use crate::boot::qemu::Accel;
use crate::core::input::{Opt, spelled};
use crate::counters::emulated::CacheModel;
use crate::experiments::boots::Arm;
use crate::experiments::boots::ask::{BootAsk, Guest, RETRIES};
use crate::experiments::campaign::ask::CampaignAsk;
use crate::workloads::CopyMode;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A rule walk's sweep measures three steps under the cache model: about a minute of a boot
/// here, three on a loaded machine.
const WALK_BOOT_TIMEOUT: Duration = Duration::from_secs(600);

/// What the command line may change of a reproduction's campaign; `None`: the investigation's.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Settings {
    pub boots: Option<u32>,
    pub runs: Option<u32>,
    pub samples: Option<u32>,
    pub sample_time: Option<String>,
    pub seed: Option<u64>,
}

impl Investigation {
    /// The cache model of the paper's CPU.
    pub(crate) fn cache_model(&self) -> Result<CacheModel, String> {
        CacheModel::parse(self.cache_model)
    }

    /// The campaign that repeats it: its arms on `kernels`, their rules files in `rules`.
    pub(crate) fn campaign(
        &self,
        kernels: &[(&ArmSpec, PathBuf)],
        rules: &Path,
        s: &Settings,
    ) -> Result<CampaignAsk, String> {
        let walks = kernels
            .iter()
            .any(|(a, _)| a.measure == Some(Measure::RuleWalk));
        let guest = Guest {
            accel: Some(Accel::Tcg),
            emulated_counters: true,
            cache_model: (self.counts == Counts::Modelled)
                .then(|| self.cache_model())
                .transpose()?,
            cpus: self.guest_cpus,
            retries: self.retries.unwrap_or(RETRIES),
            disk: self.guest_disk,
            emulated_profile: self.profile,
            boot_timeout: walks.then_some(WALK_BOOT_TIMEOUT),
            ..Guest::default()
        };
        let boots = BootAsk {
            guest,
            seed: s.seed,
            ..BootAsk::new(self.measuring(self.measure, s))
        };
        let arms = kernels
            .iter()
            .map(|(a, kernel)| Arm {
                name: a.name.into(),
                kernel: kernel.clone(),
                append: a.append.into(),
                rules: a.rules.map(|r| rules.join(r)),
                aged_slab: a.aged,
                measure: a.measure.map(|m| self.measuring(m, s)),
                ..Arm::default()
            })
            .collect();
        let rounds = s.boots.unwrap_or(self.boots);
        Ok(CampaignAsk {
            rounds: Some(rounds),
            no_verdict: rounds < 2,
            ..CampaignAsk::new(arms, boots)
        })
    }

    /// A measuring command with the reproduction's runs, samples and sample time (a rule
    /// walk's sweep: one run a step, its slope exact from one, in short windows).
    fn measuring(&self, m: Measure, s: &Settings) -> Vec<String> {
        let mut c = words(m);
        let runs = match m {
            Measure::RuleWalk => 1,
            _ => s.runs.unwrap_or(self.runs),
        };
        c.extend([spelled(Opt::Runs), runs.to_string()]);
        if m == Measure::RuleWalk && s.sample_time.is_none() {
            c.extend([spelled(Opt::Ops), WALK_OPS.to_string()]);
        }
        if let Some(n) = s.samples {
            c.extend([spelled(Opt::Samples), n.to_string()]);
        }
        if let Some(t) = &s.sample_time {
            c.extend([spelled(Opt::SampleTime), t.clone()]);
        }
        c
    }
}

/// The base window of the uprobe thread's counted arms, in hits.
const UPROBE_WINDOW: u64 = 64;

/// How a uprobe arm's producers are asked for: the one pinned to the first vCPU, or two copies
/// (one a vCPU), as processes or as threads of the measuring process.
fn producer_words(p: Producers) -> Vec<String> {
    let mode = match p {
        Producers::One => return vec![spelled(Opt::Cpu), "0".into()],
        Producers::Processes => CopyMode::Process,
        Producers::Threads => CopyMode::Thread,
    };
    let mode = clap::ValueEnum::to_possible_value(&mode).map(|v| v.get_name().to_string());
    vec![
        spelled(Opt::Copies),
        "2".into(),
        spelled(Opt::Mode),
        mode.unwrap_or_default(),
    ]
}

/// The words of a measuring command, which the guest's syscost runs.
fn words(m: Measure) -> Vec<String> {
    use clap::ValueEnum;
    let value = |v: Option<clap::builder::PossibleValue>| {
        v.map(|v| v.get_name().to_string()).unwrap_or_default()
    };
    let mut w: Vec<String> = match m {
        Measure::Syscall => vec!["run".into(), "syscall".into()],
        Measure::VfsMixIn(dir) => vec![
            "run".into(),
            "vfs-mix".into(),
            spelled(Opt::Dir),
            dir.into(),
        ],
        Measure::Uprobe => vec!["run".into(), "uprobe".into()],
        Measure::RuleWalk => vec!["audit".into(), "sweep".into()],
        Measure::UprobeOn { .. } => vec!["run".into(), "uprobe".into()],
    };
    match m {
        Measure::RuleWalk => w.extend([
            spelled(Opt::Rules),
            WALK_RULES.into(),
            spelled(Opt::NoResidueStep),
        ]),
        // Windows of 64, 128 and 256 hits: a few milliseconds each under TCG, so that the
        // task's own periodic work (6.12's task_mm_cid_work, queued by a tick every 100 ms of
        // its run time and run on its return to user space, counted as the task's) lands in
        // few of them; with 256 to 1,024 hits a window, it lay in most on a slow host and the
        // count's line had too few windows on it to be whole.
        Measure::UprobeOn {
            probe,
            insn,
            producers,
        } => {
            w.extend([
                spelled(Opt::Probe),
                value(probe.to_possible_value()),
                spelled(Opt::Insn),
                value(insn.to_possible_value()),
                spelled(Opt::Ops),
                UPROBE_WINDOW.to_string(),
            ]);
            w.extend(producer_words(producers));
        }
        _ => {}
    }
    w
}
