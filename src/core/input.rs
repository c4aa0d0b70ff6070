//! The options a user gives, named by what they set. No layer spells a command-line flag: a
//! refusal names the options it is about as [`Opt`]s, in words that are a [`Said`], and each
//! option's flag is its name ([`spelled`]), which the parser's flags are held to.

/// Declare [`Opt`] and the list of its variants from one list, so that the test that each is
/// a flag the parser takes sees every one.
macro_rules! options {
    ($($o:ident),+ $(,)?) => {
        /// An option of syscost's command line, named as its flag is, in camel case
        /// (`HostCpus`: `--host-cpus`; `cli::flags` holds the parser to it).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum Opt {
            $($o),+
        }

        impl Opt {
            /// Every option.
            #[cfg(test)]
            pub(crate) const ALL: &'static [Opt] = &[$(Opt::$o),+];
        }
    };
}

options!(
    Accel,
    Arm,
    AuditRules,
    Baseline,
    Boots,
    By,
    Builds,
    Cpu,
    EmulatedCounters,
    GuestCpus,
    GuestFile,
    GuestMemory,
    HostCpus,
    Kernels,
    Label,
    LavaDevice,
    LavaEvents,
    LavaFiles,
    LavaQueueDepth,
    LavaTokenFile,
    LavaUrl,
    List,
    Matching,
    MixEmulated,
    Param,
    Probe,
    Rules,
    Runs,
    Save,
    State,
    SubtractOverhead,
    Tag,
    Variant,
    Via,
    Workload,
    AuditRulesErrors,
    BestOf,
    CacheModel,
    DropPerturbed,
    Force,
    History,
    NoHistory,
    ListEvents,
    Objects,
    SamplesAsUnits,
    Size,
    Target,
    Test,
    Time,
    Within,
    Align,
    Copies,
    Estimator,
    Fifo,
    Geometry,
    Lines,
    MaxTime,
    Ops,
    Origin,
    OverheadSamples,
    Pre,
    Profile,
    Samples,
    SampleTime,
    Svg,
    Trials,
    Until,
    Warmup,
    ExactResolution,
    StepRounds,
    Steps,
    Build,
    Placement,
    Icount,
    GuestDisk,
    LavaBoot,
    EmulatedProfile,
    Metric,
    NoVerdict,
    Alpha,
    Dir,
    NoResidueStep,
    Insn,
    Mode,
    AgedSlab,
    Append,
    ArmCommand,
    BootTimeout,
    Entry,
    Initrd,
    KernelSha256,
    LavaDeviceType,
    LavaJobs,
    LavaPriority,
    LavaQueueLimit,
    LavaVisibility,
    NoiseThreshold,
    Retries,
    Seed,
    Settle,
);

/// A piece of a message: words, or an option named in them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Opt(Opt),
}

/// Words that may name options: `said!("give ", Opt::GuestFile, " PATH")`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Said(pub Vec<Piece>);

impl Said {
    /// The words, each option spelled by `spell`.
    pub(crate) fn spell(&self, spell: impl Fn(Opt) -> String) -> String {
        let piece = |p: &Piece| match p {
            Piece::Text(t) => t.clone(),
            Piece::Opt(o) => spell(*o),
        };
        self.0.iter().map(piece).collect()
    }
}

/// What goes into [`Said`]: an [`Opt`] as itself, anything else shown as text.
pub(crate) trait IntoPiece {
    fn piece(self) -> Piece;
}

impl IntoPiece for Opt {
    fn piece(self) -> Piece {
        Piece::Opt(self)
    }
}

impl<T: std::fmt::Display> IntoPiece for T {
    fn piece(self) -> Piece {
        Piece::Text(self.to_string())
    }
}

/// [`Said`] from pieces: `said!("give ", Opt::GuestFile, " ", path.display())`.
#[macro_export]
macro_rules! said {
    ($($p:expr),+ $(,)?) => {
        $crate::core::input::Said(vec![$($crate::core::input::IntoPiece::piece($p)),+])
    };
}

/// `o` as the command line spells it: its name in kebab case (`HostCpus`: `--host-cpus`). The
/// parser's flags are held to these names by a test in `cli::flags`, so a flag is named once,
/// in the parser, and typed here: a refusal, a rerun command and a status all say it so.
pub(crate) fn spelled(o: Opt) -> String {
    let mut out = String::from("-");
    for c in format!("{o:?}").chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A refusal of what the user gave, in words that may name options, each shown as the command
/// line spells it.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.spell(spelled))]
pub(crate) struct Refused(pub Said);

/// An `anyhow::Error` of a [`Refused`]: `bail!(refused!("give ", Opt::Arm, " NAME=KERNEL"))`.
#[macro_export]
macro_rules! refused {
    ($($p:expr),+ $(,)?) => {
        anyhow::Error::from($crate::core::input::Refused($crate::said!($($p),+)))
    };
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn words_name_options_that_the_caller_spells() {
        let s = crate::said!("give ", Opt::GuestFile, " ", 3, " times");
        assert_eq!(s.spell(|o| format!("<{o:?}>")), "give <GuestFile> 3 times");
        assert_eq!(s.0[1], Piece::Opt(Opt::GuestFile));
        let e = crate::refused!(Opt::Runs, " must be at least 1");
        assert_eq!(e.to_string(), "--runs must be at least 1");
        assert_eq!(spelled(Opt::LavaTokenFile), "--lava-token-file");
        assert!(e.downcast_ref::<Refused>().is_some());
    }
}
