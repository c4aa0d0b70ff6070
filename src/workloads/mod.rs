//! Workloads: what is measured. Each workload is one file implementing [`Workload`], in the
//! way each benchmark of the kernel's BPF selftests bench is one file filling one struct; the
//! runner, counters, statistics, results and reports never know which workload runs.
//!
//! To add one: write `src/workloads/NAME.rs` with a `Params` struct (its command-line options,
//! also stored in result files) implementing [`Spec`] and a type implementing [`Workload`],
//! then add one line to the registry, [`with_workloads!`]: [`WorkloadSpec`] and the `syscost
//! run NAME` subcommand come from it.

/// The registry of workloads: one line each, `Variant(module)`, where `module` is the file
/// `src/workloads/module.rs` with its `Params: Spec`. [`WorkloadSpec`] and the subcommands of
/// `syscost run` are generated from it: adding a workload is writing its file and adding its
/// line here.
macro_rules! with_workloads {
    ($then:ident) => {
        $then! {
            Syscall(syscall),
            VfsMix(vfs_mix),
            AuditReplica(audit_replica),
            Uprobe(uprobe),
            Exec(exec),
            Vdso(vdso),
            Spin(spin),
            File(file),
            Ipc(ipc),
            Proc(proc),
            Mem(mem),
        }
    };
}

pub(crate) use with_workloads;

pub(crate) mod capture;
pub(crate) mod empty;
pub(crate) mod recorded;
pub(crate) mod scratch;

macro_rules! declare_modules {
    ($($variant:ident($module:ident)),* $(,)?) => {
        $(pub mod $module;)*
    };
}
with_workloads!(declare_modules);

use anyhow::Result;
pub(crate) use recorded::RecordedWorkload;
use serde::{Deserialize, Serialize};

/// One measurable operation, executed in batches by the runner's worker process.
///
/// The worker calls [`setup`](Workload::setup) once, then [`run_batch`](Workload::run_batch)
/// for each sample between two timer and counter readings, then
/// [`teardown`](Workload::teardown) on every exit path (normal, error, SIGINT, SIGTERM).
pub(crate) trait Workload {
    /// Prepare everything the batches need. Not timed. An error here ends the run with the
    /// message shown to the user.
    fn setup(&mut self) -> Result<()> {
        Ok(())
    }

    /// Execute `ops` operations. This is the timed region: do nothing here that is not the
    /// operation itself (no allocation, no I/O beyond the operation). A failing operation ends
    /// the batch with an error that says which operation failed and why.
    fn run_batch(&mut self, ops: u64) -> Result<()>;

    /// Before each batch, untimed and uncounted: prepare what `ops` operations consume (a
    /// fresh mapping whose pages the batch faults in).
    fn before_batch(&mut self, _ops: u64) -> Result<()> {
        Ok(())
    }

    /// After each batch, untimed and uncounted: undo what the batch left (unmap the pages it
    /// faulted in).
    fn after_batch(&mut self) -> Result<()> {
        Ok(())
    }

    /// Facts about this run worth showing beside the figures (e.g. the file system measured).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether, where it ran, one operation waits by its nature though the workload's own
    /// kind does not ([`Spec::waits`]): the VFS-mix loop on a disk file system waits for the
    /// journal and the block layer. Its context switches are then part of the operation.
    fn waits_where_it_ran(&self) -> bool {
        false
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

/// How `--copies` runs the copies of a workload: as processes (fork) or as threads of the
/// worker (will-it-scale's two modes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CopyMode {
    #[default]
    Process,
    Thread,
}

/// What a workload's parameters say about it: the one trait a workload's file implements on
/// its `Params` (its command-line options, stored in result files) besides [`Workload`].
pub(crate) trait Spec {
    /// The subcommand of `syscost run`, and the `workload` tag in result files.
    const NAME: &'static str;
    /// What one operation is called ("call", "iteration", "walk").
    const OP_NAME: &'static str;
    /// The one-line summary of `syscost run NAME` in `--help`.
    const ABOUT: &'static str;
    /// Examples and notes under `syscost run NAME --help`.
    const EXAMPLES: &'static str;
    /// When the workload cannot be calibrated, the message asking for `--ops`.
    const OPS_REQUIRED: Option<&'static str> = None;
    /// The base window of an exact count (`runner::Sizing::Count`: windows of 1, 2 and 4
    /// times it): what the figure needs, not what fills a time. Its slope cancels whatever a
    /// window pays once, so the base need only be long enough that a cost paid every few
    /// dozen operations (a slab's refill, a page's worth of a file) averages over it, and far
    /// longer than the few operations a cache model takes to repeat its misses call after call.
    const COUNTED_OPS: u64 = 256;

    /// Instantiate the workload (in the worker process).
    fn build(&self) -> Result<Box<dyn Workload>>;
    /// Check and complete the parameters as the command line gave them.
    fn complete_command_line(&mut self) -> Result<()> {
        Ok(())
    }
    /// One line for table headers, e.g. `syscall getpid (nr 39)`.
    fn describe(&self) -> String;
    /// A few words naming what one operation is, for a lab's test-case names, e.g.
    /// `syscall getpid` (the workload's name unless its parameters choose the operation).
    fn case_label(&self) -> String {
        Self::NAME.into()
    }
    /// Parts of one operation worth a per-part figure: one walk of the replica is R rules.
    fn parts(&self) -> Option<(&'static str, f64)> {
        None
    }
    /// Producer threads, for throughput figures (M/s and M/s per CPU).
    fn threads(&self) -> Option<u32> {
        None
    }
    /// Whether counters must follow the processes the workload starts.
    fn inherit(&self) -> bool {
        false
    }
    /// Why one operation sleeps by its nature (a round trip waits for the other side, a fork
    /// for its child), if it does: its context switches are then part of the operation and
    /// not a sign of disturbance.
    fn waits(&self) -> Option<&'static str> {
        None
    }
    /// Why counting perturbs the time of one operation, if it does: an operation that switches
    /// context (a round trip through another process) pays, at every switch, for each event
    /// the worker counts. Such a workload counts nothing unless `-e` says so, so its time is
    /// taken as lmbench takes it, and the run's notes say which was done.
    fn counting_perturbs(&self) -> Option<&'static str> {
        None
    }
    /// What to try when the loop sleeps though its operation should not (shown with the
    /// "the loop sleeps" warning).
    fn sleep_hint(&self) -> Option<&'static str> {
        None
    }
    /// Why copies of this workload cannot run as threads of one process (`--copies --mode
    /// thread`), if they cannot: state the process has only once (a signal handler, the
    /// break, a global list).
    fn not_as_threads(&self) -> Option<&'static str> {
        None
    }
    /// Why two runs of this workload must not be alive together (a paced round, whose runs
    /// alternate sample by sample: `runner::paced`), if they must not: kernel state that one
    /// run sets up for itself and that the other run's operations would walk too.
    fn not_paced(&self) -> Option<&'static str> {
        None
    }
    /// The system calls one operation makes (as strace counts them), for rules that should name
    /// them (`audit sweep --matching`). Empty where the workload cannot know (a command's).
    fn syscalls(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Events counted besides the default list when `-e` is not given (event-list syntax),
    /// e.g. the dTLB events of the replica, whose placement is about pages as much as sets.
    const EXTRA_EVENTS: &'static str = "";
}

macro_rules! workload_spec {
    ($($variant:ident($module:ident)),* $(,)?) => {
        /// A workload and its parameters, as given on the command line and stored in result
        /// files (tagged by the workload's name).
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "workload", rename_all = "kebab-case")]
        pub enum WorkloadSpec {
            $($variant($module::Params),)*
            /// The empty loop: the harness's own cost per operation.
            Empty,
        }

        impl WorkloadSpec {
            /// Instantiate the workload (in the worker process).
            pub(crate) fn build(&self) -> Result<Box<dyn Workload>> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.build(),)*
                    WorkloadSpec::Empty => Ok(Box::new(empty::EmptyLoop)),
                }
            }

            /// The workload's name, as in `syscost run NAME`.
            pub(crate) fn name(&self) -> &'static str {
                match self {
                    $(WorkloadSpec::$variant(_) => <$module::Params as Spec>::NAME,)*
                    WorkloadSpec::Empty => "empty",
                }
            }

            /// What one operation is, in a few words (see [`Spec::case_label`]).
            pub(crate) fn case_label(&self) -> String {
                match self {
                    $(WorkloadSpec::$variant(p) => p.case_label(),)*
                    WorkloadSpec::Empty => "empty".into(),
                }
            }

            /// One line for table headers, e.g. `syscall getpid (nr 39)`.
            pub(crate) fn describe(&self) -> String {
                match self {
                    $(WorkloadSpec::$variant(p) => p.describe(),)*
                    WorkloadSpec::Empty => "empty loop".into(),
                }
            }

            /// Parts of one operation worth a per-part figure (see [`Spec::parts`]).
            pub(crate) fn parts(&self) -> Option<(&'static str, f64)> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.parts(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// Producer threads, for throughput figures (M/s and M/s per CPU).
            pub(crate) fn threads(&self) -> Option<u32> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.threads(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// Whether counters must follow the processes the workload starts.
            pub(crate) fn inherit(&self) -> bool {
                match self {
                    $(WorkloadSpec::$variant(p) => p.inherit(),)*
                    WorkloadSpec::Empty => false,
                }
            }

            /// Why one operation sleeps by its nature, if it does.
            pub(crate) fn waits(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.waits(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// Why counting perturbs the operation's time, if it does (see [`Spec`]).
            pub(crate) fn counting_perturbs(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.counting_perturbs(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// What to try when the loop sleeps though it should not.
            pub(crate) fn sleep_hint(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.sleep_hint(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// What one operation is called.
            pub(crate) fn op_name(&self) -> &'static str {
                match self {
                    $(WorkloadSpec::$variant(_) => <$module::Params as Spec>::OP_NAME,)*
                    WorkloadSpec::Empty => "iteration",
                }
            }

            /// Why copies cannot run as threads of one process, if they cannot.
            pub(crate) fn not_as_threads(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.not_as_threads(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// Why two runs must not be alive together, if they must not.
            pub(crate) fn not_paced(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.not_paced(),)*
                    WorkloadSpec::Empty => None,
                }
            }

            pub(crate) fn syscalls(&self) -> Vec<u32> {
                match self {
                    $(WorkloadSpec::$variant(p) => p.syscalls(),)*
                    WorkloadSpec::Empty => Vec::new(),
                }
            }

            pub(crate) fn extra_events(&self) -> &'static str {
                match self {
                    $(WorkloadSpec::$variant(_) => <$module::Params as Spec>::EXTRA_EVENTS,)*
                    WorkloadSpec::Empty => "",
                }
            }

            /// The base window of an exact count (`Spec::COUNTED_OPS`).
            pub(crate) fn counted_ops(&self) -> u64 {
                match self {
                    $(WorkloadSpec::$variant(_) => <$module::Params as Spec>::COUNTED_OPS,)*
                    WorkloadSpec::Empty => 256,
                }
            }

            pub(crate) fn ops_required(&self) -> Option<&'static str> {
                match self {
                    $(WorkloadSpec::$variant(_) => <$module::Params as Spec>::OPS_REQUIRED,)*
                    WorkloadSpec::Empty => None,
                }
            }

            /// Every registered workload's name, in registry order.
            pub const NAMES: &'static [&'static str] = &[$(<$module::Params as Spec>::NAME,)*];
        }
    };
}

with_workloads!(workload_spec);

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn names_are_the_result_files_tags() {
        let spec = WorkloadSpec::Syscall(syscall::Params {
            syscall: "getpid".into(),
        });
        assert_eq!(serde_json::to_value(&spec).unwrap()["workload"], "syscall");
        // The serde tag is the variant's kebab-case name: every NAME must be that tag.
        for (name, tag) in WorkloadSpec::NAMES.iter().zip([
            "syscall",
            "vfs-mix",
            "audit-replica",
            "uprobe",
            "exec",
            "vdso",
            "spin",
            "file",
            "ipc",
            "proc",
            "mem",
        ]) {
            assert_eq!(*name, tag);
        }
    }
}
