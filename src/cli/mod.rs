//! The command line: argument parsing, and the glue from arguments to the library's plans,
//! results and reports. Nothing here measures anything.

mod progress;

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
        /// Give it two or more times; the first is the baseline.
        #[arg(long = "variant", value_name = "ARGS", required = true)]
        variants: Vec<String>,
        /// A name for each variant, in order (default: its arguments).
        #[arg(long = "label", value_name = "NAME")]
        labels: Vec<String>,
        /// Also write each variant's full result into this directory.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
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
    /// Which L1 sets objects can reach, how crowded they are, and how likely a set overflows.
    #[command(after_help = CACHESETS_HELP)]
    Cachesets {
        /// Cache geometry, e.g. sets=64,ways=8,line=64 (Skylake-X L1d) [default: this CPU's L1d]
        #[arg(long, value_name = "GEOMETRY")]
        geometry: Option<String>,
        /// File of object addresses (hex, one per line; - for stdin).
        #[arg(long, value_name = "FILE")]
        addresses: Option<PathBuf>,
        /// Number of objects (the model; with --addresses: defaults to their count).
        #[arg(long, value_name = "N")]
        objects: Option<u64>,
        /// Object size: the kmalloc slab class and its alignment follow from it.
        #[arg(long, value_name = "BYTES")]
        size: Option<u64>,
        /// Object alignment in bytes, instead of the slab class's.
        #[arg(long, value_name = "BYTES")]
        align: Option<u64>,
        /// Cache lines counted per object, from its start (the audit walk touches 1).
        #[arg(long, default_value_t = 1, value_name = "N")]
        lines: u64,
        /// Monte Carlo trials of random placement.
        #[arg(long, default_value_t = 100_000, value_name = "N")]
        trials: u64,
        /// Monte Carlo seed (the output is reproducible for a given seed).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
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
        /// Runs with and runs without the probe (each).
        #[arg(short = 'r', long, default_value_t = 5, value_name = "N")]
        runs: u32,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the result (JSON) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The command (after --); its standard output is discarded.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// One self-contained HTML page (inline SVG, no JavaScript) charting any syscost results:
    /// runs, comparisons, merges, audit sweeps, thread scaling, correlations, cache sets.
    #[command(after_help = REPORT_EXAMPLES)]
    Report {
        /// Result files of any kind (run, compare, merged, audit-sweep, scale, correlate,
        /// cachesets, probe).
        #[arg(value_name = "RESULT", required = true)]
        files: Vec<PathBuf>,
        /// Write the page (or the chart, with --svg) to FILE, atomically.
        #[arg(short = 'o', long, value_name = "FILE", required = true)]
        output: PathBuf,
        /// Draw one chart alone as SVG instead: run, profile, compare, ranking, merge, sweep,
        /// scale, correlate or cachesets.
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
    /// Internal: one measurement run in a worker process.
    #[command(name = "__worker", hide = true)]
    Worker,
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Enabled/locked, rules per filter list, backlog and lost (what auditctl -s shows).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure a syscall with audit off, on, and with each number of exit rules.
    #[command(after_help = SWEEP_HELP)]
    Sweep {
        /// Rule counts of the audit-on steps, strictly increasing: 0,16,32,48 or 0-48:16.
        #[arg(
            long,
            default_value = "0,16,32,48",
            value_name = "COUNTS",
            allow_hyphen_values = true
        )]
        rules: String,
        /// How many of the rules name the benchmarked syscall but fail on a field (they reach
        /// audit_filter_rules, like 5 of the seeds' 42 rules for getpid).
        #[arg(long, default_value_t = 0, value_name = "K")]
        matching: u32,
        /// The benchmark (only syscall for now).
        #[arg(long, value_enum, default_value_t = SweepBench::Syscall)]
        bench: SweepBench,
        /// Leave out the "audit off, no task rule" step.
        #[arg(long)]
        no_residue_step: bool,
        #[command(flatten)]
        params: syscall::Params,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Measure the residue: a syscall with audit off, with and without a never,task rule
    /// (never enables audit itself).
    Residue {
        #[command(flatten)]
        params: syscall::Params,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Remove audit rules and restore the enabled flag left by a syscost that was killed.
    Cleanup,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepBench {
    Syscall,
}

const SWEEP_HELP: &str = "How it measures:
  Steps: audit off with a never,task rule (the baseline: workers get no audit context, as on a
  kernel where audit was never enabled), audit off without it (the per-task work a kernel keeps
  once audit has been enabled in this boot), then audit on with each rule count. Every round
  runs every step once, in alternating order; the per-rule cost is a least-squares slope over
  every run of the audit-on steps, with its 95% CI and R².

State: needs root (CAP_AUDIT_CONTROL). Each rule syscost adds is keyed syscost-<pid>-...; only
those are removed, and the enabled flag is restored, on every exit path. Locked audit
(enabled=2) is refused before anything changes. After a SIGKILL, the next audit command (or
`syscost audit cleanup`) removes the leftovers. Enabling audit has one effect that cannot be
undone until reboot: new processes keep per-task audit work (the residue step measures it).

Examples:
  syscost audit sweep --rules 0,16,32,48 --cpu 1
  syscost audit sweep --rules 0-64:8 --matching 5 --syscall getpid --runs 10 -o sweep.json";

macro_rules! run_command {
    ($($variant:ident($module:ident)),* $(,)?) => {
        /// `syscost run NAME`: one subcommand per workload of the registry
        /// (`workloads::with_workloads!`), its options from the workload's `Params`.
        #[derive(Subcommand, Debug)]
        pub enum RunCommand {
            $(
                #[command(
                    name = <workloads::$module::Params as Spec>::NAME,
                    about = <workloads::$module::Params as Spec>::ABOUT,
                    after_help = <workloads::$module::Params as Spec>::EXAMPLES
                )]
                $variant {
                    #[command(flatten)]
                    params: workloads::$module::Params,
                    #[command(flatten)]
                    common: RunArgs,
                },
            )*
        }

        impl RunCommand {
            fn into_parts(self) -> Result<(WorkloadSpec, RunArgs)> {
                Ok(match self {
                    $(RunCommand::$variant { mut params, common } => {
                        params.from_command_line()?;
                        (WorkloadSpec::$variant(params), common)
                    })*
                })
            }
        }
    };
}
workloads::with_workloads!(run_command);

const PROBE_EXAMPLES: &str = "Examples:
  syscost probe --target /usr/bin/redis-server:processCommand -- ./bench-redis.sh
      the script starts redis-server and runs redis-benchmark; 5 runs with and 5 without
  syscost probe --target /lib/x86_64-linux-gnu/libc.so.6:malloc --probe uretprobe --bpf -- make -j2
The probe is system-wide (every process running the file): needs CAP_PERFMON or root.";

const REPORT_EXAMPLES: &str = "Examples:
  syscost report run.json compare.json sweep.json scale.json corr.json -o report.html
  syscost report --svg sweep sweep.json -o sweep.svg
      one chart alone, for a mail or a document
Result files come from run -o, compare -o, ab -o, merge -o, audit sweep -o, correlate -o,
run uprobe --threads LIST -o, probe -o, and cachesets --json > FILE.";

const COMPARE_EXAMPLES: &str = "Examples:
  syscost compare before.json after.json
      per-metric deltas, 95% bootstrap CIs, Mann-Whitney p-values, verdicts
  syscost compare base.json p1.json p2.json p3.json --metric time --format lkml
      three patches ranked against the baseline, as plain text for a cover letter
  syscost compare a.json b.json --test welch --drop-perturbed --format csv";

const AB_EXAMPLES: &str = "Examples:
  syscost ab --variant 'syscall --syscall getpid' --variant 'syscall --syscall getppid' -- --cpu 1 --runs 10
      both measured in alternating order (ABBA), then compared
  syscost ab --variant 'syscall' --variant 'syscall' --label A --label A2 -- --cpu 1
      an A/A check of this machine's noise";

/// How compare and ab decide.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Significance test.
    #[arg(long, value_enum, default_value_t = TestKind::MannWhitney)]
    pub test: TestKind,
    /// Significance level.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub alpha: f64,
    /// Deltas smaller than this percentage are never called a change (like criterion's noise
    /// threshold).
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_threshold: f64,
    /// The primary metric: ranks variants, fills the Min/Mean/Median/Max table.
    #[arg(long, default_value = "time", value_name = "NAME")]
    pub metric: String,
    /// Bootstrap seed (the output is reproducible for a given seed).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub resamples: usize,
    /// Compare results of different workloads or parameters anyway.
    #[arg(long)]
    pub force: bool,
    /// Leave out runs whose invariant counters (instructions, context-switches,
    /// cpu-migrations, page-faults per op) moved beyond --perturbed-threshold of the median.
    #[arg(long)]
    pub drop_perturbed: bool,
    /// Threshold of the perturbed-run check, percent of the median.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub perturbed_threshold: f64,
    /// Keep only the N best runs (lowest primary metric) of each variant.
    #[arg(long, value_name = "N")]
    pub best_of: Option<usize>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the comparison (JSON) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl CompareArgs {
    fn options(&self) -> Result<compare::Options> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!("--alpha must be between 0 and 1 (exclusive), e.g. 0.05");
        }
        if self.noise_threshold < 0.0 || self.perturbed_threshold < 0.0 {
            anyhow::bail!("thresholds are percentages of zero or more");
        }
        if self.resamples == 0 {
            anyhow::bail!("--resamples must be at least 1");
        }
        if self.best_of == Some(0) {
            anyhow::bail!("--best-of must be at least 1");
        }
        Ok(compare::Options {
            test: self.test,
            alpha: self.alpha,
            noise_pct: self.noise_threshold,
            resamples: self.resamples,
            seed: self.seed,
            primary: self.metric.clone(),
            force: self.force,
            drop_perturbed: self.drop_perturbed,
            perturbed_pct: self.perturbed_threshold,
            best_of: self.best_of,
            configurations: false,
        })
    }
}

/// Options every `run` workload takes.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// CPUs to pin the worker to, in taskset syntax: 1, 0-3,8, 0-15:2.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpu: Option<CpuList>,

    /// Run the worker under SCHED_FIFO at this priority (1-99); needs CAP_SYS_NICE. The policy
    /// belongs to the worker process and ends with it.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,

    /// Number of runs, each in a fresh worker process (like perf stat -r). Statistics are
    /// taken over runs.
    #[arg(short = 'r', long, default_value_t = 5, value_name = "N")]
    pub runs: u32,

    /// Timed samples per run; each run pools its samples.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub samples: u32,

    /// Samples per run discarded before measuring (warm caches, settled frequency).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub warmup: u32,

    /// Target length of one sample: calibration doubles the batch until one batch lasts this
    /// long, so the clock's cost and resolution vanish in it (as pyperf does).
    #[arg(long, default_value = "100ms", value_name = "DURATION", value_parser = parse_duration)]
    pub sample_time: Duration,

    /// Operations per sample; skips calibration.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// Events in perf's syntax: cycles,instructions:u,{L1-dcache-loads,L1-dcache-load-misses}.
    /// Braces group events so they are counted over the same instants; :u counts user space
    /// only, :k the kernel only. Repeatable. [default: what perf stat -d counts, plus
    /// task-clock, context-switches, cpu-migrations, page-faults]
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,

    /// List the event names -e accepts and exit.
    #[arg(long)]
    pub list_events: bool,

    /// After the measured runs, sample where the time goes (kernel and user call chains) in a
    /// run of its own, and print the top functions under the table.
    #[arg(long)]
    pub profile: bool,

    /// Run this shell command before each run, outside the timed region (as perf stat --pre).
    #[arg(long, value_name = "CMD")]
    pub pre: Option<String>,

    /// Leave runs whose invariant counters moved (see `syscost compare --help`) out of the
    /// statistics; they are flagged in the warnings either way.
    #[arg(long)]
    pub drop_perturbed: bool,

    /// Subtract the empty loop's per-op cost (loop, clock and counter reads, measured by the
    /// same harness in each run) from every per-op value.
    #[arg(long)]
    pub subtract_overhead: bool,

    /// Empty-loop samples per run for the overhead figure.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub overhead_samples: u32,

    /// Print the result as JSON on stdout (same as --format json).
    #[arg(long)]
    pub json: bool,

    /// Output format on stdout: table, json, csv, markdown, or lkml (plain ASCII for mail).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// Write the result (JSON, with every raw sample) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl RunArgs {
    /// The output format: --json is --format json.
    fn format(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

fn parse_cpus(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s).map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration ({e}); write it like 100ms, 0.5s or 2s"))
        .and_then(|d| {
            if d.is_zero() {
                Err("the sample time must be longer than zero".into())
            } else {
                Ok(d)
            }
        })
}

/// Parse the arguments, run the command, and return the process exit status.
pub fn main() -> i32 {
    let cli = Cli::parse();
    if let Command::Worker = cli.command {
        return runner::worker::main();
    }
    signals::install();
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(e) => {
            if let Some(i) = e.downcast_ref::<Interrupted>() {
                eprintln!("syscost: {i}; stopped, nothing was written");
                return i.exit_code();
            }
            eprintln!("syscost: error: {e:#}");
            1
        }
    }
}

/// Parses one `--variant` of `syscost ab` as the arguments of `syscost run`.
#[derive(Parser, Debug)]
#[command(name = "variant", no_binary_name = true)]
struct VariantLine {
    #[command(subcommand)]
    run: RunCommand,
}

/// Read result files, in parallel (parsing large files is CPU-bound), keeping their order.
fn load_views(files: &[PathBuf]) -> Result<Vec<ResultView>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len())
        .max(1);
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|c| {
                scope.spawn(move || {
                    c.iter()
                        .map(|f| ResultView::load(f).map_err(anyhow::Error::from))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a reader thread panicked"))
            .collect()
    })
}

/// The one output routine: the result's JSON to `-o` (atomically) if asked, then the result on
/// stdout in `format` (JSON as written to files; text laid out by the format).
fn show<R: Render + Serialize>(r: &R, format: Format, output: &Option<PathBuf>) -> Result<()> {
    let json = json::to_json(r);
    if let Some(p) = output {
        crate::core::write_atomic(p, format!("{json}\n").as_bytes())?;
        eprintln!("syscost: written to {}", p.display());
    }
    let mut stdout = std::io::stdout().lock();
    if format == Format::Json {
        writeln!(stdout, "{json}")?;
    } else {
        write!(stdout, "{}", r.text(format))?;
    }
    Ok(())
}

fn dispatch(cmd: Command) -> Result<()> {
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
                crate::core::check_writable(o)?;
            }
            let options = opts.options()?;
            let views = load_views(&files)?;
            let variants = views.iter().map(compare::Variant::from_view).collect();
            let c = compare::compare(variants, &options)?;
            show(&c, opts.format, &opts.output)
        }
        Command::Ab {
            variants,
            labels,
            save,
            opts,
            shared,
        } => ab(variants, labels, save, opts, shared),
        Command::Merge {
            files,
            output,
            metric,
            force,
            format,
        } => {
            if let Some(o) = &output {
                crate::core::check_writable(o)?;
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
            output,
            format,
        } => {
            if let Some(o) = &output {
                crate::core::check_writable(o)?;
            }
            let views = load_views(&files)?;
            let c = compare::correlate::run(&views, &x, &y)?;
            show(&c, format, &output)
        }
        Command::Audit(a) => audit_command(a),
        Command::Report { files, output, svg } => {
            use crate::report::html;
            crate::core::check_writable(&output)?;
            let loaded: Vec<(String, html::Loaded)> = files
                .iter()
                .map(|f| Ok(html::load(f).map(|l| (f.display().to_string(), l))?))
                .collect::<Result<_>>()?;
            let text = match svg {
                Some(kind) => html::single_chart(&kind, &loaded)?,
                None => html::page(&loaded),
            };
            crate::core::write_atomic(&output, text.as_bytes())?;
            eprintln!("syscost: written to {}", output.display());
            Ok(())
        }
        Command::Probe {
            target,
            probe,
            bpf,
            runs,
            format,
            output,
            command,
        } => {
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
            })?;
            show(&r, format, &output)
        }
        Command::Cachesets {
            geometry,
            addresses,
            objects,
            size,
            align,
            lines,
            trials,
            seed,
            json,
        } => cachesets(
            geometry, addresses, objects, size, align, lines, trials, seed, json,
        ),
        Command::Show { file, format } => {
            let r = RunResult::load(&file)?;
            show(&r, format, &None)
        }
        Command::Env { json } => {
            let env = Environment::collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&env)?);
            } else {
                print!("{}", report::env_text(&env));
            }
            Ok(())
        }
        Command::Worker => unreachable!("handled before dispatch"),
    }
}

fn plan_of(workload: WorkloadSpec, args: &RunArgs) -> Result<Plan> {
    if let Some(why) = workload.ops_required()
        && args.ops.is_none()
    {
        anyhow::bail!("{why}");
    }
    let events: EventList = if args.events.is_empty() {
        counters::default_events()
    } else {
        counters::parse_event_list(&args.events)?
    };
    let plan = Plan {
        workload,
        events,
        cpus: args.cpu.clone(),
        fifo: args.fifo,
        runs: args.runs,
        samples: args.samples,
        warmup: args.warmup,
        sample_time: args.sample_time,
        ops: args.ops,
        overhead_samples: args.overhead_samples,
        subtract_overhead: args.subtract_overhead,
        pre: args.pre.clone(),
        profile: args.profile,
    };
    runner::validate(&plan)?;
    Ok(plan)
}

fn run_workload(workload: WorkloadSpec, args: RunArgs) -> Result<()> {
    if args.list_events {
        for name in counters::events::known_event_names() {
            println!("{name}");
        }
        return Ok(());
    }
    if let Some(path) = &args.output {
        crate::core::check_writable(path)?;
    }
    let plan = plan_of(workload, &args)?;
    let mut bar = progress::Bar::new(&plan, 1);
    let mut result: RunResult = runner::run(&plan, &mut |p| bar.update(p))?;
    bar.finish();
    result.check_perturbed(10.0, args.drop_perturbed);
    if let Some(path) = &args.output {
        result.save(path)?;
    }
    show(&result, args.format(), &None)?;
    if let Some(path) = &args.output {
        eprintln!("syscost: result written to {}", path.display());
    }
    Ok(())
}

fn ab(
    variants: Vec<String>,
    labels: Vec<String>,
    save: Option<PathBuf>,
    opts: CompareArgs,
    shared: Vec<String>,
) -> Result<()> {
    if variants.len() < 2 {
        anyhow::bail!("ab needs at least two --variant configurations");
    }
    if !labels.is_empty() && labels.len() != variants.len() {
        anyhow::bail!(
            "give one --label per --variant ({} labels for {} variants), or none",
            labels.len(),
            variants.len()
        );
    }
    let options = compare::Options {
        configurations: true,
        ..opts.options()?
    };
    if let Some(o) = &opts.output {
        crate::core::check_writable(o)?;
    }
    if let Some(dir) = &save
        && !dir.is_dir()
    {
        anyhow::bail!("--save {}: no such directory", dir.display());
    }
    let mut plans = Vec::new();
    for v in &variants {
        let Some(mut words) = shlex::split(v) else {
            anyhow::bail!("--variant '{v}': unbalanced quotes");
        };
        words.extend(shared.iter().cloned());
        let line = VariantLine::try_parse_from(&words).map_err(|e| {
            anyhow::anyhow!(
                "--variant '{v}' (with the shared options {:?}) is not a valid `syscost run`: {}",
                shared,
                e.render().to_string().trim()
            )
        })?;
        let (workload, args) = line.run.into_parts()?;
        plans.push(plan_of(workload, &args)?);
    }
    // What must match is checked before anything is measured.
    for (p, v) in plans.iter().zip(&variants).skip(1) {
        if p.subtract_overhead != plans[0].subtract_overhead {
            anyhow::bail!(
                "--variant '{v}': --subtract-overhead must be the same for every variant"
            );
        }
        if p.workload.op_name() != plans[0].workload.op_name() {
            anyhow::bail!(
                "--variant '{v}' counts {}s, the first counts {}s: per-op figures would not compare",
                p.workload.op_name(),
                plans[0].workload.op_name()
            );
        }
    }
    let labels = if labels.is_empty() {
        variants.clone()
    } else {
        labels
    };
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let results = runner::run_interleaved(&plans, &mut |p| bar.update(p))?;
    bar.finish();
    let mut vs = Vec::new();
    for (r, label) in results.iter().zip(&labels) {
        if let Some(dir) = &save {
            let name: String = label
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            r.save(&dir.join(format!("{name}.json")))?;
        }
        vs.push(compare::Variant::from_run(label, "ab", r));
    }
    let c = compare::compare(vs, &options)?;
    show(&c, opts.format, &opts.output)
}

fn show_sweep(sweep: &crate::experiments::audit_sweep::Sweep, common: &RunArgs) -> Result<()> {
    show(sweep, common.format(), &common.output)
}

fn audit_command(cmd: AuditCommand) -> Result<()> {
    use crate::audit;
    match cmd {
        AuditCommand::Status { json } => {
            let mut sock = audit::AuditSocket::open()?;
            for n in audit::session::cleanup_leftovers(&mut sock)? {
                eprintln!("syscost: {n}");
            }
            let s = sock.status()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                let lists: Vec<String> = s.rules.iter().map(|(l, n)| format!("{l} {n}")).collect();
                println!(
                    "enabled {}{}\nfailure {}\npid {}\nrate_limit {}\nbacklog_limit {}\nlost {}\n\
                     backlog {}\nrules {}{}",
                    s.enabled,
                    if s.locked() {
                        " (locked until reboot)"
                    } else {
                        ""
                    },
                    s.failure,
                    s.pid,
                    s.rate_limit,
                    s.backlog_limit,
                    s.lost,
                    s.backlog,
                    s.rule_count(),
                    if lists.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lists.join(", "))
                    }
                );
            }
            Ok(())
        }
        AuditCommand::Cleanup => {
            let mut sock = audit::AuditSocket::open()?;
            let notes = audit::session::cleanup_leftovers(&mut sock)?;
            if notes.is_empty() {
                println!("nothing to clean up: no audit rules or state left by a killed syscost");
            }
            for n in notes {
                println!("{n}");
            }
            Ok(())
        }
        AuditCommand::Residue { params, common } => {
            let plan = plan_of(WorkloadSpec::Syscall(params), &common)?;
            let sp = crate::experiments::audit_sweep::SweepPlan {
                plan,
                rules: Vec::new(),
                matching: 0,
                residue_step: true,
            };
            let mut bar = progress::Bar::new(&sp.plan, 2);
            let sweep = crate::experiments::audit_sweep::run(&sp, &mut |p| bar.update(p))?;
            bar.finish();
            show_sweep(&sweep, &common)
        }
        AuditCommand::Sweep {
            rules,
            matching,
            bench: _,
            no_residue_step,
            params,
            common,
        } => {
            let counts = crate::experiments::audit_sweep::parse_rule_counts(&rules)?;
            if let Some(path) = &common.output {
                crate::core::check_writable(path)?;
            }
            let plan = plan_of(WorkloadSpec::Syscall(params), &common)?;
            let sp = crate::experiments::audit_sweep::SweepPlan {
                plan,
                rules: counts,
                matching,
                residue_step: !no_residue_step,
            };
            let steps = sp.rules.len() as u32 + 1 + u32::from(sp.residue_step);
            let mut bar = progress::Bar::new(&sp.plan, steps);
            let sweep = crate::experiments::audit_sweep::run(&sp, &mut |p| bar.update(p))?;
            bar.finish();
            show_sweep(&sweep, &common)
        }
    }
}

const CACHESETS_HELP: &str = "Examples:
  syscost cachesets --objects 37 --size 408 --geometry sets=64,ways=8,line=64
      the seed's analysis: 408-byte audit entries (kmalloc-512) on Skylake-X's L1d
  syscost cachesets --objects 37 --size 408
      the same on this machine's L1d
  drgn ... | syscost cachesets --addresses - --size 408
      the real placement of a running kernel's entries";

#[allow(clippy::too_many_arguments)]
fn cachesets(
    geometry: Option<String>,
    addresses: Option<PathBuf>,
    objects: Option<u64>,
    size: Option<u64>,
    align: Option<u64>,
    lines: u64,
    trials: u64,
    seed: u64,
    json: bool,
) -> Result<()> {
    use crate::layout::{self, Geometry};
    let (g, source) = match geometry {
        Some(s) => (Geometry::parse(&s)?, "--geometry".to_string()),
        None => (Geometry::l1d()?, "this CPU's L1d, from sysfs".to_string()),
    };
    let addrs = match &addresses {
        None => None,
        Some(p) => {
            let (text, name) = if p.as_os_str() == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)?;
                (t, "stdin".to_string())
            } else {
                (
                    std::fs::read_to_string(p)
                        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?,
                    p.display().to_string(),
                )
            };
            Some(layout::parse_addresses(&text, &name)?)
        }
    };
    let n = match (objects, &addrs) {
        (Some(n), _) => n,
        (None, Some(a)) => a.len() as u64,
        (None, None) => {
            anyhow::bail!("give --objects N (with --size or --align) or --addresses FILE")
        }
    };
    if addrs.is_none() && size.is_none() && align.is_none() {
        anyhow::bail!("the model needs --size BYTES (or --align BYTES) for its {n} objects");
    }
    if trials == 0 {
        anyhow::bail!("--trials must be at least 1");
    }
    let a = layout::analyse(&layout::Request {
        geometry: g,
        geometry_source: &source,
        addrs: addrs.as_deref(),
        objects: n,
        size,
        align,
        lines,
        trials,
        seed,
    })?;
    show(&a, if json { Format::Json } else { Format::Table }, &None)
}

fn uprobe_run(params: uprobe::Params, common: RunArgs) -> Result<()> {
    let counts = uprobe::parse_threads(&params.thread_counts)?;
    let oversubscribe = params.oversubscribe;
    let cpus = match &common.cpu {
        Some(c) => c.len(),
        None => crate::core::cpus::allowed_cpus()?.len(),
    };
    if let Some(&max) = counts.iter().max()
        && max as usize > cpus
        && !oversubscribe
    {
        anyhow::bail!(
            "--threads {max} is more than the {cpus} CPU(s) the producers may use: pass \
             --oversubscribe to share CPUs, or give --cpu more CPUs"
        );
    }
    if counts.len() == 1 {
        let mut p = params;
        p.threads = counts[0];
        return run_workload(WorkloadSpec::Uprobe(p), common);
    }
    if let Some(path) = &common.output {
        crate::core::check_writable(path)?;
    }
    let mut plans = Vec::new();
    for &t in &counts {
        let mut p = params.clone();
        p.threads = t;
        plans.push(plan_of(WorkloadSpec::Uprobe(p), &common)?);
    }
    let mut bar = progress::Bar::new(&plans[0], plans.len() as u32);
    let results = runner::run_interleaved(&plans, &mut |p| bar.update(p))?;
    bar.finish();
    let scale = crate::experiments::scale::Scale::new(&params.case(), results);
    show(&scale, common.format(), &common.output)
}
