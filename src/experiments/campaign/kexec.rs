//! A campaign on this machine itself: each boot is this machine rebooted into an arm's kernel
//! by kexec. The plan and every boot's result so far live in one state file under
//! /var/lib/syscost/campaign; the boot hook runs `syscost campaign resume` after each boot,
//! which checks that the running kernel is the planned one, sets up the arm's state,
//! measures, records, then loads the next arm and reboots into it. The default boot entry is
//! never changed: a kernel that does not come up leaves the firmware to boot the default one,
//! and the hook records that boot as failed. The last boot writes the campaign's result,
//! removes the hook and the state, and reboots into the default kernel.

use super::{Campaign, CampaignPlan};
use crate::boot::hook::Hook;
use crate::boot::kexec::{self as kx, Reboot, Target};
use crate::boot::outcome::Failure;
use crate::experiments::boots::kexec::{BOOT_PARAM, CAMPAIGN_PARAM, Handover, KexecHost};
use crate::experiments::boots::schedule::{Boot, Schedule};
use crate::experiments::boots::start::{self, Opened};
use crate::experiments::boots::{Arm, BootRecord, Outcome, checks};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a campaign's state lives while it runs.
pub(crate) const STATE_DIR: &str = crate::boot::hook::STATE_DIR;
const STATE: &str = crate::boot::hook::STATE_NAME;
/// The copy of syscost every boot of the campaign measures with (a rebuild mid-campaign
/// does not change the measuring code).
const EXE: &str = "syscost";

/// Where the recorded results go (the command line's history options, kept as written).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Recording {
    pub history: Option<String>,
    pub no_history: bool,
    pub tags: Vec<String>,
}

/// What a kexec campaign needs beyond its plan.
pub(crate) struct Setup {
    /// The campaign's result file, written when it ends [default: /var/lib/syscost/campaign-ID.json].
    pub output: Option<PathBuf>,
    pub recording: Recording,
}

/// The boot the campaign rebooted into and has not yet recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub slot: usize,
    pub attempt: u32,
    pub issued_unix: f64,
}

/// The saved campaign: its plan, where it is, and every boot so far.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct State {
    pub id: String,
    pub created_unix: u64,
    /// The plan itself, as the campaign started (its arms' kernels as absolute paths): no
    /// resume changes an option.
    pub plan: CampaignPlan,
    /// Every boot's command line before the arm's additions: the starting boot's, without its
    /// image, its initrd and syscost's marks.
    pub cmdline: String,
    /// Each arm's audit rules, as text, by arm name.
    pub rules: BTreeMap<String, String>,
    pub output: PathBuf,
    pub recording: Recording,
    pub hook: Hook,
    /// The boot rebooted into: which comes next is the boot schedule's walk over `boots`.
    pub pending: Option<Pending>,
    pub boots: Vec<BootRecord>,
    /// Each arm's kernel build id, as its first boot saw it.
    pub build_ids: BTreeMap<String, String>,
}

/// What to do after a step: reboot into the next arm, or the campaign is over.
pub(crate) enum Step {
    /// The next arm is loaded: `reboot` into it.
    Next { arm: String, round: u32 },
    /// Every boot is done; the result is written and the hook and state are removed.
    Finished(Box<Campaign>),
}

/// Where one resume got to.
pub(crate) struct Resumed {
    /// The boot this resume recorded (none when it was not a campaign boot).
    pub recorded: Option<BootRecord>,
    pub step: Step,
    pub id: String,
    pub recording: Recording,
    pub hook: Hook,
}

impl State {
    fn path(dir: &Path) -> PathBuf {
        dir.join(STATE)
    }

    /// The campaign in progress, if any.
    pub(crate) fn load(dir: &Path) -> Result<Option<State>> {
        match std::fs::read(State::path(dir)) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .with_context(|| format!("{} is not a campaign state", State::path(dir).display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).context("cannot read the campaign state"),
        }
    }

    fn save(&self, dir: &Path) -> Result<()> {
        crate::core::write_atomic(&State::path(dir), &serde_json::to_vec_pretty(self)?)
    }

    /// The boot schedule: the one every way to boot walks, here a step per boot.
    fn schedule(&self) -> Schedule {
        self.plan.schedule()
    }

    fn arms(&self) -> &[Arm] {
        &self.plan.boot.arms
    }

    /// The arm index and round (from 1) of a slot (one the schedule gave: a saved one).
    fn slot(&self, slot: usize) -> (usize, u32) {
        self.schedule().at(slot).expect("a slot of the schedule")
    }

    /// The record of a slot's try.
    fn record(&self, slot: usize, attempt: u32, seconds: f64, outcome: Outcome) -> BootRecord {
        let (a, round) = self.slot(slot);
        BootRecord::try_of(&self.arms()[a].name, (round, attempt), seconds, outcome)
    }

    /// Where this step leaves the campaign, for the command to show, record and reboot.
    fn resumed(&self, recorded: Option<BootRecord>, step: Step) -> Resumed {
        Resumed {
            recorded,
            step,
            id: self.id.clone(),
            recording: self.recording.clone(),
            hook: self.hook,
        }
    }

    /// What this machine's boots need beside the plan: the campaign's ID, this machine's
    /// command line, the schedule.
    fn host(&self) -> KexecHost {
        KexecHost {
            id: self.id.clone(),
            cmdline: self.cmdline.clone(),
            schedule: self.schedule(),
        }
    }
}

/// The running kernel's command line without what the boot loader and syscost added.
pub(crate) fn base_cmdline(running: &str) -> String {
    running
        .split_whitespace()
        .filter(|w| {
            !["BOOT_IMAGE=", "initrd=", CAMPAIGN_PARAM, BOOT_PARAM]
                .iter()
                .any(|p| w.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Which campaign and slot.try a command line says this boot is.
fn marks(cmdline: &str) -> Option<(String, usize, u32)> {
    let id = crate::boot::guest::param(cmdline, CAMPAIGN_PARAM)?;
    let (slot, attempt) = crate::boot::guest::param(cmdline, BOOT_PARAM)?.split_once('.')?;
    Some((id.to_string(), slot.parse().ok()?, attempt.parse().ok()?))
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Start a kexec campaign: check everything, save the plan, install the boot hook, load the
/// first arm. The caller then records nothing yet and reboots ([`reboot`]).
pub(crate) fn start(plan: &CampaignPlan, setup: Setup, dir: &Path) -> Result<Resumed> {
    let hook = Hook::detect()?;
    if let Some(s) = State::load(dir)? {
        bail!(
            "campaign {} is in progress on this machine: `syscost campaign status` shows it, \
             `syscost campaign abort` ends it",
            s.id
        );
    }
    kx::check_available()?;
    let rules = checks::check(&plan.boot)?;
    let mut st = new_state(plan, setup, hook, rules.into_iter().collect())?;
    check_loads(&st)?;
    let started = begin(&mut st, dir);
    if started.is_err() {
        let _ = end(dir, hook);
    }
    started
}

fn new_state(
    plan: &CampaignPlan,
    setup: Setup,
    hook: Hook,
    rules: BTreeMap<String, String>,
) -> Result<State> {
    let created_unix = crate::core::now_unix();
    let mut plan = plan.clone();
    for a in &mut plan.boot.arms {
        a.kernel = std::fs::canonicalize(&a.kernel)?;
        a.initrd = a.initrd.take().or_else(|| kx::initrd_beside(&a.kernel));
    }
    let seed = plan.boot.seed;
    Ok(State {
        id: format!("{created_unix}-{seed}"),
        created_unix,
        plan,
        cmdline: base_cmdline(&std::fs::read_to_string("/proc/cmdline")?),
        rules,
        output: setup.output.unwrap_or_else(|| {
            Path::new(STATE_DIR).with_file_name(format!("campaign-{created_unix}-{seed}.json"))
        }),
        recording: setup.recording,
        hook,
        pending: None,
        boots: Vec::new(),
        build_ids: BTreeMap::new(),
    })
}

/// Every arm's kernel loads (a signature a lockdown wants, an image this kernel can boot),
/// checked before the first reboot and unloaded again.
fn check_loads(st: &State) -> Result<()> {
    for a in st.arms() {
        kx::load(&target(a, &st.cmdline))
            .with_context(|| format!("arm {} cannot be booted by kexec", a.name))?;
        kx::unload()?;
    }
    Ok(())
}

fn target<'a>(arm: &'a Arm, cmdline: &'a str) -> Target<'a> {
    Target {
        kernel: &arm.kernel,
        initrd: arm.initrd.as_deref(),
        cmdline,
    }
}

/// Save the state, copy syscost beside it, install the hook, load the first arm.
fn begin(st: &mut State, dir: &Path) -> Result<Resumed> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let exe = dir.join(EXE);
    if st.hook == Hook::Systemd {
        std::fs::copy(std::env::current_exe()?, &exe).context("cannot copy syscost")?;
    }
    st.save(dir)?;
    st.hook.install(&exe)?;
    let step = load_next(st, dir)?;
    Ok(st.resumed(None, step))
}

/// After a boot: record it (when it is the one the campaign rebooted into), then load the
/// next arm, or finish.
pub(crate) fn resume(dir: &Path) -> Result<Resumed> {
    let mut st = State::load(dir)?.with_context(|| {
        format!(
            "no campaign in progress on this machine (no {})",
            State::path(dir).display()
        )
    })?;
    let recorded = match st.pending.take() {
        Some(p) => {
            let r = this_boot(&mut st, &p);
            st.boots.push(r.clone());
            st.save(dir)?;
            Some(r)
        }
        None => None,
    };
    let step = load_next(&mut st, dir)?;
    Ok(st.resumed(recorded, step))
}

/// Boot the next slot: its kernel loaded by this machine's booter, the machine handed over
/// to it (a kernel that cannot be loaded is that try's failure, and the walk goes on), or
/// finish when none is left.
fn load_next(st: &mut State, dir: &Path) -> Result<Step> {
    let plan = st.plan.boot.clone();
    let mut booter = start::start(&plan, &[], Opened::Kexec(st.host()))?;
    while let Some(n) = st.schedule().walk(&st.boots).next {
        match booter.boot(n.arm, n.round, n.attempt) {
            Ok(failed) => st.boots.push(failed),
            Err(e) => {
                let h = e.downcast::<Handover>()?;
                st.pending = Some(Pending {
                    slot: h.slot,
                    attempt: h.attempt,
                    issued_unix: now(),
                });
                st.save(dir)?;
                return Ok(Step::Next {
                    arm: h.arm,
                    round: h.round,
                });
            }
        }
    }
    finish(st, dir)
}

/// Analyse every boot, write the result, remove the hook and the state. An analysis that
/// fails still removes them (the boots are in the history, recorded as each ended), so the
/// machine is not left rebooting into the campaign.
fn finish(st: &State, dir: &Path) -> Result<Step> {
    let order = st.schedule().named_order();
    let mut c = match super::analyse(&st.plan, order, st.boots.clone()) {
        Ok(c) => c,
        Err(e) => {
            end(dir, st.hook)?;
            return Err(e.context(format!(
                "campaign {}: its {} boot(s) are in the history (tag campaign={}); its boot \
                 hook and state are removed, and nothing was written to {}",
                st.id,
                st.boots.len(),
                st.id,
                st.output.display()
            )));
        }
    };
    c.id = st.id.clone();
    c.created_unix = st.created_unix;
    crate::core::write_atomic(&st.output, &serde_json::to_vec_pretty(&c)?)
        .with_context(|| format!("cannot write the campaign to {}", st.output.display()))?;
    end(dir, st.hook)?;
    Ok(Step::Finished(Box::new(c)))
}

/// Remove everything of the campaign but its results: the loaded kernel, the hook, the state.
fn end(dir: &Path, hook: Hook) -> Result<()> {
    if kx::loaded() {
        kx::unload()?;
    }
    hook.remove()?;
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// End the campaign in progress without finishing it; its id, or none when there was none.
/// The next boot is the machine's default kernel.
pub(crate) fn abort(dir: &Path) -> Result<Option<String>> {
    let Some(st) = State::load(dir)? else {
        return Ok(None);
    };
    end(dir, st.hook)?;
    Ok(Some(st.id))
}

/// Reboot as the step says: into the loaded arm, or after the last boot into the default
/// kernel through the firmware. A campaign guest's init instead sends the result back and
/// powers off, so it is not rebooted after the last boot.
pub(crate) fn reboot(step: &Step, hook: Hook) -> Result<()> {
    match (step, hook) {
        (Step::Next { .. }, _) => kx::reboot(Reboot::Kexec),
        (Step::Finished(_), Hook::Systemd) => kx::reboot(Reboot::Firmware),
        (Step::Finished(_), Hook::Init) => Ok(()),
    }
}

/// Record this boot: check it is the planned one, set up the arm's state, measure. Each
/// failure says what it was (no console is kept apart from the journal): another kernel came
/// up; setting up the arm or measuring failed, as every boot of the arm would (a guest's
/// failure, here on the machine itself); or the measurement gave no result to read.
fn this_boot(st: &mut State, p: &Pending) -> BootRecord {
    let arm = st.arms()[st.slot(p.slot).0].clone();
    let outcome = match check_this_boot(st, &arm, p) {
        Err(e) => Outcome::failed(format!("{e:#}"), Failure::OtherKernel),
        Ok(()) => measure_this_boot(st, &arm),
    };
    st.record(p.slot, p.attempt, now() - p.issued_unix, outcome)
}

/// Set up `arm`'s state on this boot and measure.
fn measure_this_boot(st: &State, arm: &Arm) -> Outcome {
    let rules = (st.rules.get(&arm.name)).map(|t| (t.as_str(), arm.name.as_str()));
    let measure = st.plan.boot.measure_of(arm);
    match crate::boot::measure_here(
        measure,
        rules,
        (None, None),
        (false, false),
        crate::boot::After::Goes,
    ) {
        Err(e) => Outcome::failed(format!("{e:#}"), Failure::InGuest),
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(result) => Outcome::Measured { result },
            Err(e) => Outcome::failed(format!("no result: {e}"), Failure::NoResult),
        },
    }
}

/// The running kernel is the planned boot's: its marks on the command line, the release its
/// image says, and the build id the arm's first boot had.
fn check_this_boot(st: &mut State, arm: &Arm, p: &Pending) -> Result<()> {
    let cmdline = std::fs::read_to_string("/proc/cmdline")?;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")?
        .trim()
        .to_string();
    if marks(&cmdline) != Some((st.id.clone(), p.slot, p.attempt)) {
        bail!(
            "the planned kernel did not come up: this boot ({release}) is not the campaign's \
             (the firmware's default kernel after a failed boot, or a reboot by hand)"
        );
    }
    if let Some(want) = crate::boot::bzimage::release(&arm.kernel).filter(|w| *w != release) {
        bail!("this boot runs {release}, but the arm's kernel image says {want}");
    }
    if let Some(id) = kx::running_build_id() {
        let first = st.build_ids.entry(arm.name.clone()).or_insert(id.clone());
        if *first != id {
            bail!(
                "the arm's kernel changed during the campaign (build id {id}, its first boot {first})"
            );
        }
    }
    Ok(())
}

/// Where a campaign in progress stands.
pub(crate) struct Progress {
    pub done: usize,
    pub total: usize,
    pub measured: usize,
    pub failed: usize,
    /// The boot the machine was rebooted into and is not yet recorded.
    pub pending: Option<(String, u32)>,
}

impl State {
    pub(crate) fn progress(&self) -> Progress {
        let measured = self.boots.iter().filter(|b| b.result().is_some()).count();
        let schedule = self.schedule();
        Progress {
            done: schedule.walk(&self.boots).done,
            total: schedule.len(),
            measured,
            failed: self.boots.len() - measured,
            pending: self.pending.as_ref().map(|p| {
                let (a, round) = self.slot(p.slot);
                (self.arms()[a].name.clone(), round)
            }),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::boots::{Backend, BootPlan};

    /// Every option a kexec campaign starts with comes back from its saved state unchanged.
    #[test]
    fn a_resumed_campaign_keeps_every_option_it_started_with() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = dir.path().join("vmlinuz");
        std::fs::write(&kernel, b"k").unwrap();
        let mut arm = state(1, 1, 0).arms()[0].clone();
        arm.kernel = kernel;
        let options = crate::compare::Options {
            exact_floor_pct: 0.03,
            primary: "instructions:k (emulated)".into(),
            ..super::super::compare_options(0.01, 3.5, 77)
        };
        let boot = BootPlan {
            arms: vec![
                arm.clone(),
                Arm {
                    name: "b".into(),
                    ..arm
                },
            ],
            seed: 77,
            measure: vec!["run".into(), "syscall".into()],
            backend: Backend::Kexec,
            retries: 2,
            guest_files: Vec::new(),
            needs: Vec::new(),
            settle: None,
            rules_errors: crate::audit::rules_file::OnError::Continue,
            placement: Default::default(),
        };
        let plan = CampaignPlan {
            boot,
            rounds: 4,
            options,
            steps: false,
        };
        let setup = Setup {
            output: Some("/o.json".into()),
            recording: Recording::default(),
        };
        let st = new_state(&plan, setup, Hook::Init, BTreeMap::new()).unwrap();
        let text = serde_json::to_string(&st).unwrap();
        let back: State = serde_json::from_str(&text).unwrap();
        let p = back.plan.clone();
        let (o, given) = (&p.options, &plan.options);
        assert_eq!(
            (o.alpha, o.noise_pct, o.exact_floor_pct, &o.primary, o.seed),
            (given.alpha, given.noise_pct, 0.03, &given.primary, 77)
        );
        assert_eq!(
            (p.rounds, p.boot.retries, p.boot.rules_errors),
            (4, 2, plan.boot.rules_errors)
        );
        let b = p.boot;
        assert_eq!((b.measure, b.arms.len()), (plan.boot.measure.clone(), 2));
        assert_eq!(back.schedule().order, plan.schedule().order);
        assert_eq!(
            (o.test, o.resamples, o.paired, o.grain),
            (given.test, given.resamples, given.paired, given.grain),
            "every option, not only those the command line sets"
        );
    }

    #[test]
    fn a_boot_is_marked_and_the_marks_are_not_carried_over() {
        let running = "BOOT_IMAGE=/boot/vmlinuz-6.1 root=/dev/sda1 ro quiet \
                       syscost.campaign=1-2 syscost.boot=3.0 initrd=/x";
        assert_eq!(base_cmdline(running), "root=/dev/sda1 ro quiet");
        assert_eq!(marks(running), Some(("1-2".into(), 3, 0)));
        assert_eq!(marks("root=/dev/sda1 syscost.campaign=1-2"), None);
        assert_eq!(marks("syscost.campaign=1-2 syscost.boot=x.0"), None);
    }

    fn state(arms: usize, rounds: u32, retries: u32) -> State {
        let arm = |i: usize| Arm {
            name: format!("a{i}"),
            kernel: "/k".into(),
            append: if i == 1 {
                "audit=1".into()
            } else {
                String::new()
            },
            rules: None,
            ..Arm::default()
        };
        let boot = BootPlan {
            arms: (0..arms).map(arm).collect(),
            retries,
            ..BootPlan::bare(Backend::Kexec)
        };
        State {
            id: "9-1".into(),
            created_unix: 9,
            plan: CampaignPlan {
                boot,
                rounds,
                options: super::super::compare_options(0.05, 2.0, 1),
                steps: false,
            },
            cmdline: "root=/dev/sda1 ro".into(),
            rules: BTreeMap::new(),
            output: "/out.json".into(),
            recording: Recording::default(),
            hook: Hook::Init,
            pending: None,
            boots: Vec::new(),
            build_ids: BTreeMap::new(),
        }
    }

    /// The campaign's boots follow the boot schedule: slot after slot in the order, a failed
    /// boot retried, then the next slot.
    #[test]
    fn slots_walk_the_rounds_and_a_failure_is_retried_then_passed() {
        let mut st = state(2, 3, 1);
        let schedule = st.schedule();
        assert_eq!(schedule.len(), 6);
        let arms: Vec<usize> = (0..6).map(|s| st.slot(s).0).collect();
        assert_eq!(
            arms,
            st.schedule().order.concat(),
            "slots follow the order, round by round"
        );
        assert_eq!(st.slot(5).1, 3);
        let next = |st: &State| {
            let n = st.schedule().walk(&st.boots).next.unwrap();
            (n.slot, n.attempt)
        };
        assert_eq!(next(&st), (0, 0));
        // The planned kernel did not come up: tried again (another boot may), once.
        let other = || Outcome::failed("no".into(), Failure::OtherKernel);
        st.boots.push(st.record(0, 0, 1.0, other()));
        assert_eq!(next(&st), (0, 1), "one retry");
        st.boots.push(st.record(0, 1, 1.0, other()));
        assert_eq!(next(&st), (1, 0), "then the next boot");
        let measured = Outcome::Measured {
            result: serde_json::json!({}),
        };
        st.boots.push(st.record(1, 0, 1.0, measured));
        assert_eq!(next(&st), (2, 0));
        assert_eq!((st.progress().done, st.progress().failed), (2, 2));
    }

    #[test]
    fn each_boot_s_command_line_names_its_campaign_and_slot() {
        let st = state(2, 1, 0);
        let one = st.schedule().order[0].iter().position(|&a| a == 1).unwrap();
        let line = st.host().cmdline_of(&st.arms()[1], one, 1);
        assert_eq!(
            line,
            format!("root=/dev/sda1 ro audit=1 syscost.campaign=9-1 syscost.boot={one}.1")
        );
        assert_eq!(marks(&line), Some(("9-1".into(), one, 1)));
        assert_eq!(base_cmdline(&line), "root=/dev/sda1 ro audit=1");
    }

    #[test]
    fn the_state_is_saved_and_read_back_and_abort_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("campaign");
        std::fs::create_dir(&sub).unwrap();
        let st = state(2, 2, 1);
        st.save(&sub).unwrap();
        let back = State::load(&sub).unwrap().unwrap();
        assert_eq!(back.schedule().order, st.schedule().order);
        assert_eq!(back.progress().total, 4);
        assert_eq!(abort(&sub).unwrap().as_deref(), Some("9-1"));
        assert!(!sub.exists());
        assert_eq!(abort(&sub).unwrap(), None);
        assert!(State::load(&sub).unwrap().is_none());
    }
}
