//! What every result kind implements for `syscost report`, `show` and `history show`
//! ([`ResultKind`]), and how the registry in [`super::loaded`] knows a kind ([`Entry`]). The
//! kinds import this file; the registry imports the kinds.

use super::format::Format;
use super::section::Section;
use crate::core::Kind;
use crate::environment::Environment;
use crate::results::load::{Checked, LoadError};
use anyhow::Result;
use serde::de::DeserializeOwned;

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
    pub(super) decode: fn(&Checked, Reading) -> Result<Loaded, LoadError>,
}

impl Entry {
    /// A kind decoded straight into `T`.
    pub(crate) const fn of<T: ResultKind + DeserializeOwned + 'static>(
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
    pub(crate) const fn with(
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

/// Dots drawn per run: at most twice this many of its raw samples are read (see
/// `results::thin`); a strip of a million dots says no more than one of a thousand.
pub const SAMPLES_DRAWN: usize = 500;
