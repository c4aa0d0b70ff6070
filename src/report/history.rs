//! `history list`'s table: the stored results, one row each.

use super::format::{Cell, Grid};
use crate::core::fmt_num;
use crate::stats::Interval;

/// A time as RFC 3339, to the second.
fn when(unix: i64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix.max(0) as u64),
    )
    .to_string()
}

/// The rows of `history list`: one stored result each.
pub(crate) fn entries_grid(entries: &[crate::history::Entry]) -> Grid {
    let mut g = Grid::new(&[
        "id", "time", "kind", "workload", "host", "kernel", "median", "95% CI", "tags",
    ])
    .right([0, 6, 7]);
    // Most entries share a few workloads: describe each parameter set once.
    let mut described: std::collections::HashMap<Option<&str>, String> = Default::default();
    for e in entries {
        let workload = described
            .entry(e.params.as_deref())
            .or_insert_with(|| {
                e.params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<crate::workloads::WorkloadSpec>(p).ok())
                    .map(|w| w.describe())
                    .unwrap_or_else(|| e.workload.clone().unwrap_or_default())
            })
            .clone();
        g.row([
            Cell::Int(e.id),
            when(e.created_unix).into(),
            e.kind.clone().into(),
            workload.into(),
            e.host.clone().unwrap_or_default().into(),
            e.kernel.clone().unwrap_or_default().into(),
            match (e.median, &e.unit) {
                (Some(m), Some(u)) => Cell::shown(m, format!("{} {u}", fmt_num(m))),
                (Some(m), None) => Cell::Num(m),
                _ => Cell::Missing,
            },
            match (e.ci_lo, e.ci_hi) {
                (Some(a), Some(b)) => Cell::Interval(Interval::new(a, b)),
                _ => Cell::Missing,
            },
            e.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
                .into(),
        ]);
    }
    g
}
