//! `syscost campaign`: parse the arms and the measuring command, run the campaign, show it,
//! record every boot's result in the history, and say whether it was complete.

use super::args::{HistoryOpts, parse_duration};
use super::*;
use crate::boot::qemu::{Accel, Machine};
use crate::experiments::campaign::{self, Arm, BootRecord, CampaignPlan, Outcome};
use std::time::Duration;

pub(super) const CAMPAIGN_EXAMPLES: &str = "Examples:
  syscost campaign --accel tcg --arm 6.1=/boot/vmlinuz-6.1.0-50-amd64 \\
      --arm 6.12=/boot/vmlinuz-6.12.111+deb12-amd64 -- run syscall --runs 3
      two kernels, booted in turn round after round (6 rounds: the fewest whose paired
      test can decide), getpid measured inside each boot
  syscost campaign --accel tcg --boots 12 --arm audit0=bzImage --arm audit1=bzImage \\
      --append audit0=audit=0 --append audit1=audit=1 --audit-rules audit1=prod.rules \\
      -- run syscall --runs 3
      the audit series' audit=0 against audit=1 with production rules, over 12 boots each
  --accel tcg emulates the CPU (no KVM here): figures then follow the instructions executed,
  not the hardware, and say so. Exit status 4 when some boot failed (the campaign is
  incomplete).";

/// The exit status of a campaign that is missing boots.
pub(super) const INCOMPLETE_STATUS: i32 = 4;

/// A campaign that ran and was shown, but some of whose boots failed.
#[derive(Debug, thiserror::Error)]
#[error("the campaign is incomplete: {0} boot(s) failed (see the failed boots above)")]
pub struct Incomplete(pub usize);

#[derive(Args, Debug)]
pub struct CampaignArgs {
    /// An arm: NAME=KERNEL, a bzImage (a build tree's arch/x86/boot/bzImage, or
    /// /boot/vmlinuz-VERSION). Two or more; the first is the baseline.
    #[arg(long = "arm", value_name = "NAME=KERNEL", required = true)]
    pub arms: Vec<String>,
    /// Kernel command-line additions of an arm: NAME=ARGS, e.g. audit1='audit=1'.
    #[arg(long = "append", value_name = "NAME=ARGS")]
    pub appends: Vec<String>,
    /// Audit rules set up in an arm's guest before measuring: NAME=FILE, in `auditctl -R`
    /// syntax (-a/-A with -S, -F field=value, -k; -D ignored; anything else refused).
    #[arg(long = "audit-rules", value_name = "NAME=FILE")]
    pub rules: Vec<String>,
    /// Rounds; each boots every arm once [default: the fewest whose paired test can reach
    /// --alpha: 6 for two arms].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub boots: Option<u32>,
    /// The boot order of every round (and the bootstrap) is seeded by this number [default:
    /// from the clock, printed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// How the guest CPU runs: kvm (used only after a probe boot shows it works) or tcg
    /// (emulation; figures follow instructions executed, not hardware).
    #[arg(long, value_enum, default_value_t = Accel::Kvm)]
    pub accel: Accel,
    /// vCPUs of each guest.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub guest_cpus: u32,
    /// Memory of each guest, MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB", value_parser = clap::value_parser!(u32).range(128..=65536))]
    pub guest_memory: u32,
    /// A boot not powered off after this long is stopped and recorded as failed [default:
    /// 60s under kvm, 180s under tcg].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub boot_timeout: Option<Duration>,
    /// Tries after a failed boot, per boot.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// A host file the measurement needs inside the guest, at the same path (repeatable).
    #[arg(long = "guest-file", value_name = "PATH")]
    pub guest_files: Vec<PathBuf>,
    /// Significance level.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub alpha: f64,
    /// Deltas smaller than this percentage are never called a change.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_threshold: f64,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the campaign (JSON: plan, order, every boot's result or failure, comparison) to
    /// FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub keep: HistoryOpts,
    /// The syscost command measured in every boot, e.g. run syscall --runs 3.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub measure: Vec<String>,
}

impl CampaignArgs {
    pub(super) fn run(self) -> Result<()> {
        if let Some(o) = &self.output {
            crate::core::check_writable(o)?;
        }
        let plan = self.plan()?;
        eprintln!(
            "syscost: campaign of {} arm(s) x {} round(s), seed {}",
            plan.arms.len(),
            plan.boots,
            plan.seed
        );
        let c = campaign::run(&plan, &mut |b| eprintln!("syscost: {}", boot_line(b)))?;
        show(&c, self.format, &self.output)?;
        self.record(&c);
        if !c.complete {
            let failed = c.figures.iter().map(|f| f.failed_boots).sum();
            return Err(Incomplete(failed).into());
        }
        Ok(())
    }

    fn plan(&self) -> Result<CampaignPlan> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!("--alpha must be between 0 and 1 (exclusive), e.g. 0.05");
        }
        let arms = self.arm_specs()?;
        let need = crate::stats::paired::pairs_to_decide(self.alpha, arms.len().max(2) - 1);
        let boots = self.boots.unwrap_or(need as u32);
        if (boots as usize) < need {
            eprintln!(
                "syscost: warning: with {boots} round(s) the paired test cannot reach alpha \
                 {}: the figures are shown, the verdicts are inconclusive (use --boots {need})",
                self.alpha
            );
        }
        let seed = self.seed.unwrap_or_else(crate::core::now_unix);
        let timeout = self.boot_timeout.unwrap_or(match self.accel {
            Accel::Kvm => Duration::from_secs(60),
            Accel::Tcg => Duration::from_secs(180),
        });
        Ok(CampaignPlan {
            arms,
            boots,
            seed,
            measure: self.measure.clone(),
            machine: Machine {
                accel: self.accel,
                cpus: self.guest_cpus,
                memory_mib: self.guest_memory,
                timeout,
            },
            retries: self.retries,
            guest_files: self.guest_files.clone(),
            options: compare::Options {
                test: crate::stats::significance::TestKind::SignedRank,
                alpha: self.alpha,
                noise_pct: self.noise_threshold,
                seed,
                ..compare::Options::default()
            },
        })
    }

    /// The arms, with their command-line additions and rules files by name.
    fn arm_specs(&self) -> Result<Vec<Arm>> {
        let mut arms = Vec::new();
        for a in &self.arms {
            let (name, kernel) = name_value("--arm", a)?;
            arms.push(Arm {
                name: name.into(),
                kernel: kernel.into(),
                append: String::new(),
                rules: None,
            });
        }
        for a in &self.appends {
            let (name, args) = name_value("--append", a)?;
            arm_named(&mut arms, "--append", name)?.append = args.into();
        }
        for r in &self.rules {
            let (name, file) = name_value("--audit-rules", r)?;
            arm_named(&mut arms, "--audit-rules", name)?.rules = Some(file.into());
        }
        Ok(arms)
    }

    /// Every good boot's result in the history, tagged with the campaign, arm, round and accel.
    fn record(&self, c: &campaign::Campaign) {
        if self.keep.no_history {
            return;
        }
        for b in &c.boots {
            let Some(result) = b.result() else { continue };
            let mut keep = self.keep.clone();
            keep.tags.extend([
                format!("campaign={}", c.id),
                format!("arm={}", b.arm),
                format!("round={}", b.round),
                format!("accel={}", c.machine.accel.name()),
            ]);
            super::history::record(result, &keep);
        }
    }
}

fn name_value<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str)> {
    match s.split_once('=') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => Ok((n, v)),
        _ => anyhow::bail!("{flag} '{s}': give NAME=VALUE"),
    }
}

fn arm_named<'a>(arms: &'a mut [Arm], flag: &str, name: &str) -> Result<&'a mut Arm> {
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    arms.iter_mut().find(|a| a.name == name).ok_or_else(|| {
        anyhow::anyhow!("{flag} {name}=...: no --arm is named {name} (arms: {names:?})")
    })
}

/// One line per boot as it ends.
fn boot_line(b: &BootRecord) -> String {
    let what = match &b.outcome {
        Outcome::Measured { .. } => "measured".to_string(),
        Outcome::Failed { reason, .. } => format!("FAILED: {reason}"),
    };
    format!(
        "round {} {}{}: {what} ({:.1} s)",
        b.round,
        b.arm,
        if b.attempt > 0 {
            format!(" (try {})", b.attempt + 1)
        } else {
            String::new()
        },
        b.seconds
    )
}
