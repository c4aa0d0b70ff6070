//! What campaigns, bisections and reproductions show of a kept run, and do with it, said once:
//! its boots in the history, where it stands, and dropping it. Their states are
//! `experiments::boots::kept`'s, and the life they share `experiments::boots::life`'s.

use super::args::HistoryOpts;
use super::boots::{BootsOpts, boot_line, cancel_jobs, lab_tags, record_tagged};
use crate::experiments::boots::kept::{self, Kept, KeptRun, Planned, RunKind};
use crate::experiments::boots::plan::BootPlan;
use crate::experiments::boots::{Backend, BootRecord};
use crate::history::Location;
use crate::report::format::Format;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a kept run shows and records, kept with it so that a resume parses no command line
/// again: the output format, the result file and where its boots are recorded. Paths are
/// absolute, so a resume started elsewhere writes where the run was told to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Shown {
    pub format: Format,
    pub output: Option<PathBuf>,
    pub keep: HistoryOpts,
}

impl Shown {
    /// What `o` asks for, its paths made absolute.
    pub(super) fn of(o: &BootsOpts) -> Result<Shown> {
        let absolute =
            |p: &Path| std::path::absolute(p).context("cannot read the current directory");
        let mut keep = o.keep.clone();
        if let Some(Location::Sqlite(p)) = &mut keep.history {
            *p = absolute(p)?;
        }
        Ok(Shown {
            format: o.format,
            output: o.output.as_deref().map(absolute).transpose()?,
            keep,
        })
    }

    /// Keep it in `run`'s state.
    pub(super) fn keep_in<P>(&self, run: &mut Kept<P>) -> Result<()> {
        run.shown = serde_json::to_value(self)?;
        Ok(())
    }

    /// What `run` keeps, and its plan; a state written before both were kept is refused,
    /// saying how to drop it.
    pub(super) fn kept<P: Planned>(run: &mut Kept<P>) -> Result<(Shown, P)> {
        let older = || {
            let k = P::KIND;
            let id = if k == RunKind::Campaign {
                format!(" {}", run.id)
            } else {
                String::new()
            };
            anyhow::anyhow!(
                "{} {} was kept by an older syscost, without its plan and output options: \
                 `syscost {} abort{id}` drops it (its {} boot(s) stay in the history)",
                k.noun(),
                run.id,
                k.tag(),
                run.boots.len()
            )
        };
        let shown = serde_json::from_value(run.shown.clone()).map_err(|_| older())?;
        let plan = run.plan.take().ok_or_else(older)?;
        Ok((shown, plan))
    }
}

/// How a plan's boots are made, as the history tags say it.
pub(super) fn made(b: &Backend) -> Made<'static> {
    Made {
        via: b.name(),
        accel: b.machine().map_or("none", |m| m.accel.name()),
    }
}

/// How a run's boots were made, as their history tags say it: `via=qemu`, `accel=tcg`.
pub(super) struct Made<'a> {
    pub via: &'a str,
    pub accel: &'a str,
}

/// A boot's result in the history, tagged with its run (`campaign=ID` or `bisect=ID`), its
/// arm (`arm=` or `build=`), its round, how it booted and, from a lab, its job.
pub(super) fn record_boot(
    b: &BootRecord,
    keep: &HistoryOpts,
    (kind, id): (RunKind, &str),
    made: &Made,
) {
    let mut tags = vec![
        format!("{}={id}", kind.tag()),
        format!("{}={}", kind.arm_tag(), b.arm),
        format!("round={}", b.round),
        format!("via={}", made.via),
        format!("accel={}", made.accel),
    ];
    tags.extend(b.job.iter().flat_map(lab_tags));
    record_tagged(b, keep, tags);
}

/// Where a kept run stands: its boots so far, the last, and the LAVA jobs a resume waits for.
pub(super) fn standing<K: KeptRun>(run: &K) -> Vec<String> {
    let boots = &run.kept().boots;
    let measured = boots.iter().filter(|b| b.result().is_some()).count();
    let mut lines = vec![format!(
        "boots so far: {} ({measured} measured); the last: {}",
        boots.len(),
        boots.last().map_or("none".into(), boot_line)
    )];
    if !run.kept().jobs.is_empty() {
        let ids: Vec<String> = run.kept().jobs.iter().map(|j| j.id.to_string()).collect();
        lines.push(format!(
            "LAVA jobs submitted, not yet read back: {} (a resume waits for them, an abort \
             cancels them)",
            ids.join(", ")
        ));
    }
    lines
}

/// Drop the kept run at `path`: its LAVA jobs cancelled, its state and files removed (its
/// boots stay in the history).
pub(super) fn drop_run<K: KeptRun>(run: &K, path: &Path) -> Result<()> {
    cancel_jobs(run.kept().backend(), &run.kept().jobs)?;
    kept::forget(path);
    outln!(
        "{} {} dropped ({} boot(s) stay in the history)",
        K::KIND.noun(),
        run.kept().id,
        run.kept().boots.len()
    );
    Ok(())
}

/// What a status says of a state written before plans were kept (no resume can run it).
pub(super) const UNPLANNED: &str = "a state from before plans were kept: abort it";

/// A kept run's plan in words, for its status (no command line is kept: this is what it runs):
/// its arms and their kernels, where they boot, and what measures them.
pub(super) fn planned(boot: &BootPlan) -> String {
    let shown = |s: &str| crate::core::printable(&crate::core::redact_url(s));
    let arms: Vec<String> = (boot.arms.iter())
        .map(|a| {
            let kernel = match &a.url {
                Some(u) => shown(&u.url),
                None => a.kernel.file_name().map_or_else(
                    || shown(&a.kernel.display().to_string()),
                    |f| shown(&f.to_string_lossy()),
                ),
            };
            format!("{} ({kernel})", a.name)
        })
        .collect();
    let on = match &boot.backend {
        Backend::Qemu(m) => format!("QEMU ({}, {} vCPU(s))", m.accel.name(), m.cpus),
        Backend::Kexec => "this machine, by kexec".into(),
        Backend::Lava(t) => format!("the LAVA lab {} ({})", shown(&t.lab), t.device_type),
    };
    format!(
        "arms {} on {on}, measured by `syscost {}`",
        arms.join(", "),
        super::args::shown_words(&boot.measure)
    )
}

#[cfg(test)]
mod unit {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct Plan(Backend);

    impl Planned for Plan {
        const KIND: RunKind = RunKind::Campaign;
        fn backend(&self) -> &Backend {
            &self.0
        }
    }

    /// What a run shows is kept with its plan and read back as it was given, its paths
    /// absolute; a state kept without them is refused with how to drop it.
    #[test]
    fn what_a_run_shows_is_kept_with_it_and_an_older_state_is_refused() {
        use clap::Parser;
        let words = "syscost campaign --arm a=/k --format markdown -o out/c.json --history \
                     h.sqlite --tag build=x -- run syscall";
        let cli = crate::cli::Cli::try_parse_from(words.split_whitespace()).unwrap();
        let crate::cli::Command::Campaign(c) = cli.command else {
            panic!("not a campaign")
        };
        let o = c.shared;
        let mut run = Kept::new("7".into(), 3, Some(Plan(Backend::Kexec)));
        Shown::of(&o).unwrap().keep_in(&mut run).unwrap();
        let text = serde_json::to_string(&run).unwrap();
        let mut back: Kept<Plan> = serde_json::from_str(&text).unwrap();
        let (shown, plan) = Shown::kept(&mut back).unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(shown.format, Format::Markdown);
        assert_eq!(shown.output, Some(here.join("out/c.json")));
        assert_eq!(
            shown.keep.history,
            Some(Location::Sqlite(here.join("h.sqlite")))
        );
        assert_eq!(shown.keep.tags, ["build=x"]);
        assert_eq!(plan.0.name(), "kexec");

        let mut older: Kept<Plan> = Kept::new("8".into(), 3, None);
        let said = Shown::kept(&mut older).unwrap_err().to_string();
        assert!(
            said.contains("campaign 8 was kept by an older syscost")
                && said.contains("`syscost campaign abort 8`"),
            "{said}"
        );
    }
}
