//! The command line: argument types (args.rs), one file per command with its own glue (run,
//! ab, audit, cachesets; compare, merge, correlate, report, probe, show and env are short
//! enough to live in the dispatch here), and one output routine ([`show`]) that writes a
//! result to `-o` and prints it in any format. Nothing here measures anything.

/// Print to stdout as `print!` does, through [`out`]: a closed pipe ends the output quietly.
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::out(format!($($t)*))? };
}

/// Print a line to stdout as `println!` does, through [`out`].
macro_rules! outln {
    ($($t:tt)*) => { $crate::cli::out(format!("{}\n", format_args!($($t)*)))? };
}

mod ab;
mod args;
mod audit;
mod bisect;
mod boots;
mod cachesets;
mod campaign;
mod commands;
mod export;
pub mod flags;
mod history;
mod kept_run;
mod named;
mod progress;
mod reading;
mod reproduce;
mod rerun;
mod run;

use ab::*;
pub(crate) use args::{CompareArgs, RunArgs};
use audit::*;
pub use audit::{AuditCommand, SweepBench};
use cachesets::*;
use commands::*;
use reading::*;
pub(crate) use run::RunCommand;
use run::*;

use crate::compare;
use crate::counters::{self, EventList};
use crate::report::{self, Render, format::Format, format::json};
use crate::results::{RunResult, view::ResultView};
use crate::runner::{self, CpuList, Plan};
use crate::signals::{self, Interrupted};
use crate::stats::registry::TestKind;
use crate::workloads::{self, Spec, WorkloadSpec, syscall, uprobe};
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

const ABOUT: &str = "What does one syscall, one audit rule, one file-system round trip or one \
uprobe hit cost on this machine, and is a difference real?";

const LONG_ABOUT: &str = "What does one syscall, one audit rule, one file-system round trip or \
one uprobe hit cost on this machine, and is a difference real?

syscost times a workload in batches inside fresh worker processes (one per run, like \
`perf stat -r`), reads perf counters around every batch, divides everything by the number of \
operations, and reports median, mean, min, max, population standard deviation and a 95% \
confidence interval over runs. Results keep every raw sample, the options and the machine's \
environment, so they can be compared later.";

#[derive(Parser, Debug)]
#[command(name = "syscost", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure a workload: per-operation time and counters with statistics.
    #[command(subcommand)]
    Run(RunCommand),
    /// Compare results: deltas with confidence intervals, significance and a verdict.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareFiles),
    /// Measure two or more configurations interleaved (A B B A ...) and compare them.
    #[command(after_help = AB_EXAMPLES)]
    Ab {
        /// A configuration: the arguments of `syscost run` (workload and its options), quoted.
        /// Unless a variant or the shared options choose --estimator, --samples, --sample-time
        /// or --ops (or a variant is `exec`), each run is 100 samples of 10 ms and its value the
        /// fastest: the floor, which resolves a 2% change on a busy host (docs/src/comparing.md, "Noisy machines"). Unless
        /// --runs is given, 10 rounds: fewer than 6 could never reach p < 0.05 with the paired
        /// test, and such counts are refused. Give it two or more times; the first is the
        /// baseline.
        #[arg(long = "variant", value_name = "ARGS", required = true)]
        variants: Vec<String>,
        /// A name for each variant, in order. Default: what differs between them, e.g. `getpid`
        /// and `getppid`, or `iterations=1000` and `iterations=1020` (the whole --variant text
        /// when their workloads are alike).
        #[arg(long = "label", value_name = "NAME")]
        labels: Vec<String>,
        /// Also write each variant's full result into this directory (created if need be).
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        /// How finely the configurations alternate within a round. `samples`: the round's runs
        /// (one fresh worker each) are alive together and take turns sample by sample (A B, B
        /// A, ...), only one measuring at a time, so a drift of the machine slower than one
        /// sample (--sample-time) falls on both alike. `runs`: one run after the other. Runs
        /// alternate anyway, with a warning, when a variant has --copies (they run
        /// continuously), --pre, or a uprobe (two would share one uprobe).
        #[arg(long, value_enum, value_name = "GRAIN", default_value_t = crate::results::Grain::Samples)]
        interleave: crate::results::Grain,
        #[command(flatten)]
        opts: CompareArgs,
        /// `syscost run` options shared by every variant (after --), e.g. -- --cpu 1 --runs 10
        #[arg(last = true, value_name = "RUN OPTIONS")]
        shared: Vec<String>,
    },
    /// Merge results of one workload from different boots; the boot becomes the unit.
    Merge(MergeArgs),
    /// Correlate two per-run (or per-boot) metrics across results: Pearson and Spearman.
    Correlate(CorrelateArgs),
    /// Audit: status, the cost of audit and of each syscall-exit rule, cleanup.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// The history store: every result kept in one SQLite file, listed, filtered, shown again.
    History(history::HistoryArgs),
    /// Results in another system's format: kcidb (KernelCI's results database).
    #[command(subcommand)]
    Export(export::ExportCommand),
    /// Which L1 sets objects can reach, how crowded they are, and how likely a set overflows.
    #[command(after_help = CACHESETS_HELP)]
    Cachesets(CachesetsArgs),
    /// Put a uprobe on any program's function while a command runs: the command's wall time
    /// with and without the probe (interleaved runs), and the probe's hits.
    #[command(after_help = PROBE_EXAMPLES)]
    Probe(ProbeArgs),
    /// Boot kernels (or kernel command lines, or audit states) round after round in QEMU,
    /// measure inside every boot with a syscost command, and compare them with boots as units.
    #[command(after_help = campaign::CAMPAIGN_EXAMPLES)]
    Campaign(Box<campaign::CampaignArgs>),
    /// Find the first build in an ordered list (or the first commit of a kernel tree, with
    /// git bisect) where a figure changed: the ends booted first, each build tried booted in
    /// QEMU and classified with boots as units and a stated error rate.
    #[command(after_help = bisect::BISECT_EXAMPLES)]
    Bisect(Box<bisect::BisectArgs>),
    /// Repeat a public investigation in one command: boot what it needs under QEMU, measure,
    /// and print its published tables beside syscost's figures, cell by cell, each classed
    /// and with the reason it differs.
    #[command(after_help = reproduce::REPRODUCE_EXAMPLES)]
    Reproduce(Box<reproduce::ReproduceArgs>),
    /// One self-contained HTML page (inline SVG, no JavaScript) charting any syscost results:
    /// runs, comparisons, merges, audit sweeps, thread scaling, correlations, cache sets,
    /// probes and trends.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Print a saved result of any kind again, in any format (e.g. lkml for a cover letter).
    Show(ShowArgs),
    /// Show what makes results comparable: kernel, config, CPU, caches, clocks, audit, perf.
    Env(EnvArgs),
    /// Print a shell completion script: syscost completions bash > /etc/bash_completion.d/syscost
    Completions(CompletionsArgs),
    /// Print the man page (roff): syscost man > /usr/local/share/man/man1/syscost.1; with
    /// --dir, write one page per command as git does (syscost.1, syscost-run.1,
    /// syscost-run-syscall.1, ...).
    Man(ManArgs),
    /// Internal: one measurement run in a worker process.
    #[command(name = "__worker", hide = true)]
    Worker,
}

const PROBE_EXAMPLES: &str = "Examples:
  syscost probe --target /usr/bin/redis-server:processCommand -- ./bench-redis.sh
      the script starts redis-server and runs redis-benchmark; 10 runs with and 10 without,
      paired by round
  syscost probe --target /lib/x86_64-linux-gnu/libc.so.6:malloc --probe uretprobe --bpf -- make -j2
The probe is system-wide (every process running the file): needs CAP_PERFMON or root.";

const REPORT_EXAMPLES: &str = "Examples:
  syscost report run.json compare.json sweep.json scale.json corr.json -o report.html
  syscost report --svg sweep sweep.json -o sweep.svg
      one chart alone, for a mail or a document
Result files come from run -o, compare -o, ab -o, merge -o, audit sweep -o, correlate -o,
run uprobe --threads LIST -o, probe -o, history trend -o, and cachesets --json > FILE.";

/// A worker process (`syscost __worker`: the runner starts one for every run) runs without
/// parsing syscost's command line, which under the emulator costs more than a counted run
/// (0.2 s of a guest's, against 0.02 s for the run's windows): its exit status, or `None` for
/// any other command.
pub fn worker() -> Option<i32> {
    let first = std::env::args_os().nth(1);
    (first.as_deref() == Some(std::ffi::OsStr::new("__worker")) && std::env::args_os().len() == 2)
        .then(runner::worker::main)
}

/// The command line parsed, as `Cli::parse` does, but with clap's tree of every command's
/// arguments left to the process's exit instead of dropped: dropping it costs as much as
/// building it (a third of a guest's `run` start under the emulator).
fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let mut tree = Cli::command();
    let parsed = tree
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|mut m| {
            let cli = Cli::from_arg_matches_mut(&mut m);
            std::mem::forget(m);
            cli
        })
        .map_err(|e| e.format(&mut tree));
    std::mem::forget(tree);
    parsed.unwrap_or_else(|e| e.exit())
}

/// Parse the arguments, run the command, and return the process exit status.
pub fn main() -> i32 {
    let cli = parse();
    if let Command::Worker = cli.command {
        return runner::worker::main();
    }
    if let Err(e) = signals::install() {
        eprintln!("syscost: error: {e}");
        return 1;
    }
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(e) => {
            if let Some(i) = e.downcast_ref::<Interrupted>() {
                eprintln!("syscost: {i}; stopped, nothing was written");
                return i.exit_code();
            }
            if let Some(i) = e.downcast_ref::<campaign::Incomplete>() {
                eprintln!("syscost: {i}");
                return campaign::INCOMPLETE_STATUS;
            }
            if let Some(s) = e.downcast_ref::<bisect::StepStatus>() {
                if s.0 != 1 {
                    eprintln!("syscost: {}", s.1);
                }
                return s.0;
            }
            if let Some(f) = e.downcast_ref::<args::Failed>() {
                eprintln!("syscost: {f}");
                return args::FAIL_ON_STATUS;
            }
            eprintln!("syscost: error: {e:#}");
            1
        }
    }
}

/// The one output routine: the result's JSON to `-o` (atomically) if asked, then the result on
/// stdout in `format` (JSON as written to files; text laid out by the format).
fn show<R: Render + Serialize>(r: &R, format: Format, output: &Option<PathBuf>) -> Result<()> {
    if let Some(p) = output {
        write_file(p, format!("{}\n", json::to_json(r)).as_bytes())?;
    }
    // Nobody reads it (a campaign guest's measurement): laying a table out is work for nothing.
    if crate::core::files::stdout_discarded() {
        return Ok(());
    }
    if format == Format::Json {
        out(format!("{}\n", json::to_json(r)))
    } else {
        out(r.text(format))
    }
}

/// Write `bytes` to `path` atomically (a signal waits until it is done) and say so on stderr.
fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    {
        let _finish_first = signals::Defer::new();
        crate::core::write_atomic(path, bytes)?;
    }
    eprintln!("syscost: written to {}", path.display());
    Ok(())
}

/// Generated text to `-o FILE` if given, else to stdout.
fn file_or_stdout(text: &str, output: &Option<PathBuf>) -> Result<()> {
    match output {
        Some(o) => write_file(o, text.as_bytes()),
        None => out(text),
    }
}

/// Write to stdout. A reader that closed the pipe early (`| head`) ends the output quietly, as
/// `ls | head` does: nothing more is printed, no error, and the command goes on to finish (a
/// measurement is still written with -o and recorded in the history).
pub(crate) fn out(text: impl AsRef<[u8]>) -> Result<()> {
    quiet(std::io::stdout().lock().write_all(text.as_ref()))
}

/// An error writing to stdout, unless it is the reader's closed pipe.
fn quiet(written: std::io::Result<()>) -> Result<()> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// `-o` of a command that reads result files: writable, and none of them.
fn writable_output(output: &std::path::Path, inputs: &[PathBuf]) -> Result<()> {
    crate::core::check_writable(output)?;
    crate::core::files::check_not_an_input(output, inputs)
}

fn dispatch(cmd: Command) -> Result<()> {
    if matches!(
        cmd,
        Command::Compare { .. }
            | Command::Merge { .. }
            | Command::Correlate { .. }
            | Command::Report { .. }
            | Command::Cachesets { .. }
            | Command::Show { .. }
            | Command::Env { .. }
            | Command::Completions { .. }
            | Command::Man { .. }
    ) {
        signals::exit_promptly().map_err(anyhow::Error::msg)?;
    }
    match cmd {
        Command::Run(run) => match run.into_parts()? {
            // A --threads list is a sweep over thread counts.
            (WorkloadSpec::Uprobe(p), common) => uprobe_run(p, common),
            (workload, common) => run_workload(workload, common),
        },
        Command::Compare(c) => c.run(),
        Command::Ab {
            variants,
            labels,
            save,
            interleave,
            opts,
            shared,
        } => ab(variants, labels, save, interleave, opts, shared),
        Command::Merge(m) => m.run(),
        Command::Correlate(c) => c.run(),
        Command::Audit(a) => audit_command(a),
        Command::History(h) => history::history_command(h),
        Command::Export(e) => export::export_command(e),
        Command::Report(r) => r.run(),
        Command::Probe(p) => p.run(),
        Command::Campaign(c) => c.run(),
        Command::Bisect(b) => b.run(),
        Command::Reproduce(r) => r.run(),
        Command::Cachesets(args) => cachesets(args),
        Command::Show(s) => s.run(),
        Command::Env(e) => e.run(),
        Command::Completions(c) => c.run(),
        Command::Man(m) => m.run(),
        Command::Worker => unreachable!("handled before dispatch"),
    }
}

#[cfg(test)]
mod unit {
    /// clap's own checks of the whole command line (duplicate flags, conflicts naming
    /// unknown arguments), which release builds do not run.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
