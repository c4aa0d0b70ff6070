//! A table cell says what it holds (a measured value, a count, a change in percent, an
//! interval), not how it reads: each format turns it into text. The terminal, Markdown and
//! mail formats print it as the tables always have ("1,234", "+2.00%", "[99.39, 103.11]");
//! CSV writes plain numbers a spreadsheet or pandas reads as numbers, an interval or a value
//! with its spread as two columns.

use crate::core::num::{fmt_num, fmt_p};
use crate::stats::Interval;

#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    /// A measured value, printed with [`fmt_num`]'s digits.
    Num(f64),
    /// A small whole number (a rank, a number of runs), not grouped.
    Int(i64),
    /// A share or a relative spread in percent: "0.60%".
    Pct(f64),
    /// A signed change in percent: "+2.00%".
    Change(f64),
    /// A p-value, printed with [`fmt_p`].
    P(f64),
    /// An interval of values: "[99.39, 103.11]".
    Interval(Interval),
    /// An interval of changes in percent: "[+1.09%, +2.96%]".
    ChangeInterval(Interval),
    /// A value with its relative spread in percent: "0.485 (±0.48%)".
    Spread {
        value: f64,
        pct: f64,
    },
    /// A number whose printed form is particular to its table ("+24.7σ", "( +- 0.48% )");
    /// `unit`, when not empty, is added to the CSV column's name ("pstdev %").
    Shown {
        value: f64,
        text: String,
        unit: &'static str,
    },
    /// No value: "-" printed, an empty CSV field.
    Missing,
}

impl Cell {
    /// A number whose printed form is `text`.
    pub(crate) fn shown(value: f64, text: impl Into<String>) -> Cell {
        Cell::shown_in(value, text, "")
    }

    /// A number in `unit` whose printed form is `text`: its CSV column is named with the unit.
    pub(crate) fn shown_in(value: f64, text: impl Into<String>, unit: &'static str) -> Cell {
        Cell::Shown {
            value,
            text: text.into(),
            unit,
        }
    }

    /// An interval of values, or "-".
    pub(crate) fn interval(i: Option<(f64, f64)>) -> Cell {
        i.map_or(Cell::Missing, |(lo, hi)| {
            Cell::Interval(Interval::new(lo, hi))
        })
    }

    /// The cell as the human formats print it.
    pub(crate) fn text(&self) -> String {
        // Rounded first: a change that rounds to nothing reads +0.00%, not -0.00%.
        let change = |v: f64| format!("{:+.2}%", (v * 100.0).round() / 100.0 + 0.0);
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num(v) => fmt_num(*v),
            Cell::Int(n) => n.to_string(),
            Cell::Pct(v) => format!("{v:.2}%"),
            Cell::Change(v) => change(*v),
            Cell::P(p) => fmt_p(*p),
            Cell::Interval(i) => format!("[{}, {}]", fmt_num(i.lo), fmt_num(i.hi)),
            Cell::ChangeInterval(i) => format!("[{}, {}]", change(i.lo), change(i.hi)),
            Cell::Spread { value, pct } => format!("{} (±{pct:.2}%)", fmt_num(*value)),
            Cell::Shown { text, .. } => text.clone(),
            Cell::Missing => "-".into(),
        }
    }

    /// How many CSV fields the cell takes: two for an interval or a value with its spread.
    pub(crate) fn arity(&self) -> usize {
        match self {
            Cell::Interval(_) | Cell::ChangeInterval(_) | Cell::Spread { .. } => 2,
            _ => 1,
        }
    }

    /// The names of the CSV columns a column of such cells takes under `header`: a column in
    /// percent says so ("delta %") unless its header does.
    pub(crate) fn headers(&self, header: &str) -> Vec<String> {
        let pct = if header.ends_with('%') { "" } else { " %" };
        match self {
            Cell::Pct(_) | Cell::Change(_) => vec![format!("{header}{pct}")],
            Cell::ChangeInterval(_) => {
                vec![format!("{header} lo{pct}"), format!("{header} hi{pct}")]
            }
            Cell::Interval(_) => vec![format!("{header} lo"), format!("{header} hi")],
            Cell::Spread { .. } => vec![header.to_string(), format!("{header} %")],
            Cell::Shown { unit, .. } if !unit.is_empty() => vec![format!("{header} {unit}")],
            _ => vec![header.to_string()],
        }
    }

    /// The cell's CSV fields: plain numbers (Rust's shortest exact form), no grouping, no
    /// sign or unit; a non-finite number is an empty field.
    pub(crate) fn plain(&self) -> Vec<String> {
        let n = |v: f64| {
            if v.is_finite() {
                v.to_string()
            } else {
                String::new()
            }
        };
        match self {
            Cell::Text(s) => vec![s.clone()],
            Cell::Num(v) | Cell::Pct(v) | Cell::Change(v) | Cell::P(v) => vec![n(*v)],
            Cell::Shown { value, .. } => vec![n(*value)],
            Cell::Int(c) => vec![c.to_string()],
            Cell::Interval(i) | Cell::ChangeInterval(i) => vec![n(i.lo), n(i.hi)],
            Cell::Spread { value, pct } => vec![n(*value), n(*pct)],
            Cell::Missing => vec![String::new()],
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::Text(s.clone())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn human_text_is_what_the_tables_printed() {
        assert_eq!(Cell::Num(1234.5).text(), "1234.50");
        assert_eq!(Cell::Num(12345.6).text(), "12,346");
        assert_eq!(Cell::Change(2.0).text(), "+2.00%");
        assert_eq!(Cell::Change(-0.0004).text(), "+0.00%");
        assert_eq!(Cell::Pct(0.6).text(), "0.60%");
        assert_eq!(
            Cell::ChangeInterval(Interval::new(-1.0, 2.5)).text(),
            "[-1.00%, +2.50%]"
        );
        assert_eq!(
            Cell::Spread {
                value: 0.485,
                pct: 0.48
            }
            .text(),
            "0.485 (±0.48%)"
        );
        assert_eq!(Cell::Missing.text(), "-");
    }

    #[test]
    fn csv_fields_are_plain_numbers() {
        assert_eq!(Cell::Num(12345.6).plain(), ["12345.6"]);
        assert_eq!(Cell::Change(-9.99).plain(), ["-9.99"]);
        assert_eq!(Cell::Num(f64::NAN).plain(), [""]);
        assert_eq!(Cell::Interval(Interval::new(1.0, 2.0)).plain(), ["1", "2"]);
        assert_eq!(
            Cell::Interval(Interval::new(1.0, 2.0)).headers("95% CI"),
            ["95% CI lo", "95% CI hi"]
        );
        assert_eq!(Cell::shown(24.7, "+24.7σ").plain(), ["24.7"]);
    }
}
