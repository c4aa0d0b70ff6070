//! When syscost's figure agrees with a paper's, by the cell's error model (its class: an exact
//! count within its band, a modelled figure within the boots' range, a ratio within 10% where
//! that tells it from 1, a direction by its sign), each widened by the rounding of the figure as
//! printed (`~0` is anything under 0.5); and how many cells of each class do. Cells without an
//! error model (a stand-in's totals, time under TCG, a repeat, a misprint) are never scored.

use super::paper::Class;
use serde::{Deserialize, Serialize};

/// What an exact count may stray from a whole one: it is shown to two decimals.
const EXACT_SLACK: f64 = 0.005;

/// A ratio agrees within 10%; one within 10% of 1 is not scored.
pub(crate) const RATIO_TOLERANCE: f64 = 0.10;

/// Half a unit of the last digit `written` prints (`2.39`: 0.005; `~0`: 0.5): a figure within
/// it of the paper's cannot be told apart from it.
pub(crate) fn rounding(written: &str) -> f64 {
    let number: String = super::paper::figure_text(written)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    0.5 * 10f64.powi(-(decimals as i32))
}

/// What a scored cell is compared by: its class, its band, and the paper's printed rounding
/// (`slack`, in the same unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Model {
    pub class: Class,
    /// An exact cell's band (the wider of its absolute band and its share of the paper's).
    pub band: f64,
    pub slack: f64,
}

/// Whether syscost's figure (`ours`, the median boot; `range`, the lowest and highest boot)
/// agrees with `paper` under `m`; `None` when the cell is not scored (its class has no error
/// model, or a ratio's tolerance does not tell it from 1).
pub(crate) fn agrees(m: Model, paper: f64, ours: f64, range: (f64, f64)) -> Option<bool> {
    match m.class {
        // An exact count carries a few thousandths of the loop's own bookkeeping per call: a
        // whole instruction on the band's edge (19.0003 against ~20, ±1) is in it.
        Class::Exact => Some((ours - paper).abs() <= m.band.max(m.slack) + EXACT_SLACK),
        Class::Modelled => Some(range.0 - m.slack <= paper && paper <= range.1 + m.slack),
        Class::Ratio if (paper - 1.0).abs() <= RATIO_TOLERANCE => None,
        Class::Ratio => Some((ours - paper).abs() <= (RATIO_TOLERANCE * paper.abs()).max(m.slack)),
        // Every boot moved the paper's way: a median's sign alone follows one placement.
        Class::Direction if paper < 0.0 => Some(range.1 < 0.0),
        Class::Direction => Some(range.0 > 0.0),
        _ => None,
    }
}

/// How the cells of one class fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassSummary {
    pub class: Class,
    pub cells: usize,
    /// Cells syscost measured a figure for.
    pub measured: usize,
    pub agree: usize,
    /// Measured cells it scores (a ratio too close to 1 to tell from it is not).
    #[serde(default)]
    pub scored: usize,
}

/// One cell as the summary counts it: its class, whether syscost measured it, and whether it
/// agrees (`None`: not scored).
pub(crate) type Counted = (Class, bool, Option<bool>);

/// Per class, from each cell's class, measurement and agreement.
pub(crate) fn summarise(cells: &[Counted]) -> Vec<ClassSummary> {
    Class::ALL
        .iter()
        .map(|&class| {
            let of: Vec<(bool, Option<bool>)> = cells
                .iter()
                .filter(|(c, _, _)| *c == class)
                .map(|(_, m, a)| (*m, *a))
                .collect();
            ClassSummary {
                class,
                cells: of.len(),
                measured: of.iter().filter(|(m, _)| *m).count(),
                scored: of.iter().filter(|(_, a)| a.is_some()).count(),
                agree: of.iter().filter(|(_, a)| *a == Some(true)).count(),
            }
        })
        .filter(|s| s.cells > 0)
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    fn model(class: Class, band: f64, slack: f64) -> Model {
        Model { class, band, slack }
    }

    #[test]
    fn each_class_agrees_by_its_own_error_model() {
        let exact = model(Class::Exact, 1.0, 0.5);
        assert_eq!(
            agrees(exact, 20.0, 18.9996, (18.9996, 18.9996)),
            Some(true),
            "the edge"
        );
        assert_eq!(agrees(exact, 20.0, 18.99, (18.99, 18.99)), Some(false));
        assert_eq!(agrees(exact, -8.0, -7.1, (-7.1, -7.1)), Some(true));
        assert_eq!(agrees(exact, -8.0, -6.9, (-6.9, -6.9)), Some(false));
        assert_eq!(
            agrees(model(Class::Exact, 34.0, 0.05), -340.8, -310.0, (0.0, 0.0)),
            Some(true)
        );
        // A modelled figure lies within the boots' range, widened by the printed rounding.
        let modelled = model(Class::Modelled, 0.0, rounding("~6.6*"));
        assert_eq!(agrees(modelled, 6.6, 3.0, (2.0, 6.56)), Some(true));
        assert_eq!(agrees(modelled, 6.6, 3.0, (2.0, 6.5)), Some(false));
        assert_eq!(
            agrees(model(Class::Modelled, 0.0, 0.5), 0.0, 0.3, (0.1, 0.4)),
            Some(true)
        );
        let direction = model(Class::Direction, 0.0, 0.0);
        assert_eq!(agrees(direction, -2.0, -0.1, (-0.3, -0.1)), Some(true));
        let one_placement = agrees(direction, -2.0, -0.1, (-0.3, 10.9));
        assert_eq!(one_placement, Some(false), "not every boot moved that way");
        assert_eq!(agrees(direction, 2.0, 0.0, (0.0, 0.0)), Some(false));
        for class in [
            Class::Shown,
            Class::Time,
            Class::Repeat,
            Class::Misprint,
            Class::NotReproducible,
        ] {
            assert_eq!(
                agrees(model(class, 1e9, 1e9), 1.0, 1.0, (1.0, 1.0)),
                None,
                "{class:?}"
            );
        }
        assert_eq!(rounding("2.39"), 0.005);
        assert_eq!(rounding("4,174,224,305"), 0.5);
        assert_eq!(rounding("~6.6*"), 0.05);
    }

    #[test]
    fn a_null_ratio_never_agrees_with_an_effect() {
        let ratio = model(Class::Ratio, 0.0, 0.0);
        // The RFC's 64-byte build: 8% fewer misses; 10% cannot tell that from no change.
        assert_eq!(agrees(ratio, 0.92, 1.0, (1.0, 1.0)), None);
        assert_eq!(
            agrees(ratio, 1.0, 1.0, (1.0, 1.0)),
            None,
            "sizes at 1 by construction"
        );
        // The series' x2.94: a null result does not agree, a close one does.
        assert_eq!(agrees(ratio, 2.94, 1.0, (1.0, 1.0)), Some(false));
        assert_eq!(agrees(ratio, 2.94, 3.2, (3.2, 3.2)), Some(true));
    }

    #[test]
    fn classes_are_counted_apart() {
        let cells = [
            (Class::Exact, true, Some(true)),
            (Class::Exact, true, Some(false)),
            (Class::Exact, false, None),
            (Class::Ratio, true, None),
            (Class::NotReproducible, false, None),
        ];
        let s = summarise(&cells);
        assert_eq!(s.len(), 3, "classes without cells are left out");
        assert_eq!(
            (s[0].cells, s[0].measured, s[0].scored, s[0].agree),
            (3, 2, 2, 1)
        );
        assert_eq!(
            (s[1].class, s[1].measured, s[1].scored),
            (Class::Ratio, 1, 0)
        );
        assert_eq!((s[2].class, s[2].measured), (Class::NotReproducible, 0));
    }
}
