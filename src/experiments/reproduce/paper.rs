//! A public investigation's published figures as data (`papers/NAME.json`): every cell of its
//! tables as written, with where it is in the document, its unit and scale, the conditions it
//! was measured under, and how syscost can repeat it: its class and the reason in words.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One investigation's document and tables.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Paper {
    pub name: String,
    pub title: String,
    pub document: String,
    pub question: String,
    /// Why a cell differs or cannot be repeated, by key; each cell names one.
    pub reasons: BTreeMap<String, String>,
    pub tables: Vec<Table>,
    /// What the paper's text claims beyond its tables, each a test syscost can run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<super::claims::Claim>,
}

/// One table of the document.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Table {
    pub id: String,
    /// The table's own heading, as printed.
    pub caption: String,
    /// Where it is in the document.
    pub source: String,
    /// The CPU, kernel, rules and boots it was measured with.
    pub conditions: String,
    /// What one written figure is (a total over 10^7 calls, a figure per call).
    pub scale: String,
    /// What a written figure is multiplied by to be per operation, as syscost counts.
    pub factor: f64,
    /// What one written figure summarises (one run, a boot's mean over its runs, a mean over
    /// many boots): syscost's figure is put into the same summary before they are compared.
    #[serde(default, skip_serializing_if = "Unit::is_one")]
    pub unit: Unit,
    pub cells: Vec<PaperCell>,
}

/// What one of a table's figures summarises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Unit {
    /// One measurement.
    #[default]
    One,
    /// One boot's mean over this many runs (`perf stat -r N`): compared with syscost's
    /// placements averaged as many at a time within a boot.
    MeanOfRuns(u32),
    /// A mean over at least this many boots: compared with the sampling distribution of
    /// syscost's mean, whose spread shrinks with the paper's boots as with its own.
    MeanOfBoots(u32),
}

impl Unit {
    fn is_one(&self) -> bool {
        *self == Unit::One
    }
}

/// One published figure.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaperCell {
    pub row: String,
    pub column: String,
    /// Exactly as printed (`4,174,224,305`, `~6.6*`, `(+- 1.45%)`).
    pub written: String,
    pub unit: String,
    pub class: Class,
    /// A key of [`Paper::reasons`].
    pub why: String,
    /// syscost's figures that repeat it, added together (user and kernel parts): none when
    /// it cannot be repeated here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// The campaign arm measured for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// For a ratio: the column it is divided by (the paper's and syscost's figure alike), in
    /// its own row or `over_row`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_row: Option<String>,
    /// For a change: the arm whose figure is subtracted (syscost's: each boot of `arm` less
    /// the median boot of `from`; the paper's figure is the change as printed or computed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// An exact cell's band, in its unit per operation: syscost's figure agrees within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<f64>,
    /// An exact cell's band as a share of the paper's figure (0.10: 10% of the change); the
    /// wider of the two bands holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_share: Option<f64>,
    /// For a figure printed twice: the one scored, `TABLE / ROW / COLUMN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<String>,
    /// For a direction: the paper's two figures it is the change between, the arm's then the
    /// one it is compared with (`TABLE / ROW / COLUMN`), whose printed spreads (`COLUMN +-`
    /// beside each) say whether the paper itself establishes the direction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub of: Vec<String>,
}

impl PaperCell {
    /// For a ratio, the (row, column) of the cell it is divided by.
    pub(crate) fn denominator(&self) -> Option<(&str, &str)> {
        if self.over.is_none() && self.over_row.is_none() {
            return None;
        }
        Some((
            self.over_row.as_deref().unwrap_or(&self.row),
            self.over.as_deref().unwrap_or(&self.column),
        ))
    }
}

/// How a published figure is repeated here, and how it is scored (its error model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Class {
    /// A count of the code the paper changed, or its change, counted exactly on that code
    /// (syscost's builds of it): scored within the cell's stated band (the compiler and
    /// configuration are not the paper's).
    Exact,
    /// A figure of the cache model of the paper's CPU, which follows where each boot's slab
    /// put its objects: scored as whether the paper's figure lies within the middle 80% of
    /// the boots, where that range does not hold another arm's figure for the row too.
    Modelled,
    /// A count's ratio between two arms: scored within 10%, and only where 10% is less than
    /// its distance from 1 (a null result must not agree with an effect).
    Ratio,
    /// Which way a change goes: scored by whether the two arms' boots differ the paper's way
    /// (Mann-Whitney U, p < 0.05, boots as units).
    Direction,
    /// An exact count of a stand-in (another kernel, configuration or compiler than the
    /// paper's): shown beside the paper's, never scored.
    Shown,
    /// Time under TCG, or a ratio of it: the emulator models none of its causes; shown, never
    /// scored.
    Time,
    /// A figure printed twice (per call and per 10^7 calls; task-clock and elapsed): scored
    /// once, where [`PaperCell::repeats`] points.
    Repeat,
    /// A misprint, with its evidence in the reason: never scored.
    Misprint,
    /// Nothing here measures it (cycles, branch misses, another machine's time).
    NotReproducible,
}

impl Class {
    pub(crate) const ALL: [Class; 9] = [
        Class::Exact,
        Class::Modelled,
        Class::Ratio,
        Class::Direction,
        Class::Shown,
        Class::Time,
        Class::Repeat,
        Class::Misprint,
        Class::NotReproducible,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Exact => "exact",
            Class::Modelled => "modelled",
            Class::Ratio => "ratio",
            Class::Direction => "direction",
            Class::Shown => "shown",
            Class::Time => "time",
            Class::Repeat => "repeat",
            Class::Misprint => "misprint",
            Class::NotReproducible => "not reproducible",
        }
    }

    /// Whether its cells are scored: those with an error model.
    pub(crate) fn scored(self) -> bool {
        matches!(
            self,
            Class::Exact | Class::Modelled | Class::Ratio | Class::Direction
        )
    }

    /// Whether syscost measures a figure for its cells.
    fn measured(self) -> bool {
        !matches!(self, Class::NotReproducible | Class::Misprint)
    }
}

impl Paper {
    /// The paper in `json`, checked: every cell's reason exists, every repeatable cell says
    /// what measures it, every ratio's column exists in its row.
    pub(crate) fn parse(json: &str) -> Result<Paper, String> {
        let p: Paper = serde_json::from_str(json).map_err(|e| e.to_string())?;
        for t in &p.tables {
            for c in &t.cells {
                p.check(t, c)
                    .map_err(|e| format!("{} {}: {} / {}: {e}", p.name, t.id, c.row, c.column))?;
            }
        }
        Ok(p)
    }

    fn check(&self, t: &Table, c: &PaperCell) -> Result<(), String> {
        if !self.reasons.contains_key(&c.why) {
            return Err(format!("no reason named {}", c.why));
        }
        written_value(&c.written)?;
        let measured = c.arm.is_some() && !c.metrics.is_empty();
        if c.class.measured() && c.class != Class::Repeat && !measured {
            return Err(format!(
                "a {} cell needs an arm and metrics",
                c.class.name()
            ));
        }
        if !c.class.measured() && measured {
            return Err(format!("a {} cell is not measured", c.class.name()));
        }
        if let Some((row, column)) = c.denominator()
            && (!matches!(c.class, Class::Ratio | Class::Time) || t.cell(row, column).is_none())
        {
            return Err(format!(
                "over {row} / {column}: no such cell in this table, or not a ratio"
            ));
        }
        if c.class == Class::Exact && c.within.is_none() && c.within_share.is_none() {
            return Err("an exact cell states its band (within or within_share)".into());
        }
        if c.class == Class::Direction {
            let [a, b] = &c.of[..] else {
                return Err("a direction names the two figures it is the change of (of)".into());
            };
            for at in [a, b] {
                self.cell_at(at).ok_or(format!("of {at}: no such cell"))?;
            }
        }
        match (&c.repeats, c.class) {
            (Some(r), Class::Repeat) if self.cell_at(r).is_some() => Ok(()),
            (Some(r), Class::Repeat) => Err(format!("repeats {r}: no such cell")),
            (None, Class::Repeat) => Err("a repeat names the cell it repeats".into()),
            (Some(_), _) => Err("only a repeat names a cell it repeats".into()),
            (None, _) => Ok(()),
        }
    }

    /// The cell at `TABLE / ROW / COLUMN`.
    pub(crate) fn cell_at(&self, at: &str) -> Option<(&Table, &PaperCell)> {
        let mut parts = at.splitn(3, " / ");
        let (table, row, column) = (parts.next()?, parts.next()?, parts.next()?);
        let t = self.tables.iter().find(|t| t.id == table)?;
        Some((t, t.cell(row, column)?))
    }

    /// The paper's spread of the figure at `TABLE / ROW / COLUMN`: perf's `( +- X% )` printed
    /// beside it (the cell `COLUMN +-` of its row), as a standard error in its unit per
    /// operation.
    pub(crate) fn standard_error(&self, at: &str) -> Option<f64> {
        let (t, c) = self.cell_at(at)?;
        let spread = t.cell(&c.row, &format!("{} +-", c.column))?;
        Some(t.value(c).abs() * t.value(spread) / 100.0)
    }

    /// Every cell, with its table.
    pub(crate) fn cells(&self) -> impl Iterator<Item = (&Table, &PaperCell)> {
        self.tables
            .iter()
            .flat_map(|t| t.cells.iter().map(move |c| (t, c)))
    }
}

impl Table {
    pub(crate) fn cell(&self, row: &str, column: &str) -> Option<&PaperCell> {
        self.cells
            .iter()
            .find(|c| c.row == row && c.column == column)
    }

    /// A cell's figure per operation: as written, times the table's factor; a spread in
    /// percent (perf's `( +-  0.07% )`) as written, being per operation already.
    pub(crate) fn value(&self, c: &PaperCell) -> f64 {
        let factor = if c.unit == "%" { 1.0 } else { self.factor };
        written_value(&c.written).unwrap_or(f64::NAN) * factor
    }
}

/// The figure of a written cell: what comes before a `±` spread (`3.565 ± 0.004M/s`).
pub(crate) fn figure_text(w: &str) -> &str {
    w.split('±').next().unwrap_or(w).trim()
}

/// The number a figure is written as: thousands separators, a `~`, a footnote's `*`, a
/// spread's `(+- 1.45%)` or `± 0.004`, and a unit after it (`191ns`, `M/s/cpu`) dropped.
pub(crate) fn written_value(w: &str) -> Result<f64, String> {
    let digits: String = figure_text(w)
        .trim_end_matches(')')
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '/')
        .chars()
        .filter(|c| !matches!(c, ',' | '~' | '*' | '(' | ')' | '%' | ' '))
        .collect();
    digits
        .trim_start_matches("+-")
        .parse::<f64>()
        .map_err(|_| format!("{w:?} is not a figure"))
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn figures_are_read_as_printed() {
        assert_eq!(written_value("4,174,224,305"), Ok(4174224305.0));
        assert_eq!(written_value("~6.6*"), Ok(6.6));
        assert_eq!(written_value("~0"), Ok(0.0));
        assert_eq!(written_value("(+- 1.45%)"), Ok(1.45));
        assert_eq!(written_value("(  +- 70.71% )"), Ok(70.71));
        assert_eq!(written_value("217ns"), Ok(217.0));
        assert_eq!(written_value("3.565 ± 0.004M/s"), Ok(3.565));
        assert_eq!(written_value("( 2.802M/s/cpu)"), Ok(2.802));
        assert_eq!(written_value("(0.371M/prod)"), Ok(0.371));
        assert!(written_value("n/a").is_err());
    }
}
