//! The options shared by commands: those of every `run` workload, and how compare and ab decide.

use super::*;
use crate::results::metrics::Estimator;

/// How compare and ab decide.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Significance test [default: mann-whitney where runs or boots are compared unpaired
    /// (compare, history compare and trend); signed-rank where rounds pair them (ab)]. welch
    /// and t are Welch's t unpaired, the paired t on rounds.
    #[arg(long, value_enum)]
    pub test: Option<TestKind>,
    /// Significance level.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub alpha: f64,
    /// Deltas smaller than this percentage are never called a change (like criterion's noise
    /// threshold).
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_threshold: f64,
    /// Emulated counts (campaign --emulated-counters) closer than this percentage are equal;
    /// they differ when every boot of one side is apart from every boot of the other by more
    /// than this and than either side's own boot-to-boot range.
    #[arg(long, default_value_t = compare::EXACT_FLOOR_PCT, value_name = "PCT")]
    pub exact_resolution: f64,
    /// Which time decides: wall (the clock around each batch, every moment the worker was
    /// preempted included), cpu (task-clock: the worker's own time on the CPU, which a
    /// neighbour that steals the CPU does not inflate), or auto: wall, unless a variant's
    /// workers were off the CPU (CPUs utilized below 0.98) though their loop does not wait by
    /// nature, and then cpu, said in a warning. Sets the primary metric.
    #[arg(long, value_enum, default_value_t = TimeBase::Auto)]
    pub time: TimeBase,
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
    /// Decide on the samples of one-run results as if they were runs (they share one process:
    /// the p-values and intervals are too optimistic; warned).
    #[arg(long)]
    pub samples_as_units: bool,
    /// Keep only the N best runs (lowest primary metric) of each variant.
    #[arg(long, value_name = "N")]
    pub best_of: Option<usize>,
    /// Exit with status 3 (after printing everything) when the primary metric of any variant
    /// is decided this way: slower (a regression), faster, changed (either), or inconclusive.
    /// Repeatable. For kernel CI jobs that gate on a comparison.
    #[arg(long, value_enum, value_name = "VERDICT")]
    pub fail_on: Vec<FailOn>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the comparison (JSON) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl CompareArgs {
    /// How to decide where rounds pair the units (ab): signed-rank by default; Mann-Whitney,
    /// a test of unpaired samples, is refused rather than replaced.
    pub(super) fn paired_options(&self) -> Result<compare::Options> {
        let test = match self.test {
            Some(TestKind::MannWhitney) => anyhow::bail!(
                "--test mann-whitney compares unpaired runs; ab pairs its runs by round and tests \
                 the per-round changes with signed-rank (its default: the paired rank test) or t \
                 (the paired t-test). To compare the runs unpaired, keep them with --save DIR \
                 and run syscost compare on the files"
            ),
            Some(t) => t,
            None => TestKind::SignedRank,
        };
        Ok(compare::Options {
            test,
            paired: true,
            ..self.options_with(test)?
        })
    }

    /// How to decide where the units are unpaired: Mann-Whitney by default.
    pub(super) fn options(&self) -> Result<compare::Options> {
        self.options_with(self.test.unwrap_or(TestKind::MannWhitney))
    }

    fn options_with(&self, test: TestKind) -> Result<compare::Options> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            anyhow::bail!("--alpha must be between 0 and 1 (exclusive), e.g. 0.05");
        }
        if self.noise_threshold < 0.0
            || self.perturbed_threshold < 0.0
            || self.exact_resolution < 0.0
        {
            anyhow::bail!("thresholds are percentages of zero or more");
        }
        // Fewer resamples than 1,000 give 95% interval ends from a handful of draws (with one,
        // an interval that does not contain its own estimate).
        if self.resamples < 1_000 || self.resamples > 1_000_000 {
            anyhow::bail!("--resamples must be from 1,000 to 1,000,000 (default 10,000)");
        }
        if !self.alpha.is_finite()
            || !self.noise_threshold.is_finite()
            || !self.perturbed_threshold.is_finite()
            || !self.exact_resolution.is_finite()
        {
            anyhow::bail!("--alpha and the thresholds must be numbers, not NaN or infinity");
        }
        if self.best_of == Some(0) {
            anyhow::bail!("--best-of must be at least 1");
        }
        Ok(compare::Options {
            test,
            alpha: self.alpha,
            noise_pct: self.noise_threshold,
            exact_floor_pct: self.exact_resolution,
            resamples: self.resamples,
            seed: self.seed,
            primary: match (self.time, self.metric.as_str()) {
                (TimeBase::Cpu, "time") => "task-clock".into(),
                (TimeBase::Cpu, other) => anyhow::bail!(
                    "--time cpu decides on task-clock; it cannot be combined with --metric {other}"
                ),
                (TimeBase::Wall | TimeBase::Auto, m) => m.into(),
            },
            time_auto: self.time == TimeBase::Auto,
            force: self.force,
            drop_perturbed: self.drop_perturbed,
            perturbed_pct: self.perturbed_threshold,
            best_of: self.best_of,
            samples_as_units: self.samples_as_units,
            grain: None,
            paired: false,
            configurations: false,
        })
    }
}

/// Where a measuring command records its result (see `syscost history`).
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HistoryOpts {
    /// Record the result in this history store: a SQLite file, or a PostgreSQL URL
    /// (postgres://USER@HOST/DB) shared by a lab's machines [default: $SYSCOST_HISTORY, else
    /// $XDG_DATA_HOME/syscost/history.sqlite, else ~/.local/share/syscost/history.sqlite].
    #[arg(long = "history", value_name = "PATH|URL", value_parser = HistoryLocation)]
    pub history: Option<crate::history::Location>,
    /// Do not record the result in the history.
    #[arg(long = "no-history", conflicts_with = "history")]
    pub no_history: bool,
    /// Label the recorded result, KEY=VALUE (repeatable): --tag build=align-32.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}

/// Parses `--history` into a [`Location`](crate::history::Location). Its own parser because
/// clap's message for a refused value repeats the value, and a URL's password with it: this one
/// says only the masked URL.
#[derive(Clone)]
pub(crate) struct HistoryLocation;

impl clap::builder::TypedValueParser for HistoryLocation {
    type Value = crate::history::Location;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        value.to_string_lossy().parse().map_err(|e: String| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("--history {e}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

impl HistoryOpts {
    /// The tags, checked before anything is measured.
    pub(crate) fn parsed_tags(&self) -> Result<Vec<(String, String)>> {
        self.tags
            .iter()
            .map(|t| crate::history::parse_tag(t))
            .collect()
    }
}

/// Options every `run` workload takes.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    #[command(flatten)]
    pub keep: HistoryOpts,

    /// CPUs to pin the worker to, in taskset syntax: 1, 0-3,8, 0-15:2.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpu: Option<CpuList>,

    /// Copies of the workload at once, as will-it-scale runs them: copy i pinned to the i-th
    /// CPU of --cpu (or of all allowed CPUs); the time per op is copy 0's, and
    /// total-throughput counts every copy's operations. A list (1,2 or 1-4) sweeps the counts,
    /// interleaved, into will-it-scale's table.
    #[arg(long, value_name = "N|LIST")]
    pub copies: Option<String>,

    /// How the copies run: as processes or as threads of the worker.
    #[arg(long = "mode", value_enum, default_value_t = crate::workloads::CopyMode::Process)]
    pub copy_mode: crate::workloads::CopyMode,

    /// Run the worker under SCHED_FIFO at this priority (1-99); needs CAP_SYS_NICE. The policy
    /// belongs to the worker process and ends with it.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub fifo: Option<i32>,

    /// Number of runs, each in a fresh worker process (like perf stat -r). Statistics are
    /// taken over runs. [default: 5; ab: 10]
    #[arg(short = 'r', long, value_name = "N")]
    pub runs: Option<u32>,

    /// Adaptive runs: after --runs (the minimum), add runs (rounds, for ab) until the 95% CI
    /// half-width of the time per op (for ab: of each variant's paired change) is at most PCT
    /// percent of the median, or --max-time passes. Stops on precision, never on p.
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub until: Option<f64>,

    /// With --until: stop adding runs after this long (at most 1,000 runs).
    #[arg(long, default_value = "2m", value_name = "DURATION", value_parser = parse_duration)]
    pub max_time: Duration,

    /// How each run's samples make the run's value: median (the default: the median sample by
    /// time; counters from the same samples), mean (total time and counts over total
    /// operations, as perf stat reports) or min (the fastest sample). Median and min resist a
    /// neighbour's interference; median decided a 2% change most often on a busy
    /// virtual machine (docs/src/comparing.md, "Noisy machines"). With --until, unless --estimator,
    /// --samples, --sample-time or --ops is given, each run is the floor instead: the fastest
    /// of 100 samples of 10 ms, which reaches 1% in seconds where the median design took a
    /// minute on a busy machine. [default: median]
    #[arg(long, value_enum)]
    pub estimator: Option<Estimator>,

    /// Timed samples per run; each run pools its samples. Counted exactly under syscost's
    /// emulator (a campaign's guest), the windows of a run, of 1, 2 and 4 times the base
    /// batch in turn. [default: 10; counted exactly, 6: two windows of each size]
    #[arg(long, value_name = "N")]
    pub samples: Option<u32>,

    /// Samples per run discarded before measuring (warm caches, settled frequency).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub warmup: u32,

    /// Target length of one sample: calibration doubles the batch until one batch lasts this
    /// long, so the clock's cost and resolution vanish in it (as pyperf does). At most 1s.
    /// Counted exactly under the emulator, time sizes nothing unless this is given: the base
    /// window is then calibrated to it. [default: 100ms]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub sample_time: Option<Duration>,

    /// Operations per sample; skips calibration. Counted exactly under the emulator, the base
    /// window: the windows are N, 2N and 4N operations, and each count is its slope over
    /// them, so what a window pays once cancels [default there: the workload's own, e.g. 256
    /// calls of a syscall].
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// Events in perf's syntax: cycles,instructions:u,{L1-dcache-loads,L1-dcache-load-misses}.
    /// Braces group events so they are counted over the same instants; :u counts user space
    /// only, :k the kernel only. Repeatable. `-e none` counts nothing, for time alone: every
    /// counting event adds work to each context switch of the worker (20-40% of a pipe
    /// round trip on a VM). [default: what perf stat -d counts, plus task-clock,
    /// context-switches, cpu-migrations, page-faults; none for round trips between processes
    /// or threads (ipc pipe, unix, tcp, udp, ctx, futex, eventfd), timed as lmbench times them]
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

    /// Measure under the audit rules of FILE, any file `auditctl -R` reads (read by auditctl's
    /// own library, libaudit): loaded in its order for these runs with audit enabled (or as
    /// its -e says; -e 2 as -e 1: syscost never locks audit), each tagged with a key of
    /// syscost's beside yours, and removed afterwards on every exit path (after a SIGKILL, by
    /// the next syscost that sets audit up, or `syscost audit cleanup`). Its other settings
    /// (-D, -b, -f, -r) are left as found on a host (a campaign's guest applies them: see
    /// campaign --audit-rules). In `ab`, give it to a variant: the variants then alternate
    /// run by run. In `audit sweep`, the file's rules are the steps.
    #[arg(long, value_name = "FILE")]
    pub audit_rules: Option<PathBuf>,

    /// A line of --audit-rules that cannot be loaded (syscost cannot read it, or the kernel
    /// refuses it): stop, naming it and the reason, or continue without it (auditctl -i), the
    /// results saying which lines were left out.
    #[arg(long, value_enum, default_value_t = crate::audit::rules_file::OnError::Stop, value_name = "WHAT")]
    pub audit_rules_errors: crate::audit::rules_file::OnError,

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

/// `--copies`: the counts, each at least 1 (taskset's list syntax).
pub(crate) fn copy_counts(s: &str) -> Result<Vec<u32>> {
    let list = crate::core::CpuList::parse(s).map_err(|_| {
        anyhow::anyhow!("--copies '{s}': give a count like 2 or a list like 1-4 or 1,2,4")
    })?;
    let counts: Vec<u32> = list.iter().map(|c| c as u32).collect();
    if counts.is_empty() || counts.contains(&0) {
        anyhow::bail!("--copies '{s}': counts start at 1");
    }
    if counts.iter().any(|&c| c > 4096) {
        anyhow::bail!("--copies '{s}': at most 4096 copies");
    }
    Ok(counts)
}

impl RunArgs {
    /// --audit-rules read, or none.
    pub(crate) fn audit_rules_set(&self) -> Result<Option<crate::audit::rules_file::RuleSet>> {
        let Some(path) = &self.audit_rules else {
            return Ok(None);
        };
        crate::audit::rules_file::read(path, "--audit-rules", self.audit_rules_errors).map(Some)
    }

    /// How each run is sampled: as given, else run's default (10 samples of 100 ms, the
    /// median), or, with --until and nothing of it given, the floor (`runner::FLOOR_DESIGN`): the
    /// precision target is then met in seconds on a busy machine (docs/src/comparing.md, "Noisy machines").
    /// Sized by count (counted exactly under the emulator), two windows of each size of
    /// `runner::SIZE_CYCLE` unless --samples says otherwise: the least of a size's two is the
    /// operations' own count, whatever else ran in the other.
    pub(super) fn design(
        &self,
        commands: bool,
        sizing: runner::Sizing,
    ) -> (Estimator, u32, Duration) {
        let chosen = self.chosen().sampling || commands;
        if self.until.is_some() && !chosen && !sizing.counted() {
            return runner::FLOOR_DESIGN;
        }
        let samples = match sizing.counted() {
            true => 2 * runner::SIZE_CYCLE.len() as u32,
            false => 10,
        };
        (
            self.estimator.unwrap_or(Estimator::Median),
            self.samples.unwrap_or(samples),
            self.sample_time.unwrap_or(Duration::from_millis(100)),
        )
    }

    /// What of the design the command line chose (ab fills the rest with its own defaults).
    pub(super) fn chosen(&self) -> crate::experiments::ab::Chosen {
        crate::experiments::ab::Chosen {
            sampling: self.estimator.is_some()
                || self.samples.is_some()
                || self.sample_time.is_some()
                || self.ops.is_some(),
            runs: self.runs.is_some(),
        }
    }

    /// The output format: --json is --format json.
    pub(super) fn format(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

pub(super) fn parse_cpus(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s).map_err(|e| e.to_string())
}

/// A verdict of the primary metric that fails the command (`--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Slower (or higher, for a metric that is not a time): a regression.
    Slower,
    /// Faster (or lower).
    Faster,
    /// Any change.
    Changed,
    /// Neither a change nor equivalence (too few runs included).
    Inconclusive,
}

impl FailOn {
    fn matches(self, d: compare::Decision) -> bool {
        use compare::Decision as D;
        match self {
            FailOn::Slower => matches!(d, D::Slower | D::Higher),
            FailOn::Faster => matches!(d, D::Faster | D::Lower),
            FailOn::Changed => d.is_change(),
            FailOn::Inconclusive => matches!(d, D::Inconclusive | D::TooFewUnits),
        }
    }
}

/// The exit status of a comparison that `--fail-on` failed.
pub(crate) const FAIL_ON_STATUS: i32 = 3;

/// Raised after a comparison is shown, when its primary metric's verdict is one `--fail-on`
/// names.
#[derive(Debug, thiserror::Error)]
#[error("--fail-on: {0}")]
pub(crate) struct Failed(pub String);

impl CompareArgs {
    /// `Err(Failed)` when a primary-metric verdict of `c` is one of `--fail-on`.
    pub(super) fn gate(&self, c: &compare::Comparison) -> Result<()> {
        self.fail_if(
            c.deltas
                .iter()
                .filter(|d| d.metric == c.primary_metric)
                .map(|d| {
                    let what = format!(
                        "{}: {} {}",
                        c.variants[d.variant].label, d.metric, d.verdict
                    );
                    (d.decision, what)
                }),
        )
    }

    /// `Err(Failed)` when a step of the trend `t` is decided as one of `--fail-on`.
    pub(super) fn gate_trend(&self, t: &crate::compare::trend::Trend) -> Result<()> {
        self.fail_if(t.steps.iter().map(|s| {
            let (from, to) = (&t.points[s.from].label, &t.points[s.to].label);
            (
                s.decision,
                format!("{from} to {to}: {} {}", t.metric, s.verdict),
            )
        }))
    }

    /// `Err(Failed)` naming every decision that one of `--fail-on` matches.
    fn fail_if(&self, decided: impl Iterator<Item = (compare::Decision, String)>) -> Result<()> {
        let hits: Vec<String> = decided
            .filter(|(d, _)| self.fail_on.iter().any(|f| f.matches(*d)))
            .map(|(_, what)| what)
            .collect();
        if hits.is_empty() {
            Ok(())
        } else {
            Err(Failed(hits.join("; ")).into())
        }
    }
}

/// Which time decides a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeBase {
    /// Wall time, unless the workers were preempted: then task-clock (warned).
    Auto,
    /// Wall time around each batch.
    Wall,
    /// task-clock: the worker's time on the CPU.
    Cpu,
}

pub(super) fn parse_pct(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage; write it like 1% or 0.5"))?;
    if !(v.is_finite() && v > 0.0 && v < 100.0) {
        return Err(format!(
            "'{s}': give a precision between 0% and 100%, like 1%"
        ));
    }
    Ok(v)
}

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration ({e}); write it like 100ms, 0.5s or 2s"))
        .and_then(|d| {
            if d.is_zero() {
                Err("the duration must be longer than zero".into())
            } else if d > Duration::from_secs(86_400) {
                Err(format!("'{s}' is longer than a day; give at most 24h"))
            } else {
                Ok(d)
            }
        })
}

/// A resolution in percent: a finite number of zero or more.
pub(super) fn parse_resolution(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!(
            "'{s}' is not a percentage of zero or more, e.g. 0.1"
        )),
    }
}

/// A saved command line as shown to the user: each word printable, and any password in a URL
/// (a history's `postgres://user:secret@...`) masked.
pub(super) fn shown_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| crate::core::printable(&crate::core::redact_url(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// When `e` (the words after a command's `--` refused by the parser) names an option that is
/// the command's own, where it belongs: `--save is ab's own option: put it before --`.
/// `path`: the command's subcommand names, e.g. `["ab"]`.
pub(super) fn owner_hint(e: &clap::Error, path: &[&str]) -> Option<String> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let word = arg.split('=').next().unwrap_or(arg);
    let mut cmd = Cli::command();
    for name in path {
        cmd = cmd.find_subcommand(name)?.clone();
    }
    let owns = cmd.get_arguments().any(|a| match word.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long),
        None => word.len() == 2 && a.get_short() == word.chars().nth(1),
    });
    owns.then(|| {
        format!(
            "{word} is {}'s own option: put it before --",
            path.join(" ")
        )
    })
}

/// The output options (`--format`, `--json`, `-o`) a parsed syscost command gives: in a boot
/// its output is read by nobody.
pub(super) fn output_options_given(top: &clap::ArgMatches) -> Vec<&'static str> {
    let mut m = top;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    [("format", "--format"), ("json", "--json"), ("output", "-o")]
        .into_iter()
        .filter(|(id, _)| {
            m.ids().any(|i| i.as_str() == *id)
                && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|(_, flag)| flag)
        .collect()
}

#[cfg(test)]
mod unit {
    #[test]
    fn a_saved_command_line_shows_no_password() {
        let w = ["--history", "postgres://me:s3cret@db/h", "--arm", "a=k"].map(String::from);
        let shown = super::shown_words(&w);
        assert_eq!(shown, "--history postgres://me:***@db/h --arm a=k");
    }
}
