//! The end-to-end tests, one binary: each module tests one area with the real binary against
//! this machine's real kernel features, and registers its tests with `tests!`, each `Serial`
//! (it times this machine or changes its kernel state) or `Shared`. One binary is built and
//! linked once (24 were, each linking the whole crate), and its harness ([`common::run`]) runs
//! the serial tests alone, one after another, then the shared ones (guests counting exactly,
//! analyses, refusals) beside each other, longest first. scripts/test.sh installs what they
//! need and sets `SYSCOST_TEST_REQUIRE_ALL`, under which a missing prerequisite fails instead
//! of skipping.

mod common;

mod audit;
mod audit_grammar;
mod audit_rules;
mod bad_input;
mod bisect;
mod book;
mod campaign;
mod compare_cli;
mod container;
mod env;
mod first_hour;
mod flags_below_cli;
mod fuzz;
mod history;
mod hot_paths;
mod interrupt;
mod kcidb;
mod lava;
mod layers;
mod lkml;
mod plans;
mod postgres;
mod readme;
mod replica_layout;
mod report;
mod reproduce;
mod run_syscall;
mod uprobe;
mod workloads_profile;

/// Every test, each area's in its registry's order. The shared phase starts them in this order
/// on its threads, so the areas that boot guests for minutes come first: the reproductions,
/// which build kernels one after another (the alignment RFC's waits for the audit series'
/// baseline, then builds its 64-byte kernel: 7 minutes in all here), then the LAVA lab's (about
/// 1.5 minutes). Started last, one of them would end the run alone on one thread while the
/// other idled (the RFC's, started after the campaigns', ended a fresh clone's shared phase
/// at 599 s).
fn main() -> std::process::ExitCode {
    let tests = [
        reproduce::tests(),
        lava::tests(),
        readme::tests(),
        campaign::tests(),
        bisect::tests(),
        audit::tests(),
        audit_grammar::tests(),
        audit_rules::tests(),
        bad_input::tests(),
        book::tests(),
        compare_cli::tests(),
        container::tests(),
        env::tests(),
        first_hour::tests(),
        flags_below_cli::tests(),
        fuzz::tests(),
        history::tests(),
        hot_paths::tests(),
        interrupt::tests(),
        kcidb::tests(),
        layers::tests(),
        lkml::tests(),
        plans::tests(),
        postgres::tests(),
        replica_layout::tests(),
        report::tests(),
        run_syscall::tests(),
        uprobe::tests(),
        workloads_profile::tests(),
    ]
    .into_iter()
    .flatten()
    .collect();
    common::run(tests)
}
