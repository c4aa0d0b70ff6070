//! A result file of any kind, read through the one loader (`results::load`) and decoded into
//! its type: what `syscost report` and `history show` take.
//!
//! A result kind is one file of `report/` implementing [`ResultKind`] (its checks on load, its
//! text, its section of the page and its charts) and exporting an [`Entry`], plus one line in
//! [`REGISTRY`]. Its name is one line of `core::Kind`: the envelope is checked before any type
//! is decoded, below the layers that define the types.

use super::format::Format;
use super::html::Section;
use crate::core::Kind;
use crate::environment::Environment;
use crate::results::load::{self, Accept, Checked, LoadError};
use anyhow::Result;
use serde::de::DeserializeOwned;
use std::path::Path;

/// What `syscost report` and `history show` need of a result of any kind.
pub trait ResultKind {
    /// Its name in the `kind` field.
    fn kind(&self) -> Kind;
    /// What makes a decoded result unusable for the page, if anything: the structure serde
    /// cannot check (empty lists that every chart starts from, indices into other lists).
    fn damage(&self) -> Option<String> {
        None
    }
    /// The heading of its section of the page.
    fn title(&self) -> String;
    /// The result as text in `format`.
    fn text(&self, format: Format) -> String;
    /// Its section of the page: charts, lines and tables, and its warnings.
    fn section(&self, s: &mut Section);
    /// The machine it was measured on, where it records one.
    fn environment(&self) -> Option<&Environment> {
        None
    }
    /// What it records of the machines it ran on when that is not one [`Environment`] (a
    /// campaign: the host, and the guests it booted), as rows of the page's header.
    fn machine_rows(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Its chart `name` for `--svg`; `None` when this kind has no such chart.
    fn chart(&self, name: &str) -> Option<Result<String>>;
}

/// A loaded result of any kind.
pub type Loaded = Box<dyn ResultKind>;

/// How far a result is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Everything (`history show`).
    Whole,
    /// As far as the page draws it: a run's raw samples thinned to [`SAMPLES_DRAWN`].
    ForPage,
}

/// A result kind as the registry knows it.
pub struct Entry {
    pub kind: Kind,
    /// The charts `--svg` draws of it.
    pub charts: &'static [&'static str],
    decode: fn(&Checked, Reading) -> Result<Loaded, LoadError>,
}

impl Entry {
    /// A kind decoded straight into `T`.
    pub const fn of<T: ResultKind + DeserializeOwned + 'static>(
        kind: Kind,
        charts: &'static [&'static str],
    ) -> Entry {
        Entry {
            kind,
            charts,
            decode: decoded::<T>,
        }
    }

    /// A kind with its own decoder.
    pub const fn with(
        kind: Kind,
        charts: &'static [&'static str],
        decode: fn(&Checked, Reading) -> Result<Loaded, LoadError>,
    ) -> Entry {
        Entry {
            kind,
            charts,
            decode,
        }
    }
}

fn decoded<T: ResultKind + DeserializeOwned + 'static>(
    c: &Checked,
    _: Reading,
) -> Result<Loaded, LoadError> {
    Ok(Box::new(c.decode::<T>()?))
}

/// Every result kind: one line each.
pub const REGISTRY: &[Entry] = &[
    super::run::ENTRY,
    super::compare::ENTRY,
    super::merge::ENTRY,
    super::sweep::ENTRY,
    super::scale::ENTRY,
    super::correlate::ENTRY,
    super::cachesets::ENTRY,
    super::probe::ENTRY,
    super::trend::ENTRY,
    super::campaign::ENTRY,
];

/// The chart names `--svg` takes, in the registry's order.
pub fn chart_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for n in REGISTRY.iter().flat_map(|e| e.charts) {
        if !names.contains(n) {
            names.push(n);
        }
    }
    names
}

/// Dots drawn per run: at most twice this many of its raw samples are read (see
/// `results::thin`); a strip of a million dots says no more than one of a thousand.
pub const SAMPLES_DRAWN: usize = 500;

/// Read a result of any kind, with one clear error naming the file. A run result's raw samples
/// are read only as far as the page draws them.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let checked = load::open_checked(path, Accept::ANY)?;
    decode_as(&checked, Reading::ForPage)
}

/// A result of any kind from its JSON text (`name` names it in errors).
pub fn parse(name: &str, text: &str) -> Result<Loaded, LoadError> {
    let checked = load::Checked::from_text(name, text.to_string(), Accept::ANY)?;
    decode_as(&checked, Reading::Whole)
}

/// A checked result of any kind, read whole (`show`).
pub fn decode(c: &Checked) -> Result<Loaded, LoadError> {
    decode_as(c, Reading::Whole)
}

fn decode_as(c: &Checked, reading: Reading) -> Result<Loaded, LoadError> {
    let entry = REGISTRY
        .iter()
        .find(|e| e.kind == c.kind)
        .expect("every Kind has a registry entry (a unit test checks)");
    let loaded = (entry.decode)(c, reading)?;
    match loaded.damage() {
        Some(detail) => Err(LoadError::Damaged {
            path: c.name().into(),
            kind: c.kind.name().into(),
            detail,
        }),
        None => Ok(loaded),
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn every_kind_has_one_registry_entry() {
        for k in Kind::ALL {
            let n = REGISTRY.iter().filter(|e| e.kind == k).count();
            assert_eq!(n, 1, "{k}");
        }
        assert_eq!(
            chart_names(),
            [
                "run",
                "profile",
                "compare",
                "ranking",
                "merge",
                "sweep",
                "scale",
                "correlate",
                "cachesets",
                "trend",
                "boots"
            ]
        );
    }
}
