//! `syscost history`: the store of results (see `crate::history`): list, show, import, export,
//! delete, and comparisons of groups of stored results (by kernel, host, boot or tag).

use super::args::CompareArgs;
use super::*;
use crate::experiments::grouped::{By, Grouping, grouped};
use crate::history::{Filter, Location, Store};
use anyhow::{Context, bail};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The store: a SQLite file, or a PostgreSQL URL shared by many machines
    /// (postgres://USER@HOST/DB, postgresql:///DB?host=/run/postgresql) [default:
    /// $SYSCOST_HISTORY, else $XDG_DATA_HOME/syscost/history.sqlite, else
    /// ~/.local/share/syscost/history.sqlite].
    #[arg(long, value_name = "PATH|URL", global = true, value_parser = super::args::HistoryLocation)]
    history: Option<Location>,
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
enum HistoryCommand {
    /// The stored results, oldest first, with the primary metric's median and 95% CI (the
    /// newest 1,000 unless --newest says otherwise).
    List {
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        newest: Newest,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Print a stored result again, in any format.
    Show {
        id: i64,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Store result files (any kind). The same file twice is one entry; --tag labels them.
    Import {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// A label, KEY=VALUE (repeatable): --tag build=align-32, to label builds as the alignment RFC's 11 were.
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
    },
    /// Write stored results to DIR as ID.json, atomically.
    Export {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<i64>,
        #[arg(short = 'o', long = "output", value_name = "DIR", required = true)]
        dir: PathBuf,
    },
    /// Remove stored results.
    Delete {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<i64>,
    },
    /// Compare groups of stored run results: by kernel, host, boot or a label's value (the
    /// audit latency series' kernels over 12 boots each; the alignment RFC's 11 builds ranked). Within a group the
    /// boot is the unit (a boot's value: the median of its runs); grouped by boot, the runs
    /// are. Each group is compared with the baseline with the statistics of `compare`.
    #[command(after_help = HISTORY_COMPARE_EXAMPLES)]
    Compare {
        /// What makes a group: kernel, host, boot, or tag:KEY (the value of the label KEY).
        #[arg(long, value_name = "kernel|host|boot|tag:KEY", value_parser = parse_by)]
        by: By,
        /// The baseline group [default: the oldest kernel version with --by kernel, else the
        /// group of the oldest result].
        #[arg(long, value_name = "GROUP")]
        baseline: Option<String>,
        /// Compare results measured under QEMU's emulator (tag accel=tcg, from `syscost
        /// campaign --accel tcg`) with others: refused without it, as emulation counts
        /// instructions executed, not hardware.
        #[arg(long)]
        mix_emulated: bool,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        opts: CompareArgs,
    },
    /// The primary metric across groups in order: by kernel, in version order (6.9 < 6.10 <
    /// 6.18-rc1 < 6.18); by host or tag, in the order of each group's oldest result. Each step
    /// (a group against the one before) gets its change, interval and verdict, Holm-corrected
    /// over the steps; regressions beyond the noise threshold are flagged. `-o FILE` keeps it
    /// for `syscost report`, which draws it.
    #[command(after_help = HISTORY_TREND_EXAMPLES)]
    Trend {
        /// What makes a group: kernel, host, boot, or tag:KEY.
        #[arg(long, value_name = "kernel|host|boot|tag:KEY", value_parser = parse_by, default_value = "kernel")]
        by: By,
        /// Compare results measured under QEMU's emulator (tag accel=tcg, from `syscost
        /// campaign --accel tcg`) with others: refused without it, as emulation counts
        /// instructions executed, not hardware.
        #[arg(long)]
        mix_emulated: bool,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        opts: CompareArgs,
    },
}

const HISTORY_TREND_EXAMPLES: &str = "Examples:
  syscost history trend --workload syscall --param syscall=getpid
      getpid across every kernel stored, oldest version first, regressions flagged
  syscost history trend --param syscall=getpid --fail-on slower -o trend.json
      exit 3 if any step got slower (for a CI job); syscost report trend.json draws it";

const HISTORY_COMPARE_EXAMPLES: &str = "Examples:
  syscost history compare --by kernel --workload syscall --param syscall=getpid
      getpid on every kernel stored, boots as the units, the oldest kernel as the baseline
  syscost history compare --by tag:build --tag series=align --format lkml
      builds labelled with --tag build=NAME (as Ingo Molnar's 2015 alignment RFC ranked 11), for a mail
  syscost history compare --by host --kernel 6.18.0 --baseline lab-01
      one kernel across a lab's machines";

fn parse_by(s: &str) -> Result<By, String> {
    s.parse()
}

#[derive(clap::Args, Debug)]
pub struct FilterArgs {
    /// Only this workload (syscall, vfs-mix, file, ...).
    #[arg(long)]
    workload: Option<String>,
    /// Only this kernel release (uname -r).
    #[arg(long)]
    kernel: Option<String>,
    /// Only this host name.
    #[arg(long)]
    host: Option<String>,
    /// Only this boot id.
    #[arg(long)]
    boot: Option<String>,
    /// Only results made at or after this time: seconds since the epoch, or an RFC 3339 date
    /// (2026-11-01 or 2026-11-01T12:00:00Z).
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Only results made at or before this time (as --since).
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// Only results with this label, KEY=VALUE (repeatable: all must hold).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    tags: Vec<String>,
    /// Only results whose workload has this parameter, KEY=VALUE as result files name it
    /// (repeatable): --param syscall=getpid, --param op=fork.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
}

/// How many results `history list` shows.
#[derive(clap::Args, Debug)]
struct Newest {
    /// Show only the newest N matching results (still oldest first); 0 shows all. A lab's
    /// store holds tens of thousands: listing them all takes a quarter of a second and a
    /// screen cannot show them.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    newest: usize,
}

/// A time for --since/--until: epoch seconds or an RFC 3339 date or timestamp.
fn parse_time(flag: &str, s: &str) -> Result<i64> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(n);
    }
    let text = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_string()
    };
    humantime::parse_rfc3339_weak(&text)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{flag} '{s}': give seconds since the epoch or a date like 2026-11-01 or \
                 2026-11-01T12:00:00Z"
            )
        })
}

impl FilterArgs {
    pub(super) fn filter(&self) -> Result<Filter> {
        Ok(Filter {
            workload: self.workload.clone(),
            kernel: self.kernel.clone(),
            host: self.host.clone(),
            boot: self.boot.clone(),
            since: self
                .since
                .as_deref()
                .map(|s| parse_time("--since", s))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|s| parse_time("--until", s))
                .transpose()?,
            tags: self
                .tags
                .iter()
                .map(|t| crate::history::parse_tag(t))
                .collect::<Result<_>>()?,
            params: self
                .params
                .iter()
                .map(|p| crate::history::parse_param(p))
                .collect::<Result<_>>()?,
            newest: None,
        })
    }
}

/// The store at `given` (else the default) to record in: created if need be.
pub(super) fn store(given: &Option<Location>) -> Result<Store> {
    Store::open(&Location::or_default(given)?)
}

/// The store at `given` (else the default) to read or delete from: it must exist.
pub(super) fn existing(given: &Option<Location>) -> Result<Store> {
    Store::open_existing(&Location::or_default(given)?)
}

/// Record a measuring command's result (its JSON, as written to files). The measurement is
/// never lost to the store: a store that cannot be written gets a warning, and the result has
/// already been printed and written.
pub(super) fn record<R: serde::Serialize>(result: &R, keep: &super::args::HistoryOpts) {
    if keep.no_history {
        return;
    }
    let outcome = (|| -> Result<(i64, String)> {
        let tags = keep.parsed_tags()?;
        let mut s = store(&keep.history)?;
        let json = serde_json::to_string_pretty(result)?;
        let (id, _) = s.insert(&json, &tags)?;
        Ok((id, s.location()))
    })();
    match outcome {
        Ok((id, location)) => {
            eprintln!("syscost: recorded as history entry {id} in {location}")
        }
        Err(e) => eprintln!(
            "syscost: warning: the result was not recorded in the history ({e:#}); the result \
             itself is complete (--no-history skips recording)"
        ),
    }
}

pub(super) fn history_command(args: HistoryArgs) -> Result<()> {
    let at = &args.history;
    match args.command {
        HistoryCommand::List {
            filter,
            newest,
            format,
        } => list(at, &filter, newest.newest, format),
        HistoryCommand::Show { id, format } => show_entry(at, id, format),
        HistoryCommand::Import { files, tags } => import(at, &files, &tags),
        HistoryCommand::Export { ids, dir } => export(at, &ids, &dir),
        HistoryCommand::Compare {
            by,
            baseline,
            mix_emulated,
            filter,
            opts,
        } => {
            let options = opts.options()?;
            let mut s = existing(at)?;
            let g = Grouping {
                by: &by,
                baseline: baseline.as_deref(),
                mix_emulated,
            };
            let (variants, warnings) = grouped(&mut s, &filter.filter()?, &g)?;
            let mut c = compare::compare(variants, &options)?;
            c.warnings.extend(warnings);
            show(&c, opts.format, &opts.output)?;
            opts.gate(&c)
        }
        HistoryCommand::Trend {
            by,
            mix_emulated,
            filter,
            opts,
        } => {
            let options = opts.options()?;
            let mut s = existing(at)?;
            let g = Grouping {
                by: &by,
                baseline: None,
                mix_emulated,
            };
            let (groups, warnings) = grouped(&mut s, &filter.filter()?, &g)?;
            let mut t = crate::compare::trend::trend(groups, &by.name(), &options)?;
            t.warnings.extend(warnings);
            show(&t, opts.format, &opts.output)?;
            opts.gate_trend(&t)
        }
        HistoryCommand::Delete { ids } => {
            let mut s = existing(at)?;
            let n = s.delete(&ids)?;
            outln!("deleted {n} result(s) from {}", s.location());
            Ok(())
        }
    }
}

/// `history list`: the newest entries that match, as a table or streamed JSON.
fn list(at: &Option<Location>, filter: &FilterArgs, newest: usize, format: Format) -> Result<()> {
    let mut f = filter.filter()?;
    f.newest = (newest > 0).then_some(newest);
    let mut s = existing(at)?;
    let entries = s.list(&f)?;
    let matching = if f.newest.is_some_and(|n| entries.len() >= n) {
        s.count(&f)?
    } else {
        entries.len() as i64
    };
    let cut = matching > entries.len() as i64;
    if cut && matches!(format, Format::Json | Format::Csv) {
        eprintln!(
            "syscost: the newest {} of {matching} matching results; --newest 0 lists all",
            entries.len()
        );
    }
    if format == Format::Json {
        // Streamed: 100,000 entries are 48 MB of JSON, not worth holding twice.
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        let written = serde_json::to_writer_pretty(&mut w, &entries)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(w))
            .and_then(|()| w.flush());
        return super::quiet(written);
    }
    let pre = vec![if cut {
        format!(
            " The newest {} of {matching} result(s) in {} (--newest 0 lists all)",
            entries.len(),
            s.location()
        )
    } else {
        format!(" {matching} result(s) in {}", s.location())
    }];
    let grid = report::history::entries_grid(&entries);
    out!("{}", report::format::render(format, &pre, &[grid]));
    Ok(())
}

/// `history show`: an entry's JSON as stored, or its text as its kind renders it.
fn show_entry(at: &Option<Location>, id: i64, format: Format) -> Result<()> {
    let json = existing(at)?.json(id)?;
    if format == Format::Json {
        outln!("{json}");
        return Ok(());
    }
    let loaded = report::loaded::parse(&format!("history entry {id}"), &json)?;
    out!("{}", loaded.text(format));
    Ok(())
}

/// `history import`: every file that can be, each said; a damaged one does not stop the rest.
fn import(at: &Option<Location>, files: &[PathBuf], tags: &[String]) -> Result<()> {
    let tags: Vec<(String, String)> = tags
        .iter()
        .map(|t| crate::history::parse_tag(t))
        .collect::<Result<_>>()?;
    let retagged = if tags.is_empty() {
        String::new()
    } else {
        let kv: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "; its tags now include {} (a key it had takes the new value)",
            kv.join(",")
        )
    };
    let mut s = store(at)?;
    let (mut new, mut old, mut failed) = (0, 0, Vec::new());
    for f in files {
        let stored = crate::results::load::read_checked(f, crate::results::Accept::ANY)
            .map_err(anyhow::Error::from)
            .and_then(|(_, text)| s.insert(&text, &tags));
        match stored {
            Ok((id, true)) => {
                new += 1;
                eprintln!("syscost: {} is history entry {id}", f.display());
            }
            Ok((id, false)) => {
                old += 1;
                eprintln!(
                    "syscost: {} was already history entry {id}{retagged}",
                    f.display()
                );
            }
            Err(e) => {
                eprintln!("syscost: error: {e:#}");
                failed.push(f.display().to_string());
            }
        }
    }
    let not = if failed.is_empty() {
        String::new()
    } else {
        format!("; {} not imported: {}", failed.len(), failed.join(", "))
    };
    outln!(
        "imported {new} result(s) into {}; {old} already there{not}",
        s.location()
    );
    if !failed.is_empty() {
        bail!(
            "{} of {} file(s) could not be imported",
            failed.len(),
            files.len()
        );
    }
    Ok(())
}

/// `history export`: each entry's JSON as DIR/ID.json.
fn export(at: &Option<Location>, ids: &[i64], dir: &std::path::Path) -> Result<()> {
    let mut s = existing(at)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("export: cannot create {}", dir.display()))?;
    for id in ids {
        let json = s.json(*id)?;
        let path = dir.join(format!("{id}.json"));
        super::write_file(&path, format!("{json}\n").as_bytes())?;
    }
    Ok(())
}
