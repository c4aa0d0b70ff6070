//! `syscost campaign`: parse the arms and the measuring command, run the campaign, show it,
//! record every boot's result in the history, and say whether it was complete.

use super::args::{HistoryOpts, parse_cpus, parse_duration, parse_resolution};
use super::*;
use crate::audit::rules_file::OnError;
use crate::boot::qemu::{Accel, Failure, KernelEntry, Machine};
use crate::core::cpus::CpuList;
use crate::counters::emulated::{CacheModel, Count, Part, is_emulated};
use crate::experiments::boots::checks::{self, ArmPart, ArmProblem};
use crate::experiments::boots::kept;
use crate::experiments::boots::{Arm, Backend, BootPlan, BootRecord, Needed, Outcome};
use crate::experiments::campaign::kexec::{self, Recording, Setup, Step};
use crate::experiments::campaign::saved::{self, Saved};
use crate::experiments::campaign::{self, CampaignPlan};
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

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

/// The boots of a campaign of one arm unless --boots: its figures over three boots.
const ONE_ARM_BOOTS: u32 = 3;

/// The exit status of a campaign that is missing boots.
pub(super) const INCOMPLETE_STATUS: i32 = 4;

/// A campaign that ran and was shown, but some of whose boots failed.
#[derive(Debug, thiserror::Error)]
#[error("the campaign is incomplete: {0} boot(s) failed (see the failed boots above)")]
pub struct Incomplete(pub usize);

/// Where the boots happen.
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum Via {
    /// A QEMU virtual machine per boot.
    Qemu,
    /// This machine, rebooted into each arm by kexec (bare metal); needs --yes.
    Kexec,
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
            None => saved::default_dir(),
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

/// How each boot's virtual machine runs and counts: shared by `campaign` and `bisect`.
#[derive(Args, Debug, Clone)]
pub struct GuestOpts {
    /// How the guest CPU runs: kvm (used only after a probe boot shows it works) or tcg
    /// (emulation; figures follow instructions executed, not hardware).
    #[arg(long, value_enum, default_value_t = Accel::Kvm)]
    pub accel: Accel,
    /// vCPUs of each guest [default: one per --host-cpus CPU; else 1 under tcg, 2 under
    /// kvm]. Under tcg one vCPU is the default because text patching races between two
    /// emulated vCPUs ("Oops: int3" in 1 of 50 boots of Debian's 6.12 here, none in 100 with
    /// one vCPU); a one-vCPU kernel runs its uniprocessor code (no lock prefixes), and the
    /// measurement uses one CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub guest_cpus: Option<u32>,
    /// Pin the guest's vCPU threads to these host CPUs, vCPU i to the i-th (taskset syntax,
    /// one CPU per vCPU, e.g. 2-3 for 2 vCPUs), before the guest runs; checked: the affinity
    /// read back, and each thread seen on its CPU while the guest runs [default: unpinned].
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub host_cpus: Option<CpuList>,
    /// Where QEMU starts each kernel: pvh (its vmlinux, taken out of the bzImage on the host:
    /// no decompression in the guest, which under tcg took 3 s of each boot of Debian's
    /// generic 6.1 image) or bzimage (as a boot loader does). A kernel without a PVH entry
    /// boots as a bzImage, and the result says why.
    #[arg(long, value_enum, default_value_t = KernelEntry::Pvh)]
    pub entry: KernelEntry,
    /// Count the guest's instructions and conditional branches, user and kernel apart, in
    /// every batch the measurement times, with syscost's own QEMU plugin (tcg only): each
    /// boot's run result (or each step of an audit sweep, whose fits then give instructions
    /// per rule; or a probe, each run of its command a window: instructions per hit) gains
    /// `instructions:k (emulated)` and the like per operation, `instructions (emulated)` the
    /// headline figure. Exact paths, not hardware: no cycles, no speculation. Two boots per arm
    /// decide (the range rule: every boot apart by more than the arms' own range and
    /// --exact-resolution). Once its boot's own work has ended (--settle), the guest measures
    /// at SCHED_FIFO 99 with RT throttling, the fair server, the soft-lockup watchdog and the
    /// audit backlog limit off, so no other task runs in the counted windows; one that still
    /// does is left out, and the result says how many.
    #[arg(long)]
    pub emulated_counters: bool,
    /// Model the caches too (implies --emulated-counters): every load and store of a window
    /// goes through an LRU model of L1d, every instruction fetch through one of L1i, and
    /// their misses through an L2 behind both when the model has one, adding loads, stores
    /// and the models' misses per operation, and the L1d and L1i misses of each set. MODEL:
    /// host (this machine's L1s and L2, from sysfs), skylake-x (L1s of 32 KiB, 8-way, and an
    /// L2 of 1 MiB, 16-way, 64-byte lines: the audit series' machine) or
    /// SETSxWAYSxLINE[,SETSxWAYSxLINE[,SETSxWAYSxLINE]] (L1d, then L1i if it differs, then
    /// an L2).
    #[arg(long, value_name = "MODEL", value_parser = parse_cache_model)]
    pub cache_model: Option<CacheModel>,
    /// Where the kernel instructions go (implies --emulated-counters): the kernel
    /// instructions per operation of each function, exact, named from the guest's own
    /// kallsyms (each guest sends it with its result), and between arms the functions that
    /// gained and lost most: the emulated counterpart of `run --profile`.
    #[arg(long)]
    pub emulated_profile: bool,
    /// Run each guest's clock on its instructions (QEMU's `-icount shift=SHIFT,sleep=off`,
    /// tcg only): every instruction takes 2^SHIFT ns of guest time and idle time is skipped,
    /// so the timer interrupts land at the same instructions in every boot instead of where
    /// the host's clock puts them. Timed figures then measure instructions, not time.
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u8).range(0..=10))]
    pub icount: Option<u8>,
    /// Before measuring, each guest waits up to this long for its boot's own work (kernel
    /// threads such as 6.12's crypto self-tests) to end: until its CPU is under 2% busy over
    /// 250 ms (from /proc/stat). Every instruction in a window counts under the emulator, so
    /// with --emulated-counters it waits [default: 30s with --emulated-counters, 0 (measure at
    /// once) otherwise]; a guest still busy at the limit measures anyway and its result says
    /// so. Either way, a window in which another task ran is left out of the counts.
    #[arg(long, value_name = "DURATION", value_parser = parse_settle)]
    pub settle: Option<Duration>,
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
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub action: Option<CampaignAction>,
    /// An arm: NAME=KERNEL, a bzImage (a build tree's arch/x86/boot/bzImage, or
    /// /boot/vmlinuz-VERSION). Two or more are compared, the first the baseline; one alone is
    /// measured (its figures over its boots, no comparison).
    #[arg(long = "arm", value_name = "NAME=KERNEL", required = true)]
    pub arms: Vec<String>,
    /// Where each boot happens: qemu (a virtual machine per boot) or kexec (this machine,
    /// rebooted into each arm; the plan is kept in /var/lib/syscost/campaign and a systemd
    /// unit resumes it after each boot).
    #[arg(long, value_enum, default_value_t = Via::Qemu)]
    pub via: Via,
    /// Confirm that --via kexec may reboot this machine, once per boot and once at the end
    /// (into its default kernel).
    #[arg(long)]
    pub yes: bool,
    /// The initramfs a kexec boot of an arm starts with: NAME=FILE [default: the
    /// initrd.img-VERSION beside a /boot/vmlinuz-VERSION, else none].
    #[arg(long = "initrd", value_name = "NAME=FILE")]
    pub initrds: Vec<String>,
    /// Kernel command-line additions of an arm: NAME=ARGS, e.g. audit1='audit=1'.
    #[arg(long = "append", value_name = "NAME=ARGS")]
    pub appends: Vec<String>,
    /// Audit rules set up in an arm's guest before measuring: NAME=FILE, any file `auditctl
    /// -R` reads (read here by auditctl's own library, libaudit; its -e, -f, -b and -r apply
    /// in the guest, -e 2 as -e 1).
    #[arg(long = "audit-rules", value_name = "NAME=FILE")]
    pub rules: Vec<String>,
    /// A rules-file line that cannot be set up (here, or by the guest's kernel): stop, naming
    /// it, or continue without it (auditctl -i), with a warning in the arm's results.
    #[arg(long, value_enum, default_value_t = OnError::Stop, value_name = "WHAT")]
    pub audit_rules_errors: OnError,
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
    /// The boot order of every round (and the bootstrap) is seeded by this number [default:
    /// from the clock, printed].
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub guest: GuestOpts,
    /// The figure each boot gives, the arms are compared by and the headline is of, e.g.
    /// time, task-clock or instructions:k (emulated) [default: instructions (emulated) with
    /// --emulated-counters, whose exact counts decide with two boots per arm; else time].
    /// Every other figure is still shown and compared.
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Significance level.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub alpha: f64,
    /// Deltas smaller than this percentage are never called a change.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_threshold: f64,
    /// Emulated counts closer than this percentage are equal. Two arms' counts differ when
    /// every boot of one is apart from every boot of the other by more than this and than
    /// either arm's own boot-to-boot range (the timer interrupts in the windows, which come on
    /// the host's clock: up to 0.2% here between boots the host ran at different speeds;
    /// under --icount 0, 0.001%, and a finer resolution can be given).
    #[arg(long, default_value_t = compare::EXACT_FLOOR_PCT, value_name = "PCT", value_parser = parse_resolution)]
    pub exact_resolution: f64,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the campaign (JSON: plan, order, every boot's result or failure, comparison) to
    /// FILE, atomically [--via kexec: default /var/lib/syscost/campaign-ID.json, written
    /// after the last boot].
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub keep: HistoryOpts,
    #[command(flatten)]
    pub kept: KeptDir,
    /// The syscost command measured in every boot, e.g. run syscall --runs 3. A boot's value:
    /// for run, the median of its runs; for audit sweep, the cost per rule it fitted; for
    /// probe, the time each hit added.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub measure: Vec<String>,
}

impl CampaignArgs {
    pub(super) fn run(self) -> Result<()> {
        match &self.action {
            Some(CampaignAction::Status(k)) => return status(k),
            Some(CampaignAction::Abort(k)) => return abort(k),
            Some(CampaignAction::Resume(k)) => return resume(k),
            None => {}
        }
        if let Some(o) = &self.output {
            crate::core::check_writable(o)?;
        }
        if self.via == Via::Kexec {
            return self.start_kexec();
        }
        let dir = self.kept.dir()?;
        let args: Vec<String> = std::env::args()
            .skip_while(|a| a != "campaign")
            .skip(1)
            .collect();
        let seed = self.seed.unwrap_or_else(crate::core::now_unix);
        let mut id = format!("{}-{seed}", crate::core::now_unix());
        if saved::file_of(&dir, &id).exists() {
            // Another campaign started in the same second with the same seed.
            id = format!("{id}-{}", std::process::id());
        }
        self.run_qemu(&dir, Saved::new(id, seed, args)?)
    }

    /// Run (or go on with) the QEMU campaign `saved`: each boot, as it ends, in the history and
    /// in its state file in `dir`; the state is removed once the campaign is shown and written.
    fn run_qemu(&self, dir: &Path, mut saved: Saved) -> Result<()> {
        let plan = self.plan(saved.seed)?;
        checks::check(&plan.boot).map_err(with_flag)?;
        // Refused before the first boot when the boots cannot be kept; a plan refused above
        // leaves no directory behind.
        kept::check_dir(dir, "--state DIR")?;
        let path = saved.path(dir);
        eprintln!(
            "syscost: campaign {} of {} arm(s) x {} round(s), seed {}; its boots are kept in {} \
             as each ends",
            saved.id,
            plan.boot.arms.len(),
            plan.rounds,
            plan.boot.seed,
            path.display()
        );
        let accel = plan
            .boot
            .backend
            .machine()
            .map_or("none", |m| m.accel.name());
        let kept = saved.boots.clone();
        let ran = campaign::run(&plan, &kept, &mut |b| {
            eprintln!("syscost: {}", boot_line(b));
            record_boot(b, &self.keep, &saved.id, "qemu", accel);
            saved.boots.push(b.clone());
            if let Err(e) = saved.save(dir) {
                eprintln!("syscost: warning: {e:#}");
            }
        });
        let mut c = match ran {
            Ok(c) => c,
            Err(e) if saved.boots.is_empty() => return Err(with_flag(e)),
            Err(e) => {
                eprintln!("syscost: {}", kept_note(&saved, &path));
                return Err(e);
            }
        };
        c.id = saved.id.clone();
        show(&c, self.format, &self.output)?;
        let _ = std::fs::remove_file(&path);
        if !c.complete {
            let failed = c.figures.iter().map(|f| f.failed_boots).sum();
            return Err(Incomplete(failed).into());
        }
        Ok(())
    }

    fn plan(&self, seed: u64) -> Result<CampaignPlan> {
        check_alpha(self.alpha)?;
        let arms = self.arm_specs()?;
        let rounds = self.boots(arms.len())?;
        let options = compare::Options {
            exact_floor_pct: self.exact_resolution,
            primary: self.guest.metric(self.metric.as_deref()),
            ..campaign::compare_options(self.alpha, self.noise_threshold, seed)
        };
        let boot = self.guest.plan(
            self.via,
            &self.measure,
            (arms, seed),
            self.audit_rules_errors,
        )?;
        Ok(CampaignPlan {
            boot,
            rounds,
            options,
        })
    }

    /// The rounds: as given, else the fewest that decide; fewer than decide are refused unless
    /// --no-verdict. Emulated counts decide with 2 boots per arm (the range rule of exact
    /// counts), timed figures with the paired test's rounds.
    fn boots(&self, arms: usize) -> Result<u32> {
        let comparisons = arms.max(2) - 1;
        let need = crate::stats::paired::pairs_to_decide(self.alpha, comparisons);
        let exact = is_emulated(&self.guest.metric(self.metric.as_deref()));
        let default = match (arms, exact) {
            (_, true) => campaign::MIN_EXACT_BOOTS as u32,
            // One arm is measured, not compared: its boots give the figures' spread.
            (1, false) => ONE_ARM_BOOTS,
            (_, false) => need as u32,
        };
        let boots = self.boots.unwrap_or(default);
        if self.no_verdict || arms == 1 {
            return Ok(boots);
        }
        if exact {
            if (boots as usize) < campaign::MIN_EXACT_BOOTS {
                anyhow::bail!(
                    "--boots {boots}: emulated counts need {} boots per arm, for their \
                     boot-to-boot range, before they can be called different; use --boots {} (or \
                     add --no-verdict for figures alone)",
                    campaign::MIN_EXACT_BOOTS,
                    campaign::MIN_EXACT_BOOTS
                );
            }
            return Ok(boots);
        }
        crate::experiments::ab::decidable("--boots", boots as usize, comparisons, self.alpha)
            .map_err(|e| anyhow::anyhow!("{e} (or add --no-verdict for figures alone)"))?;
        Ok(boots)
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
                initrd: None,
            });
        }
        for i in &self.initrds {
            let (name, file) = name_value("--initrd", i)?;
            arm_named(&mut arms, "--initrd", name)?.initrd = Some(file.into());
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

    /// Check, save the plan, install the boot hook, load the first arm and reboot into it.
    fn start_kexec(&self) -> Result<()> {
        let plan = self.plan(self.seed.unwrap_or_else(crate::core::now_unix))?;
        if !self.yes {
            anyhow::bail!(
                "--via kexec reboots this machine into each arm, {} time(s), then into its \
                 default kernel: add --yes to go ahead",
                plan.boot.arms.len() * plan.rounds as usize
            );
        }
        let output = match &self.output {
            Some(o) => Some(std::path::absolute(o)?),
            None => None,
        };
        let recording = Recording {
            history: match &self.keep.history {
                Some(l) => Some(l.unredacted()),
                None if self.keep.no_history => None,
                None => Some(crate::history::Location::default_location()?.unredacted()),
            },
            no_history: self.keep.no_history,
            tags: self.keep.tags.clone(),
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

impl GuestOpts {
    /// Whether the boots count with syscost's QEMU plugin.
    pub(super) fn emulated(&self) -> bool {
        self.emulated_counters || self.cache_model.is_some() || self.emulated_profile
    }

    /// The figure compared: `given`, else the exact instruction count when the boots count
    /// with the plugin, else time.
    pub(super) fn metric(&self, given: Option<&str>) -> String {
        match (given, self.emulated()) {
            (Some(m), _) => m.to_string(),
            (None, true) => Count::Instructions.part_name(Part::All),
            (None, false) => "time".to_string(),
        }
    }

    /// The guest's vCPUs: as given, else one per host CPU to pin to, else by accelerator.
    fn guest_cpus(&self) -> u32 {
        match (self.guest_cpus, &self.host_cpus, self.accel) {
            (Some(n), _, _) => n,
            (None, Some(list), _) => list.len() as u32,
            (None, None, Accel::Tcg) => 1,
            (None, None, Accel::Kvm) => 2,
        }
    }

    /// A plan of no arms yet (the caller's, with its rounds and seed) measuring `measure`
    /// `via` QEMU or kexec, after refusing what the boots could not do: counting without TCG,
    /// counting a command that times no batches, counting on more than one vCPU, and a
    /// measuring command that would fail in every boot.
    pub(super) fn plan(
        &self,
        via: Via,
        measure: &[String],
        (arms, seed): (Vec<Arm>, u64),
        rules_errors: OnError,
    ) -> Result<BootPlan> {
        self.check(via, measure)?;
        let vcpus = (via == Via::Qemu).then(|| self.guest_cpus());
        let (needs, rules) = check_measure(measure, vcpus)?;
        let backend = match via {
            Via::Qemu => Backend::Qemu(self.machine()),
            Via::Kexec => Backend::Kexec,
        };
        Ok(BootPlan {
            arms,
            seed,
            measure: measure.to_vec(),
            backend,
            retries: self.retries,
            guest_files: guest_files(&self.guest_files, rules)?,
            needs,
            settle: self
                .settle
                .or(self.emulated().then_some(Duration::from_secs(30)))
                .filter(|d| !d.is_zero()),
            rules_errors,
        })
    }

    fn check(&self, via: Via, measure: &[String]) -> Result<()> {
        if self.icount.is_some() && (via != Via::Qemu || self.accel != Accel::Tcg) {
            anyhow::bail!(
                "--icount needs --accel tcg: it is QEMU's emulator that counts the instructions \
                 the guest's clock follows"
            );
        }
        if self.emulated() && (via != Via::Qemu || self.accel != Accel::Tcg) {
            anyhow::bail!(
                "--emulated-counters needs --accel tcg: QEMU's plugins see only the \
                 instructions it emulates (not under kvm, nor on bare metal)"
            );
        }
        let first: Vec<&str> = measure.iter().take(2).map(String::as_str).collect();
        let counted = matches!(
            first[..],
            ["run", ..] | ["audit", "sweep" | "residue"] | ["probe", ..]
        );
        if self.emulated() && !counted {
            anyhow::bail!(
                "--emulated-counters counts the timed batches of `run` and `audit sweep` and the \
                 runs of `probe`; {} is measured without them: measure with -- run, -- audit \
                 sweep or -- probe",
                measure.join(" ")
            );
        }
        if self.emulated() && self.guest_cpus() > 1 {
            // The plugin's counts are the machine's (QEMU 7.2's plugin API has no per-vCPU
            // inline counters): another vCPU's instructions would land in every window.
            anyhow::bail!(
                "--emulated-counters counts on one vCPU: with {} (--guest-cpus or --host-cpus), \
                 the other vCPUs' instructions would land in the measured windows; give \
                 --guest-cpus 1 (the default under tcg) and at most one --host-cpus CPU",
                self.guest_cpus()
            );
        }
        Ok(())
    }

    fn machine(&self) -> Machine {
        let timeout = self.boot_timeout.unwrap_or(match self.accel {
            Accel::Kvm => Duration::from_secs(60),
            Accel::Tcg => Duration::from_secs(180),
        });
        Machine {
            accel: self.accel,
            cpus: self.guest_cpus(),
            memory_mib: self.guest_memory,
            timeout,
            host_cpus: self.host_cpus.clone(),
            entry: self.entry,
            emulated_counters: self.emulated(),
            cache_model: self.cache_model.clone(),
            emulated_profile: self.emulated_profile,
            icount: self.icount,
        }
    }
}

/// `--alpha` is a probability.
pub(super) fn check_alpha(alpha: f64) -> Result<()> {
    if !(alpha > 0.0 && alpha < 1.0) {
        anyhow::bail!("--alpha must be between 0 and 1 (exclusive), e.g. 0.05");
    }
    Ok(())
}

/// A boot's result in the history, tagged with its campaign, arm, round and how it booted.
fn record_boot(b: &BootRecord, keep: &HistoryOpts, id: &str, via: &str, accel: &str) {
    record_tagged(
        b,
        keep,
        [
            format!("campaign={id}"),
            format!("arm={}", b.arm),
            format!("round={}", b.round),
            format!("via={via}"),
            format!("accel={accel}"),
        ],
    );
}

/// A measured boot's result in the history, with `tags` added to the user's.
pub(super) fn record_tagged(
    b: &BootRecord,
    keep: &HistoryOpts,
    tags: impl IntoIterator<Item = String>,
) {
    let Some(result) = b.result() else { return };
    if keep.no_history {
        return;
    }
    let mut keep = keep.clone();
    keep.tags.extend(tags);
    super::history::record(result, &keep);
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

/// `campaign resume`: the kexec campaign in progress, else a kept QEMU campaign.
fn resume(k: &KeptOne) -> Result<()> {
    if kexec_in_progress(k)? {
        return resume_kexec();
    }
    let dir = k.kept.dir()?;
    let Some(mut s) = saved::pick(&dir, k.id.as_deref())? else {
        anyhow::bail!(
            "no campaign in progress (no kexec campaign on this machine, no QEMU campaign kept \
             in {}): nothing to resume",
            dir.display()
        );
    };
    refuse_running(&s, "resume")?;
    let words = ["syscost", "campaign"]
        .into_iter()
        .map(String::from)
        .chain(s.args.clone());
    let Command::Campaign(args) = Cli::try_parse_from(words)?.command else {
        anyhow::bail!("campaign {}: its command line is not a campaign's", s.id);
    };
    std::env::set_current_dir(&s.dir).with_context(|| {
        format!(
            "campaign {}: cannot go back to {}, where it ran",
            s.id,
            s.dir.display()
        )
    })?;
    eprintln!(
        "syscost: resuming campaign {} from {} kept boot(s)",
        s.id,
        s.boots.len()
    );
    s.adopt();
    args.run_qemu(&dir, s)
}

/// A QEMU campaign whose process still runs is not taken from it.
fn refuse_running(s: &Saved, what: &str) -> Result<()> {
    if s.running() {
        anyhow::bail!(
            "campaign {} is still running (process {}): it cannot be {what}d now",
            s.id,
            s.owner.0
        );
    }
    Ok(())
}

/// Where a kept campaign's boots are, and what to do with them.
fn kept_note(s: &Saved, path: &Path) -> String {
    format!(
        "campaign {}: its {} boot(s) so far are kept in {} and in the history (tag \
         campaign={}): `syscost campaign resume {}` goes on with them, `syscost campaign abort \
         {}` drops them",
        s.id,
        s.boots.len(),
        path.display(),
        s.id,
        s.id,
        s.id
    )
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
        record_boot(b, &keep, &r.id, "kexec", "none");
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
    let all = saved::list(&dir)?;
    if all.is_empty() {
        println!("no QEMU campaign kept in {}", dir.display());
    }
    for s in &all {
        let measured = s.boots.iter().filter(|b| b.result().is_some()).count();
        let state = match s.running() {
            true => format!("running (process {})", s.owner.0),
            false => "interrupted".into(),
        };
        println!(
            "campaign {} ({state}): syscost campaign {}",
            s.id,
            super::args::shown_words(&s.args)
        );
        println!(
            "  boots so far: {} ({measured} measured); the last: {}",
            s.boots.len(),
            s.boots.last().map_or("none".into(), boot_line)
        );
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
    let arms: Vec<&str> = st.arms.iter().map(|a| a.name.as_str()).collect();
    println!(
        "campaign {}: arms {} x {} round(s), measured by `syscost {}`",
        st.id,
        arms.join(" "),
        st.rounds,
        st.measure.join(" ")
    );
    println!(
        "boots: {} of {} done ({} measured, {} failed){}",
        p.done,
        p.total,
        p.measured,
        p.failed,
        p.pending
            .map(|(a, r)| format!("; rebooted into {a} (round {r}), not yet recorded"))
            .unwrap_or_default()
    );
    println!(
        "result: {} after the last boot; state {}; boot hook {:?}",
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
    let Some(s) = saved::pick(&dir, k.id.as_deref())? else {
        println!(
            "no campaign in progress (no kexec campaign on this machine, no QEMU campaign kept \
             in {}): nothing to abort",
            dir.display()
        );
        return Ok(());
    };
    refuse_running(&s, "abort")?;
    std::fs::remove_file(s.path(&dir))
        .with_context(|| format!("cannot remove {}", s.path(&dir).display()))?;
    println!(
        "campaign {} dropped ({} boot(s) stay in the history)",
        s.id,
        s.boots.len()
    );
    Ok(())
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

/// What the guest is given beside --guest-file: a rules file the measuring command reads
/// (its `--audit-rules`), and libaudit, which reads it, with its libraries.
fn guest_files(given: &[PathBuf], rules: Option<PathBuf>) -> Result<Vec<PathBuf>> {
    let mut files = given.to_vec();
    if let Some(r) = rules {
        files.push(r);
        files.push(crate::audit::libaudit::library_path()?);
    }
    Ok(files)
}

/// Refuse, before any boot, a measuring command the guest could not run: it is parsed here by
/// the parser the guest's syscost uses, with the `-o` the guest adds, and must measure (run,
/// audit sweep or probe), on CPUs the guest has (`guest_cpus`, for QEMU boots). Returns the
/// rules file it reads (`--audit-rules`), and the
/// files it needs in the guest (a probe's target and program).
fn check_measure(
    words: &[String],
    guest_cpus: Option<u32>,
) -> Result<(Vec<Needed>, Option<PathBuf>)> {
    let said = format!("`syscost {}`", crate::core::printable(&words.join(" ")));
    let first = crate::core::printable(words.first().map_or("run", String::as_str));
    let parse = |words: Vec<String>| {
        Cli::try_parse_from(std::iter::once("syscost".to_string()).chain(words)).map_err(|e| {
            let text = e.render().to_string();
            let why = text
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            anyhow::anyhow!(
                "the measuring command after --, {said}, would fail in every boot: {} (see \
                 syscost {} --help)",
                crate::core::printable(why),
                first
            )
        })
    };
    let mut needs = Vec::new();
    let (cpus, rules) = match parse(words.to_vec())?.command {
        Command::Run(r) => {
            let args = r.into_parts()?.1;
            (args.cpu, args.audit_rules)
        }
        Command::Audit(AuditCommand::Sweep { common, .. }) => (common.cpu, common.audit_rules),
        Command::Probe(p) => {
            let (path, _) = crate::probes::elf::parse_target(&p.target)?;
            needs.push(Needed {
                what: format!("--target {}", p.target),
                path,
            });
            if let Some(program) = p.command.first() {
                needs.push(Needed {
                    what: format!("the probed command {program}"),
                    path: program.into(),
                });
            }
            (None, None)
        }
        _ => anyhow::bail!(
            "the command after -- is what each boot measures: {said} does not measure; give run, \
             audit sweep or probe, e.g. -- run syscall --runs 3"
        ),
    };
    let outside = |n: u32| {
        cpus.iter()
            .flat_map(|l| l.iter())
            .find(|&c| c >= n as usize)
    };
    if let Some((c, n)) = guest_cpus.and_then(|n| outside(n).map(|c| (c, n))) {
        anyhow::bail!(
            "the measuring command pins to CPU {c}, but each guest has {n} vCPU(s) (CPUs 0-{}): \
             give --cpu {} in the measuring command, or --guest-cpus {}",
            n - 1,
            n - 1,
            c + 1
        );
    }
    parse(crate::boot::with_output(words, "/tmp/result.json"))?;
    Ok((needs, rules))
}

fn parse_cache_model(s: &str) -> std::result::Result<CacheModel, String> {
    CacheModel::parse(s)
}

pub(super) fn name_value<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str)> {
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

/// An arm's problem said with the option that gave the part it is in (`--append b: ...`).
fn with_flag(e: anyhow::Error) -> anyhow::Error {
    let Some(p) = e.downcast_ref::<ArmProblem>() else {
        return e;
    };
    let flag = match p.part {
        ArmPart::Name | ArmPart::Kernel => "--arm",
        ArmPart::CommandLine => "--append",
        ArmPart::Initrd => "--initrd",
        ArmPart::Rules => "--audit-rules",
    };
    anyhow::anyhow!("{flag} {p}")
}

/// One line per boot as it ends.
pub(super) fn boot_line(b: &BootRecord) -> String {
    let what = match &b.outcome {
        Outcome::Measured { .. } => "measured".to_string(),
        Outcome::Failed {
            reason,
            failure: Failure::InGuest,
            ..
        } => format!("FAILED in the guest, not retried (every boot would repeat it): {reason}"),
        Outcome::Failed { reason, .. } => format!("FAILED: {reason}"),
    };
    let split = b.split.map(|s| format!(" = {s}")).unwrap_or_default();
    format!(
        "round {} {}{}: {what} ({:.1} s{split})",
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

/// `--settle`: a duration, or 0 for no wait.
fn parse_settle(s: &str) -> Result<Duration, String> {
    match s.trim() {
        "0" | "0s" => Ok(Duration::ZERO),
        _ => parse_duration(s),
    }
}
