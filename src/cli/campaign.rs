//! `syscost campaign`: parse the arms and the measuring command, run the campaign, show it,
//! record every boot's result in the history, and say whether it was complete.

use super::args::HistoryOpts;
use super::boots::{BootsOpts, Checker, Via, boot_line};
use super::kept_run::{Made, Shown, UNPLANNED, drop_run, made, planned, record_boot, standing};
use super::named::{Named, ShellWords, named};
use super::*;
use crate::core::input::{Opt, spelled};
use crate::experiments::boots::checks::{ArmPart, ArmProblem};
use crate::experiments::boots::kept::RunKind;
use crate::experiments::boots::life::{self, Keep, Start};
use crate::experiments::boots::saved::{self, Saved};
use crate::experiments::boots::{Arm, BootRecord, PlaceEach};
use crate::experiments::campaign::ask::{ALPHA, CampaignAsk};
use crate::experiments::campaign::kexec::{self, Recording, Setup, Step};
use crate::experiments::campaign::{self, CampaignPlan};
use std::path::Path;

pub(super) const CAMPAIGN_EXAMPLES: &str = "Examples:
  syscost campaign --accel tcg --arm 6.1=/boot/vmlinuz-6.1.0-50-amd64 \\
      --arm 6.12=/boot/vmlinuz-6.12.111+deb12-amd64 -- run syscall --runs 3
      two kernels, booted in turn round after round (6 rounds: the fewest whose paired
      test can decide), getpid measured inside each boot
  syscost campaign --accel tcg --boots 1 --no-verdict --arm old=/boot/vmlinuz-6.1.0-50-amd64 \\
      --arm new=/boot/vmlinuz-6.12.111+deb12-amd64 -- run syscall --runs 1
      check a setup first: one boot per arm, figures without a verdict (fewer rounds than
      the paired test needs are refused without --no-verdict)
  syscost campaign --accel tcg --boots 12 --arm audit0=bzImage --arm audit1=bzImage \\
      --append audit0=audit=0 --append audit1=audit=1 --audit-rules audit1=prod.rules \\
      -- run syscall --runs 3
      the audit series' audit=0 against audit=1 with production rules, over 12 boots each
  syscost campaign --accel tcg --emulated-counters --emulated-profile --steps \\
      --append-all audit=1 --audit-rules-all exit.rules \\
      --arm v100=vmlinuz-6.12.100 --arm v101=vmlinuz-6.12.101 \\
      --arm v107=vmlinuz-6.12.107 -- run syscall
      a series of updates in order: each against the one before it, counted exactly, with the
      functions each step moved (every update booted: steps that cancel are seen)
  syscost campaign --via kexec --yes --arm base=/boot/vmlinuz-6.1.0-28-amd64 \\
      --arm fix=/boot/vmlinuz-6.1.0-28+fix-amd64 -- run syscall --cpu 1 --runs 5
      bare metal: this machine rebooted into each arm by kexec; a systemd unit resumes the
      campaign after each boot and the last boot reboots into the default kernel
  syscost campaign status | resume [ID] | abort [ID]
      where the kexec campaign and each kept QEMU campaign stand; go on with an interrupted
      QEMU campaign (only the boots it lacks); drop one (a kexec campaign: the next boot is
      the default kernel)
  --accel tcg emulates the CPU (no KVM here): figures then follow the instructions executed,
  not the hardware, and say so. Exit status 4 when some boot failed (the campaign is
  incomplete).";

/// The exit status of a campaign that is missing boots.
pub(super) const INCOMPLETE_STATUS: i32 = 4;

/// A campaign that ran and was shown, but some of whose boots failed or were never made (it
/// stopped first).
#[derive(Debug, thiserror::Error)]
#[error("the campaign is incomplete: {}", self.words())]
pub(crate) struct Incomplete {
    pub failed: usize,
    pub never: usize,
}

impl Incomplete {
    fn words(&self) -> String {
        let failed = format!(
            "{} boot(s) failed (see the failed boots above)",
            self.failed
        );
        match (self.failed, self.never) {
            (_, 0) => failed,
            (0, n) => format!("{n} boot(s) were never made (the campaign stopped first)"),
            (_, n) => format!("{failed} and {n} were never made (the campaign stopped first)"),
        }
    }
}

/// What to do with a campaign in progress: the kexec campaign on this machine, or a QEMU
/// campaign that was interrupted (its boots are kept as each ends).
#[derive(Subcommand, Debug)]
pub enum CampaignAction {
    /// Where the kexec campaign on this machine stands, and every QEMU campaign kept (running
    /// or interrupted), with its boots so far.
    Status(KeptDir),
    /// End a campaign in progress. The kexec campaign: remove its boot hook, its state and the
    /// loaded kernel (the next boot is the machine's default kernel). A QEMU campaign (ID, or
    /// the only one kept): drop its kept boots. Their results stay in the history.
    Abort(KeptOne),
    /// Go on with a campaign. The kexec campaign: measure this boot, record it, and reboot
    /// into the next arm (what its boot hook runs after each boot). A QEMU campaign that was
    /// interrupted (ID, or the only one kept): boot only what it lacks, with the options it
    /// was started with, then show and write it as if it had not stopped.
    Resume(KeptOne),
}

/// Where QEMU campaigns keep their boots.
#[derive(Args, Debug, Default)]
pub struct KeptDir {
    /// The directory QEMU campaigns keep their boots in, a state file each [default:
    /// $XDG_STATE_HOME/syscost/campaigns, else ~/.local/state/syscost/campaigns].
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

impl KeptDir {
    pub(super) fn dir(&self) -> Result<PathBuf> {
        match &self.state {
            Some(d) => Ok(d.clone()),
            None => saved::default_dir(RunKind::Campaign),
        }
    }
}

/// One kept QEMU campaign.
#[derive(Args, Debug)]
pub struct KeptOne {
    /// The QEMU campaign's id (as `campaign status` lists them) [default: the only one kept;
    /// without it, and without --state, the kexec campaign in progress comes first].
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub kept: KeptDir,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub action: Option<CampaignAction>,
    /// An arm: NAME=KERNEL, a bzImage (a build tree's arch/x86/boot/bzImage, or
    /// /boot/vmlinuz-VERSION) or its http(s) URL (fetched once into the campaign's files; a
    /// LAVA job fetches the same URL, checked by its SHA-256). Two or more are compared, the
    /// first the baseline; one alone is measured (its figures over its boots, no comparison).
    #[arg(long = "arm", value_name = "NAME=KERNEL", required = true)]
    pub arms: Vec<Named<String>>,
    /// The SHA-256 an arm's kernel URL must have: NAME=HEX, as sha256sum prints it. Checked
    /// when this machine fetches it, and by the lab's worker for a LAVA job.
    #[arg(long = "kernel-sha256", value_name = "NAME=HEX")]
    pub(crate) kernel_sha256: Vec<Named<crate::boot::fetch::Sha256>>,
    /// Where each boot happens: qemu (a virtual machine per boot), kexec (this machine,
    /// rebooted into each arm; the plan is kept in /var/lib/syscost/campaign and a systemd
    /// unit resumes it after each boot) or lava (a job per boot on a LAVA lab's qemu
    /// devices: --lava-url, a token in SYSCOST_LAVA_TOKEN or --lava-token-file).
    #[arg(long, value_enum, default_value_t = Via::Qemu)]
    pub via: Via,
    /// Confirm that --via kexec may reboot this machine, once per boot and once at the end
    /// (into its default kernel).
    #[arg(long)]
    pub yes: bool,
    /// The initramfs a kexec boot of an arm starts with: NAME=FILE [default: the
    /// initrd.img-VERSION beside a /boot/vmlinuz-VERSION, else none].
    #[arg(long = "initrd", value_name = "NAME=FILE")]
    pub initrds: Vec<Named<PathBuf>>,
    /// Kernel command-line additions of an arm: NAME=ARGS, e.g. audit1='audit=1'.
    #[arg(long = "append", value_name = "NAME=ARGS")]
    pub appends: Vec<Named<String>>,
    /// Audit rules set up in an arm's guest before measuring: NAME=FILE, any file `auditctl
    /// -R` reads (read here by auditctl's own library, libaudit). In a guest the file is the
    /// whole audit state: its -D, -e, -f, -b and -r apply (-e 2 as -e 1) and audit is turned on
    /// for the measurement when the boot has it off and the file has no -e; audit=0 on the
    /// arm's command line, or a watch of a path the guest lacks, is refused before booting.
    /// (On a host, `run --audit-rules` changes no setting but the enabled flag.) The tables say
    /// whether audit was on.
    #[arg(long = "audit-rules", value_name = "NAME=FILE")]
    pub rules: Vec<Named<PathBuf>>,
    #[command(flatten)]
    pub every: EveryArm,
    /// Load an arm's audit rules into an aged slab: NAME=OBJECTS. A fresh guest's slab gives a
    /// burst of rule entries whole kmalloc-512 slabs, so they spread evenly over the L1d sets
    /// an object can start in; a machine's slabs after uptime are full of holes, which new
    /// entries fill (the syscall-latency post's crowded sets). The guest adds OBJECTS filler
    /// exit rules after the file's -D, deletes a random half of them (in a seeded order the
    /// boot's result keeps), loads the rules into the holes, then deletes the other fillers:
    /// only the file's rules are walked while measuring. 256 (what reproduce syscall-latency
    /// uses) leaves 128 holes for a few dozen rules.
    #[arg(long = "aged-slab", value_name = "NAME=OBJECTS")]
    pub aged_slab: Vec<Named<usize>>,
    /// An arm measured by its own command instead of the one after --: NAME='COMMAND', split
    /// as a shell would, e.g. ret='run uprobe --insn ret --threads 1-2' (the uprobe thread's
    /// nop, push and ret, each an arm of one kernel). Checked as the common command is; the
    /// arms are compared by the figures their results share.
    #[arg(long = "arm-command", value_name = "NAME=COMMAND")]
    pub arm_commands: Vec<Named<ShellWords>>,
    /// How often each boot places its arms' audit rule entries in memory: `boot` loads them
    /// once, so a boot is one placement; `run` deletes and adds them again before every run of
    /// the measuring command, each rule after 0 to 3 fillers drawn by a generator seeded for the
    /// run (the same draws in every arm, so two arms' runs pair up), so a boot of `run syscall
    /// --runs 16` is 16 placements, each recorded beside its figures [default: run under
    /// --cache-model when an arm has --audit-rules (the modelled misses follow where the
    /// entries land), else boot (an exact count is the same wherever they are)].
    #[arg(long, value_enum, value_name = "EACH")]
    pub placement: Option<PlaceEach>,
    /// Rounds; each boots every arm once [default: the fewest whose paired test can reach
    /// --alpha: 6 for two arms, 7 for three; 3 for one arm; 2 with --emulated-counters, whose
    /// exact counts decide with two boots per arm while time stays undecided]. Fewer are
    /// refused unless --no-verdict.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub boots: Option<u32>,
    /// Accept --boots below what the paired test needs to reach --alpha: every boot's figures
    /// are shown, and no verdict.
    #[arg(long)]
    pub no_verdict: bool,
    /// The arms are a series in order (consecutive kernel updates, a patch series): each is
    /// also compared with the one before it, a step table (exact counts by the range rule),
    /// with the functions each step moved under --emulated-profile.
    #[arg(long)]
    pub steps: bool,
    #[command(flatten)]
    pub shared: BootsOpts,
    /// Significance level.
    #[arg(long, default_value_t = ALPHA, value_name = "P")]
    pub alpha: f64,
    #[command(flatten)]
    pub kept: KeptDir,
}

impl CampaignArgs {
    pub(super) fn run(self) -> Result<()> {
        match &self.action {
            Some(CampaignAction::Status(k)) => return status(k),
            Some(CampaignAction::Abort(k)) => return abort(k),
            Some(CampaignAction::Resume(k)) => return resume(k),
            None => {}
        }
        if let Some(o) = &self.shared.output {
            crate::core::check_writable(o)?;
        }
        if self.via == Via::Kexec {
            return self.start_kexec();
        }
        let dir = self.kept.dir()?;
        let seed = self.shared.seed.unwrap_or_else(crate::core::now_unix);
        let id = format!("{}-{seed}", crate::core::now_unix());
        let mut saved = Saved::<CampaignPlan>::new(&dir, id, seed)?;
        saved.kept.plan = Some(self.plan(seed)?);
        Shown::of(&self.shared)?.keep_in(&mut saved.kept)?;
        run_qemu(saved, Start::New)
    }

    fn plan(&self, seed: u64) -> Result<CampaignPlan> {
        self.ask()?.plan(seed, &Checker("campaign"))
    }

    /// The campaign asked for, the flags as typed values.
    pub(super) fn ask(&self) -> Result<CampaignAsk> {
        Ok(CampaignAsk {
            arms: self.arm_specs()?,
            boots: self.shared.ask(self.via)?,
            rounds: self.boots,
            no_verdict: self.no_verdict,
            steps: self.steps,
            alpha: self.alpha,
            placement: self.placement,
        })
    }

    /// The arms, with their command-line additions and rules files by name.
    fn arm_specs(&self) -> Result<Vec<Arm>> {
        let mut arms = Vec::new();
        for Named {
            name,
            value: kernel,
        } in &self.arms
        {
            let url = (crate::boot::fetch::is_url(kernel))
                .then(|| crate::boot::fetch::KernelUrl::new(kernel, None))
                .transpose()
                .map_err(|e| anyhow::anyhow!("{} {name}=...: {e:#}", spelled(Opt::Arm)))?;
            arms.push(Arm {
                name: name.clone(),
                // A URL's kernel is fetched into the campaign's files before it is checked.
                kernel: if url.is_some() {
                    "".into()
                } else {
                    kernel.into()
                },
                url,
                ..Arm::default()
            });
        }
        for Named { name, value } in &self.kernel_sha256 {
            match &mut named(&mut arms, Opt::KernelSha256, "arm", name)?.url {
                Some(u) => u.sha256 = Some(value.clone()),
                None => anyhow::bail!(
                    "{} {name}: the arm's kernel is a file of this machine; a SHA-256 is checked \
                     for a kernel given by its URL",
                    spelled(Opt::KernelSha256)
                ),
            }
        }
        for Named { name, value } in &self.initrds {
            named(&mut arms, Opt::Initrd, "arm", name)?.initrd = Some(value.clone());
        }
        for Named { name, value } in &self.appends {
            named(&mut arms, Opt::Append, "arm", name)?.append = value.clone();
        }
        for Named { name, value } in &self.rules {
            named(&mut arms, Opt::AuditRules, "arm", name)?.rules = Some(value.clone());
        }
        for Named { name, value } in &self.arm_commands {
            named(&mut arms, Opt::ArmCommand, "arm", name)?.measure = Some(value.0.clone());
        }
        for Named { name, value } in &self.aged_slab {
            named(&mut arms, Opt::AgedSlab, "arm", name)?.aged_slab = Some(*value);
        }
        self.every.apply(&mut arms);
        Ok(arms)
    }

    /// Check, save the plan, install the boot hook, load the first arm and reboot into it.
    fn start_kexec(&self) -> Result<()> {
        let plan = self.plan(self.shared.seed.unwrap_or_else(crate::core::now_unix))?;
        if !self.yes {
            anyhow::bail!(
                "--via kexec reboots this machine into each arm, {} time(s), then into its \
                 default kernel: add --yes to go ahead",
                plan.boot.arms.len() * plan.rounds as usize
            );
        }
        let output = match &self.shared.output {
            Some(o) => Some(std::path::absolute(o)?),
            None => None,
        };
        let recording = Recording {
            history: match &self.shared.keep.history {
                Some(l) => Some(l.unredacted()),
                None if self.shared.keep.no_history => None,
                None => Some(crate::history::Location::default_location()?.unredacted()),
            },
            no_history: self.shared.keep.no_history,
            tags: self.shared.keep.tags.clone(),
        };
        let dir = std::path::Path::new(kexec::STATE_DIR);
        let started = kexec::start(&plan, Setup { output, recording }, dir).map_err(with_flag)?;
        eprintln!(
            "syscost: campaign {} of {} arm(s) x {} round(s), seed {}: saved in {}; {}",
            started.id,
            plan.boot.arms.len(),
            plan.rounds,
            plan.boot.seed,
            dir.display(),
            step_line(&started.step)
        );
        kexec::reboot(&started.step, started.hook)
    }
}

fn step_line(step: &Step) -> String {
    match step {
        Step::Next { arm, round } => format!("rebooting into {arm} (round {round})"),
        Step::Finished(c) => format!("finished: {}", c.id),
    }
}

/// The kexec campaign in progress, when `k` names no QEMU campaign.
fn kexec_in_progress(k: &KeptOne) -> Result<bool> {
    if k.id.is_some() || k.kept.state.is_some() {
        return Ok(false);
    }
    Ok(kexec::State::load(Path::new(kexec::STATE_DIR))?.is_some())
}

/// Run (or go on with) the QEMU or LAVA campaign `saved` (its life: [`life::live`]): each
/// boot, as it ends, in the history and its state; shown and written at the end, then said
/// whether it was complete.
fn run_qemu(mut saved: Saved<CampaignPlan>, start: Start) -> Result<()> {
    let (shown, plan) = Shown::kept(&mut saved.kept)?;
    let made = made(&plan.boot.backend);
    saved.kept.plan = Some(plan);
    let mut watch = Watching { made, shown };
    let c = life::live(saved, start, &mut campaign::Rounds, &mut watch).map_err(with_flag)?;
    if !c.complete {
        let failed = c.figures.iter().map(|f| f.failed_boots).sum();
        let never = c.figures.iter().map(|f| f.unbooted).sum();
        return Err(Incomplete { failed, never }.into());
    }
    Ok(())
}

/// What a campaign says, records and shows at each point of its life.
struct Watching {
    made: Made<'static>,
    shown: Shown,
}

impl life::Watch<Saved<CampaignPlan>, campaign::Campaign> for Watching {
    fn started(&mut self, run: &Saved<CampaignPlan>, plan: &CampaignPlan) {
        let path = run.path();
        eprintln!(
            "syscost: campaign {} of {} arm(s) x {} round(s), seed {}; its boots are kept in {} \
             as each ends",
            run.kept.id,
            plan.boot.arms.len(),
            plan.rounds,
            plan.boot.seed,
            path.display()
        );
    }

    fn booted(&mut self, id: &str, b: &BootRecord) {
        eprintln!("syscost: {}", boot_line(b));
        record_boot(b, &self.shown.keep, (RunKind::Campaign, id), &self.made);
    }

    fn finish(&mut self, run: &Saved<CampaignPlan>, c: &mut campaign::Campaign) -> Result<()> {
        c.id = run.kept.id.clone();
        show(c, self.shown.format, &self.shown.output)
    }
}

/// `campaign resume`: the kexec campaign in progress, else a kept QEMU campaign.
fn resume(k: &KeptOne) -> Result<()> {
    if kexec_in_progress(k)? {
        return resume_kexec();
    }
    let dir = k.kept.dir()?;
    let Some(mut s) = saved::pick::<CampaignPlan>(&dir, k.id.as_deref())? else {
        anyhow::bail!(
            "no campaign in progress (no kexec campaign on this machine, no QEMU campaign kept \
             in {}): nothing to resume",
            dir.display()
        );
    };
    s.take_over()?;
    run_qemu(s, Start::Resumed)
}

/// `campaign resume` of the kexec campaign: measure and record this boot, then reboot into
/// the next arm (or, after the last, show the campaign and reboot into the default kernel).
fn resume_kexec() -> Result<()> {
    let r = kexec::resume(std::path::Path::new(kexec::STATE_DIR))?;
    if let Some(b) = &r.recorded {
        eprintln!("syscost: {}", boot_line(b));
        let keep = HistoryOpts {
            history: match &r.recording.history {
                Some(h) => Some(h.parse().map_err(|e: String| anyhow::anyhow!(e))?),
                None => None,
            },
            no_history: r.recording.no_history,
            tags: r.recording.tags.clone(),
        };
        let made = Made {
            via: "kexec",
            accel: "none",
        };
        record_boot(b, &keep, (RunKind::Campaign, &r.id), &made);
    }
    eprintln!("syscost: campaign {}: {}", r.id, step_line(&r.step));
    if let Step::Finished(c) = &r.step {
        show(c.as_ref(), Format::Table, &None)?;
    }
    kexec::reboot(&r.step, r.hook)
}

/// `campaign status`: the kexec campaign, then the kept QEMU campaigns.
fn status(k: &KeptDir) -> Result<()> {
    status_kexec()?;
    let dir = k.dir()?;
    let all = saved::list::<CampaignPlan>(&dir)?;
    if all.is_empty() {
        println!("no QEMU or LAVA campaign kept in {}", dir.display());
    }
    for s in &all {
        let state = match s.running() {
            true => format!("running (process {})", s.owner.0),
            false => "interrupted".into(),
        };
        let plan = s.kept.plan.as_ref().map_or_else(
            || UNPLANNED.into(),
            |p| format!("{} boot(s) of {}", p.rounds, planned(&p.boot)),
        );
        println!("campaign {} ({state}): {plan}", s.kept.id);
        for line in standing(s) {
            println!("  {line}");
        }
    }
    if all.iter().any(|s| !s.running()) {
        println!(
            "`syscost campaign resume ID` goes on with one; `syscost campaign abort ID` drops it"
        );
    }
    Ok(())
}

fn status_kexec() -> Result<()> {
    let dir = std::path::Path::new(kexec::STATE_DIR);
    let Some(st) = kexec::State::load(dir)? else {
        println!("no kexec campaign in progress on this machine");
        return Ok(());
    };
    let p = st.progress();
    println!(
        "campaign {} (in progress): {} boot(s) of {}",
        st.id,
        st.plan.rounds,
        planned(&st.plan.boot)
    );
    println!(
        "  boots: {} of {} done ({} measured, {} failed){}",
        p.done,
        p.total,
        p.measured,
        p.failed,
        p.pending
            .map(|(a, r)| format!("; rebooted into {a} (round {r}), not yet recorded"))
            .unwrap_or_default()
    );
    println!(
        "  result: {} after the last boot; state {}; boot hook {:?}",
        st.output.display(),
        dir.display(),
        st.hook
    );
    Ok(())
}

/// `campaign abort`: the kexec campaign in progress, else a kept QEMU campaign.
fn abort(k: &KeptOne) -> Result<()> {
    if kexec_in_progress(k)? {
        return abort_kexec();
    }
    let dir = k.kept.dir()?;
    let Some(s) = saved::pick::<CampaignPlan>(&dir, k.id.as_deref())? else {
        println!(
            "no campaign in progress (no kexec campaign on this machine, no QEMU campaign kept \
             in {}): nothing to abort",
            dir.display()
        );
        return Ok(());
    };
    s.refuse_running("abort")?;
    drop_run(&s, &s.path())
}

fn abort_kexec() -> Result<()> {
    match kexec::abort(std::path::Path::new(kexec::STATE_DIR))? {
        Some(id) => println!(
            "campaign {id} aborted: its boot hook, state and loaded kernel are removed; the \
             next boot is this machine's default kernel (its boots so far stay in the history)"
        ),
        None => println!("no kexec campaign in progress on this machine: nothing to abort"),
    }
    Ok(())
}

/// What every arm of a campaign (every build of a bisection) takes, so that a series of
/// kernels needs one flag, not one per kernel. (Its fields' names are clap's ids: they must
/// differ from those of the commands it is flattened into.)
#[derive(Args, Debug, Clone, Default)]
pub struct EveryArm {
    /// Kernel command-line additions of every arm (of a bisection: every build), before each
    /// one's own --append or list words, e.g. 'audit=1'.
    #[arg(long = "append-all", value_name = "ARGS")]
    pub append_all: Option<String>,
    /// Audit rules set up in every arm's (build's) guest that has no --audit-rules NAME=FILE
    /// of its own: FILE, read as --audit-rules reads it.
    #[arg(long = "audit-rules-all", value_name = "FILE")]
    pub rules_all: Option<PathBuf>,
}

impl EveryArm {
    /// `arms` with what every one takes: the additions before each one's own, the rules where
    /// it has none.
    pub(super) fn apply(&self, arms: &mut [Arm]) {
        for a in arms {
            if let Some(all) = &self.append_all {
                a.append = format!("{all} {}", a.append).trim().into();
            }
            if a.rules.is_none() {
                a.rules.clone_from(&self.rules_all);
            }
        }
    }
}

/// An arm's problem said with the option that gave the part it is in (`--append b: ...`).
fn with_flag(e: anyhow::Error) -> anyhow::Error {
    let Some(p) = e.downcast_ref::<ArmProblem>() else {
        return e;
    };
    let flag = match p.part {
        ArmPart::Name | ArmPart::Kernel => Opt::Arm,
        ArmPart::CommandLine => Opt::Append,
        ArmPart::Initrd => Opt::Initrd,
        ArmPart::Rules => Opt::AuditRules,
        ArmPart::AgedSlab => Opt::AgedSlab,
    };
    anyhow::anyhow!("{} {p}", spelled(flag))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_arm_takes_the_all_settings_before_its_own() {
        let arm = |name: &str, append: &str, rules: Option<&str>| Arm {
            name: name.into(),
            kernel: "k".into(),
            append: append.into(),
            rules: rules.map(PathBuf::from),
            ..Arm::default()
        };
        let mut arms = vec![arm("a", "", None), arm("b", "nosmt", Some("own.rules"))];
        let every = EveryArm {
            append_all: Some("audit=1".into()),
            rules_all: Some("all.rules".into()),
        };
        every.apply(&mut arms);
        assert_eq!(arms[0].append, "audit=1");
        assert_eq!(
            arms[1].append, "audit=1 nosmt",
            "the arm's own words last: they win"
        );
        assert_eq!(arms[0].rules, Some(PathBuf::from("all.rules")));
        assert_eq!(arms[1].rules, Some(PathBuf::from("own.rules")));
        let mut arms = vec![arm("a", "x", None)];
        EveryArm::default().apply(&mut arms);
        assert_eq!((arms[0].append.as_str(), &arms[0].rules), ("x", &None));
    }
}
