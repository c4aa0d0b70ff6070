//! `syscost campaign`: N boots of M kernels (or kernel command lines, or audit states), in
//! rounds that boot every arm once in a shuffled order, each boot measured by a syscost
//! command inside it, then compared with boots as the units, paired by round. The audit
//! series' method (12 boots of each of 4 kernels) and the alignment RFC's ranking of many
//! builds, as one command. The boots run in QEMU (this module) or, on this machine itself,
//! one after another by kexec ([`kexec`]).

pub mod emulated;
pub mod kexec;
pub mod saved;

use crate::boot::bzimage::{self, Entry};
use crate::boot::guest::{ARM_PARAM, GuestClock, GuestPlan, KALLSYMS_PARAM, PLAN_PATH};
use crate::boot::initramfs::{self, Contents};
use crate::boot::qemu::{self, Accel, Ended, KernelEntry, Machine, Pinned};
use crate::compare::{self, Comparison, groups};
use crate::core::{Envelope, Kind};
use crate::results::functions::EmulatedFunctions;
use crate::results::sets::EmulatedSets;
use crate::results::view::ResultView;
use crate::stats::Summary;
use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One arm: a kernel, what its command line adds, and the audit rules set up before measuring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    pub name: String,
    pub kernel: PathBuf,
    pub append: String,
    pub rules: Option<PathBuf>,
    /// The initramfs a kexec boot of this kernel starts with (QEMU boots get syscost's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrd: Option<PathBuf>,
}

/// Where the boots happen.
#[derive(Clone, Debug)]
pub enum Backend {
    /// Each boot a QEMU virtual machine.
    Qemu(Machine),
    /// This machine, rebooted into each arm by kexec.
    Kexec,
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Qemu(_) => "qemu",
            Backend::Kexec => "kexec",
        }
    }

    pub fn machine(&self) -> Option<&Machine> {
        match self {
            Backend::Qemu(m) => Some(m),
            Backend::Kexec => None,
        }
    }
}

/// `kernel 0.9 s + init 0.05 s + measurement 1.6 s + outside 0.8 s`.
impl std::fmt::Display for BootSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kernel {:.1} s + init {:.2} s", self.kernel, self.init)?;
        if self.settle > 0.0 {
            write!(f, " + settling {:.2} s", self.settle)?;
        }
        write!(
            f,
            " + measurement {:.1} s + outside {:.1} s",
            self.measurement, self.outside
        )
    }
}

/// A campaign to run.
pub struct CampaignPlan {
    pub arms: Vec<Arm>,
    /// Rounds: each boots every arm once.
    pub boots: u32,
    pub seed: u64,
    /// The syscost measuring command run inside every boot (`run syscall ...`).
    pub measure: Vec<String>,
    pub backend: Backend,
    /// Boots retried after a failure, per boot.
    pub retries: u32,
    /// Host files the measurement needs in the guest, at the same paths.
    pub guest_files: Vec<PathBuf>,
    /// Files the measuring command opens in the guest (a probe's target and program): each
    /// must be in the initramfs, or every boot fails.
    pub needs: Vec<Needed>,
    /// Each guest waits up to this long for its boot's own work to end before it measures
    /// (`boot::settle`); `None`: it measures at once.
    pub settle: Option<std::time::Duration>,
    pub options: compare::Options,
    /// What a rules file's line that cannot be set up does: stop the campaign before it boots
    /// (or, in the guest, fail the arm's boot), or be left out with a warning.
    pub rules_errors: crate::audit::rules_file::OnError,
}

/// A file the measuring command needs in the guest, and what in the command names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Needed {
    pub what: String,
    pub path: PathBuf,
}

/// How one boot ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// The measurement's whole result.
    Measured { result: serde_json::Value },
    /// Why there is none, and the console's last lines. `in_guest`: the guest reported it
    /// (the arm's setup or the measuring command failed), so every boot of the arm repeats it.
    Failed {
        reason: String,
        console: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_guest: bool,
    },
}

/// One boot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BootRecord {
    pub arm: String,
    pub round: u32,
    /// 0 for the first try, 1 for the first retry.
    pub attempt: u32,
    /// From starting QEMU to its end.
    pub seconds: f64,
    /// Where those seconds went, when the guest sent its clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<BootSplit>,
    /// Its vCPUs pinned to host CPUs (`--host-cpus`), and where their threads were seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<Pinned>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Where a QEMU boot's seconds went, read from the guest's clock: its kernel's boot up to
/// the init, syscost's init around the measurement (mounts, the arm's state, sending), the
/// measurement, and what lies outside the guest's clock (QEMU's start, the firmware, loading
/// and decompressing the kernel and the initramfs, powering off, reading the result).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootSplit {
    pub kernel: f64,
    pub init: f64,
    /// The wait for the boot's own work to end (`--settle`), 0 without one.
    #[serde(default)]
    pub settle: f64,
    pub measurement: f64,
    pub outside: f64,
}

impl BootSplit {
    /// The split of a boot of `seconds` whose guest sent `clock`.
    pub fn of(clock: &GuestClock, seconds: f64) -> BootSplit {
        // A guest that did not wait sent no settle_from.
        let settle_from = if clock.settle_from > 0.0 {
            clock.settle_from
        } else {
            clock.measure_from
        };
        BootSplit {
            kernel: clock.init,
            init: (settle_from - clock.init) + (clock.sent - clock.measure_to),
            settle: clock.measure_from - settle_from,
            measurement: clock.measure_to - clock.measure_from,
            outside: seconds - clock.sent,
        }
    }

    /// The mean split over `boots` (the parts of a mean add up to the mean boot).
    pub fn mean<'a>(boots: impl IntoIterator<Item = &'a BootSplit>) -> Option<BootSplit> {
        let all: Vec<&BootSplit> = boots.into_iter().collect();
        let n = all.len() as f64;
        let mean = |f: fn(&BootSplit) -> f64| all.iter().map(|s| f(s)).sum::<f64>() / n;
        (!all.is_empty()).then(|| BootSplit {
            kernel: mean(|s| s.kernel),
            init: mean(|s| s.init),
            settle: mean(|s| s.settle),
            measurement: mean(|s| s.measurement),
            outside: mean(|s| s.outside),
        })
    }
}

impl BootRecord {
    pub fn result(&self) -> Option<&serde_json::Value> {
        match &self.outcome {
            Outcome::Measured { result } => Some(result),
            Outcome::Failed { .. } => None,
        }
    }
}

/// What one boot's value is, by the kind of result the measuring command writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootFigure {
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

    pub fn describe(self) -> &'static str {
        match self {
            BootFigure::RunMedian => "the median of its runs",
            BootFigure::SweepSlope => "the cost per rule its audit sweep fitted",
            BootFigure::ProbeHit => "the time each probe hit added",
        }
    }
}

/// An arm's primary figure over its good boots (one value per boot: see [`BootFigure`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArmFigures {
    pub arm: String,
    /// The kernel releases its boots ran (one, unless the image changed).
    pub releases: Vec<String>,
    pub good_boots: usize,
    pub failed_boots: usize,
    /// Per good boot, in round order.
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
    /// Its other per-operation metrics (perf counters and their ratios), where measured.
    #[serde(default)]
    pub counters: Vec<CounterFigure>,
    /// Modelled L1 misses by set per operation, each set's median over the boots
    /// (`--cache-model`).
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
pub struct CounterFigure {
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

/// How an arm's kernel started in its QEMU boots: at its PVH entry (its vmlinux, taken out
/// of the bzImage on the host) or as a bzImage, and why not at the PVH entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmEntry {
    pub arm: String,
    pub entry: KernelEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Entry {
    /// The file QEMU starts: the vmlinux, or the arm's bzImage.
    fn kernel<'a>(&'a self, bzimage: &'a Path) -> &'a Path {
        match self {
            Entry::Pvh(vmlinux) => vmlinux,
            Entry::BzImage(_) => bzimage,
        }
    }

    fn of(&self, arm: &str) -> ArmEntry {
        let (entry, why) = match self {
            Entry::Pvh(_) => (KernelEntry::Pvh, None),
            Entry::BzImage(why) => (KernelEntry::Bzimage, Some(why.clone())),
        };
        ArmEntry {
            arm: arm.into(),
            entry,
            why,
        }
    }
}

/// The result of a campaign (kind `campaign`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Campaign {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub id: String,
    pub created_unix: u64,
    pub via: String,
    /// The virtual machine of QEMU boots; none for kexec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// The machine syscost ran the campaign on (for QEMU boots, the host of the guests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::environment::Environment>,
    pub arms: Vec<Arm>,
    /// How each arm's kernel started (QEMU boots).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<ArmEntry>,
    pub measure: Vec<String>,
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
    /// Every planned boot measured.
    pub complete: bool,
    pub warnings: Vec<String>,
}

/// An arm needs this many good boots for a verdict.
pub const MIN_BOOTS: usize = 3;

/// An arm whose boots count emulated instructions needs this many for a verdict: its exact
/// counts' boot-to-boot range (`stats::exact`); its times stay undecided with so few.
pub const MIN_EXACT_BOOTS: usize = 2;

/// Refuse, before anything boots, what cannot work: a file that is not a kernel, an arm name
/// that cannot name files and rows, a command line the kernel would cut, a rules file that is
/// missing or has lines syscost cannot set up, guest files that are not regular files or do
/// not fit the guest, arms named twice. Returns each arm's rules, read here (by auditctl's
/// library, which the guest lacks) and sent to the guest as JSON, by arm name.
pub fn check(plan: &CampaignPlan) -> Result<Vec<(String, String)>> {
    if plan.arms.is_empty() {
        bail!("give --arm NAME=KERNEL: one arm measures a kernel, two or more compare them");
    }
    check_setup(plan)?;
    let mut rules = Vec::new();
    for (i, a) in plan.arms.iter().enumerate() {
        if plan.arms[..i].iter().any(|b| b.name == a.name) {
            bail!("--arm {}: the name is given twice", a.name);
        }
        if let Some(text) = check_arm(a, plan.rules_errors)? {
            rules.push((a.name.clone(), text));
        }
    }
    Ok(rules)
}

/// What every boot shares: a measuring command, and guest files that are regular files, fit
/// the guest and hold what the command opens.
pub fn check_setup(plan: &CampaignPlan) -> Result<()> {
    if plan.measure.is_empty() {
        bail!("give the measuring command after --, e.g. -- run syscall --runs 3");
    }
    if let Backend::Qemu(m) = &plan.backend {
        check_guest_files(&plan.guest_files, m.memory_mib)?;
        check_needed(&plan.needs, &plan.guest_files)?;
    }
    Ok(())
}

/// One arm: its name, its kernel (a bzImage whose command line holds what syscost adds), its
/// initramfs and its rules file. Returns its rules, read here (by auditctl's library, which
/// the guest lacks) as the JSON the guest is sent.
pub fn check_arm(a: &Arm, on_error: crate::audit::rules_file::OnError) -> Result<Option<String>> {
    check_name(&a.name)?;
    check_command_line(a)?;
    if let Some(i) = &a.initrd {
        std::fs::File::open(i)
            .with_context(|| format!("--initrd {}: cannot read {}", a.name, i.display()))?;
    }
    match &a.rules {
        Some(r) => {
            let set = crate::audit::rules_file::read(r, "--audit-rules", on_error)?;
            Ok(Some(serde_json::to_string(&set)?))
        }
        None => Ok(None),
    }
}

/// Each file the measuring command opens must be in the guest's initramfs: syscost itself
/// (`/init`), its shared libraries, a `--guest-file` or one of their libraries.
fn check_needed(needs: &[Needed], guest_files: &[PathBuf]) -> Result<()> {
    if needs.is_empty() {
        return Ok(());
    }
    let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
    let mut inside: Vec<PathBuf> = initramfs::shared_libraries(&exe)?;
    inside.push("/init".into());
    for f in guest_files {
        inside.push(initramfs::guest_path(f)?);
        inside.extend(initramfs::shared_libraries(f)?);
    }
    for n in needs {
        if !n.path.is_absolute() {
            bail!(
                "{}: the guest has no PATH to look it up in; give its path and --guest-file PATH",
                n.what
            );
        }
        if !inside.contains(&n.path) {
            bail!(
                "{}: the guest has no {}; add --guest-file {} (the guest holds syscost as /init, \
                 its shared libraries and the --guest-file files)",
                n.what,
                n.path.display(),
                n.path.display()
            );
        }
    }
    Ok(())
}

/// The longest arm name: it names files, a kernel parameter, history tags and table rows.
pub const NAME_MAX: usize = 64;

/// An arm's name: 1 to 64 letters, digits, `.`, `_`, `-` or `+`. Anything else could break
/// the kernel command line it is passed on (a space), a file name (`/`) or a table (a newline
/// forges a row).
fn check_name(name: &str) -> Result<()> {
    let shown = crate::core::printable(&name.chars().take(40).collect::<String>());
    let more = if name.chars().count() > 40 { "..." } else { "" };
    if name.chars().count() > NAME_MAX {
        bail!("--arm {shown}{more}: an arm's name has at most {NAME_MAX} characters");
    }
    let ok = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '+');
    if let Some(c) = name.chars().find(|&c| !ok(c)) {
        bail!(
            "--arm {shown}{more}: {} is not allowed in an arm's name (letters, digits, '.', '_', \
             '-' and '+': the name becomes file names, a kernel parameter and table rows)",
            crate::core::printable(&format!("{c:?}"))
        );
    }
    if name.chars().all(|c| c == '.') {
        bail!("--arm {shown}: give the arm a name, e.g. base or fix");
    }
    Ok(())
}

/// The kernel keeps at most its header's `cmdline_size` bytes of the command line, and what
/// syscost adds comes last: a line the kernel would cut loses the arm's name, and the boot
/// never measures. Control characters are refused too.
fn check_command_line(arm: &Arm) -> Result<()> {
    if let Some(c) = arm.append.chars().find(|c| c.is_control()) {
        bail!(
            "--append {}: {} is not allowed on a kernel command line (give parameters separated \
             by spaces)",
            arm.name,
            c.escape_default()
        );
    }
    let header = bzimage::Header::read(&arm.kernel)?;
    // The longest line a boot gets: the first, which asks for the kernel's symbols.
    let line = kernel_command_line(arm, true);
    if line.len() > header.cmdline_size as usize {
        bail!(
            "--append {}: the kernel command line would be {} bytes with what syscost adds \
             ({}); {} keeps at most {} (its header's cmdline_size): shorten --append",
            arm.name,
            line.len(),
            kernel_command_line(
                &Arm {
                    append: String::new(),
                    ..arm.clone()
                },
                true
            ),
            arm.kernel.display(),
            header.cmdline_size
        );
    }
    Ok(())
}

/// Guest files are regular files (a device such as /dev/zero would be read forever), and the
/// initramfs they make must leave the guest room: at most half its memory (the kernel holds
/// the archive while it unpacks it).
fn check_guest_files(files: &[PathBuf], memory_mib: u32) -> Result<()> {
    let mut total = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map_or(0, |m| m.len());
    for f in files {
        let m = std::fs::metadata(f)
            .with_context(|| format!("--guest-file {}: cannot read it", f.display()))?;
        if !m.is_file() {
            bail!(
                "--guest-file {}: not a regular file; give files (each is copied to the same path \
                 in the guest, its directories created)",
                f.display()
            );
        }
        let at = crate::boot::initramfs::guest_path(f)?;
        if let Some((_, dir, _)) = crate::boot::guest::MOUNTS
            .iter()
            .find(|(_, d, _)| at.starts_with(d))
        {
            bail!(
                "{}: the guest mounts a file system of its own on {dir}, which would hide it: \
                 copy it to another directory and name that copy",
                f.display()
            );
        }
        total += m.len();
    }
    let room = u64::from(memory_mib) << 19;
    if total > room {
        bail!(
            "--guest-file: the initramfs would hold {} MiB, more than half of the guest's {} MiB \
             (--guest-memory): send fewer files or raise --guest-memory",
            total >> 20,
            memory_mib
        );
    }
    Ok(())
}

/// The comparison's options: the signed-rank test on boots paired by round.
pub fn compare_options(alpha: f64, noise_pct: f64, seed: u64) -> compare::Options {
    compare::Options {
        test: crate::stats::registry::TestKind::SignedRank,
        alpha,
        noise_pct,
        seed,
        ..compare::Options::default()
    }
}

/// Rounds of arm indices, each a shuffle of every arm by a generator seeded with `seed`.
pub fn order(arms: usize, rounds: u32, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    (0..rounds)
        .map(|_| {
            let mut r: Vec<usize> = (0..arms).collect();
            r.shuffle(&mut rng);
            r
        })
        .collect()
}

/// The initramfs every boot of the campaign starts from.
fn build_initramfs(plan: &CampaignPlan, rules: &[(String, String)], dir: &Path) -> Result<PathBuf> {
    let mut guest = GuestPlan {
        measure: plan.measure.clone(),
        mark: plan.backend.machine().is_some_and(|m| m.emulated_counters),
        settle_s: plan.settle.map(|d| d.as_secs_f64()),
        kallsyms: plan.backend.machine().is_some_and(|m| m.emulated_profile),
        ..GuestPlan::default()
    };
    let mut named = Vec::new();
    for (arm, text) in rules {
        let path = format!("/campaign/rules/{arm}.json");
        guest.rules.insert(arm.clone(), path.clone());
        named.push((path, text.clone().into_bytes()));
    }
    named.push((PLAN_PATH.into(), serde_json::to_vec(&guest)?));
    let out = dir.join("initramfs.cpio");
    let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
    let contents = Contents {
        files: plan.guest_files.clone(),
        named,
    };
    initramfs::build(&exe, &contents, &out)?;
    Ok(out)
}

/// What a boot of `arm` is told on its command line; `kallsyms`: to send its kernel's symbols.
fn kernel_command_line(arm: &Arm, kallsyms: bool) -> String {
    let send = if kallsyms {
        format!(" {KALLSYMS_PARAM}=1")
    } else {
        String::new()
    };
    format!(
        "console=ttyS0 panic=-1 quiet {ARM_PARAM}={}{send} {}",
        arm.name, arm.append
    )
    .trim()
    .to_string()
}

/// Boots arms of a plan in QEMU, one at a time, from what every boot shares: the campaign's
/// work directory (removed when the booter is dropped), its initramfs, syscost's TCG plugin,
/// and each kernel as QEMU starts it (taken out once, at its first boot). A campaign boots
/// its rounds with it; a bisection boots the builds it chooses.
pub struct Booter<'p> {
    plan: &'p CampaignPlan,
    machine: &'p Machine,
    dir: tempfile::TempDir,
    initrd: PathBuf,
    plugin: Option<PathBuf>,
    entries: Vec<Option<Entry>>,
    symbols: Vec<Option<emulated::ArmSymbols>>,
}

impl<'p> Booter<'p> {
    /// Check what QEMU needs, build the initramfs (with `rules`: each arm's rules as JSON, by
    /// arm name), and, under KVM, check a guest starts.
    pub fn start(plan: &'p CampaignPlan, rules: &[(String, String)]) -> Result<Booter<'p>> {
        let Backend::Qemu(machine) = &plan.backend else {
            bail!(
                "QEMU boots need a QEMU backend; a kexec campaign starts with campaign::kexec::start"
            );
        };
        qemu::check_installed()?;
        qemu::check_pinning(machine)?;
        let dir = crate::boot::workdir()?;
        let initrd = build_initramfs(plan, rules, dir.path())?;
        if machine.accel == Accel::Kvm {
            let first = plan.arms.first().context("no kernel to boot")?;
            qemu::kvm_works(&first.kernel, dir.path()).map_err(|why| {
                anyhow::anyhow!(
                    "KVM does not work here: {why}. --accel tcg emulates the CPU instead (its \
                     figures follow the instructions executed, not the hardware)"
                )
            })?;
        }
        let plugin = dir.path().join("tcg_count.so");
        if machine.emulated_counters {
            std::fs::write(&plugin, crate::counters::emulated::PLUGIN)
                .context("cannot write syscost's TCG plugin")?;
            qemu::check_plugin(machine, &plugin)?;
        }
        Ok(Booter {
            plan,
            machine,
            dir,
            initrd,
            plugin: machine.emulated_counters.then_some(plugin),
            entries: vec![None; plan.arms.len()],
            symbols: plan.arms.iter().map(|_| None).collect(),
        })
    }

    /// How each arm booted so far started (see [`ArmEntry`]).
    pub fn entries(&self) -> Vec<ArmEntry> {
        let arms = self.plan.arms.iter().zip(&self.entries);
        arms.filter_map(|(a, e)| e.as_ref().map(|e| e.of(&a.name)))
            .collect()
    }

    /// The kernel QEMU starts for arm `a`: at its PVH entry (its vmlinux, shared by the arms
    /// of one kernel) or as its bzImage.
    fn entry(&mut self, a: usize) -> Result<Entry> {
        if let Some(e) = &self.entries[a] {
            return Ok(e.clone());
        }
        let kernel = &self.plan.arms[a].kernel;
        let same = (0..self.entries.len())
            .find(|&j| self.entries[j].is_some() && &self.plan.arms[j].kernel == kernel);
        let e = match (self.machine.entry, same) {
            (KernelEntry::Bzimage, _) => Entry::BzImage("--entry bzimage".into()),
            (KernelEntry::Pvh, Some(j)) => self.entries[j].clone().expect("found set"),
            (KernelEntry::Pvh, None) => {
                bzimage::vmlinux_entry(kernel, &self.dir.path().join(format!("vmlinux-{a}")))?
            }
        };
        self.entries[a] = Some(e.clone());
        Ok(e)
    }

    /// Boot arm `a` in `round` until it is measured or its retries are spent; every try is
    /// recorded in `boots`. Returns the reason when the guest itself reported the failure (its
    /// setup or measuring command): another boot would repeat it, so it is not retried.
    pub fn boot(
        &mut self,
        a: usize,
        round: u32,
        boots: &mut Vec<BootRecord>,
        progress: &mut dyn FnMut(&BootRecord),
    ) -> Result<Option<String>> {
        self.boot_from(a, round, 0, boots, progress)
    }

    /// [`Booter::boot`] from try `first` on (the tries before it were kept from an interrupted
    /// run).
    fn boot_from(
        &mut self,
        a: usize,
        round: u32,
        first: u32,
        boots: &mut Vec<BootRecord>,
        progress: &mut dyn FnMut(&BootRecord),
    ) -> Result<Option<String>> {
        let entry = self.entry(a)?;
        let (plan, machine) = (self.plan, self.machine);
        let arm = &plan.arms[a];
        for attempt in first..=plan.retries {
            let bootdir = self
                .dir
                .path()
                .join(format!("round{round}-{}-try{attempt}", arm.name));
            std::fs::create_dir_all(&bootdir)?;
            let started = Instant::now();
            let kallsyms = machine.emulated_profile && self.symbols[a].is_none();
            let ended = qemu::boot(
                machine,
                &qemu::Boot {
                    kernel: entry.kernel(&arm.kernel),
                    initrd: &self.initrd,
                    append: kernel_command_line(arm, kallsyms),
                    dir: &bootdir,
                    disk: None,
                    firmware_reboot: false,
                    plugin: self.plugin.as_deref(),
                },
            )?;
            let record = record_of(
                ended,
                arm,
                round,
                attempt,
                started,
                &mut self.symbols[a],
                machine,
            );
            let repeats = match &record.outcome {
                Outcome::Measured { .. } => None,
                Outcome::Failed {
                    reason, in_guest, ..
                } => Some(in_guest.then(|| reason.clone())),
            };
            boots.push(record);
            progress(boots.last().expect("just pushed"));
            let _ = std::fs::remove_dir_all(&bootdir);
            match repeats {
                None => break,
                Some(Some(reason)) => return Ok(Some(reason)),
                Some(None) => {}
            }
        }
        Ok(None)
    }
}

/// The record of one try at booting `arm`, from how QEMU's boot ended.
fn record_of(
    ended: Ended,
    arm: &Arm,
    round: u32,
    attempt: u32,
    started: Instant,
    symbols: &mut Option<emulated::ArmSymbols>,
    machine: &Machine,
) -> BootRecord {
    let seconds = started.elapsed().as_secs_f64();
    let (clock, pinned) = match &ended {
        Ended::Measured { clock, pinned, .. } => (*clock, pinned.clone()),
        Ended::Failed { .. } => (None, Vec::new()),
    };
    BootRecord {
        arm: arm.name.clone(),
        round,
        attempt,
        seconds,
        // Under -icount the guest's clock runs on instructions: no split in seconds.
        split: clock
            .filter(|_| machine.icount.is_none())
            .map(|c| BootSplit::of(&c, seconds)),
        pinned,
        outcome: outcome_of(ended, symbols),
    }
}

/// How a boot ended, its emulated counts joined to its result; `symbols`: its arm's kernel
/// symbols, learnt from the first boot that sends them.
fn outcome_of(ended: Ended, symbols: &mut Option<emulated::ArmSymbols>) -> Outcome {
    match ended {
        Ended::Measured {
            result,
            windows,
            kallsyms,
            ..
        } => match serde_json::from_slice(&result) {
            Ok(mut result) => {
                if let Some(w) = windows {
                    if symbols.is_none() {
                        *symbols = kallsyms.as_ref().and_then(emulated::ArmSymbols::of);
                    }
                    let rebased = symbols.as_ref().zip(kallsyms).map(|(s, k)| s.at(k.text));
                    emulated::join(&mut result, &w, rebased);
                }
                Outcome::Measured { result }
            }
            Err(e) => Outcome::Failed {
                reason: format!("the result sent back is not JSON ({e})"),
                console: Vec::new(),
                in_guest: false,
            },
        },
        Ended::Failed {
            reason,
            console,
            in_guest,
        } => Outcome::Failed {
            reason,
            console,
            in_guest,
        },
    }
}

/// Run a campaign in QEMU: check, build the initramfs, take each kernel's vmlinux out for its
/// PVH entry, boot every round, compare. An arm whose first boot fails in the guest (its
/// setup or its measuring command) is stopped there; the campaign stops when fewer than two
/// arms are left. `kept`: the boots of an interrupted run of the same plan; a boot they
/// finished is not booted again, and `progress` hears of the new ones only.
pub fn run(
    plan: &CampaignPlan,
    kept: &[BootRecord],
    progress: &mut dyn FnMut(&BootRecord),
) -> Result<Campaign> {
    let rules = check(plan)?;
    let mut booter = Booter::start(plan, &rules)?;
    let order = order(plan.arms.len(), plan.boots, plan.seed);
    let mut boots = Vec::new();
    let mut stopped: Vec<Option<String>> = vec![None; plan.arms.len()];
    'rounds: for (round, arms) in order.iter().enumerate() {
        let round = round as u32 + 1;
        for &a in arms {
            if stopped[a].is_some() {
                continue;
            }
            let tries = kept_tries(kept, &plan.arms[a].name, round);
            boots.extend(tries.iter().map(|&b| b.clone()));
            let reason = match slot_of(&tries, plan.retries) {
                Slot::Done => None,
                Slot::Repeats(reason) => Some(reason),
                Slot::Next(first) => booter.boot_from(a, round, first, &mut boots, progress)?,
            };
            let Some(reason) = reason else {
                continue;
            };
            let measured = |b: &BootRecord| b.arm == plan.arms[a].name && b.result().is_some();
            if !boots.iter().any(measured) {
                stopped[a] = Some(reason);
                if too_few_left(&stopped) {
                    break 'rounds;
                }
            }
        }
    }
    let names = |r: &Vec<usize>| r.iter().map(|&a| plan.arms[a].name.clone()).collect();
    let mut c = analyse(plan, order.iter().map(names).collect(), boots)?;
    c.entries = booter.entries();
    c.warnings.extend(stopped_warnings(plan, &stopped));
    Ok(c)
}

/// Where one boot of the schedule (an arm in a round) stands, from its tries kept so far.
#[derive(Debug, PartialEq)]
enum Slot {
    /// Measured, or its tries are spent.
    Done,
    /// Its last try failed in the guest, which every boot would repeat: the reason.
    Repeats(String),
    /// Boot it, from this try on.
    Next(u32),
}

/// The tries kept of `arm` in `round`, in the order they ended.
fn kept_tries<'a>(kept: &'a [BootRecord], arm: &str, round: u32) -> Vec<&'a BootRecord> {
    kept.iter()
        .filter(|b| b.arm == arm && b.round == round)
        .collect()
}

fn slot_of(tries: &[&BootRecord], retries: u32) -> Slot {
    if tries.iter().any(|b| b.result().is_some()) {
        return Slot::Done;
    }
    if let Some(Outcome::Failed {
        reason,
        in_guest: true,
        ..
    }) = tries.last().map(|b| &b.outcome)
    {
        return Slot::Repeats(reason.clone());
    }
    match tries.len() as u32 {
        n if n > retries => Slot::Done,
        n => Slot::Next(n),
    }
}

/// Whether the arms not stopped are too few to go on: fewer than two of a comparison, none of
/// a campaign of one arm.
fn too_few_left(stopped: &[Option<String>]) -> bool {
    stopped.iter().filter(|s| s.is_none()).count() < stopped.len().min(2)
}

/// Why each stopped arm stopped.
fn stopped_warnings(plan: &CampaignPlan, stopped: &[Option<String>]) -> Vec<String> {
    let mut out: Vec<String> = plan
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
    if too_few_left(stopped) {
        out.push(match plan.arms.len() {
            1 => "no arm was left: the campaign stopped".into(),
            _ => "fewer than two arms were left to compare: the campaign stopped".into(),
        });
    }
    out
}

/// The figures per arm and the comparison of the arms, from the boots.
pub fn analyse(
    plan: &CampaignPlan,
    order: Vec<Vec<String>>,
    boots: Vec<BootRecord>,
) -> Result<Campaign> {
    let mut warnings = Vec::new();
    let views = good_views(plan, &boots, &mut warnings);
    let metric = plan.options.primary.clone();
    let figures: Vec<ArmFigures> = plan
        .arms
        .iter()
        .zip(&views)
        .map(|(a, v)| figures_of(a, v, &boots, plan.boots, &metric))
        .collect();
    let unit = views
        .iter()
        .flatten()
        .find_map(|(_, v)| v.metric(&metric).map(|m| m.unit.clone()))
        .unwrap_or_default();
    let boot_figure = views
        .iter()
        .flatten()
        .next()
        .map_or(BootFigure::RunMedian, |(_, v)| BootFigure::of(v.kind));
    let comparison = compare_arms(plan, &views, &mut warnings)?;
    let created_unix = crate::core::now_unix();
    let complete = figures.iter().all(|f| f.failed_boots == 0);
    Ok(Campaign {
        envelope: Envelope::new(Kind::Campaign),
        id: format!("{created_unix}-{}", plan.seed),
        created_unix,
        via: plan.backend.name().into(),
        machine: plan.backend.machine().cloned(),
        host: Some(crate::environment::Environment::collect()),
        arms: plan.arms.clone(),
        entries: Vec::new(),
        measure: plan.measure.clone(),
        seed: plan.seed,
        order,
        boots,
        metric,
        unit,
        boot_figure,
        figures,
        comparison,
        complete,
        warnings,
    })
}

/// Per arm, its good boots' results as views with their round, in round order. A result of a
/// kind that is not compared (an audit sweep, a probe) is kept whole but gives no figure.
fn good_views(
    plan: &CampaignPlan,
    boots: &[BootRecord],
    warnings: &mut Vec<String>,
) -> Vec<Vec<(u32, ResultView)>> {
    let mut out: Vec<Vec<(u32, ResultView)>> = vec![Vec::new(); plan.arms.len()];
    for b in boots {
        let (Some(result), Some(i)) = (b.result(), plan.arms.iter().position(|a| a.name == b.arm))
        else {
            continue;
        };
        let name = format!("{} round {}", b.arm, b.round);
        match view_of(&name, result) {
            Ok(v) => out[i].push((b.round, v)),
            Err(e) => warnings.push(format!("{name}: kept whole, not compared ({e})")),
        }
    }
    out
}

/// A measured boot's value of `metric` (the median of its samples or runs, as a campaign
/// takes each boot's value) and its unit; `Err` says why there is none.
pub fn boot_value(b: &BootRecord, metric: &str) -> Result<(f64, String), String> {
    let result = match &b.outcome {
        Outcome::Measured { result } => result,
        Outcome::Failed { reason, .. } => return Err(reason.clone()),
    };
    let view = view_of(&b.arm, result)?;
    match view.metric(metric).filter(|m| !m.values.is_empty()) {
        Some(m) => Ok((crate::stats::median(&m.values), m.unit.clone())),
        None => {
            let names: Vec<&str> = view.metrics.iter().map(|m| m.name.as_str()).collect();
            Err(format!(
                "its result has no figure {metric} (it has: {})",
                names.join(", ")
            ))
        }
    }
}

/// A boot's result as a view of its figures: a run or merged result as it is, an audit
/// sweep by its cost per rule, a probe by its cost per hit.
fn view_of(name: &str, result: &serde_json::Value) -> Result<ResultView, String> {
    use crate::experiments::{audit_sweep::Sweep, probe::ProbeResult};
    use crate::results::view::EnvSummary;
    use crate::workloads::RecordedWorkload;
    let kind = result
        .get("kind")
        .cloned()
        .map(serde_json::from_value::<Kind>);
    let env = |e: Option<&serde_json::Value>| -> EnvSummary {
        e.and_then(|e| serde_json::from_value(e.clone()).ok())
            .unwrap_or_default()
    };
    match kind {
        Some(Ok(Kind::AuditSweep)) => {
            let s: Sweep = serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
            let environment = env(result.pointer("/steps/0/result/environment"));
            let workload = RecordedWorkload::Known(s.workload.clone());
            let metrics = s.per_boot_metrics();
            Ok(ResultView::of_figures(
                name,
                Kind::AuditSweep,
                s.created_unix,
                workload,
                environment,
                metrics,
            ))
        }
        Some(Ok(Kind::Probe)) => {
            let p: ProbeResult =
                serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
            let workload = RecordedWorkload::Foreign(serde_json::json!({ "probe": p.target }));
            let created = crate::core::now_unix();
            Ok(ResultView::of_figures(
                name,
                Kind::Probe,
                created,
                workload,
                env(result.get("environment")),
                p.per_boot_metrics(),
            ))
        }
        _ => ResultView::from_text(name, &result.to_string()).map_err(|e| e.to_string()),
    }
}

fn figures_of(
    arm: &Arm,
    views: &[(u32, ResultView)],
    boots: &[BootRecord],
    rounds: u32,
    metric: &str,
) -> ArmFigures {
    let values: Vec<f64> = views
        .iter()
        .filter_map(|(_, v)| v.metric(metric).filter(|m| !m.values.is_empty()))
        .map(|m| crate::stats::median(&m.values))
        .collect();
    let mut releases: Vec<String> = views
        .iter()
        .filter_map(|(_, v)| v.environment.kernel_release.clone())
        .collect();
    releases.sort();
    releases.dedup();
    let good = boots
        .iter()
        .filter(|b| b.arm == arm.name && b.result().is_some())
        .count();
    ArmFigures {
        arm: arm.name.clone(),
        releases,
        good_boots: good,
        failed_boots: (rounds as usize).saturating_sub(good),
        summary: Summary::of(&values),
        values,
        counters: counters_of(views, metric),
        sets: sets_of(boots.iter().filter(|b| b.arm == arm.name)),
        functions: functions_of(boots.iter().filter(|b| b.arm == arm.name)),
    }
}

/// Each function's median over the boots of its kernel instructions per operation
/// (`--emulated-profile`), if they have any.
fn functions_of<'a>(boots: impl Iterator<Item = &'a BootRecord>) -> Option<EmulatedFunctions> {
    EmulatedFunctions::median(&result_fields(boots, "emulated_functions"))
}

/// The `field` of each boot's result that has one, read as a `T`.
fn result_fields<'a, T: serde::de::DeserializeOwned>(
    boots: impl Iterator<Item = &'a BootRecord>,
    field: &str,
) -> Vec<T> {
    boots
        .filter_map(|b| b.result()?.get(field).cloned())
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

/// Each set's median over the boots of its modelled misses per operation, if they have any.
fn sets_of<'a>(boots: impl Iterator<Item = &'a BootRecord>) -> Option<EmulatedSets> {
    let per_boot: Vec<EmulatedSets> = result_fields(boots, "emulated_sets");
    let median_of = |pick: fn(&EmulatedSets) -> &Vec<f64>| -> Vec<f64> {
        let sets = per_boot.iter().map(|s| pick(s).len()).min().unwrap_or(0);
        (0..sets)
            .map(|i| crate::stats::median(&per_boot.iter().map(|s| pick(s)[i]).collect::<Vec<_>>()))
            .collect()
    };
    (!per_boot.is_empty()).then(|| EmulatedSets {
        l1d: median_of(|s| &s.l1d),
        l1i: median_of(|s| &s.l1i),
    })
}

/// Every metric of the boots' results but `primary` (and the time, when the primary is a
/// time too), in the order they first appear, each the median over the boots that counted it
/// of their medians.
fn counters_of(views: &[(u32, ResultView)], primary: &str) -> Vec<CounterFigure> {
    use crate::results::MetricKind;
    let mut out: Vec<CounterFigure> = Vec::new();
    let mut per_boot: Vec<Vec<f64>> = Vec::new();
    let metrics = views.iter().flat_map(|(_, v)| &v.metrics);
    let timed = views
        .iter()
        .flat_map(|(_, v)| v.metric(primary))
        .any(|m| m.kind == MetricKind::Time);
    for m in metrics.filter(|m| m.name != primary && !(timed && m.kind == MetricKind::Time)) {
        let i = match out.iter().position(|c| c.name == m.name) {
            Some(i) => i,
            None => {
                out.push(CounterFigure {
                    name: m.name.clone(),
                    unit: m.unit.clone(),
                    boots: 0,
                    median: None,
                    status: m.status.clone(),
                    reason: m.reason.clone(),
                });
                per_boot.push(Vec::new());
                out.len() - 1
            }
        };
        if !m.values.is_empty() {
            per_boot[i].push(crate::stats::median(&m.values));
        }
    }
    for (c, values) in out.iter_mut().zip(per_boot) {
        c.boots = values.len();
        if !values.is_empty() {
            c.median = Some(crate::stats::median(&values));
            (c.status, c.reason) = (None, None);
        }
    }
    out
}

/// Each arm with 3 good boots or more (2 when they count emulated instructions) against the first, paired by round over the rounds in
/// which all of them were measured.
fn compare_arms(
    plan: &CampaignPlan,
    views: &[Vec<(u32, ResultView)>],
    warnings: &mut Vec<String>,
) -> Result<Option<Comparison>> {
    let exact = plan.backend.machine().is_some_and(|m| m.emulated_counters);
    let least = if exact { MIN_EXACT_BOOTS } else { MIN_BOOTS };
    let (arms, short): (Vec<usize>, Vec<usize>) =
        (0..views.len()).partition(|&i| views[i].len() >= least);
    for &i in &short {
        warnings.push(format!(
            "{}: {} good boot(s), fewer than {least}: its figures are shown, no verdict",
            plan.arms[i].name,
            views[i].len()
        ));
    }
    if arms.len() < 2 || arms[0] != 0 {
        return Ok(None);
    }
    let rounds: Vec<u32> = views[0]
        .iter()
        .map(|(r, _)| *r)
        .filter(|r| arms.iter().all(|&i| views[i].iter().any(|(x, _)| x == r)))
        .collect();
    let mut variants = Vec::new();
    for &i in &arms {
        let in_rounds: Vec<&ResultView> = views[i]
            .iter()
            .filter(|(r, _)| rounds.contains(r))
            .map(|(_, v)| v)
            .collect();
        let (v, w) = groups::boots_in_order(&plan.arms[i].name, &in_rounds)?;
        warnings.extend(w);
        variants.push(v);
    }
    let options = compare::Options {
        configurations: true,
        paired: true,
        ..plan.options.clone()
    };
    // The boots are kept whatever the comparison says: one it refuses is a warning.
    match compare::compare(variants, &options) {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            warnings.push(format!("no comparison: {e:#}"));
            Ok(None)
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn tried(arm: &str, round: u32, attempt: u32, outcome: Outcome) -> BootRecord {
        BootRecord {
            arm: arm.into(),
            round,
            attempt,
            seconds: 1.0,
            split: None,
            pinned: Vec::new(),
            outcome,
        }
    }

    fn failed(in_guest: bool) -> Outcome {
        Outcome::Failed {
            reason: "why".into(),
            console: Vec::new(),
            in_guest,
        }
    }

    /// A resumed campaign boots what its kept tries leave open, from the try after them, and
    /// nothing they finished.
    #[test]
    fn kept_tries_say_what_is_left_to_boot() {
        let measured = Outcome::Measured {
            result: serde_json::json!({}),
        };
        let kept = [
            tried("a", 1, 0, failed(false)),
            tried("a", 1, 1, measured),
            tried("b", 1, 0, failed(false)),
            tried("a", 2, 0, failed(true)),
            tried("b", 2, 0, failed(false)),
            tried("b", 2, 1, failed(false)),
        ];
        let slot =
            |arm: &str, round: u32, retries: u32| slot_of(&kept_tries(&kept, arm, round), retries);
        assert_eq!(slot("a", 1, 1), Slot::Done, "measured on its retry");
        assert_eq!(slot("b", 1, 1), Slot::Next(1), "killed before its retry");
        assert_eq!(
            slot("a", 2, 1),
            Slot::Repeats("why".into()),
            "failed in the guest"
        );
        assert_eq!(slot("b", 2, 1), Slot::Done, "its tries are spent");
        assert_eq!(slot("b", 2, 2), Slot::Next(2));
        assert_eq!(slot("a", 3, 1), Slot::Next(0), "not begun");
    }

    #[test]
    fn every_round_boots_every_arm_once_in_a_seeded_shuffle() {
        let o = order(4, 12, 7);
        assert_eq!(o.len(), 12);
        for r in &o {
            let mut s = r.clone();
            s.sort();
            assert_eq!(s, [0, 1, 2, 3]);
        }
        assert_eq!(o, order(4, 12, 7), "the seed repeats the order");
        assert_ne!(o, order(4, 12, 8));
        assert!(o.iter().any(|r| r != &o[0]), "rounds are shuffled anew");
    }

    #[test]
    fn a_boot_s_time_splits_with_its_wait_for_the_boot_work() {
        let clock = GuestClock {
            init: 2.0,
            settle_from: 2.1,
            measure_from: 2.6,
            measure_to: 4.0,
            sent: 4.2,
        };
        let s = BootSplit::of(&clock, 5.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(s.init, 0.3) && close(s.settle, 0.5) && close(s.measurement, 1.4));
        let parts = s.kernel + s.init + s.settle + s.measurement + s.outside;
        assert!(close(parts, 5.0), "{s}");
        assert!(s.to_string().contains("+ settling 0.50 s +"), "{s}");
        let at_once = BootSplit::of(
            &GuestClock {
                settle_from: 0.0,
                ..clock
            },
            5.0,
        );
        assert!(close(at_once.init, 0.8) && at_once.settle == 0.0);
        assert!(!at_once.to_string().contains("settling"), "{at_once}");
    }
}
