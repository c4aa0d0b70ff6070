//! Boots as LAVA jobs: each try at an arm is one job on a lab's `qemu` devices, the guest
//! syscost's own initramfs under TCG (with syscost's plugin when it counts, so exact counts
//! come back alike from any worker), or on an x86 board that starts the same kernel and
//! initramfs from the network by iPXE (timed, every job on one device: [`super::pin`]). The guest
//! sends its result as lines on the console
//! (`boot::console`), the only thing of a boot a lab keeps; syscost rebuilds it from the job's
//! log, with the plugin's counts (QEMU's own log, on the same console), into the same
//! [`BootRecord`] a QEMU boot on this machine gives, with the job it ran as.

use super::plan::{BootPlan, LavaTarget, Pin, Served};
use super::qemu::{build_initramfs, guest_args, kernel_command_line, record_of};
use super::record::{BootRecord, Decoded};
use super::schedule::{Boot, Next};
use crate::boot::bzimage::Entry;
use crate::boot::console::{self, CASE_PATTERN, Case};
use crate::boot::guest;
use crate::boot::lava::{self, BootMethod, Job, Lab, LabJob};
use crate::boot::lava_events::{Events, EventsAt};
use crate::boot::outcome::{self, Ended, Failure};
use crate::boot::qemu;
use crate::core::input::Opt;
use crate::counters::emulated::Window;
use anyhow::{Context, Result};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The kernel's words as it panics, and as it reboots after the panic (a board's boots run
/// with panic=1: with -1 the kernel reboots at once, saying nothing more).
const PANIC: &str = "Kernel panic - not syncing";
const REBOOTING: &str = "Rebooting in [0-9]+ seconds";

/// What differs between a `qemu` device's job and a board's: the context, the deploy and
/// boot actions, and the monitor's start and end.
type JobParts = (serde_json::Value, [serde_json::Value; 2], (String, String));

/// Jobs that end in an infrastructure error (the boot never ran) are submitted again, up to
/// this many times per try.
const INFRA_RETRIES: u32 = 3;

/// Between looks at the open jobs without an event stream: a job's end is heard 0.25 s late
/// on average, for a request to the lab each time.
const POLL: Duration = Duration::from_millis(500);

/// Between looks at the open jobs while the event stream lasts: a safety net, should an event
/// be lost.
const EVENTS_NET: Duration = Duration::from_secs(5);

/// The event stream `at` says, for the lab at `lab`; `None` (said once) when it is off or
/// does not answer.
fn follow(at: &EventsAt, lab: &str) -> Option<Events> {
    let url = at.url(lab)?;
    match Events::connect(&url) {
        Ok(e) => Some(e),
        Err(e) => {
            let how = crate::said!(
                "syscost: LAVA's event stream did not answer (",
                format!("{e:#}"),
                format!(
                    "): asking the lab about its jobs every {} s (",
                    POLL.as_secs_f64()
                ),
                Opt::LavaEvents,
                " says where it is)"
            );
            eprintln!("{}", how.spell(crate::core::input::spelled));
            None
        }
    }
}

/// Seconds between looks at a full queue: a job takes minutes, a look costs the lab a query.
const QUEUE_POLL_S: u64 = 10;

/// A file the lab fetches: its URL and SHA-256.
#[derive(Clone, Debug)]
struct Artifact {
    url: String,
    sha256: String,
    len: u64,
}

impl Artifact {
    /// `file`, as the lab reaches it: a copy named by its content in the served directory at
    /// its URL, or with `keep` (a lab on this machine) a copy in `keep` by a file:// URL
    /// (`keep: None`: the file where it is, for a kernel).
    fn of(file: &Path, served: Option<&Served>, keep: Option<&Path>) -> Result<Artifact> {
        Self::from_file(file, served, keep, false)
    }

    /// [`Artifact::of`] a file this run made (the initramfs, the plugin, a vmlinux), which
    /// may be linked where the lab fetches it instead of copied.
    fn made(file: &Path, served: Option<&Served>, keep: Option<&Path>) -> Result<Artifact> {
        Self::from_file(file, served, keep, true)
    }

    fn from_file(
        file: &Path,
        served: Option<&Served>,
        keep: Option<&Path>,
        ours: bool,
    ) -> Result<Artifact> {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let sha256 = crate::core::sha256_hex(&bytes);
        let name = file
            .file_name()
            .map_or("file".into(), |n| n.to_string_lossy());
        // Named by content: arms and campaigns that share a file share its copy.
        let named = format!("{}-{name}", &sha256[..16]);
        let copy = |dir: &Path| -> Result<()> {
            put(file, &bytes, &dir.join(&named), ours)
                .with_context(|| format!("cannot put {name} in {}", dir.display()))
        };
        let url = match (served, keep) {
            (Some(s), _) => {
                copy(&s.dir)?;
                format!("{}/{named}", s.url.trim_end_matches('/'))
            }
            (None, Some(dir)) => {
                copy(dir)?;
                format!(
                    "file://{}",
                    std::fs::canonicalize(dir.join(&named))?.display()
                )
            }
            (None, None) => format!("file://{}", std::fs::canonicalize(file)?.display()),
        };
        Ok(Artifact {
            url,
            sha256,
            len: bytes.len() as u64,
        })
    }

    /// A file the lab fetches from `url`, where this machine fetched `copy` from: the job
    /// carries the SHA-256 of the bytes checked here.
    fn at(url: &str, copy: &Path) -> Result<Artifact> {
        let bytes =
            std::fs::read(copy).with_context(|| format!("cannot read {}", copy.display()))?;
        Ok(Artifact {
            url: url.to_string(),
            sha256: crate::core::sha256_hex(&bytes),
            len: bytes.len() as u64,
        })
    }

    fn image(&self, arg: &str) -> serde_json::Value {
        json!({"url": self.url, "sha256sum": self.sha256, "image_arg": arg})
    }
}

/// Put `file` (its `bytes`) at `to`, where the lab fetches it, unless a copy is there: a hard
/// link when it is a file this run made (`ours`) on the same file system (made whole or not at
/// all), else an atomic copy. A 57 MB vmlinux and a 23 MB initramfs were written twice and
/// synced: a one-arm campaign took 1.55 s from its start to its first job's validation here,
/// and 0.87-1.24 s linked.
fn put(file: &Path, bytes: &[u8], to: &Path, ours: bool) -> Result<()> {
    if to.metadata().is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(());
    }
    if ours {
        // A copy cut short (its length differs) goes; the name is the content's.
        let _ = std::fs::remove_file(to);
        if std::fs::hard_link(file, to).is_ok() {
            return Ok(());
        }
    }
    crate::core::write_atomic(to, bytes)
}

/// Arm `a`'s kernel as the lab fetches it, and how it starts. On a `qemu` device a kernel of
/// this machine starts at its PVH entry, as a direct boot's does (its vmlinux, taken out into
/// `vmlinux` and put where the lab fetches it: no decompression under TCG, about 2 s of
/// every job); a kernel at a URL, which the lab fetches from there, starts as its bzImage. A
/// board's boot loader starts the bzImage.
fn kernel_of(
    a: &super::Arm,
    target: &LavaTarget,
    vmlinux: &Path,
    served: Option<&Served>,
    keep: Option<&Path>,
) -> Result<(Artifact, Option<Entry>)> {
    let on_qemu = target.boot == BootMethod::Qemu;
    if let Some(u) = &a.url {
        let why = "fetched by the lab from its URL".to_string();
        return Ok((
            Artifact::at(&u.url, &a.kernel)?,
            on_qemu.then_some(Entry::BzImage(why)),
        ));
    }
    if !on_qemu {
        return Ok((Artifact::of(&a.kernel, served, None)?, None));
    }
    let entry = super::qemu::start_entry(target.machine.entry, &a.kernel, vmlinux)?;
    let artifact = match &entry {
        Entry::Pvh(file) => Artifact::made(file, served, keep)?,
        Entry::BzImage(_) => Artifact::of(&a.kernel, served, None)?,
    };
    Ok((artifact, Some(entry)))
}

/// Boots arms of a plan as LAVA jobs, one at a time, from what every job shares: the
/// initramfs, the plugin and each arm's kernel, where the lab fetches them.
pub(crate) struct LavaBooter<'p> {
    plan: &'p BootPlan,
    target: &'p LavaTarget,
    lab: Box<dyn lava::LabApi + 'p>,
    /// Names the jobs: the campaign or bisection.
    tag: String,
    initrd: Artifact,
    plugin: Option<Artifact>,
    kernels: Vec<Artifact>,
    /// How each arm's kernel starts on a `qemu` device (none on a board).
    entries: Vec<Option<Entry>>,
    symbols: Vec<Option<super::emulated::ArmSymbols>>,
    /// Told of each job as it is submitted and as it ends.
    on_job: Box<dyn FnMut(JobEvent) + 'p>,
    /// Jobs submitted before (by a run killed since): waited for, never submitted again.
    pending: Vec<PendingJob>,
    /// The server takes `device:` in a job (LAVA 2026.07 and later): a pinned job names its
    /// device rather than its tag.
    device_key: bool,
    /// Each arm's kernel release, as its bzImage header says, for the jobs' metadata.
    releases: Vec<Option<String>>,
    /// Whether Ctrl-C (or SIGTERM, SIGHUP) came: [`crate::signals::check`], or a test's own.
    interrupted: Box<dyn Fn() -> Result<(), crate::signals::Interrupted> + 'p>,
    /// LAVA's event stream while it lasts: the open jobs are looked at when it names one.
    events: Option<Events>,
    /// Sleeps between polls without it: `std::thread::sleep`, or a test's own.
    nap: Box<dyn Fn(Duration) + 'p>,
}

/// What a LAVA campaign or bisection brings to its boots besides the plan: the lab (with the
/// token), the name its jobs carry, the jobs a killed run submitted, and who keeps each job's
/// id as it is submitted.
pub(crate) struct LavaRun<'a> {
    pub lab: Lab,
    pub tag: String,
    /// Where the initramfs and the plugin stay while the run lasts, for a lab on this
    /// machine to fetch by file:// URLs (a killed run's jobs still fetch them): the caller
    /// removes it at the run's end.
    pub files: std::path::PathBuf,
    pub pending: Vec<PendingJob>,
    pub on_job: Box<dyn FnMut(JobEvent) + 'a>,
}

/// What a run hears of its jobs, to keep those a resume must wait for.
pub(crate) enum JobEvent<'a> {
    /// Submitted for a try.
    Submitted(&'a PendingJob),
    /// Read back, or cancelled: nothing to wait for.
    Ended(u64),
}

impl JobEvent<'_> {
    /// The jobs a resume must wait for, after this event.
    pub(crate) fn apply(&self, jobs: &mut Vec<PendingJob>) {
        match self {
            JobEvent::Submitted(job) => jobs.push((*job).clone()),
            JobEvent::Ended(id) => jobs.retain(|j| j.id != *id),
        }
    }
}

/// A job submitted for a try, not yet read back.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PendingJob {
    pub arm: String,
    pub round: u32,
    pub attempt: u32,
    pub id: u64,
}

/// What every job of a run fetches, put where the lab reaches it.
struct Files {
    initrd: Artifact,
    plugin: Option<Artifact>,
    kernels: Vec<Artifact>,
    /// How each arm's kernel starts on a `qemu` device (none on a board).
    entries: Vec<Option<Entry>>,
}

impl Files {
    /// Build the initramfs, the plugin and each arm's kernel in `dir`, and put them in the
    /// served directory, or (a lab on this machine) in `keep`, made here.
    fn make(
        plan: &BootPlan,
        target: &LavaTarget,
        rules: &[(String, String)],
        dir: &Path,
        keep: &Path,
    ) -> Result<Files> {
        let served = target.files.as_ref();
        match served {
            Some(s) => std::fs::create_dir_all(&s.dir).with_context(|| {
                crate::refused!(Opt::LavaFiles, ": cannot create ", s.dir.display())
            })?,
            None => crate::experiments::boots::kept::make_dir(keep)?,
        }
        let keep = Some(keep);
        let initrd = Artifact::made(&build_initramfs(plan, rules, dir)?, served, keep)?;
        let plugin = match target.machine.emulated_counters {
            true => {
                let p = dir.join("tcg_count.so");
                std::fs::write(&p, crate::counters::emulated::PLUGIN)?;
                Some(Artifact::made(&p, served, keep)?)
            }
            false => None,
        };
        let mut made: Vec<(Artifact, Option<Entry>)> = Vec::new();
        for (i, a) in plan.arms.iter().enumerate() {
            // Arms of one kernel (audit0 and audit1 of one build) share its vmlinux.
            let same =
                (plan.arms[..i].iter()).position(|b| (&b.kernel, &b.url) == (&a.kernel, &a.url));
            let one = match same {
                Some(j) => made[j].clone(),
                None => {
                    let vmlinux = dir.join(format!("vmlinux-{i}"));
                    kernel_of(a, target, &vmlinux, served, keep)
                        .with_context(|| format!("arm {}", a.name))?
                }
            };
            made.push(one);
        }
        let (kernels, entries) = made.into_iter().unzip();
        Ok(Files {
            initrd,
            plugin,
            kernels,
            entries,
        })
    }
}

impl<'p> LavaBooter<'p> {
    /// Check the lab (the token, the device type, a job it validates) and put what the jobs
    /// fetch where it reaches it. The lab's checks (five requests, about 0.2 s here) go on
    /// beside the files' making (the vmlinux's decompression alone takes 0.5 s), not before.
    pub(crate) fn start(
        plan: &'p BootPlan,
        target: &'p LavaTarget,
        run: LavaRun<'p>,
        rules: &[(String, String)],
    ) -> Result<LavaBooter<'p>> {
        let lab = run.lab;
        // Built here, then put where the lab fetches them.
        let dir = crate::boot::workdir()?;
        let (checked, files) = std::thread::scope(|s| {
            let checks = s.spawn(|| -> Result<_> {
                let (server, devices) = (lab.check()?, lab.devices(&target.device_type)?);
                Ok((server, devices, follow(&target.events, lab.url())))
            });
            let files = Files::make(plan, target, rules, dir.path(), &run.files);
            let checked = checks
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the lab's checks panicked")));
            (checked, files)
        });
        let (server, devices, events) = checked?;
        let Files {
            initrd,
            plugin,
            kernels,
            entries,
        } = files?;
        let on = match &target.pin {
            Some(p) => format!("every job on {}", p.device),
            None => "jobs on any of them".into(),
        };
        eprintln!(
            "syscost: LAVA {} at {}{}: {} device(s) of type {}, {on}",
            server.version,
            lab.url(),
            server.as_whom(),
            devices.len(),
            target.device_type
        );
        let served = target.files.as_ref();
        let booter = LavaBooter {
            plan,
            target,
            lab: Box::new(lab),
            tag: run.tag,
            initrd,
            plugin,
            kernels,
            symbols: plan.arms.iter().map(|_| None).collect(),
            entries,
            on_job: run.on_job,
            pending: run.pending,
            device_key: server.takes_device_key(),
            releases: (plan.arms.iter())
                .map(|a| crate::boot::bzimage::release(&a.kernel))
                .collect(),
            interrupted: Box::new(crate::signals::check),
            events,
            nap: Box::new(std::thread::sleep),
        };
        if let Some(s) = served {
            booter.check_served(s)?;
        }
        let first = booter.definition(0, 1, 0)?;
        booter.lab.validate(&first)?;
        Ok(booter)
    }

    /// How each arm's kernel started on the lab's `qemu` devices (none on boards).
    pub(crate) fn entries(&self) -> Vec<super::ArmEntry> {
        let arms = self.plan.arms.iter().zip(&self.entries);
        arms.filter_map(|(a, e)| e.as_ref().map(|e| e.of(&a.name)))
            .collect()
    }

    /// Every file a job fetches must be served at its URL: refused before any job otherwise.
    fn check_served(&self, s: &Served) -> Result<()> {
        // A kernel at its own URL was fetched from there already.
        let copied = (self.kernels.iter().zip(&self.plan.arms)).filter(|(_, a)| a.url.is_none());
        let all = (copied.map(|(k, _)| k))
            .chain([&self.initrd])
            .chain(&self.plugin);
        for a in all {
            self.lab.check_served(&a.url, a.len).with_context(|| {
                crate::refused!(
                    Opt::LavaFiles,
                    format!(
                        ": the lab would not get the files put in {}: the web server must \
                         serve that directory at {}",
                        s.dir.display(),
                        crate::core::redact_url(&s.url)
                    )
                )
            })?;
        }
        Ok(())
    }

    /// The job of one try at arm `a`, as the text submitted (JSON, which YAML reads).
    fn definition(&self, a: usize, round: u32, attempt: u32) -> Result<String> {
        let (plan, m) = (self.plan, &self.target.machine);
        let arm = &plan.arms[a];
        let boot_s = m.timeout.as_secs().max(60);
        let (context, deploy_boot, (start, end)) = match self.target.boot {
            BootMethod::Qemu => self.on_qemu(a, boot_s),
            BootMethod::Ipxe => self.on_board(a, boot_s),
        };
        let mut job = json!({
            "device_type": self.target.device_type,
            "job_name": format!("syscost {}: {} round {round} try {}", self.tag, arm.name, attempt + 1),
            "visibility": self.target.visibility.name(),
            "priority": self.target.priority.json(),
            "timeouts": {
                "job": {"seconds": boot_s + 600},
                "action": {"seconds": boot_s + 300},
                "queue": {"seconds": self.target.queue_limit.as_secs().max(1)},
                // The console may be silent for the whole boot and measurement (a quiet
                // kernel, the settle): LAVA's default would end the job.
                "connection": {"seconds": boot_s},
            },
            "metadata": {
                "syscost.run": self.tag,
                "syscost.arm": arm.name,
                "syscost.round": round.to_string(),
                "syscost.try": (attempt + 1).to_string(),
            },
            "context": context,
            "actions": [
                deploy_boot[0],
                deploy_boot[1],
                {"test": {"timeout": {"seconds": boot_s}, "monitors": [{
                    "name": "syscost",
                    "start": start,
                    "end": end,
                    "pattern": CASE_PATTERN,
                    "fixupdict": {"pass": "pass", "fail": "fail"},
                }]}},
            ],
        });
        // What a lab's readers (KernelCI's and LKFT's dashboards) look up a job by.
        if let Some(release) = &self.releases[a] {
            job["metadata"]["kernel.version"] = json!(release);
        }
        match &self.target.pin {
            Some(pin) if self.device_key => job["device"] = json!(pin.device),
            Some(Pin { tag: Some(tag), .. }) => job["tags"] = json!([tag]),
            _ => {}
        }
        Ok(serde_json::to_string_pretty(&job)?)
    }

    /// A job's context, its deploy and boot actions and its monitor's start and end on a
    /// `qemu` device: the kernel, the initramfs and the plugin as QEMU's own options.
    fn on_qemu(&self, a: usize, boot_s: u64) -> JobParts {
        let m = &self.target.machine;
        let mut images = serde_json::Map::new();
        let append = kernel_command_line(
            &self.plan.arms[a],
            m.emulated_profile && self.symbols[a].is_none(),
        );
        images.insert(
            "kernel".into(),
            self.kernels[a].image(&format!("-kernel {{kernel}} -append \"{append}\"")),
        );
        images.insert("initrd".into(), self.initrd.image("-initrd {initrd}"));
        let mut options = extra_options(m);
        if let Some(p) = &self.plugin {
            // The plugin's counts to the guest's second serial port, through a socket of
            // this job's own on the worker (QEMU removes it when it ends).
            let socket = format!("/tmp/syscost-{:016x}.sock", rand::random::<u64>());
            let arg = qemu::plugin_arg(m, Path::new("{plugin}"));
            images.insert(
                "plugin".into(),
                p.image(&format!("-plugin {arg},counts={socket} -d plugin")),
            );
            options.extend(counts_port_options(&socket));
        }
        let context = json!({
            "arch": "x86_64",
            "no_kvm": true,
            "memory": m.memory_mib,
            "model": NIC,
            "extra_options": options,
        });
        let actions = [
            json!({"deploy": {"to": "tmpfs", "timeout": {"minutes": 10}, "images": images}}),
            json!({"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"seconds": boot_s}}}),
        ];
        // A panic ends QEMU (-no-reboot), and the job with it.
        let marks = (console::BEGIN.to_string(), console::END.to_string());
        (context, actions, marks)
    }

    /// A job's parts on an x86 board: the kernel and the initramfs by TFTP (the initramfs as
    /// it is: LAVA adds nothing to it), booted by iPXE with the board's own console and
    /// network arguments, and the guest's after them.
    fn on_board(&self, a: usize, boot_s: u64) -> JobParts {
        let file = |x: &Artifact| json!({"url": x.url, "sha256sum": x.sha256});
        let mut ramdisk = file(&self.initrd);
        ramdisk["install_overlay"] = json!(false);
        ramdisk["install_modules"] = json!(false);
        let kernel = file(&self.kernels[a]);
        // panic=1: the kernel says it reboots, which ends the job's monitor (see PANIC).
        let args = guest_args(&self.plan.arms[a], false, 1);
        let context = json!({ "extra_kernel_args": args });
        let actions = [
            json!({"deploy": {"to": "tftp", "timeout": {"minutes": 10},
                "kernel": kernel, "ramdisk": ramdisk}}),
            json!({"boot": {"method": "ipxe", "commands": "ramdisk",
                "timeout": {"seconds": boot_s}}}),
        ];
        // A board whose kernel panics starts its boot loader again and never powers off: the
        // panic's own lines end the monitor, not its timeout.
        let marks = (
            format!("{}|{PANIC}", console::BEGIN),
            format!("{}|{REBOOTING}", console::END),
        );
        (context, actions, marks)
    }

    /// The job of this try: one submitted before (by a run killed since), else a new one.
    fn submit(&mut self, a: usize, round: u32, attempt: u32) -> Result<u64> {
        let name = &self.plan.arms[a].name;
        if let Some(p) = (self.pending.iter())
            .find(|p| &p.arm == name && p.round == round && p.attempt == attempt)
        {
            eprintln!(
                "syscost: LAVA job {} was submitted before: waiting for it",
                p.id
            );
            return Ok(p.id);
        }
        // A pinned run's device is checked before each job: taken out of service since the
        // last one, it would keep the job queued until the limit.
        if let Some(pin) = &self.target.pin {
            let health = self.lab.health(&pin.device)?;
            let what = "this run's jobs stay on it";
            if let Some(e) = super::pin::unhealthy(&pin.device, health, what) {
                return Err(e);
            }
        }
        self.wait_for_room()?;
        let id = self.lab.submit(&self.definition(a, round, attempt)?)?;
        let p = PendingJob {
            arm: name.clone(),
            round,
            attempt,
            id,
        };
        (self.on_job)(JobEvent::Submitted(&p));
        Ok(id)
    }

    /// Wait while the lab's queue for the device type holds `queue_depth` jobs or more, saying
    /// so once: a lab's other users keep their place.
    fn wait_for_room(&self) -> Result<()> {
        let (kind, depth) = (&self.target.device_type, self.target.queue_depth);
        let mut told = false;
        loop {
            let queued = self.lab.queued(kind)?;
            if queued < u64::from(depth) {
                return Ok(());
            }
            if !told {
                let jobs = if queued == 1 { "job" } else { "jobs" };
                let said = crate::said!(
                    format!("syscost: the lab's queue for {kind} devices holds {queued} {jobs} ("),
                    Opt::LavaQueueDepth,
                    format!(" {depth}): waiting for it to shorten before submitting")
                );
                eprintln!("{}", said.spell(crate::core::input::spelled));
                told = true;
            }
            for _ in 0..QUEUE_POLL_S * 2 {
                (self.interrupted)()?;
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }

    /// Where `job` stands: ended, or cancelled after waiting in the queue beyond the limit
    /// (since `since`, its submission), or still under way (`None`).
    fn waited(&self, job: Job, since: Instant) -> Result<Option<Waited>> {
        let id = job.id;
        if job.finished() {
            return Ok(Some(Waited::Ended(job)));
        }
        if job.queued() && since.elapsed() > self.target.queue_limit {
            self.lab.cancel(id)?;
            return Ok(Some(Waited::Queued(job)));
        }
        Ok(None)
    }

    /// Where job `id` ran.
    fn lab_job(&self, job: &Job) -> LabJob {
        let worker = (job.actual_device.as_deref()).and_then(|d| self.lab.worker_of(d).ok());
        LabJob {
            lab: self.lab.url().to_string(),
            id: job.id,
            url: self.lab.job_url(job.id),
            device: job.actual_device.clone(),
            worker,
        }
    }
}

enum Waited {
    Ended(Job),
    Queued(Job),
}

impl Boot for LavaBooter<'_> {
    fn boot(&mut self, a: usize, round: u32, attempt: u32) -> Result<BootRecord> {
        let mut out = None;
        let one = Next {
            arm: a,
            round,
            attempt,
            slot: 0,
        };
        self.boot_all(&[one], &mut |b| out = Some(b))?;
        out.context("the job ended without a record")
    }

    /// Exact counts do not depend on when or where a boot runs: a round's jobs go at once,
    /// up to the limit. Timed boots keep the schedule's order, one job at a time.
    fn in_flight(&self) -> usize {
        match self.target.machine.emulated_counters {
            true => self.target.jobs.max(1) as usize,
            false => 1,
        }
    }

    /// One job per try, all submitted, each read back as it ends; a job LAVA ends with an
    /// infrastructure error (a boot that never ran) is submitted again. Ctrl-C cancels the
    /// jobs under way.
    fn boot_all(&mut self, tries: &[Next], done: &mut dyn FnMut(BootRecord)) -> Result<()> {
        let started = Instant::now();
        // Each job's own submission times its wait in the queue.
        let mut open: Vec<(Next, u64, u32, Instant)> = Vec::new();
        for t in tries {
            open.push((
                *t,
                self.submit(t.arm, t.round, t.attempt)?,
                0,
                Instant::now(),
            ));
        }
        while !open.is_empty() {
            if let Err(i) = (self.interrupted)() {
                // Cancelled, they are no job a resume should wait for.
                for (_, id, ..) in &open {
                    let _ = self.lab.cancel(*id);
                    self.close(*id);
                }
                return Err(i.into());
            }
            let mut jobs = self.lab.jobs(&ids_of(&open))?;
            let mut still = Vec::new();
            for (t, id, infra, submitted) in open {
                // One the list left out is asked for alone, which says why it is missing.
                let job = match jobs.iter().position(|j| j.id == id) {
                    Some(i) => jobs.swap_remove(i),
                    None => self.lab.job(id)?,
                };
                let Some(waited) = self.waited(job, submitted)? else {
                    still.push((t, id, infra, submitted));
                    continue;
                };
                self.close(id);
                let at = (t.round, t.attempt);
                let (record, never_ran) = self.read(t.arm, at, started, waited)?;
                if never_ran && infra < INFRA_RETRIES {
                    eprintln!(
                        "syscost: LAVA job {id} never ran ({}): submitted again",
                        record.failure_reason().unwrap_or_default()
                    );
                    let again = self.submit(t.arm, t.round, t.attempt)?;
                    still.push((t, again, infra + 1, Instant::now()));
                    continue;
                }
                done(record);
            }
            open = still;
            if !open.is_empty() {
                self.pause(&ids_of(&open));
            }
        }
        Ok(())
    }
}

/// The jobs of the open tries (each try, its job, its infrastructure retries, its submission).
fn ids_of(open: &[(Next, u64, u32, Instant)]) -> Vec<u64> {
    open.iter().map(|(_, id, ..)| *id).collect()
}

impl LavaBooter<'_> {
    /// Until the next look at the jobs `ids`: the event stream's next word of one of them
    /// (at most [`EVENTS_NET`]) while it lasts, else [`POLL`].
    fn pause(&mut self, ids: &[u64]) {
        if let Some(e) = &self.events {
            if e.wait(ids, EVENTS_NET).is_ok() {
                return;
            }
            let every = POLL.as_secs_f64();
            eprintln!("syscost: LAVA's event stream ended: asking the lab every {every} s");
            self.events = None;
        }
        (self.nap)(POLL);
    }

    /// Job `id` is read back (or cancelled): not to be waited for again.
    fn close(&mut self, id: u64) {
        self.pending.retain(|p| p.id != id);
        (self.on_job)(JobEvent::Ended(id));
    }

    /// The record of a job that ended, and whether LAVA calls it an infrastructure error.
    fn read(
        &mut self,
        a: usize,
        at: (u32, u32),
        started: Instant,
        waited: Waited,
    ) -> Result<(BootRecord, bool)> {
        let arm = &self.plan.arms[a];
        let (job, queued) = match waited {
            Waited::Ended(j) => (j, false),
            Waited::Queued(j) => (j, true),
        };
        let lab_job = self.lab_job(&job);
        let (ended, never_ran) = match queued {
            true => (
                failed(
                    Failure::TimedOut,
                    format!(
                        "LAVA job {} did not leave the queue within {}: cancelled",
                        job.id,
                        humantime::format_duration(self.target.queue_limit)
                    ),
                    Vec::new(),
                ),
                false,
            ),
            false => match self.elsewhere(&job) {
                Some(why) => (failed(Failure::NoResult, why, Vec::new()), false),
                None => self.ended(&job)?,
            },
        };
        let machine = &self.target.machine;
        // Its seconds run from the batch's submission: outside the guest's clock are the
        // lab's queue, the job's start and download, QEMU's start and the job's end.
        let mut record = record_of(ended, arm, at, started, &mut self.symbols[a], machine);
        record.job = Some(lab_job);
        Ok((record, never_ran))
    }

    /// Why job's figures cannot be taken when it ran on another device than the one this
    /// run's jobs stay on (a type of one device, untagged, that gained another).
    fn elsewhere(&self, job: &Job) -> Option<String> {
        let pin = self.target.pin.as_ref()?;
        let ran = job.actual_device.as_deref()?;
        (ran != pin.device).then(|| {
            format!(
                "LAVA job {} ran on {ran}, not on {}, where this run's jobs stay: its figures \
                 are left out",
                job.id, pin.device
            )
        })
    }

    /// How a finished job's boot ended, from its log and results, and whether LAVA calls its
    /// failure the infrastructure's.
    fn ended(&self, job: &Job) -> Result<(Ended, bool)> {
        let log = self.lab.log(job.id)?;
        let lines = lava::console_lines(&log);
        let tail = tail_of(&lines, 12);
        let text = lines.join("\n");
        let rebuilt = console::rebuild(lines.iter().map(String::as_str));
        if let Ok(bytes) = &rebuilt {
            let frames = guest::unframe_all(bytes);
            // The plugin's lines are QEMU's own log, on the same console.
            let plugin = self.plugin.as_ref().map(|_| text.as_str());
            if let Some(e) = outcome::sent_back(frames, plugin, Vec::new(), &tail) {
                return Ok((e, false));
            }
        }
        let tests = self.lab.tests(job.id)?;
        let words = match job.health {
            // A board's monitor ended at the panic: the job is LAVA's success.
            lava::JobHealth::Complete => format!("LAVA job {}", job.id),
            _ => format!(
                "LAVA job {} ended {}: {}",
                job.id,
                job.health,
                lava::failure_words(job, &tests)
            ),
        };
        if let Some(panic) = outcome::kernel_panic(&text) {
            let why = format!("the kernel panicked: {panic} ({words})");
            return Ok((failed(Failure::Panicked, why, tail), false));
        }
        let why = match (job.health, rebuilt) {
            (lava::JobHealth::Complete, Err(d)) => format!("LAVA job {}: {d}", job.id),
            _ => words,
        };
        let never_ran = lava::never_ran(job, &tests, &lines);
        Ok((failed(Failure::NoResult, why, tail), never_ran))
    }
}

fn failed(failure: Failure, reason: String, console: Vec<String>) -> Ended {
    Ended::Failed {
        reason,
        console,
        failure,
    }
}

/// The last `n` lines of a console.
fn tail_of(lines: &[String], n: usize) -> Vec<String> {
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// The network card LAVA's `qemu` template always adds (`-net nic,{{ model }},macaddr=...`,
/// `model` a context variable of LAVA's job schema): an ISA NE2000 rather than its virtio one.
/// The guest needs no network, and its kernel probes no ISA card it has no driver loaded for,
/// where it probed the virtio card on the PCI bus on every boot: by the guest's own clock the
/// kernel's boot took a median 0.30 s longer with the virtio card than with the ISA one, in 10
/// of 12 interleaved runs of a job's QEMU command line here (exact Wilcoxon p = 0.012). A
/// direct boot has no card at all.
const NIC: &str = "model=ne2k_isa";

/// QEMU's options the job adds to the device type's own (`-nographic`, a network card and
/// `-m` from its template): the CPU, the vCPUs, -icount, and no reboot (a panic ends QEMU);
/// none of QEMU's default devices (a VGA card whose BIOS SeaBIOS runs emulated, a floppy, a
/// CD-ROM), the console on the first serial port (where `-nographic` put it before
/// `-nodefaults`) and no option ROM on the template's network card (iPXE, also run emulated).
/// A direct boot has none of them either: they made a job's guest about 0.4 s slower here
/// (median of 5 interleaved QEMU runs from start to power-off, 10.34 s against 9.93 s).
fn extra_options(m: &qemu::Machine) -> Vec<String> {
    let mut o = vec![
        "-nodefaults".to_string(),
        "-serial mon:stdio".into(),
        "-global virtio-net-pci.romfile=".into(),
        "-accel tcg".into(),
        "-cpu max".into(),
        format!("-smp {}", m.cpus),
        "-no-reboot".into(),
    ];
    if let Some(shift) = m.icount {
        o.push(format!("-icount shift={shift},sleep=off"));
    }
    o
}

/// QEMU's options that make the socket at `path` the guest's second serial port, after the
/// console's (see [`extra_options`]).
fn counts_port_options(path: &str) -> [String; 2] {
    [
        format!("-chardev socket,id=syscost,path={path},server=on,wait=off"),
        "-serial chardev:syscost".into(),
    ]
}

/// What the guest's init is given to report in a lab: its figures as test cases, and when the
/// plugin's windows it has received are all of its batches' (it stops waiting for more then).
pub const LAB_CASES: crate::boot::guest::LabCases = crate::boot::guest::LabCases {
    cases,
    complete: |result, windows| {
        !windows.is_empty()
            && serde_json::from_slice(result).is_ok_and(|v| super::emulated::joins(&v, windows))
    },
};

/// A boot's figures as LAVA test cases: each figure of its result, the value a campaign takes
/// of it (the median over its runs or samples), named by the arm, the operation and the
/// figure (`old_syscall_getpid_task_clock`), with the plugin's exact counts joined from
/// `windows` (`old_syscall_getpid_instructions_emulated`: the figure such a campaign compares
/// by). The guest's init sends them ([`LAB_CASES`]).
pub(crate) fn cases(result: &[u8], windows: &[Window]) -> Vec<Case> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(result) else {
        return Vec::new();
    };
    if !windows.is_empty() {
        super::emulated::join(&mut value, windows, None);
    }
    let Ok(decoded) = Decoded::of("this boot", &value) else {
        return Vec::new();
    };
    let cmdline = value["environment"]["cmdline"].as_str().unwrap_or("");
    let arm = crate::boot::guest::param(cmdline, crate::boot::guest::ARM_PARAM).unwrap_or("");
    let what = decoded.view.workload.case_label();
    (decoded.view.metrics.iter())
        .filter(|m| !m.values.is_empty())
        .map(|m| {
            let value = crate::stats::median(&m.values);
            Case::of(arm, &what, &m.name, value, &m.unit)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod unit {
    use super::*;
    use crate::boot::qemu::{Accel, KernelEntry, Machine};
    use crate::experiments::boots::plan::{Arm, Backend, Pin};
    use serde_json::Value;

    pub(crate) fn target(boot: BootMethod, pin: Option<Pin>) -> LavaTarget {
        let machine = Machine {
            accel: Accel::Tcg,
            cpus: 1,
            memory_mib: 1024,
            timeout: Duration::from_secs(180),
            host_cpus: None,
            entry: KernelEntry::Pvh,
            emulated_counters: false,
            cache_model: None,
            emulated_profile: false,
            icount: None,
            guest_disk: None,
        };
        LavaTarget {
            lab: "http://lab.example/".into(),
            device_type: "x86".into(),
            boot,
            device: None,
            pin,
            token_file: None,
            machine,
            files: None,
            queue_limit: Duration::from_secs(60),
            queue_depth: 50,
            jobs: 1,
            priority: Default::default(),
            visibility: Default::default(),
            events: Default::default(),
        }
    }

    #[test]
    fn jobs_ask_for_a_low_priority_unless_told() {
        let mut t = target(BootMethod::Qemu, None);
        let j = job(&t);
        assert_eq!(
            (&j["priority"], &j["visibility"]),
            (&"low".into(), &"public".into())
        );
        t.priority = crate::boot::lava::JobPriority::parse("25").unwrap();
        t.visibility = crate::boot::lava::JobVisibility::Personal;
        let j = job(&t);
        assert_eq!(
            (&j["priority"], &j["visibility"]),
            (&25.into(), &"personal".into())
        );
        for bad in ["101", "urgent", "-1"] {
            assert!(crate::boot::lava::JobPriority::parse(bad).is_err(), "{bad}");
        }
    }

    /// The job of arm 0's first try, as LAVA would read it.
    fn job(t: &LavaTarget) -> Value {
        job_with(t, false, false)
    }

    /// The job `t`'s first try submits, to a server that takes `device:` or not.
    fn job_on(t: &LavaTarget, device_key: bool) -> Value {
        job_with(t, device_key, false)
    }

    /// `plugin`: the job counts exactly.
    fn job_with(t: &LavaTarget, device_key: bool, plugin: bool) -> Value {
        let plan = plan_of(t);
        let lab = Box::new(Lab::new(&t.lab, lava::Token::new("secret").unwrap()).unwrap());
        let booter = booter(&plan, t, lab, plugin, device_key);
        serde_json::from_str(&booter.definition(0, 1, 0).unwrap()).unwrap()
    }

    fn plan_of(t: &LavaTarget) -> BootPlan {
        BootPlan {
            arms: vec![Arm {
                name: "on".into(),
                kernel: "/k".into(),
                append: "audit=1".into(),
                rules: None,
                ..Arm::default()
            }],
            seed: 1,
            measure: vec!["run".into(), "syscall".into()],
            backend: Backend::Lava(Box::new(t.clone())),
            retries: 0,
            guest_files: Vec::new(),
            needs: Vec::new(),
            settle: None,
            rules_errors: crate::audit::rules_file::OnError::Stop,
            placement: Default::default(),
        }
    }

    fn booter<'p>(
        plan: &'p BootPlan,
        t: &'p LavaTarget,
        lab: Box<dyn lava::LabApi + 'p>,
        plugin: bool,
        device_key: bool,
    ) -> LavaBooter<'p> {
        let file = |url: &str| Artifact {
            url: url.into(),
            sha256: "ab".repeat(32),
            len: 1,
        };
        LavaBooter {
            plan,
            target: t,
            lab,
            tag: "campaign 1".into(),
            initrd: file("file:///i.cpio"),
            plugin: plugin.then(|| file("file:///tcg_count.so")),
            kernels: vec![file("file:///k")],
            symbols: vec![None],
            entries: vec![None],
            on_job: Box::new(|_| {}),
            pending: Vec::new(),
            device_key,
            releases: vec![Some("6.1.0-56-cloud-amd64".into())],
            interrupted: Box::new(|| Ok(())),
            events: None,
            nap: Box::new(std::thread::sleep),
        }
    }

    /// LAVA 2023.01 keeps a job on one device by its tag alone; 2026.07 takes the device.
    #[test]
    fn a_pinned_job_names_its_device_where_the_server_takes_it_else_its_tag() {
        let pin = Pin {
            device: "qemu-02".into(),
            tag: Some("qemu-02".into()),
        };
        let t = target(BootMethod::Qemu, Some(pin));
        let old = job_on(&t, false);
        assert_eq!(old["tags"], serde_json::json!(["qemu-02"]));
        assert!(old.get("device").is_none(), "{old}");
        let new = job_on(&t, true);
        assert_eq!(new["device"], "qemu-02");
        assert_eq!(new["metadata"]["kernel.version"], "6.1.0-56-cloud-amd64");
        assert!(new.get("tags").is_none(), "{new}");
        assert!(
            job_on(&target(BootMethod::Qemu, None), true)
                .get("device")
                .is_none()
        );
    }

    #[test]
    fn a_board_job_takes_the_files_by_tftp_and_ends_at_a_panic() {
        let pin = Pin {
            device: "pc-1".into(),
            tag: Some("pc-1".into()),
        };
        let j = job(&target(BootMethod::Ipxe, Some(pin)));
        assert_eq!(
            j["tags"],
            serde_json::json!(["pc-1"]),
            "stays on its device"
        );
        let deploy = &j["actions"][0]["deploy"];
        assert_eq!(deploy["to"], "tftp");
        assert_eq!(
            deploy["ramdisk"]["install_overlay"], false,
            "the initramfs as it is"
        );
        assert_eq!(deploy["kernel"]["sha256sum"], "ab".repeat(32));
        assert_eq!(j["actions"][1]["boot"]["method"], "ipxe");
        let args = j["context"]["extra_kernel_args"].as_str().unwrap();
        assert!(
            args.contains("panic=1 ") && args.ends_with("syscost.arm=on audit=1"),
            "{args}"
        );
        assert!(
            !args.contains("console="),
            "the board's console is the board's"
        );
        let monitor = &j["actions"][2]["test"]["monitors"][0];
        let start = regex_lite::Regex::new(monitor["start"].as_str().unwrap()).unwrap();
        let end = regex_lite::Regex::new(monitor["end"].as_str().unwrap()).unwrap();
        assert!(start.is_match(console::BEGIN) && end.is_match(console::END));
        assert!(start.is_match("[ 5.8] Kernel panic - not syncing: VFS: Unable to mount root"));
        assert!(end.is_match("[ 5.9] Rebooting in 1 seconds.."));
        assert!(!end.is_match("SYSCOST-CASE pass time 12.5 ns/call;"));
    }

    #[test]
    fn a_qemu_job_boots_tmpfs_images_and_goes_to_any_device() {
        let j = job(&target(BootMethod::Qemu, None));
        assert!(j.get("tags").is_none());
        let images = &j["actions"][0]["deploy"]["images"];
        let arg = images["kernel"]["image_arg"].as_str().unwrap();
        assert!(arg.contains("console=ttyS0 panic=-1 "), "{arg}");
        assert_eq!(j["actions"][1]["boot"]["method"], "qemu");
        let monitor = &j["actions"][2]["test"]["monitors"][0];
        assert_eq!(monitor["start"], console::BEGIN);
        assert_eq!(monitor["end"], console::END);
        assert!(images.get("plugin").is_none());
        let options = j["context"]["extra_options"].as_array().unwrap();
        let at = |o: &str| options.iter().position(|x| x == o);
        assert!(at("-nodefaults").is_some(), "{options:?}");
        assert!(
            at("-serial mon:stdio").is_some(),
            "the console: {options:?}"
        );
        assert_eq!(
            j["context"]["model"], "model=ne2k_isa",
            "no card on the PCI bus"
        );
    }

    /// Counting exactly, the plugin sends its counts to a socket of the job's own that is the
    /// guest's second serial port, the console staying on the first.
    #[test]
    fn a_counting_job_gives_the_guest_its_counts_on_its_second_serial_port() {
        let j = job_with(&target(BootMethod::Qemu, None), false, true);
        let arg = j["actions"][0]["deploy"]["images"]["plugin"]["image_arg"]
            .as_str()
            .unwrap();
        let socket = arg
            .split("counts=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            socket.starts_with("/tmp/syscost-") && socket.ends_with(".sock"),
            "{arg}"
        );
        let options: Vec<&str> = (j["context"]["extra_options"].as_array().unwrap().iter())
            .map(|o| o.as_str().unwrap())
            .collect();
        let chardev = format!("-chardev socket,id=syscost,path={socket},server=on,wait=off");
        let at = |o: &str| options.iter().position(|x| *x == o);
        let (console, counts) = (at("-serial mon:stdio"), at("-serial chardev:syscost"));
        assert!(
            console.unwrap() < counts.unwrap(),
            "the console stays ttyS0: {options:?}"
        );
        assert!(at(&chardev).is_some(), "{options:?}");
    }

    /// A lab whose jobs follow scripts, one per submission: the states a job goes through (the
    /// last one stays), its console log and its test cases.
    struct Scripted {
        scripts: std::cell::RefCell<std::collections::VecDeque<Script>>,
        jobs: std::cell::RefCell<std::collections::HashMap<u64, Script>>,
        seen: std::rc::Rc<std::cell::RefCell<Seen>>,
    }

    #[derive(Clone)]
    struct Script {
        states: Vec<(lava::JobState, lava::JobHealth)>,
        log: String,
        tests: Vec<lava::TestCase>,
    }

    /// What the booter asked of the lab.
    #[derive(Default)]
    struct Seen {
        submitted: Vec<u64>,
        cancelled: Vec<u64>,
        polls: usize,
    }

    impl Scripted {
        fn new(scripts: Vec<Script>) -> (Scripted, std::rc::Rc<std::cell::RefCell<Seen>>) {
            let seen = std::rc::Rc::default();
            let lab = Scripted {
                scripts: std::cell::RefCell::new(scripts.into()),
                jobs: Default::default(),
                seen: std::rc::Rc::clone(&seen),
            };
            (lab, seen)
        }
    }

    impl lava::LabApi for Scripted {
        fn url(&self) -> &str {
            "http://lab.example/"
        }
        fn job_url(&self, id: u64) -> String {
            format!("http://lab.example/scheduler/job/{id}")
        }
        fn check_served(&self, _: &str, _: u64) -> Result<()> {
            Ok(())
        }
        fn health(&self, _: &str) -> Result<lava::Health> {
            Ok(lava::Health::Good)
        }
        fn validate(&self, _: &str) -> Result<()> {
            Ok(())
        }
        fn submit(&self, _: &str) -> Result<u64> {
            let mut seen = self.seen.borrow_mut();
            let id = seen.submitted.len() as u64 + 1;
            seen.submitted.push(id);
            let script = self
                .scripts
                .borrow_mut()
                .pop_front()
                .expect("a script per job");
            self.jobs.borrow_mut().insert(id, script);
            Ok(id)
        }
        fn queued(&self, _: &str) -> Result<u64> {
            Ok(0)
        }
        fn job(&self, id: u64) -> Result<Job> {
            let mut jobs = self.jobs.borrow_mut();
            let script = jobs.get_mut(&id).expect("a submitted job");
            let (state, health) = script.states[0];
            if script.states.len() > 1 {
                script.states.remove(0);
            }
            Ok(Job {
                id,
                state,
                health,
                actual_device: Some("qemu-01".into()),
                failure_comment: None,
            })
        }
        fn jobs(&self, ids: &[u64]) -> Result<Vec<Job>> {
            self.seen.borrow_mut().polls += 1;
            ids.iter().map(|id| self.job(*id)).collect()
        }
        fn worker_of(&self, _: &str) -> Result<String> {
            Ok("worker-1".into())
        }
        fn log(&self, id: u64) -> Result<String> {
            Ok(self.jobs.borrow()[&id].log.clone())
        }
        fn tests(&self, id: u64) -> Result<Vec<lava::TestCase>> {
            Ok(self.jobs.borrow()[&id].tests.clone())
        }
        fn cancel(&self, id: u64) -> Result<()> {
            self.seen.borrow_mut().cancelled.push(id);
            Ok(())
        }
    }

    /// A console log as LAVA keeps it, of a guest that sent a run's result.
    fn measured_log() -> String {
        let result = serde_json::to_vec(&crate::results::fixture::fixed_result()).unwrap();
        let frames = [
            guest::Sent::Clock(Default::default()),
            guest::Sent::Result(result),
        ];
        let bytes: Vec<u8> = frames.iter().flat_map(guest::frame).collect();
        (console::lines(&bytes, &[]).iter())
            .map(|l| {
                format!(
                    "- {{\"dt\": \"2026-11-27T10:00:00\", \"lvl\": \"target\", \"msg\": {}}}\n",
                    serde_json::json!(l)
                )
            })
            .collect()
    }

    fn infrastructure_error(log: &str) -> Script {
        use lava::{JobHealth, JobState};
        let case = lava::TestCase {
            name: "job".into(),
            result: "fail".into(),
            metadata: Some("error_msg: 'Unable to fetch'\nerror_type: Infrastructure\n".into()),
        };
        Script {
            states: vec![
                (JobState::Running, JobHealth::Unknown),
                (JobState::Finished, JobHealth::Incomplete),
            ],
            log: log.into(),
            tests: vec![case],
        }
    }

    fn complete() -> Script {
        Script {
            states: vec![(lava::JobState::Finished, lava::JobHealth::Complete)],
            log: measured_log(),
            tests: Vec::new(),
        }
    }

    /// A job LAVA ends with an infrastructure error before the guest printed anything is
    /// submitted again, and the boot is the second job's; the jobs are polled together.
    #[test]
    fn a_boot_that_never_ran_is_submitted_again() {
        let t = target(BootMethod::Qemu, None);
        let plan = plan_of(&t);
        let (lab, seen) = Scripted::new(vec![infrastructure_error(""), complete()]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        let record = b.boot(0, 1, 0).unwrap();
        assert!(record.result().is_some(), "{:?}", record.failure_reason());
        assert_eq!(record.job.as_ref().unwrap().id, 2, "the second job's");
        assert_eq!(seen.borrow().submitted, [1, 2]);
        assert!(seen.borrow().cancelled.is_empty());
    }

    /// The same error after the guest printed is the boot's failure, not submitted again.
    #[test]
    fn a_boot_that_ran_and_failed_is_not_submitted_again() {
        let t = target(BootMethod::Qemu, None);
        let plan = plan_of(&t);
        let printed = "- {\"dt\": \"x\", \"lvl\": \"target\", \"msg\": \"Linux version 6.1\"}\n";
        let (lab, seen) = Scripted::new(vec![infrastructure_error(printed)]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        let record = b.boot(0, 1, 0).unwrap();
        let why = record.failure_reason().unwrap_or_default();
        assert!(
            why.contains("Infrastructure error: Unable to fetch"),
            "{why}"
        );
        assert_eq!(seen.borrow().submitted, [1]);
    }

    /// A job still queued at the queue limit is cancelled and its boot failed.
    #[test]
    fn a_job_that_never_leaves_the_queue_is_cancelled() {
        let mut t = target(BootMethod::Qemu, None);
        t.queue_limit = Duration::ZERO;
        let plan = plan_of(&t);
        let queued = Script {
            states: vec![(lava::JobState::Submitted, lava::JobHealth::Unknown)],
            log: String::new(),
            tests: Vec::new(),
        };
        let (lab, seen) = Scripted::new(vec![queued]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        let record = b.boot(0, 1, 0).unwrap();
        let why = record.failure_reason().unwrap_or_default();
        assert!(why.contains("did not leave the queue"), "{why}");
        assert_eq!(seen.borrow().cancelled, [1]);
    }

    /// Ctrl-C while jobs run cancels every one of them, and none is left for a resume to
    /// wait for.
    #[test]
    fn ctrl_c_cancels_the_jobs_under_way() {
        let t = target(BootMethod::Qemu, None);
        let plan = plan_of(&t);
        let mut running = complete();
        running.states = vec![(lava::JobState::Running, lava::JobHealth::Unknown)];
        let (lab, seen) = Scripted::new(vec![running.clone(), running]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        let ended = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let events = ended.clone();
        b.on_job = Box::new(move |e| {
            if let JobEvent::Ended(id) = e {
                events.borrow_mut().push(id);
            }
        });
        // The signal comes after the first look at the jobs.
        let looks = std::rc::Rc::new(std::cell::Cell::new(0));
        let counted = looks.clone();
        b.interrupted = Box::new(move || {
            counted.set(counted.get() + 1);
            match counted.get() {
                1 => Ok(()),
                _ => Err(crate::signals::Interrupted(libc::SIGINT)),
            }
        });
        let tries = [1, 2].map(|round| Next {
            arm: 0,
            round,
            attempt: 0,
            slot: 0,
        });
        let e = b
            .boot_all(&tries, &mut |_| panic!("no boot ends"))
            .unwrap_err();
        assert!(
            e.downcast_ref::<crate::signals::Interrupted>().is_some(),
            "{e:#}"
        );
        assert_eq!(seen.borrow().submitted, [1, 2]);
        assert_eq!(seen.borrow().polls, 1, "the jobs were looked at once");
        assert_eq!(seen.borrow().cancelled, [1, 2]);
        assert_eq!(*ended.borrow(), [1, 2]);
    }

    /// While LAVA's event stream lasts, a job is looked at again when the stream names it,
    /// not every 0.5 s; once the stream ends, every 0.5 s.
    #[test]
    fn jobs_are_looked_at_when_the_event_stream_names_them() {
        let t = target(BootMethod::Qemu, None);
        let plan = plan_of(&t);
        let mut slow = complete();
        let running = (lava::JobState::Running, lava::JobHealth::Unknown);
        slow.states.splice(0..0, [running; 3]);
        let (lab, seen) = Scripted::new(vec![slow]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        // A publisher that names job 1 twice, then closes its stream.
        let (url, close, publisher) =
            crate::boot::lava_events::publisher(&[(1, "Running"), (1, "Finished")]);
        drop(close);
        b.events = Some(Events::connect(&url).unwrap());
        let naps = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let taken = naps.clone();
        b.nap = Box::new(move |d| taken.borrow_mut().push(d));
        let record = b.boot(0, 1, 0).unwrap();
        publisher.join().unwrap();
        assert!(record.result().is_some(), "{:?}", record.failure_reason());
        // Two looks at the events, one after a nap once the stream ended, and the first.
        assert_eq!(seen.borrow().polls, 4);
        assert_eq!(*naps.borrow(), [POLL]);
        assert!(b.events.is_none());
    }

    /// Jobs under way are polled together, one request a tick, not one each.
    #[test]
    fn open_jobs_are_polled_in_one_request() {
        let t = target(BootMethod::Qemu, None);
        let plan = plan_of(&t);
        let mut slow = complete();
        slow.states
            .insert(0, (lava::JobState::Running, lava::JobHealth::Unknown));
        let (lab, seen) = Scripted::new(vec![slow.clone(), slow]);
        let mut b = booter(&plan, &t, Box::new(lab), false, false);
        let tries = [1, 2].map(|round| Next {
            arm: 0,
            round,
            attempt: 0,
            slot: 0,
        });
        let mut records = Vec::new();
        b.boot_all(&tries, &mut |r| records.push(r)).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(
            seen.borrow().polls,
            2,
            "two ticks, a request each, for two jobs"
        );
    }
}
