//! What campaigns and bisections show of a kept run, and do with it, said once: its boots in
//! the history, where it stands, and dropping it. Their states and the life they share are
//! `experiments::boots::kept`'s.

use super::args::HistoryOpts;
use super::boots::{boot_line, cancel_jobs, lab_tags, record_tagged};
use crate::experiments::boots::BootRecord;
use crate::experiments::boots::kept::{self, KeptRun, RunKind};
use anyhow::Result;
use std::path::Path;

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
    let boots = run.boots();
    let measured = boots.iter().filter(|b| b.result().is_some()).count();
    let mut lines = vec![format!(
        "boots so far: {} ({measured} measured); the last: {}",
        boots.len(),
        boots.last().map_or("none".into(), boot_line)
    )];
    if !run.jobs().is_empty() {
        let ids: Vec<String> = run.jobs().iter().map(|j| j.id.to_string()).collect();
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
    cancel_jobs(run.backend(), run.jobs())?;
    kept::forget(path);
    outln!(
        "{} {} dropped ({} boot(s) stay in the history)",
        K::KIND.noun(),
        run.id(),
        run.boots().len()
    );
    Ok(())
}
