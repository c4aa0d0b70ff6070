//! Every rendering of every result kind. A result type never prints itself: each kind has one
//! file here implementing [`Render`] (its preamble and tables), and the text formats of
//! [`format`] (one file each: table, CSV, Markdown, LKML; JSON is the result serialised) lay
//! them out; [`html`] draws the page of `syscost report` from results of any kind ([`loaded`]) with the
//! [`charts`], drawn by [`svg`].

pub(crate) mod bisect;
pub(crate) mod cachesets;
pub(crate) mod campaign;
pub(crate) mod charts;
pub(crate) mod compare;
pub(crate) mod correlate;
pub(crate) mod env;
pub mod format;
pub(crate) mod history;
pub mod html;
pub(crate) mod kcidb;
pub(crate) mod kind;
pub mod loaded;
pub(crate) mod merge;
pub(crate) mod probe;
pub(crate) mod reproduce;
pub(crate) mod rule_costs;
pub(crate) mod run;
pub(crate) mod scale;
pub(crate) mod section;
pub(crate) mod svg;
pub(crate) mod sweep;
pub(crate) mod trend;

pub(crate) use env::env_text;
pub use run::{profile_grid, run_grid, run_preamble};

use format::{Format, Grid};

/// A result as text: free lines first, then tables with their titles and notes.
pub(crate) trait Render {
    /// Lines above the tables.
    fn preamble(&self) -> Vec<String> {
        Vec::new()
    }
    /// The tables, each with its title and notes.
    fn grids(&self) -> Vec<Grid>;
    /// The whole text in a format; the default lays the preamble and tables out through the
    /// format's layout. JSON is not text: it is the result serialised ([`format::json`]).
    fn text(&self, format: Format) -> String {
        format::render(format, &self.preamble(), &self.grids())
    }
}

/// The run in a text format (JSON is the result itself).
pub fn run_text(r: &crate::results::RunResult, format: Format) -> String {
    r.text(format)
}

/// A metric's name with its unit, as the tables and charts label it: `time (ns/call)`; a unit
/// that only repeats the name (`CPUs-utilized`, in CPUs utilized) is not said twice.
/// `warnings` as the lines under a text table (`Warnings:`, then one `- ` line each); `None`
/// when there are none. A page shows them in a list of its own instead.
pub(crate) fn warning_notes<'a>(
    warnings: impl IntoIterator<Item = &'a String>,
) -> Option<Vec<String>> {
    let lines: Vec<String> = warnings.into_iter().map(|w| format!("   - {w}")).collect();
    (!lines.is_empty()).then(|| [vec![" Warnings:".to_string()], lines].concat())
}

pub(crate) fn metric_label(name: &str, unit: &str) -> String {
    if unit.replace(' ', "-").eq_ignore_ascii_case(name) {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

#[cfg(test)]
mod snapshots {
    //! The run table in every text format, for a fixed result (no clock, no machine).
    use super::*;
    use crate::results::fixture::fixed_result;

    #[test]
    fn run_table_in_every_format() {
        let r = fixed_result();
        for (name, f) in [
            ("table", Format::Table),
            ("csv", Format::Csv),
            ("markdown", Format::Markdown),
            ("lkml", Format::Lkml),
        ] {
            insta::assert_snapshot!(format!("run_{name}"), run_text(&r, f));
        }
        assert!(run_text(&r, Format::Lkml).is_ascii());
    }
}
