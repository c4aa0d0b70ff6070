//! Workloads: what is measured. Each workload is one file implementing [`Workload`], in the
//! way each benchmark of the kernel's BPF selftests bench is one file filling one struct; the
//! runner, counters, statistics, results and reports never know which workload runs.
//!
//! To add one: write `src/workloads/NAME.rs` with a `Params` struct (its command-line options,
//! also stored in result files) and a type implementing [`Workload`], then add a variant to
//! [`WorkloadSpec`] and a subcommand in the CLI.

pub mod audit_replica;
pub mod empty;
pub mod exec;
pub mod syscall;
pub mod uprobe;
pub mod vfs_mix;

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// One measurable operation, executed in batches by the runner's worker process.
///
/// The worker calls [`setup`](Workload::setup) once, then [`run_batch`](Workload::run_batch)
/// for each sample between two timer and counter readings, then
/// [`teardown`](Workload::teardown) on every exit path (normal, error, SIGINT, SIGTERM).
pub trait Workload {
    /// Prepare everything the batches need. Not timed. An error here ends the run with the
    /// message shown to the user.
    fn setup(&mut self) -> Result<()> {
        Ok(())
    }

    /// Execute `ops` operations. This is the timed region: do nothing here that is not the
    /// operation itself (no allocation, no I/O beyond the operation). A failing operation ends
    /// the batch with an error that says which operation failed and why.
    fn run_batch(&mut self, ops: u64) -> Result<()>;

    /// Facts about this run worth showing beside the figures (e.g. the file system measured).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// After the last timed batch: stop helper threads and check the run (e.g. that a probe
    /// counted every call). An error fails the run. Called before `run_metrics`.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// Metrics of the whole run that the workload measures itself, outside the timed region
    /// (for example the cacheline-spread of a placement). Stored per run, summarised and
    /// correlated like any other metric.
    fn run_metrics(&self) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// Undo whatever `setup` created. Must be safe to call after a failed or partial setup.
    fn teardown(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A workload and its parameters, as given on the command line and stored in result files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "kebab-case")]
pub enum WorkloadSpec {
    /// A raw system call in a loop.
    Syscall(syscall::Params),
    /// Seed 001's VFS-mix loop on a file system.
    VfsMix(vfs_mix::Params),
    /// Any command, its operations counted by the user.
    Exec(exec::Params),
    /// The audit_filter_syscall() list walk, in C, over placed rule entries.
    AuditReplica(audit_replica::Params),
    /// Uprobe trigger throughput on a nop, push or ret.
    Uprobe(uprobe::Params),
    /// The empty loop: the harness's own cost per operation.
    Empty,
}

impl WorkloadSpec {
    /// Instantiate the workload (in the worker process).
    pub fn build(&self) -> Result<Box<dyn Workload>> {
        Ok(match self {
            WorkloadSpec::Syscall(p) => Box::new(syscall::SyscallLoop::new(p)?),
            WorkloadSpec::VfsMix(p) => Box::new(vfs_mix::VfsMix::new(p)),
            WorkloadSpec::Exec(p) => Box::new(exec::Exec::new(p)?),
            WorkloadSpec::AuditReplica(p) => Box::new(audit_replica::AuditReplica::new(p)),
            WorkloadSpec::Uprobe(p) => Box::new(uprobe::UprobeLoop::new(p)?),
            WorkloadSpec::Empty => Box::new(empty::EmptyLoop),
        })
    }

    /// The workload's name, as in `syscost run NAME`.
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadSpec::Syscall(_) => "syscall",
            WorkloadSpec::VfsMix(_) => "vfs-mix",
            WorkloadSpec::Exec(_) => "exec",
            WorkloadSpec::AuditReplica(_) => "audit-replica",
            WorkloadSpec::Uprobe(_) => "uprobe",
            WorkloadSpec::Empty => "empty",
        }
    }

    /// One line for table headers, e.g. `syscall getpid (nr 39)`.
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Syscall(p) => p.describe(),
            WorkloadSpec::VfsMix(p) => p.describe(),
            WorkloadSpec::Exec(p) => p.describe(),
            WorkloadSpec::AuditReplica(p) => p.describe(),
            WorkloadSpec::Uprobe(p) => p.describe(),
            WorkloadSpec::Empty => "empty loop".into(),
        }
    }

    /// Parts of one operation worth a per-part figure: one walk of the replica is R rules.
    pub fn parts(&self) -> Option<(&'static str, f64)> {
        match self {
            WorkloadSpec::AuditReplica(p) => Some(("rule", p.rules as f64)),
            _ => None,
        }
    }

    /// Producer threads, for throughput figures (M/s and M/s per CPU).
    pub fn threads(&self) -> Option<u32> {
        match self {
            WorkloadSpec::Uprobe(p) => Some(p.threads),
            _ => None,
        }
    }

    /// Whether counters must follow the processes the workload starts.
    pub fn inherit(&self) -> bool {
        matches!(self, WorkloadSpec::Exec(_))
    }

    /// What one operation is called.
    pub fn op_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Syscall(_) => "call",
            WorkloadSpec::VfsMix(_) => "iteration",
            WorkloadSpec::Exec(_) => "op",
            WorkloadSpec::AuditReplica(_) => "walk",
            WorkloadSpec::Uprobe(_) => "call",
            WorkloadSpec::Empty => "iteration",
        }
    }
}
