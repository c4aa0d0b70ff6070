//! The end-to-end tests, one binary: each module tests one area with the real binary against
//! this machine's real kernel features. One binary is built and linked once (24 were, each
//! linking the whole crate), and its tests share one process: those that boot guests run beside
//! each other under the shared lock of [`common`], those that time this machine alone under its
//! exclusive lock. scripts/test.sh installs what they need and sets `SYSCOST_TEST_REQUIRE_ALL`,
//! under which a missing prerequisite fails instead of skipping.

mod common;

mod audit;
mod audit_grammar;
mod audit_rules;
mod bad_input;
mod bisect;
mod campaign;
mod compare_cli;
mod container;
mod env;
mod first_hour;
mod fuzz;
mod history;
mod hot_paths;
mod interrupt;
mod kcidb;
mod lava;
mod layers;
mod lkml;
mod postgres;
mod readme;
mod replica_layout;
mod report;
mod run_syscall;
mod uprobe;
mod workloads_profile;
