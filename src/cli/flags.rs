//! The command line's flags are named as the [`Opt`]s that the layers below refuse with, and
//! that the rerun and status commands render (`core::input::spelled`): the parser declares a
//! flag, its `Opt` types it, and the test here holds the two to one name.

#[cfg(test)]
mod unit {
    use crate::core::input::{Opt, spelled};
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
    /// in [`Opt`] fails.
    #[test]
    fn every_option_is_spelled_as_a_flag_the_parser_takes() {
        let mut flags = std::collections::BTreeSet::new();
        parser_flags(&super::super::Cli::command(), &mut flags);
        for &o in Opt::ALL {
            assert!(
                flags.contains(&spelled(o)),
                "{o:?} is spelled {}",
                spelled(o)
            );
        }
    }

    #[test]
    fn a_refusal_is_shown_with_its_flags_and_its_context() {
        use anyhow::Context;
        let e: anyhow::Result<()> = Err(crate::refused!(Opt::HostCpus, " 1,2 names 2 CPU(s)"));
        let e = e.context("cannot start QEMU").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "cannot start QEMU: --host-cpus 1,2 names 2 CPU(s)"
        );
    }
}
