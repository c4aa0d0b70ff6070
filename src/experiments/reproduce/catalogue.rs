//! The investigations syscost repeats, as data: each one's paper, arms (the kernel each boots,
//! its command line, rules and measuring command), rule sets, cache model, boots and runs.

use super::*;

/// A kernel series an arm boots: the newest image of it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Series {
    /// Debian 12's 6.1 (linux-image-6.1.0-N-cloud-amd64 or -amd64).
    Linux61,
    /// Debian 12's backported 6.12 (linux-image-6.12.N+deb12-cloud-amd64 or -amd64).
    Linux612,
}

impl Series {
    pub(super) fn prefix(self) -> &'static str {
        match self {
            Series::Linux61 => "vmlinuz-6.1.",
            Series::Linux612 => "vmlinuz-6.12.",
        }
    }

    /// How to get an image of it.
    pub(super) fn how_to_get(self) -> String {
        let (package, any) = match self {
            Series::Linux61 => ("linux-image-6.1.0-56-cloud-amd64", "6.1.0-N"),
            Series::Linux612 => ("linux-image-6.12.117+deb12-cloud-amd64", "6.12.N"),
        };
        crate::said!(
            format!("apt-get download {package} (any {any}), then dpkg-deb -x linux-image-*.deb "),
            "DIR and give ",
            Opt::Kernels,
            " DIR/boot (scripts/test.sh fetches one into target/kernels/boot)"
        )
        .spell(spelled)
    }
}

/// The kernel an arm boots: found in `--kernels DIR`, or built by syscost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Image {
    /// The newest image of a Debian series: the arm cannot be left out.
    Newest(Series),
    /// A build syscost makes (reproduce's build option) and keeps: an arm whose build is not made
    /// is left out, unless it is `needed` (the one the others are compared with).
    Build {
        spec: crate::kbuild::Recipe,
        needed: bool,
    },
}

impl Image {
    /// syscost's build of `spec`, needed when it is the source as it is (the build the
    /// others are compared with).
    pub(super) const fn built(spec: crate::kbuild::Recipe) -> Image {
        Image::Build {
            spec,
            needed: spec.changes.is_empty(),
        }
    }
}

/// One arm of an investigation's campaign.
#[derive(Clone, Debug)]
pub(crate) struct ArmSpec {
    pub name: &'static str,
    pub image: Image,
    /// Added to the kernel's command line.
    pub append: &'static str,
    /// The shipped rule set the arm's guest loads (a key of [`Investigation::rules`]).
    pub rules: Option<&'static str>,
    /// The rules load into a slab aged with this many objects (`campaign --aged-slab`).
    pub aged: Option<usize>,
    /// The arm's own measuring command instead of the investigation's (`campaign
    /// --arm-command`).
    pub measure: Option<Measure>,
}

/// What a campaign's boots measure: the command line (`cli/reproduce.rs`) says it in words,
/// with the reproduction's runs and samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Measure {
    /// `run syscall`: getpid.
    Syscall,
    /// `run vfs-mix` in this directory.
    VfsMixIn(&'static str),
    /// `run uprobe`: the probe on the instruction, hit by `producers`.
    UprobeOn {
        probe: ProbeKind,
        insn: Insn,
        producers: Producers,
    },
    /// `run uprobe` as it defaults (each arm says its own).
    Uprobe,
    /// `audit sweep` of [`WALK_RULES`] exit rules that never match the measured getpid: each
    /// rule one turn of the exit list's walk, its fitted slope the cost of a turn.
    RuleWalk,
}

/// Who hits a [`Measure::UprobeOn`]'s probe, each pinned to a vCPU of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Producers {
    /// The measuring process alone, on the first vCPU (its windows never move).
    One,
    /// Two processes: they share the uprobe (its object, the tree it is found in), each its own
    /// xol area.
    Processes,
    /// Two threads of one process, as the thread's bench runs its producers: they share the
    /// process's xol area too.
    Threads,
}

/// The rule counts of a [`Measure::RuleWalk`]: none, half and all of the series' 42.
pub(crate) const WALK_RULES: &str = "0,21,42";

/// The calls a rule walk's smallest window makes (its windows: 64, 128 and 256 calls). Under the
/// cache model a window of 256 calls with 42 rules outlasts several timer ticks here, and a tick
/// that lands in the audit timestamp's clock read makes that getpid read it again: with every
/// window of two sizes ticked, no quiet window was left to fit, and a fresh clone's suite read
/// -10.99 instructions a turn for -11. A quarter of the length leaves quiet windows of every
/// size (measured: 0 ticks in the kept windows, against 5 to 14) in the same boot time.
pub(crate) const WALK_OPS: u64 = 64;

/// The objects an aged arm's slab is aged with: 16 kmalloc-512 slabs' worth, half freed,
/// leaves 128 holes for 37 or 42 entries.
pub(crate) const AGED_OBJECTS: usize = 256;

/// How an investigation's boots count with syscost's plugin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Counts {
    /// Exact counts, and the cache model of the paper's CPU: the misses it explains.
    Modelled,
    /// Exact counts alone: the paper's causes are instructions, atomics and lines moved
    /// between vCPUs, none of them a miss (the models would double a boot's time).
    Exact,
}

/// An investigation syscost repeats.
#[derive(Debug)]
pub(crate) struct Investigation {
    pub name: &'static str,
    /// What it asks, in a line.
    pub about: &'static str,
    /// Its tables as data (`papers/NAME.json`).
    pub tables: &'static str,
    pub arms: &'static [ArmSpec],
    /// Rule sets of the paper's shape shipped with it: (file name, text).
    pub rules: &'static [(&'static str, &'static str)],
    /// The cache model of the paper's CPU (its L1d geometry places the rule entries).
    pub cache_model: &'static str,
    /// How the boots count with syscost's plugin.
    pub counts: Counts,
    /// vCPUs of each guest, when not the one counting needs.
    pub guest_cpus: Option<u32>,
    /// A disk each guest measures on ([`SCRATCH_DIR`]), as the paper's runs were on a disk.
    pub guest_disk: Option<GuestDisk>,
    /// Tries after a failed boot, when not the campaign's default (1).
    pub retries: Option<u32>,
    /// Whether its cells need the kernel's instructions by function (`--emulated-profile`).
    pub profile: bool,
    /// Boots per arm by default: two show exact counts' boot-to-boot range; a modelled
    /// figure scored against the middle 80% of its boots needs more placements, and a
    /// direction, a rank test of two arms' boots, at least 4 a side to reach p < 0.05.
    pub boots: u32,
    /// Runs of the measurement in each boot by default. Where the arms' rule entries are
    /// placed anew before every run (the cache model with rules: `campaign --placement`), each
    /// run is a placement of its own: 8 runs x 6 boots give 48 placements an arm.
    pub runs: u32,
    /// The syscost command measured in every boot, before the options `reproduce` adds.
    pub measure: Measure,
    /// What it needs and costs, for `reproduce --list`.
    pub needs: &'static str,
    /// The builds of a series of changes it shows step by step (none: no such table).
    pub series: &'static [steps::SeriesBuild],
}

/// The series' four kernels, built from Debian's linux-source-6.1: audit=0 and audit=1 with
/// 42 exit rules of the series' shape on the baseline, then each step of the series; and each
/// kernel's cost per rule, from an audit sweep of 0, 21 and 42 rules that never match getpid
/// (each rule one turn of the list walk the series changed).
pub(super) const AUDIT_SERIES_ARMS: &[ArmSpec] = &[
    ArmSpec {
        append: "audit=0",
        rules: None,
        ..series_arm("audit0", builds::BASELINE, None)
    },
    series_arm("baseline", builds::BASELINE, None),
    series_arm("patch1", builds::PATCH_1, None),
    series_arm("patch1-2", builds::PATCH_1_2, None),
    series_arm("patch1-3", builds::PATCH_1_3, None),
    series_arm("walk-baseline", builds::BASELINE, Some(Measure::RuleWalk)),
    series_arm("walk-patch1", builds::PATCH_1, Some(Measure::RuleWalk)),
    series_arm("walk-patch1-2", builds::PATCH_1_2, Some(Measure::RuleWalk)),
    series_arm("walk-patch1-3", builds::PATCH_1_3, Some(Measure::RuleWalk)),
];

/// The series step by step: each build's arm with the 42 rules and its rule walk's.
pub(super) const AUDIT_SERIES_STEPS: &[steps::SeriesBuild] = &[
    series_build("baseline", "walk-baseline"),
    series_build("patch1", "walk-patch1"),
    series_build("patch1-2", "walk-patch1-2"),
    series_build("patch1-3", "walk-patch1-3"),
];

pub(super) const fn series_build(arm: &'static str, walk: &'static str) -> steps::SeriesBuild {
    steps::SeriesBuild {
        build: arm,
        arm,
        walk,
    }
}

/// An arm of a series build at audit=1: with the series' 42 rules, or its own measuring
/// command (which loads its own).
pub(super) const fn series_arm(
    name: &'static str,
    spec: crate::kbuild::Recipe,
    measure: Option<Measure>,
) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::built(spec),
        append: "audit=1",
        rules: match measure {
            None => Some("audit-series.rules"),
            Some(_) => None,
        },
        aged: None,
        measure,
    }
}

/// The post's kernels, both before the series' fixes, and UEK6 with them: Debian's packaged 6.1
/// for UEK5, syscost's build of its linux-source-6.1 for UEK6, and that build with the series'
/// patches 1-3 for the patched column (so before and patched differ by the fixes alone). The
/// post's machines had run for a while: every arm loads its rules into an aged slab.
pub(super) const SYSCALL_LATENCY_ARMS: &[ArmSpec] = &[
    ArmSpec {
        name: "old",
        image: Image::Newest(Series::Linux61),
        append: "audit=1",
        rules: Some("syscall-latency.rules"),
        aged: Some(AGED_OBJECTS),
        measure: None,
    },
    latency_arm("new", builds::BASELINE),
    latency_arm("patched", builds::PATCH_1_3),
];

pub(super) const fn latency_arm(name: &'static str, spec: crate::kbuild::Recipe) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::built(spec),
        append: "audit=1",
        rules: Some("syscall-latency.rules"),
        aged: Some(AGED_OBJECTS),
        measure: None,
    }
}

/// One arm per line of the thread's x86-64 table, a probe kind on an instruction, on Debian's
/// 6.12 (which has the lockless uprobe changes the thread's table was measured with), and the
/// nop's and the ret's uprobe again on Debian's 6.1 (before them), each hit by one producer;
/// then two producers on two vCPUs: threads of one process on a ret (the xol area they share),
/// and processes on a nop on 6.12 and on 6.1 (the uprobe they share, before and after the
/// lockless changes).
pub(super) const UPROBE_THREAD_ARMS: &[ArmSpec] = &[
    uprobe_arm(
        "uprobe-nop",
        Series::Linux612,
        ProbeKind::Uprobe,
        Insn::Nop,
        Producers::One,
    ),
    uprobe_arm(
        "uretprobe-nop",
        Series::Linux612,
        ProbeKind::Uretprobe,
        Insn::Nop,
        Producers::One,
    ),
    uprobe_arm(
        "uprobe-ret",
        Series::Linux612,
        ProbeKind::Uprobe,
        Insn::Ret,
        Producers::One,
    ),
    uprobe_arm(
        "uretprobe-ret",
        Series::Linux612,
        ProbeKind::Uretprobe,
        Insn::Ret,
        Producers::One,
    ),
    uprobe_arm(
        "uprobe-nop-6.1",
        Series::Linux61,
        ProbeKind::Uprobe,
        Insn::Nop,
        Producers::One,
    ),
    uprobe_arm(
        "uprobe-ret-6.1",
        Series::Linux61,
        ProbeKind::Uprobe,
        Insn::Ret,
        Producers::One,
    ),
    uprobe_arm(
        "uprobe-ret-2threads",
        Series::Linux612,
        ProbeKind::Uprobe,
        Insn::Ret,
        Producers::Threads,
    ),
    uprobe_arm(
        "uprobe-nop-2procs",
        Series::Linux612,
        ProbeKind::Uprobe,
        Insn::Nop,
        Producers::Processes,
    ),
    uprobe_arm(
        "uprobe-nop-6.1-2procs",
        Series::Linux61,
        ProbeKind::Uprobe,
        Insn::Nop,
        Producers::Processes,
    ),
];

pub(super) const fn uprobe_arm(
    name: &'static str,
    series: Series,
    probe: ProbeKind,
    insn: Insn,
    producers: Producers,
) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::Newest(series),
        append: "",
        rules: None,
        aged: None,
        measure: Some(Measure::UprobeOn {
            probe,
            insn,
            producers,
        }),
    }
}

/// The RFC's 11 builds of linux-source-6.1, one arm each: -Os, and -falign-functions=1 to 512.
/// The 16-byte build (the vanilla kernel's alignment) is the one the others are divided by.
pub(super) const ALIGNMENT_RFC_ARMS: &[ArmSpec] = &[
    build_arm("os", builds::SIZE, false),
    build_arm(
        "a1",
        builds::aligned("align-1", "-falign-functions=1"),
        false,
    ),
    build_arm(
        "a2",
        builds::aligned("align-2", "-falign-functions=2"),
        false,
    ),
    build_arm(
        "a4",
        builds::aligned("align-4", "-falign-functions=4"),
        false,
    ),
    build_arm(
        "a8",
        builds::aligned("align-8", "-falign-functions=8"),
        false,
    ),
    build_arm("a16", builds::VANILLA, true),
    build_arm(
        "a32",
        builds::aligned("align-32", "-falign-functions=32"),
        false,
    ),
    build_arm(
        "a64",
        builds::aligned("align-64", "-falign-functions=64"),
        false,
    ),
    build_arm(
        "a128",
        builds::aligned("align-128", "-falign-functions=128"),
        false,
    ),
    build_arm(
        "a256",
        builds::aligned("align-256", "-falign-functions=256"),
        false,
    ),
    build_arm(
        "a512",
        builds::aligned("align-512", "-falign-functions=512"),
        false,
    ),
];

pub(super) const fn build_arm(
    name: &'static str,
    spec: crate::kbuild::Recipe,
    needed: bool,
) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::Build { spec, needed },
        append: "",
        rules: None,
        aged: None,
        measure: None,
    }
}

/// Every investigation, in the order `--list` shows them.
pub(crate) const ALL: &[Investigation] = &[
    Investigation {
        name: "audit-series",
        about: "the 2022 audit syscall-exit series: what 42 exit rules add to a getpid()",
        tables: include_str!("../../../papers/audit-series.json"),
        arms: AUDIT_SERIES_ARMS,
        rules: &[(
            "audit-series.rules",
            include_str!("../../../papers/audit-series.rules"),
        )],
        cache_model: "skylake-x",
        counts: Counts::Modelled,
        guest_cpus: None,
        guest_disk: None,
        retries: None,
        profile: false,
        // Its misses' direction is a rank test of two arms' boots: 6 and 6 can reach
        // p = 0.0022, 2 and 2 no lower than 0.33.
        boots: 6,
        runs: 8,
        series: AUDIT_SERIES_STEPS,
        measure: Measure::Syscall,
        needs: "syscost's builds of Debian's linux-source-6.1 and of it with the series' \
                patches 1, 1-2 and 1-3 (built once per machine: about 3 minutes for the first, \
                25 s for each patch here); QEMU (TCG); 9 arms (audit=0 and the four builds with \
                42 rules, and each build's rule walk, an audit sweep) x 6 boots, 5 to 20 s a \
                boot here",
    },
    Investigation {
        name: "syscall-latency",
        about: "the syscall-latency post (2023): 37 audit rules, L1d misses and the crowded sets",
        tables: include_str!("../../../papers/syscall-latency.json"),
        arms: SYSCALL_LATENCY_ARMS,
        rules: &[(
            "syscall-latency.rules",
            include_str!("../../../papers/syscall-latency.rules"),
        )],
        cache_model: "skylake-x",
        counts: Counts::Modelled,
        guest_cpus: None,
        guest_disk: None,
        retries: None,
        profile: true,
        boots: 6,
        runs: 8,
        series: &[],
        measure: Measure::Syscall,
        needs: "a Debian 6.1 kernel image (for UEK5) and syscost's builds of Debian's \
                linux-source-6.1 without and with the 2022 series' patches 1-3 (for UEK6 before \
                and patched; built once per machine); QEMU (TCG); 3 arms, each with 37 rules \
                in an aged slab, x 6 boots with the per-function profile, about 35 s a boot here",
    },
    Investigation {
        name: "alignment-rfc",
        about: "the 2015 function-alignment RFC: a VFS-mix loop over 11 kernel builds",
        tables: include_str!("../../../papers/alignment-rfc.json"),
        arms: ALIGNMENT_RFC_ARMS,
        rules: &[],
        // The RFC's Xeon E7-4890 v2: L1d and L1i 32 KiB 8-way, L2 256 KiB 8-way.
        cache_model: "64x8x64,64x8x64+1x512x64+512x2x64,512x8x64",
        counts: Counts::Modelled,
        guest_cpus: None,
        // The RFC's Intel runs (its headline tables) were on ext4 on an SSD.
        guest_disk: Some(GuestDisk::Ext4),
        retries: None,
        profile: false,
        boots: 2,
        runs: 3,
        series: &[],
        measure: Measure::VfsMixIn(SCRATCH_DIR),
        needs: "syscost's builds of Debian's linux-source-6.1 that differ only in their \
                function alignment (built once per machine, about 3 minutes each here; the \
                16-byte one, the source as it is, is needed and is the audit series' \
                baseline, each other one found is an arm compared with it); QEMU (TCG); an arm \
                per build x 2 boots on an ext4 disk, each counted by three L1i models, about \
                15 s a boot here",
    },
    Investigation {
        name: "uprobe-thread",
        about: "the 2024 uprobe thread: what a uprobe or uretprobe hit on a nop and on a ret \
                costs, exactly (kernel instructions, the single step's functions, atomics), on \
                6.12 and 6.1, and their throughput",
        tables: include_str!("../../../papers/uprobe-thread.json"),
        arms: UPROBE_THREAD_ARMS,
        rules: &[],
        cache_model: "skylake-x",
        // Counted exactly, with the profile: the kernel's functions and atomics a hit; on two
        // vCPUs, each window the vCPU's it began on, and the lines two producers take from
        // each other (the coherence model).
        counts: Counts::Exact,
        guest_cpus: Some(2),
        guest_disk: None,
        // Debian's 6.12 on two vCPUs under QEMU 7.2 now and then executes a breakpoint of a
        // kernel text patch already undone ("Oops: int3"), in bursts on a busy host (two boots
        // in a row here, within 2 s of starting): such a boot is booted again, up to 3 times.
        retries: Some(3),
        profile: true,
        boots: 2,
        runs: 3,
        series: &[],
        measure: Measure::Uprobe,
        needs: "Debian 6.12 and 6.1 kernel images; QEMU (TCG, 2 vCPUs); 9 arms (uprobe and \
                uretprobe on nop and ret on 6.12, uprobe on nop and ret on 6.1, one producer \
                each; two producers: threads on a ret on 6.12, processes on a nop on 6.12 and \
                6.1) x 2 boots, about 10 s a boot here",
    },
];

/// The investigation named `name`.
pub(crate) fn named(name: &str) -> Result<&'static Investigation, String> {
    ALL.iter().find(|i| i.name == name).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|i| i.name).collect();
        crate::said!(
            format!(
                "no investigation named {name:?}: syscost reproduces {} (",
                names.join(", ")
            ),
            "reproduce ",
            Opt::List,
            " says what each needs)"
        )
        .spell(spelled)
    })
}
