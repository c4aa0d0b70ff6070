//! What booting needs, whatever boots: the arms (kernels, their command lines, their audit
//! rules), the measuring command, where the boots happen, and the order of rounds.

use crate::boot::qemu::Machine;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One arm: a kernel, what its command line adds, the audit rules set up before measuring,
/// and anything else that is the arm's own (the slab its rules load into, its own measuring
/// command). A command line names these settings by the arm's name; here they are the arm's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Arm {
    pub name: String,
    pub kernel: PathBuf,
    pub append: String,
    pub rules: Option<PathBuf>,
    /// The initramfs a kexec boot of this kernel starts with (QEMU boots get syscost's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrd: Option<PathBuf>,
    /// Where the kernel was fetched from when the arm named a URL (`kernel` is then the run's
    /// own copy): a lab's jobs fetch it from there too, checked by its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<crate::boot::fetch::KernelUrl>,
    /// Its rules load into a slab aged with this many objects (see [`crate::audit::age`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged_slab: Option<usize>,
    /// The command it is measured by instead of the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<Vec<String>>,
}

/// Where the boots happen.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Backend {
    /// Each boot a QEMU virtual machine.
    Qemu(Machine),
    /// This machine, rebooted into each arm by kexec.
    Kexec,
    /// A LAVA job per boot, on a lab's devices of one type.
    Lava(Box<LavaTarget>),
}

/// Where a LAVA campaign's boots run: a lab's devices of one type, booted as `boot` says
/// (a QEMU there as `machine` says, TCG with syscost's plugin when it counts; or a board by
/// iPXE), and how the lab gets the files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LavaTarget {
    /// The server's URL, without any password (the token is never kept: it is read again
    /// from the environment or `token_file` when a campaign resumes).
    pub lab: String,
    pub device_type: String,
    #[serde(default)]
    pub boot: crate::boot::lava::BootMethod,
    /// The device asked for: every job on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The one device every job runs on, chosen before the first job (timed boots, or
    /// `device` asked for) and kept for a resume; `None`: any device of the type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<Pin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    pub machine: Machine,
    /// Where the kernels, the initramfs and the plugin are put for the lab to fetch, and the
    /// URL that serves that directory; `None`: file:// URLs (a lab on this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Served>,
    /// A job still waiting for a device this long after its submission is cancelled: a
    /// failed boot.
    pub queue_limit: std::time::Duration,
    /// No job is submitted while the lab's queue for the device type holds this many
    /// (a plan kept before this existed: KernelCI's default, 50).
    #[serde(default = "queue_depth")]
    pub queue_depth: u32,
    /// Jobs under way at once when the boots count exactly (timed boots go one at a time).
    #[serde(default = "one")]
    pub jobs: u32,
    /// Where the jobs stand in the lab's queue (a plan kept before this existed: low).
    #[serde(default)]
    pub priority: crate::boot::lava::JobPriority,
    #[serde(default)]
    pub visibility: crate::boot::lava::JobVisibility,
    /// Where the run hears of its jobs' changes (a plan kept before this existed: the
    /// server's `/ws/`).
    #[serde(default)]
    pub events: crate::boot::lava_events::EventsAt,
}

/// KernelCI's default queue depth per device type.
fn queue_depth() -> u32 {
    50
}

/// The device a run's jobs stay on, and the tag that takes them there (LAVA 2023.01 sends a
/// job to a device only through tags): one of its own, or none when the type has one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pin {
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

fn one() -> u32 {
    1
}

/// A directory the lab fetches files from, and its URL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Served {
    pub dir: PathBuf,
    pub url: String,
}

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Qemu(_) => "qemu",
            Backend::Kexec => "kexec",
            Backend::Lava(_) => "lava",
        }
    }

    /// The QEMU machine each boot is: none for kexec, nor for a LAVA board.
    pub(crate) fn machine(&self) -> Option<&Machine> {
        match self {
            Backend::Qemu(m) => Some(m),
            Backend::Lava(t) if t.boot == crate::boot::lava::BootMethod::Qemu => Some(&t.machine),
            Backend::Lava(_) | Backend::Kexec => None,
        }
    }
}

/// What every boot of a campaign or a bisection shares: the arms, the measuring command run
/// inside each boot, where the boots happen and how a failed boot is retried.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "OnDisk")]
pub(crate) struct BootPlan {
    pub arms: Vec<Arm>,
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
    /// What a rules file's line that cannot be set up does: stop before anything boots (or,
    /// in the guest, fail the arm's boot), or be left out with a warning.
    pub rules_errors: crate::audit::rules_file::OnError,
    /// How often a boot places its arm's audit rule entries anew (a plan kept before this
    /// existed: once a boot).
    #[serde(default)]
    pub placement: PlaceEach,
}

/// How often a boot places its arm's audit rule entries (see [`crate::audit::anew`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PlaceEach {
    /// Once, as the guest's init loads the rules: a boot is one placement.
    #[default]
    Boot,
    /// Anew before each run of the measurement: a boot is as many placements as runs.
    Run,
}

impl PlaceEach {
    /// What a plan places by when its command line does not say: anew each run where a cache
    /// model counts the misses placement decides and an arm has rules to place (in a guest
    /// syscost boots), else once a boot (an exact count is the same wherever the entries are).
    pub(crate) fn default_for(plan: &BootPlan) -> PlaceEach {
        let modelled = plan
            .backend
            .machine()
            .is_some_and(|m| m.cache_model.is_some());
        match modelled && plan.arms.iter().any(|a| a.rules.is_some()) {
            true => PlaceEach::Run,
            false => PlaceEach::Boot,
        }
    }
}

impl BootPlan {
    /// A plan of no arm booted by `backend`, measuring with `run`, for tests to fill in.
    #[cfg(test)]
    pub(crate) fn bare(backend: Backend) -> BootPlan {
        BootPlan {
            arms: Vec::new(),
            seed: 1,
            measure: vec!["run".into()],
            backend,
            retries: 0,
            guest_files: Vec::new(),
            needs: Vec::new(),
            settle: None,
            rules_errors: Default::default(),
            placement: Default::default(),
        }
    }

    /// The command a boot of `arm` measures with: its own, else the plan's.
    pub(crate) fn measure_of<'a>(&'a self, arm: &'a Arm) -> &'a [String] {
        arm.measure.as_deref().unwrap_or(&self.measure)
    }
}

/// A plan as kept on disk (a campaign's or a bisection's state, a kexec campaign's): this
/// build's, or one kept before the arms carried their own settings, whose aged slabs and
/// measuring commands were maps by arm name beside the arms. Read into a [`BootPlan`] with
/// each setting on its arm.
#[derive(Deserialize)]
struct OnDisk {
    arms: Vec<Arm>,
    seed: u64,
    measure: Vec<String>,
    backend: Backend,
    retries: u32,
    guest_files: Vec<PathBuf>,
    needs: Vec<Needed>,
    settle: Option<std::time::Duration>,
    rules_errors: crate::audit::rules_file::OnError,
    #[serde(default)]
    placement: PlaceEach,
    #[serde(default)]
    aged_slab: std::collections::BTreeMap<String, usize>,
    #[serde(default)]
    arm_measure: std::collections::BTreeMap<String, Vec<String>>,
}

impl From<OnDisk> for BootPlan {
    fn from(k: OnDisk) -> BootPlan {
        let mut arms = k.arms;
        for a in &mut arms {
            a.aged_slab = a.aged_slab.or(k.aged_slab.get(&a.name).copied());
            a.measure = a.measure.take().or(k.arm_measure.get(&a.name).cloned());
        }
        BootPlan {
            arms,
            seed: k.seed,
            measure: k.measure,
            backend: k.backend,
            retries: k.retries,
            guest_files: k.guest_files,
            needs: k.needs,
            settle: k.settle,
            rules_errors: k.rules_errors,
            placement: k.placement,
        }
    }
}

/// A file the measuring command needs in the guest, and what in the command names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Needed {
    pub what: String,
    pub path: PathBuf,
}

/// Rounds of arm indices, each a shuffle of every arm by a generator seeded with `seed`.
pub(crate) fn order(arms: usize, rounds: u32, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    (0..rounds)
        .map(|_| {
            let mut r: Vec<usize> = (0..arms).collect();
            r.shuffle(&mut rng);
            r
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

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

    /// A plan kept before the arms carried their settings reads with each on its arm, and a
    /// plan of this build reads back as it was written.
    #[test]
    fn a_kept_plan_s_per_arm_maps_land_on_their_arms() {
        let mut plan = BootPlan::bare(Backend::Kexec);
        let arm = |name: &str| Arm {
            name: name.into(),
            kernel: "k".into(),
            ..Arm::default()
        };
        plan.arms = vec![arm("a"), arm("b")];
        let mut old = serde_json::to_value(&plan).unwrap();
        old["aged_slab"] = serde_json::json!({"b": 256});
        old["arm_measure"] = serde_json::json!({"a": ["run", "uprobe"]});
        let read: BootPlan = serde_json::from_value(old).unwrap();
        assert_eq!(
            read.arms[0].measure,
            Some(vec!["run".into(), "uprobe".into()])
        );
        assert_eq!(
            (read.arms[0].aged_slab, read.arms[1].aged_slab),
            (None, Some(256))
        );
        assert_eq!(read.measure_of(&read.arms[1]), ["run"]);
        let again: BootPlan = serde_json::from_str(&serde_json::to_string(&read).unwrap()).unwrap();
        assert_eq!(again.arms, read.arms);
        let text = serde_json::to_string(&read).unwrap();
        assert!(
            !text.contains("arm_measure") && !text.contains("\"aged_slab\":{"),
            "{text}"
        );
    }
}
