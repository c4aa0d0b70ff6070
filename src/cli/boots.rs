//! What `campaign` and `bisect` take alike: how each guest boots and counts ([`GuestOpts`]),
//! what each boot measures and how the result is compared, shown and kept ([`BootsOpts`]),
//! the checks of the measuring command on the host, and the line each boot prints as it ends.

use super::args::{HistoryOpts, parse_cpus, parse_duration, parse_resolution};
use super::*;
use crate::audit::rules_file::OnError;
use crate::boot::disk::GuestDisk;
use crate::boot::lava::BootMethod;
use crate::boot::outcome::Failure;
use crate::boot::qemu::{Accel, KernelEntry, Machine};
use crate::core::cpus::CpuList;
use crate::counters::emulated::CacheModel;
use crate::experiments::boots::ask::{BootAsk, Guest, MeasureCheck, Measured};
use crate::experiments::boots::{Backend, BootRecord, LavaTarget, Needed, Outcome, Served};
use anyhow::Context as _;
use std::time::Duration;

pub(super) use crate::experiments::boots::ask::Via;

/// What every boot of a campaign or a bisection measures, and how its result is compared,
/// shown and kept.
#[derive(Args, Debug, Clone)]
pub struct BootsOpts {
    #[command(flatten)]
    pub guest: GuestOpts,
    #[command(flatten)]
    pub lava: LavaOpts,
    /// The figure each boot gives, the arms are compared by (or the builds bisected by) and
    /// the headline is of, e.g. time, task-clock or instructions:k (emulated) [default:
    /// instructions (emulated) with --emulated-counters, whose exact counts decide with two
    /// boots per arm (one per build tried in a bisection); else the measurement's time]. A
    /// campaign still shows and compares every other figure.
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// The boot order of every round (and the bootstrap) is seeded by this number [default:
    /// from the clock, printed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Timed changes smaller than this percentage are never called a change (a campaign's
    /// arms, a bisection's ends).
    #[arg(long, default_value_t = crate::experiments::boots::ask::NOISE_THRESHOLD_PCT, value_name = "PCT")]
    pub noise_threshold: f64,
    /// Emulated counts closer than this percentage are equal. Two arms' counts differ when
    /// every boot of one is apart from every boot of the other by more than this and than
    /// either arm's own boot-to-boot range. The interrupts that land in a window are left out
    /// of its counts, so boots of one kernel agree to 0.0001 instruction per getpid here: the
    /// default is 0.03 instructions of a 305-instruction getpid, and one instruction decides
    /// with two boots per side.
    #[arg(long, default_value_t = compare::EXACT_FLOOR_PCT, value_name = "PCT", value_parser = parse_resolution)]
    pub exact_resolution: f64,
    /// A rules-file line that cannot be set up (here, or by the guest's kernel): stop, naming
    /// it, or continue without it (auditctl -i), with a warning in the arm's results.
    #[arg(long, value_enum, default_value_t = OnError::Stop, value_name = "WHAT")]
    pub audit_rules_errors: OnError,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the result (JSON: the plan, every boot's result or failure, and the comparison
    /// or the bisection's ends and steps) to FILE, atomically [a kexec campaign: default
    /// /var/lib/syscost/campaign-ID.json, written after its last boot].
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub keep: HistoryOpts,
    /// The syscost command measured in every boot, e.g. run syscall --runs 3. A boot's value:
    /// for run, the median of its runs; for audit sweep, the cost per rule it fitted; for
    /// probe, the time each hit added.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub measure: Vec<String>,
}

impl BootsOpts {
    /// What every boot is asked for, booted `via` QEMU, kexec or a lab: the flags as typed
    /// values (the plan is made from them below the command line).
    pub(super) fn ask(&self, via: Via) -> Result<BootAsk> {
        let l = &self.lava;
        if via != Via::Lava
            && (l.lava_url.is_some()
                || l.lava_files.is_some()
                || l.lava_device.is_some()
                || l.lava_events.is_some())
        {
            anyhow::bail!(
                "--lava-url, --lava-files, --lava-device and --lava-events are for boots on a \
                 LAVA lab: give --via lava too"
            );
        }
        let guest = self.guest.guest();
        let lava = match via {
            Via::Lava => Some(Box::new(self.lava.target(guest.machine(via))?)),
            _ => None,
        };
        Ok(BootAsk {
            via,
            guest,
            lava,
            measure: self.measure.clone(),
            rules_errors: self.audit_rules_errors,
            metric: self.metric.clone(),
            seed: self.seed,
            noise_threshold: self.noise_threshold,
            exact_resolution: self.exact_resolution,
        })
    }
}

/// How each boot's virtual machine runs and counts: shared by `campaign` and `bisect`.
#[derive(Args, Debug, Clone)]
pub struct GuestOpts {
    /// How the guest CPU runs: kvm (used only after a probe boot shows it works) or tcg
    /// (emulation; figures follow instructions executed, not hardware) [default: tcg with
    /// --emulated-counters, --emulated-profile, --cache-model or --icount, which count what
    /// QEMU emulates; else kvm].
    #[arg(long, value_enum)]
    pub accel: Option<Accel>,
    /// vCPUs of each guest [default: one per --host-cpus CPU; else 1 under tcg, 2 under
    /// kvm]. Under tcg one vCPU is the default because text patching races between two
    /// emulated vCPUs ("Oops: int3" in 1 of 50 boots of Debian's 6.12 here, none in 100 with
    /// one vCPU); a one-vCPU kernel runs its uniprocessor code (no lock prefixes), and the
    /// measurement uses one CPU. On more, the emulated counts are the vCPU a window began on
    /// (pin the measurement with its --cpu), and with --emulated-profile the lines it took
    /// from the other vCPUs.
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
    /// Count the guest's instructions, conditional branches and all branches (calls, jumps and
    /// returns too, as perf's `branches`), user and kernel apart, in
    /// every batch the measurement times, with syscost's own QEMU plugin (tcg only): each
    /// boot's run result (or each step of an audit sweep, whose fits then give instructions
    /// per rule; or a probe, each run of its command a window: instructions per hit) gains
    /// `instructions:k (emulated)` and the like per operation, `instructions (emulated)` the
    /// headline figure. Exact paths, not hardware: no cycles, no speculation. The windows are
    /// sized by count, not time: each run's are 1, 2 and 4 times a base batch (the workload's,
    /// e.g. 256 getpid calls, unless the measuring command gives --ops or --sample-time), and
    /// each count is its slope over them, so what a window pays once cancels and a figure is
    /// whole wherever the code is; time under the emulator is shown and sizes nothing. Two
    /// boots per arm decide (the range rule: every boot apart by more than the arms' own range
    /// and --exact-resolution). Once its boot's own work has ended (--settle), the guest measures
    /// at SCHED_FIFO 99 with RT throttling, the fair server, the soft-lockup watchdog and the
    /// audit backlog limit off, so no other task runs in the counted windows; one that still
    /// does is left out, and the result says how many.
    #[arg(long)]
    pub emulated_counters: bool,
    /// Model the caches too (implies --emulated-counters): every load and store of a window
    /// goes through an LRU model of L1d, every instruction fetch through one of L1i, and
    /// their misses through an L2 behind both when the model has one, adding loads, stores
    /// and the models' misses per operation, and the L1d and L1i misses of each set (the
    /// measured task's alone: the interrupts' accesses are left out of the models too). MODEL:
    /// host (this machine's L1s and L2, from sysfs), skylake-x (L1s of 32 KiB, 8-way, and an
    /// L2 of 1 MiB, 16-way, 64-byte lines: the audit series' machine) or
    /// SETSxWAYSxLINE[,SETSxWAYSxLINE[,SETSxWAYSxLINE]] (L1d, then L1i if it differs, then
    /// an L2); the L1i may be followed by up to 4 other L1i geometries, `+SETSxWAYSxLINE`
    /// each, fed the same fetches in the same boots (64x8x64+1x512x64: the same L1i and a
    /// fully associative one of its size), each its misses alone
    /// (`L1-icache-load-misses-1x512x64`).
    #[arg(long, value_name = "MODEL", value_parser = parse_cache_model)]
    pub cache_model: Option<CacheModel>,
    /// Where the kernel instructions go (implies --emulated-counters): the kernel
    /// instructions per operation of each function, exact, named from the guest's own
    /// kallsyms (each guest sends it with its result), adding up to instructions:k exactly,
    /// and between arms the functions that gained and lost most: the emulated counterpart of
    /// `run --profile`. With it, the atomic read-modify-writes (LOCK-prefixed instructions,
    /// XCHG with memory) per operation by function and the memory they touched; the guest
    /// boots with noreplace-smp, which keeps a kernel's LOCK prefixes on one vCPU. On more than
    /// one vCPU, the cache lines the measured vCPU took from the others too
    /// (`lines-moved:k (emulated)`: a coherence model over the vCPUs, which follows how the
    /// host runs their threads: a measurement, not an exact count; it slows a boot about 3x).
    #[arg(long)]
    pub emulated_profile: bool,
    /// Run each guest's clock on its instructions (QEMU's `-icount shift=SHIFT,sleep=off`,
    /// tcg only): every instruction takes 2^SHIFT ns of guest time and idle time is skipped,
    /// so the timer interrupts land at the same instructions in every boot instead of where
    /// the host's clock puts them. Timed figures then measure instructions, not time.
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u8).range(0..=10))]
    pub icount: Option<u8>,
    /// Before measuring, each guest waits up to this long for its boot's own work (kernel
    /// threads such as 6.12's crypto self-tests) to end: until its CPU shows no busy tick in
    /// 100 ms (from /proc/stat). Every instruction in a window counts under the emulator, so
    /// with --emulated-counters it waits [default: 30s with --emulated-counters, 0 (measure at
    /// once) otherwise]; a guest still busy at the limit measures anyway and its result says
    /// so. Either way, a window in which another task ran is left out of the counts.
    #[arg(long, value_name = "DURATION", value_parser = parse_settle)]
    pub settle: Option<Duration>,
    /// Memory of each guest, MiB.
    #[arg(long, default_value_t = crate::experiments::boots::ask::GUEST_MEMORY_MIB, value_name = "MIB", value_parser = clap::value_parser!(u32).range(128..=65536))]
    pub guest_memory: u32,
    /// A boot not powered off after this long is stopped and recorded as failed [default:
    /// 60s under kvm, 180s under tcg].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub boot_timeout: Option<Duration>,
    /// Tries after a failed boot, per boot.
    #[arg(long, default_value_t = crate::experiments::boots::ask::RETRIES, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// A host file the measurement needs inside the guest, at the same path (repeatable).
    #[arg(long = "guest-file", value_name = "PATH")]
    pub guest_files: Vec<PathBuf>,
    /// Give each QEMU guest a fresh disk of this file system (256 MiB, made on this machine
    /// before the boot, attached as NVMe, removed after it), mounted on /disk: measure on it
    /// with `--dir /disk`, as the 2015 function-alignment RFC ran its VFS-mix loop on ext4
    /// (the guest's own file systems are tmpfs). The kernel needs NVMe and ext4 built in, as
    /// Debian's cloud kernels and syscost's own builds (`reproduce --build`) have [default:
    /// none].
    #[arg(long, value_enum, value_name = "FS")]
    pub guest_disk: Option<GuestDisk>,
}

impl GuestOpts {
    /// The guest as asked for: what is not given is decided with the plan.
    pub(super) fn guest(&self) -> Guest {
        Guest {
            accel: self.accel,
            cpus: self.guest_cpus,
            host_cpus: self.host_cpus.clone(),
            entry: self.entry,
            emulated_counters: self.emulated_counters,
            cache_model: self.cache_model.clone(),
            emulated_profile: self.emulated_profile,
            icount: self.icount,
            settle: self.settle,
            memory_mib: self.guest_memory,
            boot_timeout: self.boot_timeout,
            retries: self.retries,
            files: self.guest_files.clone(),
            disk: self.guest_disk,
        }
    }
}

/// Where a LAVA campaign or bisection boots (`--via lava`).
#[derive(Args, Debug, Clone)]
pub struct LavaOpts {
    /// With --via lava: the LAVA server, e.g. https://lava.example.org/ (its REST API is
    /// under api/v0.2/). A password in the URL is neither used nor kept: the token
    /// authenticates.
    #[arg(long, value_name = "URL")]
    pub lava_url: Option<String>,
    /// With --via lava: the device type every job asks for. A qemu type: each job boots the
    /// arm's kernel under tcg there, with syscost's plugin when it counts (exact counts: on
    /// any device of the type as it frees up).
    #[arg(long, default_value = "qemu", value_name = "TYPE")]
    pub lava_device_type: String,
    /// With --via lava: how the type's devices boot: qemu (a QEMU device type), or ipxe (an
    /// x86 board, LAVA's x86 type and its kind: the kernel and the initramfs by TFTP, started
    /// by iPXE with the board's console; time and the board's own hardware counters, no
    /// emulated ones).
    #[arg(long, value_enum, default_value_t = BootMethod::Qemu, value_name = "METHOD")]
    pub lava_boot: BootMethod,
    /// With --via lava: every job on this device of the type [default: for timed boots, the
    /// first device in good health with a tag of its own, as LAVA reaches one device only by
    /// a tag (an arm compared across devices would measure the devices); exact counts on
    /// any]. A device in Bad, Maintenance or Looping health is refused. Kept for a resume.
    #[arg(long, value_name = "NAME")]
    pub lava_device: Option<String>,
    /// With --via lava: a file holding the server's API token [default: the environment's
    /// SYSCOST_LAVA_TOKEN]. Read when the campaign starts and when it resumes; never
    /// printed, nor kept in results, history or state.
    #[arg(long, value_name = "FILE")]
    pub lava_token_file: Option<PathBuf>,
    /// With --via lava: put the kernels, the initramfs and the plugin in DIR, which a web
    /// server of yours serves at URL, for a lab on other machines to fetch (each file named
    /// by its SHA-256, which the job checks) [default: file:// URLs of the files where they
    /// are, for a lab whose workers run on this machine].
    #[arg(long, value_name = "DIR=URL")]
    pub lava_files: Option<String>,
    /// With --via lava: a job still waiting for a device this long after its submission is
    /// cancelled, and is a failed boot.
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = parse_duration)]
    pub lava_queue_limit: Duration,
    /// With --via lava: submit no job while the lab's queue for the device type already holds
    /// N jobs (everyone's, waiting for a device), as KernelCI's default does; syscost waits,
    /// saying so, until the queue is shorter.
    #[arg(long, default_value_t = 50, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100000))]
    pub lava_queue_depth: u32,
    /// With --via lava and --emulated-counters: jobs under way at once, on as many devices
    /// as the lab frees (exact counts do not depend on when or where a boot runs). Timed
    /// boots go one job at a time, in the schedule's order.
    #[arg(long, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub lava_jobs: u32,
    /// With --via lava: where the jobs stand in the lab's queue: low, medium, high, or a
    /// number from 0 (low) to 100 (high). Low by default, so a shared lab's own work goes
    /// first (KernelCI ranks its jobs from 20 to 80 of a lab's range; LKFT's lab caps
    /// submitters at 25).
    #[arg(long, default_value = "low", value_name = "LEVEL", value_parser = crate::boot::lava::JobPriority::parse)]
    pub lava_priority: crate::boot::lava::JobPriority,
    /// With --via lava: who may see the jobs and their results in the lab: public (anyone
    /// who can read it) or personal (the token's user alone).
    #[arg(long, value_enum, default_value_t = crate::boot::lava::JobVisibility::Public, value_name = "WHO")]
    pub lava_visibility: crate::boot::lava::JobVisibility,
    /// With --via lava: LAVA's event stream, followed to hear at once that a job ended
    /// (lava-publisher's websocket; an http(s):// or ws(s):// URL), or off [default: the
    /// server's ws/, where LAVA's web server configuration serves it]. While it answers, the
    /// API is asked about the jobs every 5 s, as a safety net; a stream that does not answer
    /// (said once) or is off leaves syscost asking every 0.5 s.
    #[arg(long, value_name = "URL")]
    pub lava_events: Option<String>,
}

impl LavaOpts {
    /// Where the boots go, each a QEMU as `machine` says on the lab's devices.
    fn target(&self, machine: Machine) -> Result<LavaTarget> {
        let url = self
            .lava_url
            .as_deref()
            .context("--via lava needs --lava-url URL (the LAVA server)")?;
        let files = match &self.lava_files {
            None => None,
            Some(spec) => {
                let (dir, url) = spec.split_once('=').context(
                    "--lava-files takes DIR=URL: the directory the files are put in, and the \
                     URL a web server serves it at",
                )?;
                let dir = std::path::absolute(dir)?;
                crate::boot::lava::shown_url(url).context("--lava-files")?;
                Some(Served {
                    dir,
                    url: url.to_string(),
                })
            }
        };
        Ok(LavaTarget {
            lab: crate::boot::lava::shown_url(url)?,
            device_type: self.lava_device_type.clone(),
            boot: self.lava_boot,
            device: self.lava_device.clone(),
            pin: None,
            token_file: (self.lava_token_file.as_ref())
                .map(std::path::absolute)
                .transpose()?,
            machine,
            files,
            queue_limit: self.lava_queue_limit,
            queue_depth: self.lava_queue_depth,
            jobs: self.lava_jobs,
            priority: self.lava_priority,
            visibility: self.lava_visibility,
            events: match &self.lava_events {
                None => Default::default(),
                Some(u) => crate::boot::lava_events::EventsAt::parse(u).map_err(|e| {
                    anyhow::anyhow!("--lava-events {}: {e}", crate::core::redact_url(u))
                })?,
            },
        })
    }
}

/// Cancel in LAVA the `jobs` a killed LAVA campaign or bisection left submitted.
pub(super) fn cancel_jobs(
    backend: Option<&Backend>,
    jobs: &[crate::experiments::boots::PendingJob],
) -> Result<()> {
    let Some(Backend::Lava(t)) = backend else {
        return Ok(());
    };
    if jobs.is_empty() {
        return Ok(());
    }
    let token = crate::boot::lava::Token::read(t.token_file.as_deref())?;
    let lab = crate::boot::lava::Lab::new(&t.lab, token)?;
    for j in jobs {
        lab.cancel(j.id)
            .with_context(|| format!("cannot cancel LAVA job {} ({})", j.id, lab.job_url(j.id)))?;
        println!("LAVA job {} cancelled ({})", j.id, lab.job_url(j.id));
    }
    Ok(())
}

/// A LAVA boot's tags: the lab, its job, the device and the worker it ran on.
pub(super) fn lab_tags(j: &crate::boot::lava::LabJob) -> Vec<String> {
    let mut t = vec![format!("lab={}", j.lab), format!("lava-job={}", j.url)];
    t.extend(j.device.iter().map(|d| format!("device={d}")));
    t.extend(j.worker.iter().map(|w| format!("worker={w}")));
    t
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

/// The check of measuring commands by the guest's own parser, for `owner` (`campaign`,
/// `bisect`), as its errors name it.
pub(crate) struct Checker(pub &'static str);

impl MeasureCheck for Checker {
    fn check(&self, words: &[String], guest_cpus: Option<u32>) -> Result<Measured> {
        check_measure(self.0, words, guest_cpus)
    }
}

/// Refuse, before any boot, a measuring command the guest could not run: it is parsed here by
/// the parser the guest's syscost uses, with the `-o` the guest adds, and must measure (run,
/// audit sweep or probe), on CPUs the guest has (`guest_cpus`, for QEMU boots). Returns the
/// rules file it reads (`--audit-rules`), and the
/// files it needs in the guest (a probe's target and program).
fn check_measure(owner: &str, words: &[String], guest_cpus: Option<u32>) -> Result<Measured> {
    let said = format!("`syscost {}`", crate::core::printable(&words.join(" ")));
    let parse = |words: Vec<String>| parse_measure(owner, words, &said);
    let (parsed, matches) = parse(words.to_vec())?;
    if let Some(flag) = super::args::output_options_given(&matches).first() {
        anyhow::bail!(
            "{flag} after -- goes to the syscost each boot runs, whose output nobody reads: give \
             {owner}'s own {flag} before -- for what {owner} shows and writes"
        );
    }
    let mut needs = Vec::new();
    let (cpus, rules) = match parsed.command {
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
    Ok(Measured { needs, rules })
}

/// The measuring command `words` parsed as the guest's syscost parses it, or why it would fail
/// in every boot (`owner`: the command it follows, `said`: the words as a message shows them).
fn parse_measure(owner: &str, words: Vec<String>, said: &str) -> Result<(Cli, clap::ArgMatches)> {
    use clap::{CommandFactory, FromArgMatches};
    let first = crate::core::printable(words.first().map_or("run", String::as_str));
    let argv = std::iter::once("syscost".to_string()).chain(words);
    let parsed = Cli::command()
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    parsed.map_err(|e| {
        if let Some(hint) = super::args::owner_hint(&e, &[owner]) {
            return anyhow::anyhow!("{hint} (what follows -- is the command each boot runs)");
        }
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
}

fn parse_cache_model(s: &str) -> std::result::Result<CacheModel, String> {
    CacheModel::parse(s)
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
