//! The command line: argument parsing, and the glue from arguments to the library's plans,
//! results and reports. Nothing here measures anything.

mod progress;

use crate::counters::{self, EventList};
use crate::environment::Environment;
use crate::report::{self, format::Format};
use crate::results::{self, RunResult};
use crate::runner::{self, CpuList, Plan};
use crate::signals::{self, Interrupted};
use crate::workloads::{WorkloadSpec, syscall};
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
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
pub enum RunCommand {
    /// A raw system call in a loop (the seeds' getpid() benchmark).
    #[command(after_help = SYSCALL_EXAMPLES)]
    Syscall {
        #[command(flatten)]
        params: syscall::Params,
        #[command(flatten)]
        common: RunArgs,
    },
}

const SYSCALL_EXAMPLES: &str = "Examples:
  syscost run syscall --cpu 1 --runs 5
      getpid() per call, pinned to CPU 1, 5 worker processes
  syscost run syscall --syscall getppid --fifo 50 -e cycles,instructions:u -o getppid.json
      SCHED_FIFO 50, two events, result file for compare/report
  syscost run syscall --ops 1000000 --samples 20 --json
      fixed batch of 10^6 calls (no calibration), JSON on stdout";

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

fn dispatch(cmd: Command) -> Result<()> {
    match cmd {
        Command::Run(RunCommand::Syscall { params, common }) => {
            run_workload(WorkloadSpec::Syscall(params), common)
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

fn run_workload(workload: WorkloadSpec, args: RunArgs) -> Result<()> {
    if args.list_events {
        for name in counters::events::known_event_names() {
            println!("{name}");
        }
        return Ok(());
    }
    let events: EventList = if args.events.is_empty() {
        counters::default_events()
    } else {
        counters::parse_event_list(&args.events)?
    };
    if let Some(path) = &args.output {
        results::check_writable(path)?;
    }
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
    };
    runner::validate(&plan)?;
    let mut bar = progress::Bar::new(&plan);
    let result: RunResult = runner::run(&plan, &mut |p| bar.update(p))?;
    bar.finish();
    if let Some(path) = &args.output {
        result.save(path)?;
    }
    let mut stdout = std::io::stdout().lock();
    let format = if args.json { Format::Json } else { args.format };
    if format == Format::Json {
        writeln!(stdout, "{}", result.to_json())?;
    } else {
        write!(stdout, "{}", report::run_text(&result, format))?;
    }
    if let Some(path) = &args.output {
        eprintln!("syscost: result written to {}", path.display());
    }
    Ok(())
}
