//! syscost: what does one syscall, one audit rule, one file-system round trip or one uprobe hit
//! cost on this machine, and is a difference real?
//!
//! The crate is organised by the concepts of the domain:
//!
//! - [`workloads`]: what is measured, one file per workload implementing one trait;
//! - [`runner`]: calibration and worker processes that time batches of operations;
//! - [`counters`]: perf_event_open groups, read with enabled/running times;
//! - [`stats`]: descriptive statistics and confidence intervals;
//! - [`results`]: the versioned result files and per-op metrics derived from raw samples;
//! - [`compare`]: comparisons, merges across boots, correlations and run validity;
//! - [`report`]: tables for people;
//! - [`profile`]: where the time goes: sampled call chains, folded per function;
//! - [`layout`]: cache-set analysis of object placement;
//! - [`probes`]: uprobes through the uprobe PMU, probe targets, ELF offsets;
//! - [`environment`]: what makes two results comparable;
//! - [`audit`]: the audit subsystem through netlink;
//! - [`signals`]: interruption without leaving anything behind;
//! - [`cli`]: the command line, kept apart from the rest.

pub mod audit;
pub mod cli;
pub mod compare;
pub mod counters;
pub mod environment;
pub mod layout;
pub mod probes;
pub mod profile;
pub mod report;
pub mod results;
pub mod runner;
pub mod signals;
pub mod stats;
pub mod workloads;
