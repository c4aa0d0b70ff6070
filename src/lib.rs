//! syscost: what does one syscall, one audit rule, one file-system round trip or one uprobe hit
//! cost on this machine, and is a difference real?
//!
//! The crate is built in layers; each imports only from the layers below it (a test,
//! `tests/all/layers.rs`, holds the code to this table):
//!
//! 1. [`core`]: CPU lists and affinity, number formatting, atomic file writing, the result
//!    envelope; it imports nothing of the crate.
//! 2. [`stats`]: descriptive statistics, significance, correlation, least squares;
//!    [`signals`]: interruption without leaving anything behind.
//! 3. Kernel mechanisms, each knowing nothing of the others or of results: [`counters`]
//!    (perf_event_open groups), [`profile`] (sampled call chains), [`probes`] (the uprobe PMU,
//!    ELF offsets, BPF), [`audit`] (netlink, rules, the owned session), [`layout`] (cache-set
//!    analysis of a given geometry).
//! 4. [`environment`]: what makes two results comparable, from the mechanisms' read-only
//!    snapshots; [`workloads`]: what is measured, one file per workload; [`kbuild`]: kernels
//!    built from a source package and published changes, kept by a content hash.
//! 5. [`results`]: run records, per-op metrics, run validity, and one loader for every kind.
//! 6. [`runner`]: plans, worker processes and the one interleaving routine; [`boot`]: kernels
//!    booted in QEMU with syscost as their init; [`compare`]: comparisons, merges across boots,
//!    correlations; [`history`]: the store of results.
//! 7. [`experiments`]: the composite commands built from the runner, compare and the
//!    mechanisms: `ab`, the audit sweep, `probe`, thread scaling.
//! 8. [`report`]: every rendering of every result kind, one file per output format.
//! 9. [`cli`]: the command line, one file per command.
//!
//! An item is `pub` only where the binary, the end-to-end tests or the benchmarks use it;
//! everything else is `pub(crate)`, and `unreachable_pub` flags a `pub` item in a module the
//! crate keeps to itself.

#![warn(unreachable_pub)]

pub mod core;
pub mod signals;
pub mod stats;

pub mod audit;
pub mod counters;
pub mod layout;
pub mod probes;
pub mod profile;

pub mod environment;
pub mod kbuild;
pub mod workloads;

pub mod results;

pub mod boot;
pub mod compare;
pub mod history;
pub mod runner;

pub mod experiments;

pub mod report;

pub mod cli;
