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
mod cachesets;
mod export;
mod history;
mod progress;
mod reading;
mod run;

use ab::*;
pub use args::{CompareArgs, RunArgs};
use audit::*;
pub use audit::{AuditCommand, SweepBench};
use cachesets::*;
use reading::*;
pub use run::RunCommand;
use run::*;

use crate::compare;
use crate::counters::{self, EventList};
use crate::environment::Environment;
use crate::report::merge::MergeTables;
use crate::report::{self, Render, format::Format, format::json};
use crate::results::{RunResult, view::ResultView};
use crate::runner::{self, CpuList, Plan};
use crate::signals::{self, Interrupted};
use crate::stats::significance::TestKind;
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
    Compare {
        /// Result files: the first is the baseline.
        #[arg(value_name = "RESULT", required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        opts: CompareArgs,
    },
    /// Measure two or more configurations interleaved (A B B A ...) and compare them.
    #[command(after_help = AB_EXAMPLES)]
    Ab {
        /// A configuration: the arguments of `syscost run` (workload and its options), quoted.
        /// Unless a variant or the shared options choose --estimator, --samples, --sample-time
        /// or --ops (or a variant is `exec`), each run is 100 samples of 10 ms and its value the
        /// fastest: the floor, which resolves a 2% change on a busy host (README). Unless
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
    Merge {
        /// Result files, one per boot (merged files contribute their boots).
        #[arg(value_name = "RESULT", required = true)]
        files: Vec<PathBuf>,
        /// Write the merged result (JSON) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Metric of the Min/Mean/Median/Max/pstdev table.
        #[arg(long, default_value = "time", value_name = "NAME")]
        metric: String,
        /// Merge even if the results measure different workloads.
        #[arg(long)]
        force: bool,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Correlate two per-run (or per-boot) metrics across results: Pearson and Spearman.
    Correlate {
        /// Result files; every run (or boot) of every file is one point.
        #[arg(value_name = "RESULT", required = true)]
        files: Vec<PathBuf>,
        /// The metric on the x axis, e.g. L1-dcache-load-misses or cacheline-spread.
        #[arg(long, value_name = "METRIC")]
        x: String,
        /// The metric on the y axis, e.g. time or cycles.
        #[arg(long, value_name = "METRIC", default_value = "time")]
        y: String,
        /// Correlate within each file (each centred on its own means: the partial correlation
        /// controlling for the file), rather than pooling files whose means may differ.
        #[arg(long)]
        within: bool,
        /// Write the correlation (JSON, with every point) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
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
    Probe {
        /// PATH:SYMBOL, e.g. /usr/bin/redis-server:processCommand (symtab or dynsym).
        #[arg(long, value_name = "PATH:SYMBOL")]
        target: String,
        /// uprobe (function entry) or uretprobe (function return).
        #[arg(long, value_enum, default_value_t = crate::probes::ProbeKind::Uprobe)]
        probe: crate::probes::ProbeKind,
        /// Attach a minimal BPF program (return 0; it counts the hits).
        #[arg(long)]
        bpf: bool,
        /// Runs with and runs without the probe (each), paired by round. At least 6: fewer
        /// rounds cannot reach p < 0.05 with the paired test.
        #[arg(short = 'r', long, default_value_t = 10, value_name = "N")]
        runs: u32,
        #[command(flatten)]
        keep: args::HistoryOpts,
        /// Record a figure the command prints about itself: NAME=REGEX, the regex's first group
        /// the number (e.g. rps='([0-9.,]+) requests per second'). Repeatable; a regex that
        /// matches nothing fails the run and shows the output's last lines.
        #[arg(long = "capture", value_name = "NAME=REGEX")]
        captures: Vec<crate::workloads::capture::Capture>,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the result (JSON) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The command (after --); its standard output is read only for --capture.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// One self-contained HTML page (inline SVG, no JavaScript) charting any syscost results:
    /// runs, comparisons, merges, audit sweeps, thread scaling, correlations, cache sets,
    /// probes and trends.
    #[command(after_help = REPORT_EXAMPLES)]
    Report {
        /// Result files of any kind (run, compare, merged, audit-sweep, scale, correlate,
        /// cachesets, probe, trend).
        #[arg(value_name = "RESULT", required = true)]
        files: Vec<PathBuf>,
        /// Write the page (or the chart, with --svg) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE", required = true)]
        output: PathBuf,
        /// Draw one chart alone as SVG instead: run, profile, compare, ranking, merge, sweep,
        /// scale, correlate, cachesets or trend.
        #[arg(long, value_name = "KIND")]
        svg: Option<String>,
    },
    /// Print a saved run result again, in any format (e.g. lkml for a cover letter).
    Show {
        /// A result written by `syscost run -o`.
        #[arg(value_name = "RESULT")]
        file: PathBuf,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Show what makes results comparable: kernel, config, CPU, caches, clocks, audit, perf.
    Env {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script: syscost completions bash > /etc/bash_completion.d/syscost
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): syscost man > /usr/local/share/man/man1/syscost.1; with
    /// --dir, write one page per command as git does (syscost.1, syscost-run.1,
    /// syscost-run-syscall.1, ...).
    Man {
        /// Write every command's page into this directory (created if need be), atomically.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
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

/// Parse the arguments, run the command, and return the process exit status.
pub fn main() -> i32 {
    let cli = Cli::parse();
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
    let json = json::to_json(r);
    if let Some(p) = output {
        write_file(p, format!("{json}\n").as_bytes())?;
    }
    if format == Format::Json {
        out(format!("{json}\n"))
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

/// Write the man page of `cmd` as `name`.1 into `dir`, then those of its visible subcommands
/// as `name-SUB`.1 (git's naming); returns how many were written.
fn man_pages(cmd: &clap::Command, name: &str, dir: &std::path::Path) -> Result<usize> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().name(name.to_string())).render(&mut page)?;
    crate::core::write_atomic(&dir.join(format!("{name}.1")), &page)?;
    let mut n = 1;
    for sub in cmd.get_subcommands() {
        if !sub.is_hide_set() && sub.get_name() != "help" {
            n += man_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
        }
    }
    Ok(n)
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
        Command::Compare { files, opts } => {
            if files.len() < 2 {
                anyhow::bail!(
                    "compare needs at least two results (a baseline and another); got one: {}",
                    files[0].display()
                );
            }
            if let Some(o) = &opts.output {
                writable_output(o, &files)?;
            }
            let options = opts.options()?;
            let views = load_views(&files)?;
            let variants = views.iter().map(compare::Variant::from_view).collect();
            let c = compare::compare(variants, &options)?;
            show(&c, opts.format, &opts.output)?;
            opts.gate(&c)
        }
        Command::Ab {
            variants,
            labels,
            save,
            interleave,
            opts,
            shared,
        } => ab(variants, labels, save, interleave, opts, shared),
        Command::Merge {
            files,
            output,
            metric,
            force,
            format,
        } => {
            if let Some(o) = &output {
                writable_output(o, &files)?;
            }
            let views = load_views(&files)?;
            let m = compare::merge::merge(&views, force)?;
            if !m.metrics.iter().any(|x| x.name == metric) {
                anyhow::bail!("the merged results have no metric '{metric}'");
            }
            show(
                &MergeTables {
                    merged: &m,
                    metric: &metric,
                },
                format,
                &output,
            )
        }
        Command::Correlate {
            files,
            x,
            y,
            within,
            output,
            format,
        } => {
            if let Some(o) = &output {
                writable_output(o, &files)?;
            }
            let views = load_views(&files)?;
            let c = compare::correlate::run(&views, &x, &y, within)?;
            show(&c, format, &output)
        }
        Command::Audit(a) => audit_command(a),
        Command::History(h) => history::history_command(h),
        Command::Export(e) => export::export_command(e),
        Command::Report { files, output, svg } => {
            use crate::report::{html, loaded};
            writable_output(&output, &files)?;
            let loaded: Vec<(String, loaded::Loaded)> = files
                .iter()
                .map(|f| Ok((f.display().to_string(), loaded::load(f)?)))
                .collect::<Result<_>>()?;
            let text = match svg {
                Some(kind) => html::single_chart(&kind, &loaded)?,
                None => html::page(&loaded),
            };
            write_file(&output, text.as_bytes())
        }
        Command::Probe {
            target,
            probe,
            bpf,
            runs,
            keep,
            captures,
            format,
            output,
            command,
        } => {
            keep.parsed_tags()?;
            let (path, symbol) = crate::probes::elf::parse_target(&target)?;
            if let Some(o) = &output {
                crate::core::check_writable(o)?;
            }
            let r = crate::experiments::probe::run(&crate::experiments::probe::ProbeCommand {
                path,
                symbol,
                kind: probe,
                bpf,
                runs,
                command,
                captures,
            })?;
            show(&r, format, &output)?;
            history::record(&r, &keep);
            Ok(())
        }
        Command::Cachesets(args) => cachesets(args),
        Command::Show { file, format } => {
            // The tables print nothing from the raw samples: skip them (a result of millions
            // of samples then reads in little memory); the JSON is the whole result.
            let r = if format == Format::Json {
                RunResult::load(&file)?
            } else {
                RunResult::load_thinned(&file, 0)?
            };
            show(&r, format, &None)
        }
        Command::Env { json } => {
            let env = Environment::collect();
            if json {
                outln!("{}", serde_json::to_string_pretty(&env)?);
            } else {
                out!("{}", report::env_text(&env));
            }
            Ok(())
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "syscost", &mut text);
            out(&text)
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            let Some(dir) = dir else {
                let mut text = Vec::new();
                clap_mangen::Man::new(Cli::command()).render(&mut text)?;
                return out(&text);
            };
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("--dir {}: cannot create it: {e}", dir.display()))?;
            let mut cmd = Cli::command();
            cmd.build();
            let pages = man_pages(&cmd, "syscost", &dir)?;
            eprintln!("syscost: {pages} man pages written to {}", dir.display());
            Ok(())
        }
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
