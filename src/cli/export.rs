//! `syscost export`: results in another system's format (KernelCI's KCIDB).

use super::history::{FilterArgs, existing};
use super::*;

#[derive(Subcommand, Debug)]
pub enum ExportCommand {
    /// A KernelCI KCIDB report (I/O schema v5.0) of run results, for kcidb-submit: a checkout
    /// per kernel release, a build per kernel configuration (a hash of config and command
    /// line), a test per metric (status DONE, its number the median, the interval, runs and
    /// machine in misc and environment). From result files, or else from the history (every
    /// result the filters match). A campaign's file gives each boot that measured a run, with
    /// its arm and round, and a LAVA boot's job log as the test's log_url.
    #[command(after_help = KCIDB_EXAMPLES)]
    Kcidb {
        /// Result files; without any, the history's results that match the filters.
        #[arg(value_name = "RESULT")]
        files: Vec<PathBuf>,
        /// The name KernelCI knows your CI system by: lower-case letters, digits and _.
        #[arg(long, value_name = "NAME", required = true)]
        origin: String,
        /// Write the report to FILE, atomically [default: stdout].
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The history store to export from (as `syscost history --history`).
        #[arg(long, value_name = "PATH|URL", value_parser = super::args::HistoryLocation)]
        history: Option<crate::history::Location>,
        #[command(flatten)]
        filter: FilterArgs,
    },
}

const KCIDB_EXAMPLES: &str = "Examples:
  syscost export kcidb --origin mylab --kernel 6.18.0 -o report.json
      every stored run of one kernel; then: kcidb-submit -p PROJECT -t TOPIC < report.json
  syscost export kcidb base.json patched.json --origin mylab
      two result files, to stdout
  syscost export kcidb campaign.json --origin mylab -o boots.json
      a campaign's boots, each LAVA boot with its job's log";

pub(super) fn export_command(cmd: ExportCommand) -> Result<()> {
    match cmd {
        ExportCommand::Kcidb {
            files,
            origin,
            output,
            history,
            filter,
        } => {
            crate::report::kcidb::check_origin(&origin)?;
            if let Some(o) = &output {
                writable_output(o, &files)?;
            }
            let results: Vec<(String, String)> = if files.is_empty() {
                let mut s = existing(&history)?;
                let entries = s.list(&filter.filter()?)?;
                entries
                    .iter()
                    .map(|e| Ok((format!("history entry {}", e.id), s.json(e.id)?)))
                    .collect::<Result<_>>()?
            } else {
                files
                    .iter()
                    .map(|f| {
                        let (_, text) =
                            crate::results::load::read_checked(f, crate::results::Accept::ANY)?;
                        Ok((f.display().to_string(), text))
                    })
                    .collect::<Result<_>>()?
            };
            let (doc, warnings) = crate::report::kcidb::document(&results, &origin)?;
            for w in warnings {
                eprintln!("syscost: warning: {w}");
            }
            let text = format!("{}\n", serde_json::to_string_pretty(&doc)?);
            file_or_stdout(&text, &output)
        }
    }
}
