//! Boots in QEMU: the initramfs every boot starts from, each kernel as QEMU starts it, and
//! one try at booting an arm, as a [`BootRecord`].

use super::emulated;
use super::plan::{Arm, Backend, BootPlan};
use super::record::{BootRecord, BootSplit, Outcome};
use super::schedule::Boot;
use crate::boot::bzimage::{self, Entry};
use crate::boot::guest::{
    ARM_PARAM, GuestArm, GuestPlan, KALLSYMS_PARAM, PLAN_PATH, SCRATCH_PARAM,
};
use crate::boot::initramfs::{self, Contents};
use crate::boot::outcome::{Ended, Failure};
use crate::boot::qemu::{self, Accel, KernelEntry, Machine};
use crate::core::input::Opt;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How an arm's kernel started in its QEMU boots: at its PVH entry (its vmlinux, taken out
/// of the bzImage on the host) or as a bzImage, and why not at the PVH entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ArmEntry {
    pub arm: String,
    pub entry: KernelEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Entry {
    /// The file QEMU starts: the vmlinux, or the arm's bzImage.
    pub(super) fn kernel<'a>(&'a self, bzimage: &'a Path) -> &'a Path {
        match self {
            Entry::Pvh(vmlinux) => vmlinux,
            Entry::BzImage(_) => bzimage,
        }
    }

    pub(super) fn of(&self, arm: &str) -> ArmEntry {
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

/// The initramfs every boot of the campaign starts from.
pub(super) fn build_initramfs(
    plan: &BootPlan,
    rules: &[(String, String)],
    dir: &Path,
) -> Result<PathBuf> {
    let mut guest = GuestPlan {
        measure: plan.measure.clone(),
        mark: plan.backend.machine().is_some_and(|m| m.emulated_counters),
        objects: (plan.backend.machine()).is_some_and(|m| m.cache_model.is_some()),
        settle_s: plan.settle.map(|d| d.as_secs_f64()),
        kallsyms: plan.backend.machine().is_some_and(|m| m.emulated_profile),
        console: matches!(plan.backend, Backend::Lava(_)),
        // Exact counts in a lab are on a qemu device only: its job sends them to the guest.
        counts_port: matches!(plan.backend, Backend::Lava(_))
            && plan.backend.machine().is_some_and(|m| m.emulated_counters),
        place_per_run: (plan.placement == super::PlaceEach::Run).then_some(plan.seed),
        ..GuestPlan::default()
    };
    for a in &plan.arms {
        let own = GuestArm {
            measure: a.measure.clone(),
            aged: a.aged_slab,
            ..GuestArm::default()
        };
        if own != GuestArm::default() {
            guest.arms.insert(a.name.clone(), own);
        }
    }
    let mut named = Vec::new();
    for (arm, text) in rules {
        let path = format!("/campaign/rules/{arm}.json");
        guest.arms.entry(arm.clone()).or_default().rules = Some(path.clone());
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
/// A panic ends the boot at once (QEMU runs with -no-reboot). `no_timer_check`: under TCG on a
/// loaded host the kernel's early check of the IO-APIC timer can miss the emulated ticks and
/// panic ("IO-APIC + timer doesn't work!", once in a LAVA job of the suite here; OpenStack and
/// CirrOS pass it to their QEMU guests for the same reason); the check tests the board's
/// wiring, which QEMU's is known to have. The crypto self-tests are skipped
/// ([`SKIP_SELF_TESTS`]): they are most of what an emulated boot spends in its initcalls.
/// `profile`: the emulated profile counts the kernel's atomics, which a kernel that finds one
/// CPU at boot patches into plain instructions (its LOCK prefixes into DS prefixes, the same
/// length: no count changes); [`KEEP_LOCKS`] keeps them, as on the SMP machines it runs on.
pub(super) fn kernel_command_line(arm: &Arm, kallsyms: bool, profile: bool) -> String {
    let locks = if profile { KEEP_LOCKS } else { "" };
    format!(
        "console=ttyS0 {} no_timer_check {SKIP_SELF_TESTS}{locks}",
        guest_args(arm, kallsyms, -1)
    )
}

/// x86's `noreplace-smp`: the kernel keeps its SMP instructions (the LOCK prefixes of its
/// atomics) though it boots on one CPU.
pub(super) const KEEP_LOCKS: &str = " noreplace-smp";

/// The kernel's self-tests of its crypto algorithms (`cryptomgr.notests`; Debian's 6.12 runs
/// them in kernel threads for seconds after the init starts, which the guest waits out) and of
/// its SP800-108 key derivation (an initcall of its own, 0.25 s of a Debian 6.1 boot under
/// TCG, `initcall_debug`). Neither touches a measured path: a boot's exact counts per getpid
/// are the same with them and without (`bench/boot_cost.sh` checks it). An arm's own
/// `--append` comes before them and cannot undo them.
pub(super) const SKIP_SELF_TESTS: &str = "cryptomgr.notests initcall_blacklist=crypto_kdf108_init";

/// The command line but the console, which a board's boot loader gives as the board has it;
/// `panic`: the kernel's panic= (seconds before it reboots; -1: at once, saying nothing).
pub(super) fn guest_args(arm: &Arm, kallsyms: bool, panic: i32) -> String {
    let send = if kallsyms {
        format!(" {KALLSYMS_PARAM}=1")
    } else {
        String::new()
    };
    format!(
        "panic={panic} quiet {ARM_PARAM}={}{send} {}",
        arm.name, arm.append
    )
    .trim()
    .to_string()
}

/// Boots arms of a plan in QEMU, one at a time, from what every boot shares: the campaign's
/// work directory (removed when the booter is dropped), its initramfs, syscost's TCG plugin,
/// and each kernel as QEMU starts it (taken out once, at its first boot). A campaign boots
/// its schedule with it; a bisection boots the builds it chooses.
pub(crate) struct Booter<'p> {
    plan: &'p BootPlan,
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
    pub(crate) fn start(plan: &'p BootPlan, rules: &[(String, String)]) -> Result<Booter<'p>> {
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
                crate::refused!(
                    format!("KVM does not work here: {why}. "),
                    Opt::Accel,
                    " tcg emulates the CPU instead (its figures follow the instructions \
                     executed, not the hardware)"
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
    pub(crate) fn entries(&self) -> Vec<ArmEntry> {
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
        let e = match same {
            Some(j) => self.entries[j].clone().expect("found set"),
            None => {
                let vmlinux = self.dir.path().join(format!("vmlinux-{a}"));
                start_entry(self.machine.entry, kernel, &vmlinux)?
            }
        };
        self.entries[a] = Some(e.clone());
        Ok(e)
    }
}

/// How `kernel` starts as `entry` asks: at its PVH entry (its vmlinux, taken out into
/// `vmlinux`) where it has one, else as its bzImage, with why.
pub(super) fn start_entry(entry: KernelEntry, kernel: &Path, vmlinux: &Path) -> Result<Entry> {
    match entry {
        KernelEntry::Bzimage => Ok(Entry::BzImage("asked for".into())),
        KernelEntry::Pvh => bzimage::vmlinux_entry(kernel, vmlinux),
    }
}

impl Boot for Booter<'_> {
    /// One QEMU boot of arm `a`, in a directory of its own removed after it.
    fn boot(&mut self, a: usize, round: u32, attempt: u32) -> Result<BootRecord> {
        let entry = self.entry(a)?;
        let (plan, machine) = (self.plan, self.machine);
        let arm = &plan.arms[a];
        let bootdir = self
            .dir
            .path()
            .join(format!("round{round}-{}-try{attempt}", arm.name));
        std::fs::create_dir_all(&bootdir)?;
        let started = Instant::now();
        let kallsyms = machine.emulated_profile && self.symbols[a].is_none();
        let mut append = kernel_command_line(arm, kallsyms, machine.emulated_profile);
        let disk = match machine.guest_disk {
            Some(fs) => {
                let image = bootdir.join("disk.img");
                fs.make(&image)?;
                append.push_str(&format!(" {SCRATCH_PARAM}=/dev/nvme0n1"));
                Some(image)
            }
            None => None,
        };
        let ended = qemu::boot(
            machine,
            &qemu::Boot {
                kernel: entry.kernel(&arm.kernel),
                initrd: &self.initrd,
                append,
                dir: &bootdir,
                disk: disk.as_deref(),
                firmware_reboot: false,
                plugin: self.plugin.as_deref(),
            },
        );
        let _ = std::fs::remove_dir_all(&bootdir);
        let at = (round, attempt);
        Ok(record_of(
            ended?,
            arm,
            at,
            started,
            &mut self.symbols[a],
            machine,
        ))
    }
}

/// The record of one try at booting `arm`, from how QEMU's boot ended.
pub(super) fn record_of(
    ended: Ended,
    arm: &Arm,
    (round, attempt): (u32, u32),
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
        job: None,
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
            Err(e) => Outcome::failed(
                format!("the result sent back is not JSON ({e})"),
                Failure::NoResult,
            ),
        },
        Ended::Failed {
            reason,
            console,
            failure,
        } => Outcome::Failed {
            reason,
            console,
            failure,
        },
    }
}
