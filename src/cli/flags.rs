//! How the command line spells each option the layers below name as an [`Opt`].

use crate::core::input::Opt;

/// Give the layers below this spelling (before anything can refuse).
pub fn install() {
    crate::core::input::spell_with(flag);
}

/// The flag of `o`.
pub(crate) fn flag(o: Opt) -> &'static str {
    if let Some(f) = boot_flag(o) {
        return f;
    }
    match o {
        Opt::Accel => "--accel",
        Opt::Arm => "--arm",
        Opt::AuditRules => "--audit-rules",
        Opt::Baseline => "--baseline",
        Opt::Boots => "--boots",
        Opt::By => "--by",
        Opt::Builds => "--builds",
        Opt::Cpu => "--cpu",
        Opt::EmulatedCounters => "--emulated-counters",
        Opt::GuestCpus => "--guest-cpus",
        Opt::GuestFile => "--guest-file",
        Opt::GuestMemory => "--guest-memory",
        Opt::HostCpus => "--host-cpus",
        Opt::Kernels => "--kernels",
        Opt::Label => "--label",
        Opt::LavaDevice => "--lava-device",
        Opt::LavaEvents => "--lava-events",
        Opt::LavaFiles => "--lava-files",
        Opt::LavaQueueDepth => "--lava-queue-depth",
        Opt::LavaTokenFile => "--lava-token-file",
        Opt::LavaUrl => "--lava-url",
        Opt::List => "--list",
        Opt::Matching => "--matching",
        Opt::MixEmulated => "--mix-emulated",
        Opt::Param => "--param",
        Opt::Probe => "--probe",
        Opt::Rules => "--rules",
        Opt::Runs => "--runs",
        Opt::Save => "--save",
        Opt::State => "--state",
        Opt::SubtractOverhead => "--subtract-overhead",
        Opt::Tag => "--tag",
        Opt::Variant => "--variant",
        Opt::Via => "--via",
        Opt::Workload => "--workload",
        Opt::AuditRulesErrors => "--audit-rules-errors",
        Opt::BestOf => "--best-of",
        Opt::CacheModel => "--cache-model",
        Opt::DropPerturbed => "--drop-perturbed",
        Opt::Force => "--force",
        Opt::History => "--history",
        Opt::NoHistory => "--no-history",
        Opt::ListEvents => "--list-events",
        Opt::Objects => "--objects",
        Opt::SamplesAsUnits => "--samples-as-units",
        Opt::Size => "--size",
        Opt::Target => "--target",
        Opt::Test => "--test",
        Opt::Time => "--time",
        Opt::Within => "--within",
        Opt::Align => "--align",
        Opt::Copies => "--copies",
        Opt::Estimator => "--estimator",
        Opt::Fifo => "--fifo",
        Opt::Geometry => "--geometry",
        Opt::Lines => "--lines",
        Opt::MaxTime => "--max-time",
        Opt::Ops => "--ops",
        Opt::Origin => "--origin",
        Opt::OverheadSamples => "--overhead-samples",
        Opt::Pre => "--pre",
        Opt::Profile => "--profile",
        Opt::Samples => "--samples",
        Opt::SampleTime => "--sample-time",
        Opt::Svg => "--svg",
        Opt::Trials => "--trials",
        Opt::Until => "--until",
        Opt::Warmup => "--warmup",
        _ => unreachable!("{o:?} is a boot's option: boot_flag spells it"),
    }
}

/// The flag of an option of how kernels boot, are counted and compared (campaign, bisect,
/// reproduce), or `None`.
fn boot_flag(o: Opt) -> Option<&'static str> {
    Some(match o {
        Opt::Icount => "--icount",
        Opt::GuestDisk => "--guest-disk",
        Opt::LavaBoot => "--lava-boot",
        Opt::EmulatedProfile => "--emulated-profile",
        Opt::Metric => "--metric",
        Opt::NoVerdict => "--no-verdict",
        Opt::Alpha => "--alpha",
        Opt::Dir => "--dir",
        Opt::NoResidueStep => "--no-residue-step",
        Opt::Insn => "--insn",
        Opt::CopyMode => "--mode",
        Opt::Placement => "--placement",
        Opt::Build => "--build",
        Opt::Steps => "--steps",
        Opt::StepRounds => "--step-rounds",
        Opt::ExactResolution => "--exact-resolution",
        _ => return None,
    })
}

#[cfg(test)]
mod unit {
    use super::*;
    use clap::CommandFactory;

    /// Every long flag of every command and subcommand.
    fn parser_flags(c: &clap::Command, out: &mut std::collections::BTreeSet<String>) {
        out.extend(
            c.get_arguments()
                .filter_map(|a| a.get_long())
                .map(|l| format!("--{l}")),
        );
        for s in c.get_subcommands() {
            parser_flags(s, out);
        }
    }

    /// Each option is spelled as a flag the parser takes: a flag renamed in the parser and not
    /// here fails.
    #[test]
    fn every_option_is_spelled_as_a_flag_the_parser_takes() {
        let mut flags = std::collections::BTreeSet::new();
        parser_flags(&super::super::Cli::command(), &mut flags);
        for o in Opt::ALL {
            assert!(flags.contains(flag(o)), "{o:?} is spelled {}", flag(o));
        }
    }

    #[test]
    fn a_refusal_is_shown_with_its_flags_and_its_context() {
        use anyhow::Context;
        install();
        let e: anyhow::Result<()> = Err(crate::refused!(Opt::HostCpus, " 1,2 names 2 CPU(s)"));
        let e = e.context("cannot start QEMU").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "cannot start QEMU: --host-cpus 1,2 names 2 CPU(s)"
        );
    }
}
