//! Boots as LAVA jobs: each try at an arm is one job on a lab's `qemu` devices, the guest
//! syscost's own initramfs under TCG (with syscost's plugin when it counts, so exact counts
//! come back alike from any worker), or on an x86 board that starts the same kernel and
//! initramfs from the network by iPXE (timed, every job on one device: [`super::pin`]). The guest
//! sends its result as lines on the console
//! (`boot::console`), the only thing of a boot a lab keeps; syscost rebuilds it from the job's
//! log, with the plugin's counts (QEMU's own log, on the same console), into the same
//! [`BootRecord`] a QEMU boot on this machine gives, with the job it ran as. What the lab
//! fetches ([`artifacts`]), the jobs' definitions ([`jobs`]), the queue and the reading back
//! of jobs ([`queue`]) and the guest's test cases ([`cases`]) are a file each.

mod artifacts;
mod cases;
mod jobs;
mod queue;

use artifacts::*;
pub use cases::LAB_CASES;

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
use queue::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

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
