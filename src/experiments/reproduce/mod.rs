//! `syscost reproduce`: a public investigation repeated in one command. Each investigation
//! is its paper's tables as data ([`paper`], `papers/NAME.json`), the campaign that repeats
//! what can be repeated under QEMU's emulator (its arms, the shipped rule set of the paper's
//! shape, the measuring command, the cache model of the paper's CPU), and the comparison of
//! every cell: the paper's figure beside syscost's, their ratio, the cell's class and why it
//! differs ([`agreement`] says when two agree).

pub(crate) mod agreement;
pub(crate) mod builds;
pub(crate) mod campaign;
pub(crate) mod owners;
pub(crate) mod paper;
pub(crate) mod placement;
pub(crate) mod steps;

use crate::boot::bzimage::Sizes;
use crate::boot::disk::GuestDisk;
use crate::boot::guest::SCRATCH_DIR;
use crate::core::input::{Opt, spelled};
use crate::core::{Envelope, Kind};
use crate::experiments::boots::BootRecord;
use crate::experiments::boots::record::Decoded;
use crate::experiments::campaign::Campaign;
use crate::kbuild;
use crate::probes::ProbeKind;
use crate::probes::targets::Insn;
use agreement::ClassSummary;
use paper::{Class, Paper, PaperCell, Table};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A kernel series an arm boots: the newest image of it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Series {
    /// Debian 12's 6.1 (linux-image-6.1.0-N-cloud-amd64 or -amd64).
    Linux61,
    /// Debian 12's backported 6.12 (linux-image-6.12.N+deb12-cloud-amd64 or -amd64).
    Linux612,
}

impl Series {
    fn prefix(self) -> &'static str {
        match self {
            Series::Linux61 => "vmlinuz-6.1.",
            Series::Linux612 => "vmlinuz-6.12.",
        }
    }

    /// How to get an image of it.
    fn how_to_get(self) -> String {
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
        spec: builds::BuildSpec,
        needed: bool,
    },
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
    /// `run uprobe`: the probe on the instruction, over 1 and 2 producer threads.
    UprobeSweep { probe: ProbeKind, insn: Insn },
    /// `run uprobe` as it defaults (each arm says its own).
    Uprobe,
    /// `audit sweep` of [`WALK_RULES`] exit rules that never match the measured getpid: each
    /// rule one turn of the exit list's walk, its fitted slope the cost of a turn.
    RuleWalk,
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
    /// Whether the boots count with syscost's plugin and the cache model (on one vCPU).
    pub counts: bool,
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
const AUDIT_SERIES_ARMS: &[ArmSpec] = &[
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
const AUDIT_SERIES_STEPS: &[steps::SeriesBuild] = &[
    series_build("baseline", "walk-baseline"),
    series_build("patch1", "walk-patch1"),
    series_build("patch1-2", "walk-patch1-2"),
    series_build("patch1-3", "walk-patch1-3"),
];

const fn series_build(arm: &'static str, walk: &'static str) -> steps::SeriesBuild {
    steps::SeriesBuild {
        build: arm,
        arm,
        walk,
    }
}

/// An arm of a series build at audit=1: with the series' 42 rules, or its own measuring
/// command (which loads its own).
const fn series_arm(
    name: &'static str,
    spec: builds::BuildSpec,
    measure: Option<Measure>,
) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::Build {
            spec,
            needed: spec.changes.is_empty(),
        },
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
const SYSCALL_LATENCY_ARMS: &[ArmSpec] = &[
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

const fn latency_arm(name: &'static str, spec: builds::BuildSpec) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::Build {
            spec,
            needed: spec.changes.is_empty(),
        },
        append: "audit=1",
        rules: Some("syscall-latency.rules"),
        aged: Some(AGED_OBJECTS),
        measure: None,
    }
}

/// One arm per line of the thread's x86-64 table: a probe kind on an instruction, each sweeping
/// 1 and 2 threads on Debian's 6.12.
const UPROBE_THREAD_ARMS: &[ArmSpec] = &[
    uprobe_arm("uprobe-nop", ProbeKind::Uprobe, Insn::Nop),
    uprobe_arm("uretprobe-nop", ProbeKind::Uretprobe, Insn::Nop),
    uprobe_arm("uprobe-ret", ProbeKind::Uprobe, Insn::Ret),
    uprobe_arm("uretprobe-ret", ProbeKind::Uretprobe, Insn::Ret),
];

const fn uprobe_arm(name: &'static str, probe: ProbeKind, insn: Insn) -> ArmSpec {
    ArmSpec {
        name,
        image: Image::Newest(Series::Linux612),
        append: "",
        rules: None,
        aged: None,
        measure: Some(Measure::UprobeSweep { probe, insn }),
    }
}

/// The RFC's 11 builds of linux-source-6.1, one arm each: -Os, and -falign-functions=1 to 512.
/// The 16-byte build (the vanilla kernel's alignment) is the one the others are divided by.
const ALIGNMENT_RFC_ARMS: &[ArmSpec] = &[
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
    build_arm(
        "a16",
        builds::aligned("align-16", "-falign-functions=16"),
        true,
    ),
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

const fn build_arm(name: &'static str, spec: builds::BuildSpec, needed: bool) -> ArmSpec {
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
        counts: true,
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
                patches 1, 1-2 and 1-3 (built once per machine: 8 minutes for the first, 25 s for \
                each patch here); QEMU (TCG); 9 arms (audit=0 and the four builds with \
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
        counts: true,
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
        cache_model: "64x8x64,64x8x64,512x8x64",
        counts: true,
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
                function alignment (built once per machine, 8 minutes each here; \
                the 16-byte one is needed, each other one found is an arm compared with it); \
                QEMU (TCG); an arm per build x 2 boots on an ext4 disk, about 25 s a boot here",
    },
    Investigation {
        name: "uprobe-thread",
        about: "the 2024 uprobe thread: uprobe and uretprobe throughput on nop and ret, 1 and 2 CPUs",
        tables: include_str!("../../../papers/uprobe-thread.json"),
        arms: UPROBE_THREAD_ARMS,
        rules: &[],
        cache_model: "skylake-x",
        counts: false,
        guest_cpus: Some(2),
        guest_disk: None,
        // Debian's 6.12 on 2 vCPUs under TCG panics on a breakpoint in __schedule ("Oops:
        // int3"; a text patch racing the other vCPU, likely, not confirmed) in 1 to 4 boots
        // of 10 here.
        retries: Some(3),
        profile: false,
        boots: 2,
        runs: 3,
        series: &[],
        measure: Measure::Uprobe,
        needs: "a Debian 6.12 kernel image; QEMU (TCG, 2 vCPUs); 4 arms (uprobe and uretprobe \
                on nop and ret, each sweeping 1 and 2 threads) x 2 boots, about 30 s a boot \
                here, and up to 3 retries of a boot that panics (1 to 4 in 10 do on 2 vCPUs)",
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

impl Investigation {
    /// Its paper, checked.
    pub(crate) fn paper(&self) -> Result<Paper, String> {
        Paper::parse(self.tables)
    }

    /// The L1d of its cache model, as the placement tables count sets.
    pub(crate) fn l1d(&self) -> Result<crate::layout::Geometry, String> {
        let g = self.cache_model()?.l1d;
        Ok(crate::layout::Geometry {
            sets: g.sets.into(),
            ways: g.ways.into(),
            line: g.line.into(),
        })
    }

    /// The arms that boot and each one's kernel: the newest image of its series in `dir`, or
    /// its build, made now with `build` or found made, unless `given` names one; only the arms
    /// `only` names when it names any. A build not made leaves its arm out; a needed one, or a
    /// series without an image, refuses, saying how to get it.
    pub(crate) fn kernels(
        &self,
        dir: &Path,
        given: &[(String, PathBuf)],
        only: &[String],
        mut build: Option<&mut dyn FnMut(kbuild::Progress)>,
    ) -> anyhow::Result<Vec<(&'static ArmSpec, PathBuf)>> {
        let mut image_of = |spec: &builds::BuildSpec| -> anyhow::Result<Option<PathBuf>> {
            Ok(match build.as_deref_mut() {
                Some(progress) => Some(kbuild::build(&spec.recipe(), progress)?.image),
                None => kbuild::find(&spec.recipe())?.map(|b| b.image),
            })
        };
        self.kernels_with(dir, given, only, &mut image_of)
    }

    /// [`Investigation::kernels`], a build's image from `image_of` (`None`: not made).
    fn kernels_with(
        &self,
        dir: &Path,
        given: &[(String, PathBuf)],
        only: &[String],
        image_of: &mut dyn FnMut(&builds::BuildSpec) -> anyhow::Result<Option<PathBuf>>,
    ) -> anyhow::Result<Vec<(&'static ArmSpec, PathBuf)>> {
        let mut chosen = Vec::new();
        let mut made: Vec<(&str, Option<PathBuf>)> = Vec::new();
        for a in self.arms {
            if !only.is_empty() && !only.iter().any(|n| n == a.name) {
                continue;
            }
            if let Some((_, k)) = given.iter().find(|(n, _)| n == a.name) {
                chosen.push((a, k.clone()));
                continue;
            }
            match a.image {
                Image::Newest(series) => {
                    let k = newest(dir, series)
                        .ok_or_else(|| anyhow::anyhow!(self.no_image(a, series, dir)))?;
                    chosen.push((a, k));
                }
                Image::Build { spec, needed } => {
                    let k = match made.iter().find(|(n, _)| *n == spec.name) {
                        Some((_, k)) => k.clone(),
                        None => {
                            let k = image_of(&spec)?;
                            made.push((spec.name, k.clone()));
                            k
                        }
                    };
                    match k {
                        Some(k) => chosen.push((a, k)),
                        None if needed => anyhow::bail!(self.no_build(a, spec)),
                        None => {}
                    }
                }
            }
        }
        if chosen.len() < 2 {
            let arms: Vec<&str> = self.arms.iter().map(|a| a.name).collect();
            let which = match only.is_empty() {
                true => format!("its arms ({})", arms.join(", ")),
                false => format!("the arms given ({})", only.join(", ")),
            };
            anyhow::bail!(
                "{} compares kernels, and only {} of {which} has one: {}",
                self.name,
                chosen.len(),
                self.how_to_build()
            );
        }
        Ok(chosen)
    }

    fn no_image(&self, a: &ArmSpec, series: Series, dir: &Path) -> String {
        format!(
            "{}'s arm {} boots a {} image, and {} has none: {}",
            self.name,
            a.name,
            series
                .prefix()
                .trim_end_matches('.')
                .trim_start_matches("vmlinuz-"),
            dir.display(),
            series.how_to_get()
        )
    }

    fn no_build(&self, a: &ArmSpec, spec: builds::BuildSpec) -> String {
        format!(
            "{}'s arm {} boots syscost's build {} of {}, which the other arms are compared \
             with, and it is not built yet: {}",
            self.name,
            a.name,
            spec.name,
            kbuild::LINUX_SOURCE_61.package,
            self.how_to_build()
        )
    }

    /// How to make its builds.
    fn how_to_build(&self) -> String {
        crate::said!(
            format!("syscost reproduce {} ", self.name),
            Opt::Build,
            format!(
                " builds them from Debian's {} ",
                kbuild::LINUX_SOURCE_61.package
            ),
            format!(
                "(apt-get install {} {}) ",
                kbuild::LINUX_SOURCE_61.package,
                kbuild::TOOLS.join(" ")
            ),
            "and keeps them, once per machine (",
            Opt::List,
            " says what each costs)"
        )
        .spell(spelled)
    }
}

/// The newest `vmlinuz-` image of `series` in `dir`, by version (6.1.0-56 after 6.1.0-9).
fn newest(dir: &Path, series: Series) -> Option<PathBuf> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(series.prefix()))
        .collect();
    found.sort_by(|a, b| crate::experiments::bisect::builds::version_order(a, b));
    found.pop().map(|n| dir.join(n))
}

/// One cell: the paper's figure beside syscost's.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Row {
    pub table: String,
    pub row: String,
    pub column: String,
    /// As printed.
    pub written: String,
    pub unit: String,
    /// The paper's figure per operation (a ratio's: over its `over` column).
    pub paper: f64,
    /// syscost's: the median over the arm's boots of each boot's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ours: Option<f64>,
    /// The lowest and highest boot's figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_range: Option<(f64, f64)>,
    /// syscost's over the paper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    pub class: Class,
    /// An exact cell's band: syscost's figure agrees within it of the paper's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<f64>,
    /// A repeat's scored cell, `TABLE / ROW / COLUMN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<String>,
    pub why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    /// A modelled cell's 10-90% range of its boots, which it is scored by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middle_range: Option<(f64, f64)>,
    /// The values a modelled cell's range is taken over: boots, or placements where each run
    /// was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// Why a measured cell of a scored class is not scored (its test could not have failed,
    /// or its boots cannot decide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscored: Option<String>,
}

/// The result of `syscost reproduce` (kind `reproduction`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Reproduction {
    #[serde(flatten)]
    pub envelope: Envelope,
    pub investigation: String,
    pub title: String,
    pub document: String,
    pub question: String,
    /// Each table's caption, source, conditions and scale, by id.
    pub tables: Vec<TableInfo>,
    /// The campaign command it ran, for a reader to run again or change.
    pub campaign_command: Vec<String>,
    pub rows: Vec<Row>,
    pub summary: Vec<ClassSummary>,
    /// Arms the paper's cells name that the campaign did not boot (builds not made).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_booted: Vec<String>,
    /// Where each boot with rules put their entries, beside its modelled misses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<placement::ArmPlacement>,
    /// The placements of the arms that boot one kernel, pooled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_placements: Vec<placement::KernelPlacement>,
    /// The investigation's series of changes, build by build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<steps::Step>,
    /// Each arm's kernel's sections, where a cell compares them (kept, so that scoring again
    /// does not need the kernels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<(String, Sizes)>,
    pub seconds: f64,
    pub campaign: Campaign,
}

/// A table's heading and conditions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TableInfo {
    pub id: String,
    pub caption: String,
    pub source: String,
    pub conditions: String,
    pub scale: String,
}

/// The modelled L1d misses, user and kernel, as the placement table sets them beside.
const L1D_MISSES: [&str; 2] = [
    "L1-dcache-load-misses:u (emulated)",
    "L1-dcache-load-misses:k (emulated)",
];

/// The paper's cells beside the campaign's figures, and where each boot's rule entries were
/// in an L1d of `l1d`.
pub(crate) fn compare(
    p: &Paper,
    series: &[steps::SeriesBuild],
    c: Campaign,
    l1d: crate::layout::Geometry,
    campaign_command: Vec<String>,
    seconds: f64,
) -> Reproduction {
    let sizes = kernel_sizes(p, &c);
    compare_sized(p, series, c, l1d, campaign_command, seconds, sizes)
}

/// A saved reproduction scored again with its investigation's tables and scorer as they are
/// now: its campaign's boots, and the kernel sizes it kept, compared cell by cell (nothing is
/// booted).
pub(crate) fn rescored(r: Reproduction) -> Result<Reproduction, String> {
    let inv = named(&r.investigation)?;
    let p = inv.paper()?;
    let l1d = inv.l1d()?;
    let (c, command, seconds, sizes) = (r.campaign, r.campaign_command, r.seconds, r.sizes);
    Ok(compare_sized(
        &p, inv.series, c, l1d, command, seconds, sizes,
    ))
}

/// Each arm's uniform placement, with the paper's cacheline-spread for the arm placed among
/// its draws where the paper gives one.
fn with_papers_spreads(
    p: &Paper,
    mut placed: Vec<placement::ArmPlacement>,
) -> Vec<placement::ArmPlacement> {
    for a in &mut placed {
        let paper = p
            .cells()
            .find(|(_, c)| c.arm.as_deref() == Some(a.arm.as_str()) && c.metrics == [SPREAD])
            .map(|(t, c)| t.value(c));
        a.uniform =
            (a.boots.first()).map(|b| placement::UniformSpread::of(b.entries, b.reachable, paper));
    }
    placed
}

/// [`compare`], with each arm's kernel's sections given.
fn compare_sized(
    p: &Paper,
    series: &[steps::SeriesBuild],
    c: Campaign,
    l1d: crate::layout::Geometry,
    campaign_command: Vec<String>,
    seconds: f64,
    sizes: Vec<(String, Sizes)>,
) -> Reproduction {
    let arms: Vec<&str> = c.arms.iter().map(|a| a.name.as_str()).collect();
    let misses = L1D_MISSES.map(String::from);
    // Each measured boot's result decoded once, for every cell and the placements.
    let decoded: Vec<Measured> = c
        .boots
        .iter()
        .filter_map(|b| Some((b, b.decoded()?.ok()?)))
        .collect();
    let placements = with_papers_spreads(p, placement::placements(&decoded, &arms, l1d, &misses));
    let kernel_placements = placement::by_kernel(&placements, |arm| {
        let a = c.arms.iter().find(|a| a.name == arm)?;
        Some(a.kernel.file_name()?.to_string_lossy().into_owned())
    });
    let figures = Figures {
        boots: &decoded,
        placements: &placements,
        sizes: &sizes,
    };
    let rows: Vec<Row> = p
        .cells()
        .map(|(t, cell)| row(p, t, cell, &figures))
        .collect();
    let steps = steps::steps(series, &figures);
    let classes: Vec<agreement::Counted> = rows
        .iter()
        .map(|r| (r.class, r.ours.is_some(), r.agrees))
        .collect();
    let mut not_booted: Vec<String> = Vec::new();
    for (_, cell) in p.cells() {
        if let Some(a) = &cell.arm
            && !arms.contains(&a.as_str())
            && !not_booted.contains(a)
        {
            not_booted.push(a.clone());
        }
    }
    Reproduction {
        envelope: Envelope::new(Kind::Reproduction),
        investigation: p.name.clone(),
        title: p.title.clone(),
        document: p.document.clone(),
        question: p.question.clone(),
        tables: p
            .tables
            .iter()
            .map(|t| TableInfo {
                id: t.id.clone(),
                caption: t.caption.clone(),
                source: t.source.clone(),
                conditions: t.conditions.clone(),
                scale: t.scale.clone(),
            })
            .collect(),
        campaign_command,
        summary: agreement::summarise(&classes),
        not_booted,
        rows,
        placements,
        kernel_placements,
        steps,
        sizes,
        seconds,
        campaign: c,
    }
}

/// A measured boot and its result, decoded.
pub(crate) type Measured<'a> = (&'a BootRecord, Decoded);

/// What a cell's figure is read from: the campaign's measured boots, where their entries
/// were, and each arm's kernel's sections.
pub(crate) struct Figures<'a> {
    boots: &'a [Measured<'a>],
    placements: &'a [placement::ArmPlacement],
    sizes: &'a [(String, Sizes)],
}

/// The figures a kernel's sections give a cell, as size(1) prints them (text, data, bss, dec),
/// but text and dec without the linker's padding around the entry code (2 MiB steps in
/// kernels since 4.15; the RFC's had none).
pub(crate) const KERNEL_SIZES: [&str; 4] = [
    "kernel text without padding (bytes)",
    "kernel data (bytes)",
    "kernel bss (bytes)",
    "kernel size without padding (bytes)",
];

/// Each arm's kernel's sections, for those whose vmlinux can be read, when a cell of `p`
/// compares them (each kernel is decompressed again for it).
fn kernel_sizes(p: &Paper, c: &Campaign) -> Vec<(String, Sizes)> {
    let compared = p.cells().any(|(_, cell)| {
        let m = cell.metrics.as_slice();
        KERNEL_SIZES.iter().any(|k| m == [*k])
    });
    if !compared {
        return Vec::new();
    }
    c.arms
        .iter()
        .filter_map(|a| Some((a.name.clone(), crate::boot::bzimage::sizes(&a.kernel).ok()?)))
        .collect()
}

/// The figure a placement gives a cell: the syscall-latency post's cacheline-spread.
pub(crate) const SPREAD: &str = "cacheline-spread";

/// The figure the per-function profile gives a cell: the kernel instructions per operation of
/// the functions whose name says audit (the syscall-latency post's audit-only share).
pub(crate) const AUDIT_FUNCTIONS: &str = "audit functions' instructions";

impl Figures<'_> {
    /// An arm's figure for `metrics` added together, per measured boot in round order (a boot
    /// lacking one of them is left out).
    ///
    /// A figure placement decides (the entries' spread, the modelled L1d misses) is given per
    /// placement: each run's where the boots placed the entries anew before every run.
    fn per_boot(&self, arm: &str, metrics: &[String]) -> Vec<f64> {
        if metrics == L1D_MISSES && self.placed(arm).is_some_and(|p| p.per_run()) {
            return self.keyed_misses(arm).into_iter().map(|(_, v)| v).collect();
        }
        let placed = self.placements.iter().find(|p| p.arm == arm);
        let units = || placed.map_or(Vec::new(), |p| placement::units(&p.boots));
        if metrics == [SPREAD] {
            return units().iter().map(|u| u.0).collect();
        }
        if let Some(i) = KERNEL_SIZES.iter().position(|k| metrics == [*k]) {
            let sizes = self.sizes.iter().find(|(a, _)| a == arm);
            return sizes.map_or(Vec::new(), |(_, s)| {
                vec![[s.code(), s.data, s.bss, s.total() - s.padding][i] as f64]
            });
        }
        let boots = self.boots.iter().filter(|(b, _)| b.arm == arm);
        if metrics == [AUDIT_FUNCTIONS] {
            return boots.filter_map(|(_, d)| audit_functions(d)).collect();
        }
        boots.filter_map(|(_, d)| sum_of(d, metrics)).collect()
    }
}

impl Figures<'_> {
    fn placed(&self, arm: &str) -> Option<&placement::ArmPlacement> {
        self.placements.iter().find(|p| p.arm == arm)
    }

    /// An arm's modelled misses in each run placed anew, by (round, run).
    fn keyed_misses(&self, arm: &str) -> Vec<((u32, u32), f64)> {
        let Some(p) = self.placed(arm) else {
            return Vec::new();
        };
        let runs = p.boots.iter().flat_map(|b| {
            (b.placed_runs.iter()).filter_map(|r| Some(((b.round, r.run), r.misses?)))
        });
        runs.collect()
    }

    /// The misses of `arm`'s placements less `base`'s placed with the same seed (the same
    /// round and run): empty unless both placed their entries anew each run.
    fn pairs(&self, arm: &str, base: &str) -> Vec<f64> {
        let b = self.keyed_misses(base);
        (self.keyed_misses(arm).into_iter())
            .filter_map(|(k, v)| Some(v - b.iter().find(|x| x.0 == k)?.1))
            .collect()
    }
}

/// `metrics` of a boot added together: the median over its runs of their sums (user and
/// kernel parts vary from run to run, and a sum of their medians mixes runs, so it would
/// disagree with the cache sets' median run); `None` when it lacks one.
pub(crate) fn sum_of(d: &Decoded, metrics: &[String]) -> Option<f64> {
    let runs = per_run(d, metrics);
    (!runs.is_empty()).then(|| crate::stats::median(&runs))
}

/// `metrics` added together in each run of a boot, in run order; empty when a run lacks one
/// (the metrics must have figures from the same runs).
pub(crate) fn per_run(d: &Decoded, metrics: &[String]) -> Vec<f64> {
    let runs: Vec<&crate::results::Metric> =
        metrics.iter().filter_map(|m| d.view.metric(m)).collect();
    let n = runs.first().map_or(0, |r| r.values.len());
    let same_runs = runs
        .iter()
        .all(|r| r.units == runs[0].units && r.values.len() == n);
    if runs.len() != metrics.len() || !same_runs {
        return Vec::new();
    }
    (0..n)
        .map(|i| runs.iter().map(|r| r.values[i]).sum())
        .collect()
}

/// A boot's kernel instructions per operation in functions named audit-something.
fn audit_functions(d: &Decoded) -> Option<f64> {
    let f = d.functions.as_ref()?;
    Some(
        f.functions
            .iter()
            .filter(|x| x.name.contains("audit"))
            .map(|x| x.per_op)
            .sum(),
    )
}

fn row(p: &Paper, t: &Table, cell: &PaperCell, f: &Figures) -> Row {
    let (paper, ours_boots, over) = paper_and_boots(t, cell, f);
    let ours = (!ours_boots.is_empty()).then(|| crate::stats::median(&ours_boots));
    let slack = agreement::rounding(&cell.written) * if over { 0.0 } else { t.factor };
    let band = cell
        .within
        .unwrap_or(0.0)
        .max(cell.within_share.unwrap_or(0.0) * paper.abs());
    let model = agreement::Model {
        class: cell.class,
        band,
        slack,
    };
    let per_boot = |arm: &str| f.per_boot(arm, &cell.metrics);
    let arm = cell.arm.as_deref().map(per_boot).unwrap_or_default();
    let base = cell.from.as_deref().map(per_boot).unwrap_or_default();
    let (rivals, rivals_boots) = match cell.class {
        Class::Modelled => rivals(p, t, cell, f),
        _ => Default::default(),
    };
    let pairs = match (cell.class, cell.arm.as_deref(), cell.from.as_deref()) {
        (Class::Direction, Some(a), Some(b)) if cell.metrics == L1D_MISSES => f.pairs(a, b),
        _ => Vec::new(),
    };
    let evidence = agreement::Evidence {
        boots: &ours_boots,
        arms: (&arm, &base),
        rivals: &rivals,
        rivals_boots: &rivals_boots,
        pairs: &pairs,
    };
    let score = ours.map(|o| agreement::score(model, paper, o, &evidence));
    Row {
        table: t.id.clone(),
        row: cell.row.clone(),
        column: cell.column.clone(),
        written: cell.written.clone(),
        unit: cell.unit.clone(),
        paper,
        ours,
        boots_range: range(&ours_boots),
        ratio: ours.filter(|_| paper != 0.0).map(|o| o / paper),
        class: cell.class,
        band: (cell.class == Class::Exact).then_some(band.max(slack)),
        repeats: cell.repeats.clone(),
        why: p.reasons.get(&cell.why).cloned().unwrap_or_default(),
        agrees: score.as_ref().and_then(|s| s.agrees()),
        middle_range: (cell.class == Class::Modelled)
            .then(|| agreement::modelled_range(&ours_boots))
            .flatten(),
        over: taken_over(cell, f, (&ours_boots, &arm, &base), &pairs),
        unscored: score.and_then(|s| s.unscored()),
    }
}

/// What a modelled or direction cell's figures are taken over: boots, or placements where the
/// arm placed its entries anew each run (`values`: the cell's, its arm's and its base arm's).
fn taken_over(
    cell: &PaperCell,
    f: &Figures,
    values: (&[f64], &[f64], &[f64]),
    pairs: &[f64],
) -> Option<String> {
    let (ours, arm, base) = values;
    let per_run = |a: Option<&str>| {
        let placed = a.and_then(|a| f.placed(a)).is_some_and(|p| p.per_run());
        placed && (cell.metrics == L1D_MISSES || cell.metrics == [SPREAD])
    };
    let count = |n: usize, placed: bool| {
        let unit = if placed { "placement" } else { "boot" };
        format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
    };
    match cell.class {
        Class::Direction if !pairs.is_empty() => {
            Some(format!("{} placements paired run by run", pairs.len()))
        }
        Class::Direction if !arm.is_empty() && !base.is_empty() => Some(format!(
            "{} and {}",
            count(arm.len(), per_run(cell.arm.as_deref())),
            count(base.len(), per_run(cell.from.as_deref()))
        )),
        Class::Modelled if !ours.is_empty() => {
            Some(count(ours.len(), per_run(cell.arm.as_deref())))
        }
        _ => None,
    }
}

/// The paper's figure for `cell` per operation and syscost's figure in each boot (a ratio's
/// over its denominator's median boot, a change's less its base arm's median boot); whether the
/// cell is a ratio.
fn paper_and_boots(t: &Table, cell: &PaperCell, f: &Figures) -> (f64, Vec<f64>, bool) {
    let per_boot = |arm: &str| f.per_boot(arm, &cell.metrics);
    let median_of = |arm: &str| {
        let v = per_boot(arm);
        (!v.is_empty()).then(|| crate::stats::median(&v))
    };
    let over = cell
        .denominator()
        .and_then(|(row, column)| t.cell(row, column));
    let mut paper = t.value(cell);
    let mut ours_boots = cell.arm.as_deref().map(per_boot).unwrap_or_default();
    if let Some(o) = over {
        paper /= t.value(o);
        let base = o.arm.as_deref().map(|a| f.per_boot(a, &o.metrics));
        let base = base.unwrap_or_default();
        let base = (!base.is_empty()).then(|| crate::stats::median(&base));
        ours_boots = match base {
            Some(b) if b > 0.0 => ours_boots.iter().map(|v| v / b).collect(),
            _ => Vec::new(),
        };
    }
    if let Some(from) = &cell.from {
        ours_boots = match median_of(from) {
            Some(b) => ours_boots.iter().map(|v| v - b).collect(),
            None => Vec::new(),
        };
    }
    // The denominator of a ratio row is not compared: its figure is another machine's.
    if matches!(cell.class, Class::Ratio | Class::Time) && over.is_none() {
        ours_boots.clear();
    }
    (paper, ours_boots, over.is_some())
}

/// The paper's figures for `cell`'s row in the table's other arms (a repeat's arm is its
/// scored cell's; none a change or a ratio), and every boot figure those arms measured: what a
/// modelled cell must tell itself apart from.
fn rivals(p: &Paper, t: &Table, cell: &PaperCell, f: &Figures) -> (Vec<f64>, Vec<f64>) {
    let arm_of = |c: &PaperCell| -> Option<String> {
        let repeated = c.repeats.as_deref().and_then(|at| p.cell_at(at));
        c.arm
            .clone()
            .or_else(|| repeated.and_then(|(_, r)| r.arm.clone()))
    };
    let (mut paper, mut boots) = (Vec::new(), Vec::new());
    for c in t.cells.iter().filter(|c| {
        c.row == cell.row
            && c.from.is_none()
            && c.denominator().is_none()
            && matches!(c.class, Class::Modelled | Class::Repeat)
    }) {
        let Some(arm) = arm_of(c).filter(|a| Some(a) != cell.arm.as_ref()) else {
            continue;
        };
        paper.push(t.value(c));
        boots.extend(f.per_boot(&arm, &cell.metrics));
    }
    (paper, boots)
}

fn range(xs: &[f64]) -> Option<(f64, f64)> {
    let lo = xs.iter().copied().reduce(f64::min)?;
    let hi = xs.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_cell_of_every_paper_has_a_source_a_class_and_a_reason() {
        for i in ALL {
            let p = i.paper().unwrap();
            assert!(p.cells().count() > 0, "{}", i.name);
            for (t, c) in p.cells() {
                assert!(!t.source.is_empty() && !t.conditions.is_empty(), "{}", t.id);
                assert!(!p.reasons[&c.why].is_empty());
                assert!(t.value(c).is_finite(), "{} {}", c.row, c.column);
                if let Some(arm) = &c.arm {
                    assert!(i.arms.iter().any(|a| a.name == arm), "{arm} is an arm");
                }
            }
            for a in i.arms {
                if let Some(r) = a.rules {
                    assert!(i.rules.iter().any(|(n, _)| *n == r), "{r} is shipped");
                }
            }
        }
    }

    #[test]
    fn the_alignment_rfc_s_tables_are_whole_and_divide_by_the_vanilla_build() {
        let p = named("alignment-rfc").unwrap().paper().unwrap();
        assert_eq!(p.cells().count(), 162);
        let t = p.tables.iter().find(|t| t.id == "intel-misses").unwrap();
        let vanilla = "falign-functions=_16-bytes";
        let c = t
            .cell("falign-functions=_64-bytes", "L1-icache-load-misses")
            .unwrap();
        assert_eq!(c.denominator(), Some((vanilla, "L1-icache-load-misses")));
        // 9% fewer misses at 64 bytes than at the vanilla 16, as the RFC says.
        let base = t.value(t.cell(vanilla, "L1-icache-load-misses").unwrap());
        assert!((1.0 - t.value(c) / base - 0.0825).abs() < 0.001);
        // Per iteration: the RFC's 'around 118,000 instructions per iteration'.
        let i = p
            .tables
            .iter()
            .find(|t| t.id == "intel-instructions")
            .unwrap();
        let per = i.value(i.cell(vanilla, "instructions").unwrap());
        assert!((per - 118_541.6).abs() < 0.1, "{per}");
    }

    #[test]
    fn the_uprobe_thread_s_x86_table_is_whole_and_its_ratios_name_their_denominators() {
        let i = named("uprobe-thread").unwrap();
        let p = i.paper().unwrap();
        assert_eq!(
            p.cells().count(),
            192,
            "80 lines of 2, 12 of 2, 8 Redis lines"
        );
        let t = &p.tables[0];
        assert_eq!(t.cells.len(), 160);
        for a in i.arms {
            for n in [1, 2] {
                let c = t.cell(&format!("{} ({n} cpus)", a.name), "M/s").unwrap();
                assert_eq!(c.arm.as_deref(), Some(a.name));
            }
        }
        let c = t.cell("uretprobe-nop (1 cpus)", "M/s").unwrap();
        let (row, column) = c.denominator().unwrap();
        assert_eq!((row, column), ("uprobe-nop (1 cpus)", "M/s"));
        let base = t.cell(row, column).unwrap();
        assert_eq!(t.value(c) / t.value(base), 1.987 / 3.565);
        assert_eq!(base.denominator(), None);
    }

    /// A boot of `arm` whose result has the figures `metrics` (name, value).
    fn boot(arm: &str, metrics: &[(&str, f64)]) -> (BootRecord, Decoded) {
        use crate::results::{Metric, MetricKind};
        let record = BootRecord::of(
            arm,
            crate::experiments::boots::Outcome::Measured {
                result: serde_json::json!({}),
            },
        );
        let figures = metrics
            .iter()
            .map(|(n, v)| Metric::of_values(*n, "M/s", MetricKind::Workload, "run", vec![*v], None))
            .collect();
        let view = crate::results::view::ResultView::of_figures(
            arm,
            Kind::Scale,
            0,
            crate::workloads::RecordedWorkload::Foreign(serde_json::json!({})),
            Default::default(),
            figures,
        );
        let decoded = Decoded {
            view,
            sets: None,
            functions: None,
        };
        (record, decoded)
    }

    #[test]
    fn a_ratio_over_another_row_divides_by_that_row_s_figure() {
        let i = named("uprobe-thread").unwrap();
        let p = i.paper().unwrap();
        let t = &p.tables[0];
        let nop = boot("uprobe-nop", &[("throughput (1 threads)", 0.2)]);
        let ret = boot(
            "uretprobe-nop",
            &[
                ("throughput (1 threads)", 0.05),
                ("throughput (2 threads)", 0.08),
            ],
        );
        let boots = [(&nop.0, nop.1.clone()), (&ret.0, ret.1.clone())];
        let f = Figures {
            boots: &boots,
            placements: &[],
            sizes: &[],
        };
        let ours = |r: &str, c: &str| row(&p, t, t.cell(r, c).unwrap(), &f).ours.unwrap();
        // Over uprobe-nop's one-CPU figure, and over its own.
        assert!((ours("uretprobe-nop (1 cpus)", "M/s") - 0.25).abs() < 1e-12);
        assert!((ours("uretprobe-nop (2 cpus)", "M/s") - 1.6).abs() < 1e-12);
        assert_eq!(
            row(&p, t, t.cell("uprobe-nop (1 cpus)", "M/s").unwrap(), &f).ours,
            None
        );
    }

    #[test]
    fn the_shipped_rules_have_the_papers_shapes() {
        for (name, total) in [("audit-series", 42), ("syscall-latency", 37)] {
            let (_, text) = named(name).unwrap().rules[0];
            let exit: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("-a always,exit"))
                .collect();
            assert_eq!(exit.len(), total, "{name}: {total} exit rules");
            let getpid = exit.iter().filter(|l| l.contains(" -S getpid ")).count();
            assert_eq!(
                getpid, 5,
                "{name}: 5 of which reach the field filter for getpid"
            );
        }
    }

    #[test]
    fn a_missing_kernel_says_how_to_get_one_and_the_newest_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let i = named("syscall-latency").unwrap();
        let mut none = |_: &builds::BuildSpec| Ok(None);
        let e = i.kernels_with(dir.path(), &[], &[], &mut none).unwrap_err();
        assert!(
            e.to_string()
                .contains("apt-get download linux-image-6.1.0-"),
            "{e}"
        );
        for v in [
            "6.1.0-9-amd64",
            "6.1.0-56-cloud-amd64",
            "6.12.117+deb12-amd64",
        ] {
            std::fs::write(dir.path().join(format!("vmlinuz-{v}")), "").unwrap();
        }
        let mut built = |b: &builds::BuildSpec| Ok(Some(PathBuf::from(format!("/c/{}", b.name))));
        let k = i.kernels_with(dir.path(), &[], &[], &mut built).unwrap();
        assert!(k[0].1.ends_with("vmlinuz-6.1.0-56-cloud-amd64"), "{k:?}");
        let given = [("new".to_string(), PathBuf::from("/x/bzImage"))];
        let k = i.kernels_with(dir.path(), &given, &[], &mut built).unwrap();
        assert_eq!(k[1].1, Path::new("/x/bzImage"));
        assert!(named("nope").unwrap_err().contains("audit-series"));
    }

    #[test]
    fn builds_boot_when_made_each_once_and_the_base_one_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let i = named("audit-series").unwrap();
        let mut none = |_: &builds::BuildSpec| Ok(None);
        let e = i
            .kernels_with(dir.path(), &[], &[], &mut none)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("arm audit0 boots syscost's build baseline"),
            "{e}"
        );
        assert!(e.contains("reproduce audit-series --build"), "{e}");
        let mut asked = Vec::new();
        let mut some = |b: &builds::BuildSpec| {
            asked.push(b.name);
            Ok((b.name != "patch1-2").then(|| PathBuf::from(format!("/c/{}", b.name))))
        };
        let k = i.kernels_with(dir.path(), &[], &[], &mut some).unwrap();
        let arms: Vec<&str> = k.iter().map(|(a, _)| a.name).collect();
        assert_eq!(
            arms,
            [
                "audit0",
                "baseline",
                "patch1",
                "patch1-3",
                "walk-baseline",
                "walk-patch1",
                "walk-patch1-3"
            ],
            "a build not made leaves its arms out"
        );
        assert_eq!(
            asked,
            ["baseline", "patch1", "patch1-2", "patch1-3"],
            "each build once"
        );
        assert_eq!(k[0].1, k[1].1, "audit0 and baseline boot one build");
        let only = ["baseline".to_string(), "patch1".to_string()];
        let mut all = |b: &builds::BuildSpec| Ok(Some(PathBuf::from(format!("/c/{}", b.name))));
        let k = i.kernels_with(dir.path(), &[], &only, &mut all).unwrap();
        assert_eq!(k.len(), 2);
        let rfc = named("alignment-rfc").unwrap();
        let mut a16 =
            |b: &builds::BuildSpec| Ok((b.name == "align-16").then(|| PathBuf::from("/c/16")));
        let e = rfc
            .kernels_with(dir.path(), &[], &[], &mut a16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("only 1 of its arms (os, a1,"), "{e}");
    }
}
