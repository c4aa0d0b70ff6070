//! What a campaign or a bisection is asked for, typed, and the plan it makes: how each guest
//! boots and counts ([`Guest`], whose unset parts are decided here: the accelerator, the
//! vCPUs, the boot timeout, the settling), what every boot measures and how it is compared
//! ([`BootAsk`]), and every refusal that needs no command line. `cli/` turns flags into these;
//! a reproduction builds them itself. The measuring command is the guest's syscost's own
//! words, checked by the parser that syscost uses, which only the command line has: it is
//! handed in as a [`MeasureCheck`].

use super::plan::{Arm, Backend, BootPlan, LavaTarget, Needed};
use crate::audit::rules_file::OnError;
use crate::boot::disk::GuestDisk;
use crate::boot::qemu::{Accel, KernelEntry, Machine};
use crate::compare;
use crate::core::cpus::CpuList;
use crate::core::input::Opt;
use crate::counters::emulated::{CacheModel, Count, Part};
use anyhow::Result;
use std::path::PathBuf;
use std::time::Duration;

/// Where the boots happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// A QEMU virtual machine per boot.
    Qemu,
    /// This machine, rebooted into each arm by kexec (bare metal); needs --yes.
    Kexec,
    /// A LAVA lab: a job per boot on its qemu devices under tcg, or on its x86 boards
    /// (--lava-boot ipxe); --lava-url and a token.
    Lava,
}

/// A guest's memory when none is asked for, MiB.
pub(crate) const GUEST_MEMORY_MIB: u32 = 1024;
/// Tries after a failed boot when none are asked for.
pub(crate) const RETRIES: u32 = 1;
/// How long a guest that counts waits for its boot's own work to end, when not told.
const COUNTED_SETTLE: Duration = Duration::from_secs(30);

/// How each boot's guest runs and counts, as asked: `None` leaves it to [`Guest::machine`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Guest {
    pub accel: Option<Accel>,
    pub cpus: Option<u32>,
    pub host_cpus: Option<CpuList>,
    pub entry: KernelEntry,
    pub emulated_counters: bool,
    pub cache_model: Option<CacheModel>,
    pub emulated_profile: bool,
    pub icount: Option<u8>,
    /// `Some(ZERO)`: measure at once.
    pub settle: Option<Duration>,
    pub memory_mib: u32,
    pub boot_timeout: Option<Duration>,
    pub retries: u32,
    pub files: Vec<PathBuf>,
    pub disk: Option<GuestDisk>,
}

impl Default for Guest {
    fn default() -> Guest {
        Guest {
            accel: None,
            cpus: None,
            host_cpus: None,
            entry: KernelEntry::default(),
            emulated_counters: false,
            cache_model: None,
            emulated_profile: false,
            icount: None,
            settle: None,
            memory_mib: GUEST_MEMORY_MIB,
            boot_timeout: None,
            retries: RETRIES,
            files: Vec::new(),
            disk: None,
        }
    }
}

impl Guest {
    /// Whether the boots count with syscost's QEMU plugin.
    pub(crate) fn emulated(&self) -> bool {
        self.emulated_counters || self.cache_model.is_some() || self.emulated_profile
    }

    /// How the guest's CPU runs: a LAVA job's always under tcg; else as asked, or tcg when
    /// the boots count what QEMU emulates.
    pub(crate) fn accel(&self, via: Via) -> Accel {
        let counted = self.emulated() || self.icount.is_some();
        match (via, self.accel) {
            (Via::Lava, _) => Accel::Tcg,
            (_, Some(a)) => a,
            (_, None) if counted => Accel::Tcg,
            (_, None) => Accel::Kvm,
        }
    }

    /// The guest's vCPUs: as asked, else one per host CPU to pin to, else by accelerator
    /// (one under tcg: text patching races between two emulated vCPUs).
    pub(crate) fn cpus(&self, via: Via) -> u32 {
        match (self.cpus, &self.host_cpus, self.accel(via)) {
            (Some(n), _, _) => n,
            (None, Some(list), _) => list.len() as u32,
            (None, None, Accel::Tcg) => 1,
            (None, None, Accel::Kvm) => 2,
        }
    }

    /// How long each guest waits for its boot's own work to end: as asked (0: not at all),
    /// else 30 s when it counts (every instruction in a window counts), else not at all.
    pub(crate) fn settle(&self) -> Option<Duration> {
        (self.settle)
            .or(self.emulated().then_some(COUNTED_SETTLE))
            .filter(|d| !d.is_zero())
    }

    /// Refuse what the guests could not do `via` that way, measured by `measure`.
    pub(crate) fn check(&self, via: Via, measure: &[String]) -> Result<()> {
        let tcg = via != Via::Kexec && self.accel(via) == Accel::Tcg;
        if self.disk.is_some() && via != Via::Qemu {
            anyhow::bail!(crate::refused!(
                Opt::GuestDisk,
                " gives a disk to the guests this machine's QEMU boots (",
                Opt::Via,
                " qemu): a LAVA device or a kexec'd machine has its own disks"
            ));
        }
        if via == Via::Lava && self.host_cpus.is_some() {
            anyhow::bail!(crate::refused!(
                Opt::HostCpus,
                " pins this machine's QEMU: a LAVA job's QEMU runs on its worker"
            ));
        }
        if self.icount.is_some() && !tcg {
            anyhow::bail!(crate::refused!(
                Opt::Icount,
                " needs ",
                Opt::Accel,
                " tcg: it is QEMU's emulator that counts the instructions the guest's clock \
                 follows"
            ));
        }
        if self.emulated() && !tcg {
            anyhow::bail!(crate::refused!(
                Opt::EmulatedCounters,
                " needs ",
                Opt::Accel,
                " tcg: QEMU's plugins see only the instructions it emulates (not under kvm, nor \
                 on bare metal)"
            ));
        }
        self.check_counted(measure)
    }

    /// Counting counts batches a measurement marks.
    fn check_counted(&self, measure: &[String]) -> Result<()> {
        let first: Vec<&str> = measure.iter().take(2).map(String::as_str).collect();
        let counted = matches!(
            first[..],
            ["run", ..] | ["audit", "sweep" | "residue"] | ["probe", ..]
        );
        if self.emulated() && !counted {
            anyhow::bail!(crate::refused!(
                Opt::EmulatedCounters,
                " counts the timed batches of `run` and `audit sweep` and the runs of `probe`; ",
                measure.join(" "),
                " is measured without them: measure with -- run, -- audit sweep or -- probe"
            ));
        }
        // On more than one vCPU the plugin counts the vCPU a window began on (by callbacks:
        // QEMU 7.2's inline adds land in one counter whichever vCPU runs), and refuses a
        // window whose task moved.
        Ok(())
    }

    /// A board runs no emulator: nothing counts instructions, nor runs its clock on them.
    pub(crate) fn check_board(&self) -> Result<()> {
        if self.emulated() || self.icount.is_some() {
            anyhow::bail!(crate::refused!(
                Opt::LavaBoot,
                " ipxe boots a board, which runs no emulator: exact counts (",
                Opt::EmulatedCounters,
                ", ",
                Opt::CacheModel,
                ", ",
                Opt::EmulatedProfile,
                ") and ",
                Opt::Icount,
                " need LAVA's qemu devices (",
                Opt::LavaBoot,
                " qemu); a board gives time and its own hardware counters"
            ));
        }
        Ok(())
    }

    /// The machine each boot is, its unset parts decided: a boot is stopped after 60 s under
    /// kvm, 180 s under tcg.
    pub(crate) fn machine(&self, via: Via) -> Machine {
        let timeout = self.boot_timeout.unwrap_or(match self.accel(via) {
            Accel::Kvm => Duration::from_secs(60),
            Accel::Tcg => Duration::from_secs(180),
        });
        Machine {
            accel: self.accel(via),
            cpus: self.cpus(via),
            memory_mib: self.memory_mib,
            timeout,
            host_cpus: self.host_cpus.clone(),
            entry: self.entry,
            emulated_counters: self.emulated(),
            cache_model: self.cache_model.clone(),
            emulated_profile: self.emulated_profile,
            icount: self.icount,
            guest_disk: self.disk,
        }
    }
}

/// What a measuring command needs in the guest: files it opens (a probe's target and
/// program), and the rules file it reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Measured {
    pub needs: Vec<Needed>,
    pub rules: Option<PathBuf>,
}

/// The check of a measuring command by the parser the guest's syscost runs it with: what it
/// needs in the guest, or why it would fail in every boot (on a guest of `guest_cpus`, for
/// QEMU boots).
pub(crate) trait MeasureCheck {
    fn check(&self, words: &[String], guest_cpus: Option<u32>) -> Result<Measured>;
}

/// What every boot of a campaign or a bisection is asked to share, and how its figures are
/// compared.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BootAsk {
    pub via: Via,
    pub guest: Guest,
    /// The lab, for `Via::Lava`; its machine is the guest's, set by the plan.
    pub lava: Option<Box<LavaTarget>>,
    /// The syscost command measured in every boot (but an arm's own).
    pub measure: Vec<String>,
    pub rules_errors: OnError,
    /// The figure compared or bisected; `None`: see [`BootAsk::metric`].
    pub metric: Option<String>,
    /// What the boot order (and the bootstrap) is seeded by; `None`: the clock.
    pub seed: Option<u64>,
    pub noise_threshold: f64,
    pub exact_resolution: f64,
}

impl BootAsk {
    /// What every boot of `measure` asks for by default, on QEMU.
    pub(crate) fn new(measure: Vec<String>) -> BootAsk {
        BootAsk {
            via: Via::Qemu,
            guest: Guest::default(),
            lava: None,
            measure,
            rules_errors: OnError::Stop,
            metric: None,
            seed: None,
            noise_threshold: NOISE_THRESHOLD_PCT,
            exact_resolution: compare::EXACT_FLOOR_PCT,
        }
    }

    /// The seed: as asked, else the clock's second.
    pub(crate) fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(crate::core::now_unix)
    }

    /// The figure compared or bisected: as asked, else the exact instruction count when the
    /// boots count with the plugin, else time.
    pub(crate) fn metric(&self) -> String {
        match (&self.metric, self.guest.emulated()) {
            (Some(m), _) => m.clone(),
            (None, true) => Count::Instructions.part_name(Part::All),
            (None, false) => "time".to_string(),
        }
    }

    /// The comparison's options at `alpha`, seeded by `seed`, of the figure compared.
    pub(crate) fn options(&self, alpha: f64, seed: u64) -> compare::Options {
        compare::Options {
            exact_floor_pct: self.exact_resolution,
            primary: self.metric(),
            ..crate::experiments::campaign::compare_options(alpha, self.noise_threshold, seed)
        }
    }

    /// A metric no run's result can hold is refused before any boot (a `run` measures in
    /// every boot; a sweep's or a probe's figures are named by what they fit).
    fn check_metric(&self) -> Result<()> {
        match (&self.metric, self.measure.first().map(String::as_str)) {
            (Some(m), Some("run")) if !crate::results::metrics::run_could_have(m) => {
                anyhow::bail!(crate::refused!(
                    Opt::Metric,
                    " ",
                    crate::core::printable(m),
                    ": no boot's result can have it: a run's figures are time, its events \
                     (task-clock, instructions:k, ...), with ",
                    Opt::EmulatedCounters,
                    " `instructions (emulated)` and its parts, and ratios such as CPUs-utilized"
                ))
            }
            _ => Ok(()),
        }
    }

    /// The plan every boot of `arms` shares, seeded by `seed`, after refusing what the boots
    /// could not do: counting without TCG, counting a command that times no batches, a
    /// measuring command (the plan's or an arm's) that would fail in
    /// every boot.
    pub(crate) fn plan(
        &self,
        arms: Vec<Arm>,
        seed: u64,
        measured: &dyn MeasureCheck,
    ) -> Result<BootPlan> {
        let (guest, via) = (&self.guest, self.via);
        if let Some(t) = self.lava.as_ref().filter(|_| via == Via::Lava)
            && t.boot == crate::boot::lava::BootMethod::Ipxe
        {
            guest.check_board()?;
        }
        let vcpus = (via != Via::Kexec).then(|| guest.cpus(via));
        let mut needs = Vec::new();
        let mut files = guest.files.clone();
        let own = arms.iter().filter_map(|a| a.measure.as_deref());
        for words in std::iter::once(&self.measure[..]).chain(own) {
            guest.check(via, words)?;
            let m = measured.check(words, vcpus)?;
            needs.extend(m.needs);
            if let Some(r) = m.rules {
                files.push(r);
                files.push(crate::audit::libaudit::library_path()?);
            }
        }
        files.sort();
        files.dedup();
        self.check_metric()?;
        Ok(BootPlan {
            arms,
            seed,
            measure: self.measure.clone(),
            backend: self.backend()?,
            retries: guest.retries,
            guest_files: files,
            needs,
            settle: guest.settle(),
            rules_errors: self.rules_errors,
            placement: Default::default(),
        })
    }

    fn backend(&self) -> Result<Backend> {
        let machine = self.guest.machine(self.via);
        Ok(match (self.via, &self.lava) {
            (Via::Qemu, _) => Backend::Qemu(machine),
            (Via::Kexec, _) => Backend::Kexec,
            (Via::Lava, Some(t)) => Backend::Lava(Box::new(LavaTarget {
                machine,
                ..(**t).clone()
            })),
            (Via::Lava, None) => anyhow::bail!(crate::refused!(
                Opt::Via,
                " lava needs ",
                Opt::LavaUrl,
                " URL (the LAVA server)"
            )),
        })
    }
}

/// Timed changes smaller than this percentage are never called a change, when not told.
pub(crate) const NOISE_THRESHOLD_PCT: f64 = 2.0;

#[cfg(test)]
mod unit {
    use super::*;

    /// Counting what QEMU emulates implies its emulator; an accelerator asked for stands (and
    /// kvm with emulated counters is refused).
    #[test]
    fn emulated_counts_boot_under_tcg_unless_told_otherwise() {
        let g = |f: fn(&mut Guest)| {
            let mut g = Guest::default();
            f(&mut g);
            g
        };
        assert_eq!(Guest::default().accel(Via::Qemu), Accel::Kvm);
        assert_eq!(
            g(|g| g.emulated_counters = true).accel(Via::Qemu),
            Accel::Tcg
        );
        let model = CacheModel::parse("skylake-x").unwrap();
        let modelled = Guest {
            cache_model: Some(model),
            ..Guest::default()
        };
        assert_eq!(modelled.accel(Via::Qemu), Accel::Tcg);
        assert_eq!(g(|g| g.icount = Some(0)).accel(Via::Qemu), Accel::Tcg);
        let kvm = g(|g| {
            g.accel = Some(Accel::Kvm);
            g.emulated_counters = true
        });
        assert_eq!(kvm.accel(Via::Qemu), Accel::Kvm);
        let said = kvm.check(Via::Qemu, &["run".into()]).unwrap_err();
        assert!(
            said.to_string()
                .contains("-emulated-counters needs --accel tcg"),
            "{said}"
        );
    }

    /// What is not asked for is decided: one vCPU and 180 s under tcg, two and 60 s under
    /// kvm, a counted guest settles 30 s, and two counted vCPUs are counted.
    #[test]
    fn a_guest_s_unset_parts_are_decided_by_how_it_runs() {
        let tcg = Guest {
            emulated_counters: true,
            ..Guest::default()
        };
        let m = tcg.machine(Via::Qemu);
        assert_eq!((m.cpus, m.timeout.as_secs()), (1, 180));
        assert_eq!(tcg.settle(), Some(Duration::from_secs(30)));
        let m = Guest::default().machine(Via::Qemu);
        assert_eq!((m.accel, m.cpus, m.timeout.as_secs()), (Accel::Kvm, 2, 60));
        assert_eq!(Guest::default().settle(), None);
        let now = Guest {
            settle: Some(Duration::ZERO),
            ..tcg.clone()
        };
        assert_eq!(now.settle(), None, "0: measured at once");
        let two = Guest {
            cpus: Some(2),
            ..tcg
        };
        two.check(Via::Qemu, &["run".into()]).unwrap();
    }
}
