//! `syscost history`: the store of results (see `crate::history`): list, show, import, export,
//! delete.

use super::*;
use crate::history::{Filter, Store};
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The store: a SQLite file [default: $SYSCOST_HISTORY, else
    /// $XDG_DATA_HOME/syscost/history.sqlite, else ~/.local/share/syscost/history.sqlite].
    #[arg(long, value_name = "PATH", global = true)]
    history: Option<PathBuf>,
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
enum HistoryCommand {
    /// The stored results, oldest first, with the primary metric's median and 95% CI.
    List {
        #[command(flatten)]
        filter: FilterArgs,
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
        /// A label, KEY=VALUE (repeatable): --tag build=align-32, as seed 001 labels builds.
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
}

#[derive(clap::Args, Debug)]
struct FilterArgs {
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
    fn filter(&self) -> Result<Filter> {
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
        })
    }
}

fn store(path: &Option<PathBuf>) -> Result<Store> {
    let path = match path {
        Some(p) => p.clone(),
        None => crate::history::default_path().ok_or_else(|| {
            anyhow::anyhow!("history: no HOME to keep it under: give --history PATH")
        })?,
    };
    Store::open(&path)
}

fn when(unix: i64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64),
    )
    .to_string()
}

fn list_grid(entries: &[crate::history::Entry]) -> report::format::Grid {
    let mut g = report::format::Grid::new(&[
        "id", "time", "kind", "workload", "host", "kernel", "median", "95% CI", "tags",
    ])
    .right([0, 6, 7]);
    for e in entries {
        let params = e
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok());
        let workload = match params {
            Some(p) => serde_json::from_value::<crate::workloads::WorkloadSpec>(p)
                .map(|w| w.describe())
                .unwrap_or_else(|_| e.workload.clone().unwrap_or_default()),
            None => e.workload.clone().unwrap_or_default(),
        };
        g.row(vec![
            e.id.to_string(),
            when(e.created_unix),
            e.kind.clone(),
            workload,
            e.host.clone().unwrap_or_default(),
            e.kernel.clone().unwrap_or_default(),
            match (e.median, &e.unit) {
                (Some(m), Some(u)) => format!("{} {u}", crate::core::fmt_num(m)),
                (Some(m), None) => crate::core::fmt_num(m),
                _ => "-".into(),
            },
            match (e.ci_lo, e.ci_hi) {
                (Some(a), Some(b)) => {
                    format!("[{}, {}]", crate::core::fmt_num(a), crate::core::fmt_num(b))
                }
                _ => "-".into(),
            },
            e.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    g
}

/// Record a measuring command's result (its JSON, as written to files). The measurement is
/// never lost to the store: a store that cannot be written gets a warning, and the result has
/// already been printed and written.
pub(super) fn record<R: serde::Serialize>(result: &R, keep: &super::args::HistoryOpts) {
    if keep.no_history {
        return;
    }
    let outcome = (|| -> Result<(i64, PathBuf)> {
        let tags = keep.parsed_tags()?;
        let mut s = store(&keep.history)?;
        let json = serde_json::to_string_pretty(result)?;
        let (id, _) = s.insert(&json, &tags)?;
        Ok((id, s.path().to_path_buf()))
    })();
    match outcome {
        Ok((id, path)) => eprintln!(
            "syscost: recorded as history entry {id} in {}",
            path.display()
        ),
        Err(e) => eprintln!(
            "syscost: warning: the result was not recorded in the history ({e:#}); the result \
             itself is complete (--no-history skips recording)"
        ),
    }
}

/// A result of any kind as text (JSON is printed as stored).
fn text_of(l: &report::loaded::Loaded, format: Format) -> String {
    use report::loaded::Loaded;
    match l {
        Loaded::Run(r) => r.text(format),
        Loaded::Compare(c) => c.text(format),
        Loaded::Merged(m) => MergeTables {
            merged: m,
            metric: "time",
        }
        .text(format),
        Loaded::Sweep(s) => s.text(format),
        Loaded::Scale(s) => s.text(format),
        Loaded::Correlate(c) => c.text(format),
        Loaded::Cachesets(a) => a.text(format),
        Loaded::Probe(p) => p.text(format),
    }
}

pub(super) fn history_command(args: HistoryArgs) -> Result<()> {
    match args.command {
        HistoryCommand::List { filter, format } => {
            let f = filter.filter()?;
            let s = store(&args.history)?;
            let entries = s.list(&f)?;
            if format == Format::Json {
                println!("{}", serde_json::to_string_pretty(&entries)?);
            } else {
                let pre = vec![format!(
                    " {} result(s) in {}",
                    entries.len(),
                    s.path().display()
                )];
                print!(
                    "{}",
                    report::format::render(format, &pre, &[list_grid(&entries)])
                );
            }
            Ok(())
        }
        HistoryCommand::Show { id, format } => {
            let s = store(&args.history)?;
            let json = s.json(id)?;
            if format == Format::Json {
                println!("{json}");
                return Ok(());
            }
            let loaded = report::loaded::parse(&format!("history entry {id}"), &json)?;
            print!("{}", text_of(&loaded, format));
            Ok(())
        }
        HistoryCommand::Import { files, tags } => {
            let tags: Vec<(String, String)> = tags
                .iter()
                .map(|t| crate::history::parse_tag(t))
                .collect::<Result<_>>()?;
            let mut s = store(&args.history)?;
            let (mut new, mut old) = (0, 0);
            for f in &files {
                let (_, text) = crate::results::load::read_checked(f, crate::results::Accept::ANY)?;
                let (id, fresh) = s.insert(&text, &tags)?;
                if fresh {
                    new += 1;
                } else {
                    old += 1;
                }
                eprintln!("syscost: {} is history entry {id}", f.display());
            }
            println!(
                "imported {new} result(s) into {}; {old} already there",
                s.path().display()
            );
            Ok(())
        }
        HistoryCommand::Export { ids, dir } => {
            let s = store(&args.history)?;
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("export: cannot create {}", dir.display()))?;
            for id in ids {
                let json = s.json(id)?;
                let path = dir.join(format!("{id}.json"));
                crate::core::write_atomic(&path, format!("{json}\n").as_bytes())?;
                eprintln!("syscost: written to {}", path.display());
            }
            Ok(())
        }
        HistoryCommand::Delete { ids } => {
            let mut s = store(&args.history)?;
            let n = s.delete(&ids)?;
            println!("deleted {n} result(s) from {}", s.path().display());
            Ok(())
        }
    }
}
