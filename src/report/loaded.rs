//! A result file of any kind, read through the one loader (`results::load`) and decoded into
//! its type: what `syscost report` and `history show` take.
//!
//! A result kind is one file of `report/` implementing [`ResultKind`] (its checks on load, its
//! text, its section of the page and its charts; the trait is in [`super::kind`], which the
//! kinds import) and exporting an [`Entry`], plus one line in [`REGISTRY`] here, which imports
//! the kinds. Its name is one line of `core::Kind`: the envelope is checked before any type
//! is decoded, below the layers that define the types.

pub use super::kind::{Entry, Loaded, Reading, ResultKind, SAMPLES_DRAWN};
use crate::results::load::{self, Accept, Checked, LoadError};
use std::path::Path;

/// Every result kind: one line each.
pub(crate) const REGISTRY: &[Entry] = &[
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
    super::bisect::ENTRY,
    super::reproduce::ENTRY,
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

/// Read a result of any kind, with one clear error naming the file. A run result's raw samples
/// are read only as far as the page draws them.
pub(crate) fn load(path: &Path) -> Result<Loaded, LoadError> {
    let checked = load::open_checked(path, Accept::ANY)?;
    decode_as(&checked, Reading::ForPage)
}

/// A result of any kind from its JSON text (`name` names it in errors).
pub fn parse(name: &str, text: &str) -> Result<Loaded, LoadError> {
    let checked = load::Checked::from_text(name, text.to_string(), Accept::ANY)?;
    decode_as(&checked, Reading::Whole)
}

/// A checked result of any kind, read whole (`show`).
pub(crate) fn decode(c: &Checked) -> Result<Loaded, LoadError> {
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
    use crate::core::Kind;

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
                "boots",
                "sets",
                "builds"
            ]
        );
    }
}
