//! The options a user gives, named by what they set. The layers below `cli/` never spell a
//! command-line flag: a refusal names the options it is about as [`Opt`]s, in words that are
//! a [`Said`], and `cli/` alone knows each option's flag (`cli::flags`, which it gives
//! [`spell_with`] when syscost starts). A renamed flag is then one line in `cli/`.

use std::sync::OnceLock;

/// An option of syscost's command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Opt {
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
    CopyMode,
}

impl Opt {
    /// Every option, for the test that each is spelled as a flag the parser takes.
    #[cfg(test)]
    pub(crate) const ALL: [Opt; 84] = [
        Opt::Accel,
        Opt::Arm,
        Opt::AuditRules,
        Opt::Baseline,
        Opt::Boots,
        Opt::By,
        Opt::Builds,
        Opt::Cpu,
        Opt::EmulatedCounters,
        Opt::GuestCpus,
        Opt::GuestFile,
        Opt::GuestMemory,
        Opt::HostCpus,
        Opt::Kernels,
        Opt::Label,
        Opt::LavaDevice,
        Opt::LavaEvents,
        Opt::LavaFiles,
        Opt::LavaQueueDepth,
        Opt::LavaTokenFile,
        Opt::LavaUrl,
        Opt::List,
        Opt::Matching,
        Opt::MixEmulated,
        Opt::Param,
        Opt::Probe,
        Opt::Rules,
        Opt::Runs,
        Opt::Save,
        Opt::State,
        Opt::SubtractOverhead,
        Opt::Tag,
        Opt::Variant,
        Opt::Via,
        Opt::Workload,
        Opt::AuditRulesErrors,
        Opt::BestOf,
        Opt::CacheModel,
        Opt::DropPerturbed,
        Opt::Force,
        Opt::History,
        Opt::NoHistory,
        Opt::ListEvents,
        Opt::Objects,
        Opt::SamplesAsUnits,
        Opt::Size,
        Opt::Target,
        Opt::Test,
        Opt::Time,
        Opt::Within,
        Opt::Align,
        Opt::Copies,
        Opt::Estimator,
        Opt::Fifo,
        Opt::Geometry,
        Opt::Lines,
        Opt::MaxTime,
        Opt::Ops,
        Opt::Origin,
        Opt::OverheadSamples,
        Opt::Pre,
        Opt::Profile,
        Opt::Samples,
        Opt::SampleTime,
        Opt::Svg,
        Opt::Trials,
        Opt::Until,
        Opt::Warmup,
        Opt::ExactResolution,
        Opt::StepRounds,
        Opt::Steps,
        Opt::Build,
        Opt::Placement,
        Opt::Icount,
        Opt::GuestDisk,
        Opt::LavaBoot,
        Opt::EmulatedProfile,
        Opt::Metric,
        Opt::NoVerdict,
        Opt::Alpha,
        Opt::Dir,
        Opt::NoResidueStep,
        Opt::Insn,
        Opt::CopyMode,
    ];
}

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

/// How options are spelled, given once by `cli/` when syscost starts.
static SPELLING: OnceLock<fn(Opt) -> &'static str> = OnceLock::new();

/// Spell every option with `flag` from now on (the first call wins).
pub(crate) fn spell_with(flag: fn(Opt) -> &'static str) {
    let _ = SPELLING.set(flag);
}

/// `o` as the command line spells it; before `cli/` said how (a unit test of a layer below
/// it), its name in kebab case (`HostCpus`: `--host-cpus`).
pub(crate) fn spelled(o: Opt) -> String {
    match SPELLING.get() {
        Some(flag) => flag(o).to_string(),
        None => {
            let mut out = String::from("-");
            for c in format!("{o:?}").chars() {
                if c.is_ascii_uppercase() {
                    out.push('-');
                }
                out.push(c.to_ascii_lowercase());
            }
            out
        }
    }
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
