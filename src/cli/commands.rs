//! The commands that are one call each: their arguments and the call. Commands with more to
//! say have a file of their own (run, ab, audit, history, cachesets, export).

use super::args::{CompareArgs, HistoryOpts};
use super::{Cli, history, load_views, out, show, writable_output, write_file};
use crate::compare;
use crate::environment::Environment;
use crate::experiments::probe;
use crate::report::format::Format;
use crate::report::merge::MergeTables;
use crate::report::{self, html, loaded};
use crate::results::RunResult;
use anyhow::Result;
use clap::{Args, CommandFactory};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompareFiles {
    /// Result files: the first is the baseline.
    #[arg(value_name = "RESULT", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub opts: CompareArgs,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Result files, one per boot (merged files contribute their boots).
    #[arg(value_name = "RESULT", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged result (JSON) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Metric of the Min/Mean/Median/Max/pstdev table.
    #[arg(long, default_value = "time", value_name = "NAME")]
    pub metric: String,
    /// Merge even if the results measure different workloads.
    #[arg(long)]
    pub force: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CorrelateArgs {
    /// Result files; every run (or boot) of every file is one point.
    #[arg(value_name = "RESULT", required = true)]
    pub files: Vec<PathBuf>,
    /// The metric on the x axis, e.g. L1-dcache-load-misses or cacheline-spread.
    #[arg(long, value_name = "METRIC")]
    pub x: String,
    /// The metric on the y axis, e.g. time or cycles.
    #[arg(long, value_name = "METRIC", default_value = "time")]
    pub y: String,
    /// Correlate within each file (each centred on its own means: the partial correlation
    /// controlling for the file), rather than pooling files whose means may differ.
    #[arg(long)]
    pub within: bool,
    /// Write the correlation (JSON, with every point) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// PATH:SYMBOL, e.g. /usr/bin/redis-server:processCommand (symtab or dynsym).
    #[arg(long, value_name = "PATH:SYMBOL")]
    pub target: String,
    /// uprobe (function entry) or uretprobe (function return).
    #[arg(long, value_enum, default_value_t = crate::probes::ProbeKind::Uprobe)]
    pub probe: crate::probes::ProbeKind,
    /// Attach a minimal BPF program (return 0; it counts the hits).
    #[arg(long)]
    pub bpf: bool,
    /// Runs with and runs without the probe (each), paired by round. At least 6: fewer
    /// rounds cannot reach p < 0.05 with the paired test.
    #[arg(short = 'r', long, default_value_t = 10, value_name = "N")]
    pub runs: u32,
    #[command(flatten)]
    pub keep: HistoryOpts,
    /// Record a figure the command prints about itself: NAME=REGEX, the regex's first group
    /// the number (e.g. rps='([0-9.,]+) requests per second'; the syntax of Rust's regex
    /// crate, its classes such as \d and \w ASCII only). Repeatable; a regex that matches
    /// nothing fails the run and shows the output's last lines.
    #[arg(long = "capture", value_name = "NAME=REGEX")]
    pub captures: Vec<crate::workloads::capture::Capture>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the result (JSON) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The command (after --); its standard output is read only for --capture.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files of any kind (run, compare, merged, audit-sweep, scale, correlate,
    /// cachesets, probe, trend, campaign).
    #[arg(value_name = "RESULT", required = true)]
    pub files: Vec<PathBuf>,
    /// Write the page (or the chart, with --svg) to FILE, atomically.
    #[arg(short = 'o', long, value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Draw one chart alone as SVG instead: run, profile, compare, ranking, merge, sweep,
    /// scale, correlate, cachesets, trend, boots (a campaign's boots per arm, when it has too
    /// few boots for a comparison), sets (a campaign's modelled L1d misses by set per arm,
    /// with --cache-model), or builds (a bisection's figure along the builds it tried).
    #[arg(long, value_name = "KIND")]
    pub svg: Option<String>,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A result of any kind written with -o (run, ab, compare, audit sweep, probe, campaign...).
    #[arg(value_name = "RESULT")]
    pub file: PathBuf,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct EnvArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every command's page into this directory (created if need be), atomically.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl CompareFiles {
    pub(crate) fn run(self) -> Result<()> {
        let CompareFiles { files, opts } = self;
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
}

impl MergeArgs {
    pub(crate) fn run(self) -> Result<()> {
        if let Some(o) = &self.output {
            writable_output(o, &self.files)?;
        }
        let views = load_views(&self.files)?;
        let m = compare::merge::merge(&views, self.force)?;
        if !m.metrics.iter().any(|x| x.name == self.metric) {
            anyhow::bail!("the merged results have no metric '{}'", self.metric);
        }
        let tables = MergeTables {
            merged: &m,
            metric: &self.metric,
        };
        show(&tables, self.format, &self.output)
    }
}

impl CorrelateArgs {
    pub(crate) fn run(self) -> Result<()> {
        if let Some(o) = &self.output {
            writable_output(o, &self.files)?;
        }
        let views = load_views(&self.files)?;
        let c = compare::correlate::run(&views, &self.x, &self.y, self.within)?;
        show(&c, self.format, &self.output)
    }
}

impl ReportArgs {
    pub(crate) fn run(self) -> Result<()> {
        writable_output(&self.output, &self.files)?;
        let loaded: Vec<(String, loaded::Loaded)> = self
            .files
            .iter()
            .map(|f| Ok((f.display().to_string(), loaded::load(f)?)))
            .collect::<Result<_>>()?;
        let text = match &self.svg {
            Some(kind) => html::single_chart(kind, &loaded)?,
            None => html::page(&loaded),
        };
        write_file(&self.output, text.as_bytes())
    }
}

impl ProbeArgs {
    pub(crate) fn run(self) -> Result<()> {
        self.keep.parsed_tags()?;
        let (path, symbol) = crate::probes::elf::parse_target(&self.target)?;
        if let Some(o) = &self.output {
            crate::core::check_writable(o)?;
        }
        let r = probe::run(&probe::ProbeCommand {
            path,
            symbol,
            kind: self.probe,
            bpf: self.bpf,
            runs: self.runs,
            command: self.command,
            captures: self.captures,
        })?;
        show(&r, self.format, &self.output)?;
        history::record(&r, &self.keep);
        Ok(())
    }
}

impl ShowArgs {
    pub(crate) fn run(self) -> Result<()> {
        // The tables print nothing from the raw samples: skip them (a result of millions
        // of samples then reads in little memory); the JSON is the whole result.
        let checked = crate::results::load::open_checked(&self.file, crate::results::Accept::ANY)?;
        if checked.kind == crate::core::Kind::Run {
            let budget = (self.format != Format::Json).then_some(0);
            return show(&RunResult::decode(&checked, budget)?, self.format, &None);
        }
        // Any other kind: its JSON, or its text in the format.
        if self.format == Format::Json {
            let whole: serde_json::Value = checked.decode()?;
            outln!("{}", report::format::json::to_json(&whole));
            return Ok(());
        }
        out!("{}", report::loaded::decode(&checked)?.text(self.format));
        Ok(())
    }
}

impl EnvArgs {
    pub(crate) fn run(self) -> Result<()> {
        let env = Environment::collect();
        if self.json {
            outln!("{}", serde_json::to_string_pretty(&env)?);
        } else {
            out!("{}", report::env_text(&env));
        }
        Ok(())
    }
}

impl CompletionsArgs {
    pub(crate) fn run(self) -> Result<()> {
        let mut text = Vec::new();
        clap_complete::generate(self.shell, &mut Cli::command(), "syscost", &mut text);
        out(&text)
    }
}

impl ManArgs {
    pub(crate) fn run(self) -> Result<()> {
        let Some(dir) = self.dir else {
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
}

/// One man page per command, as git names them (syscost.1, syscost-run.1, ...).
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
