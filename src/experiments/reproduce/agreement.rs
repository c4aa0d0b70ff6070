//! When syscost's figure agrees with a paper's: within its class's stated tolerance, or within
//! the rounding of the figure as printed (`~0` is anything under 0.5), and how many cells of
//! each class do.

use super::paper::Class;
use serde::{Deserialize, Serialize};

/// How far apart a class's figures may be and still agree, as a fraction of the paper's.
pub(crate) fn tolerance(class: Class) -> Option<f64> {
    match class {
        // Exact counts of the same path on another kernel: close, not equal.
        Class::Exact => Some(0.05),
        // A model of the paper's cache, with this boot's slab placement.
        Class::Modelled => Some(0.25),
        // Time ratios between arms measured the same way.
        Class::Ratio => Some(0.10),
        Class::NotReproducible => None,
    }
}

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

/// Whether `ours` agrees with `paper` for a cell of `class` whose printed rounding is
/// `slack` (in the same unit); `None` when the class is never compared.
pub(crate) fn agrees(class: Class, paper: f64, ours: f64, slack: f64) -> Option<bool> {
    let tol = tolerance(class)?;
    Some((ours - paper).abs() <= (tol * paper.abs()).max(slack))
}

/// How the cells of one class fared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassSummary {
    pub class: Class,
    pub cells: usize,
    /// Cells syscost measured a figure for.
    pub measured: usize,
    pub agree: usize,
    /// The class's tolerance, as a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

/// Per class, from each cell's class and its agreement (`None`: not measured).
pub(crate) fn summarise(cells: &[(Class, Option<bool>)]) -> Vec<ClassSummary> {
    Class::ALL
        .iter()
        .map(|&class| {
            let of: Vec<Option<bool>> = cells
                .iter()
                .filter(|(c, _)| *c == class)
                .map(|(_, a)| *a)
                .collect();
            ClassSummary {
                class,
                cells: of.len(),
                measured: of.iter().filter(|a| a.is_some()).count(),
                agree: of.iter().filter(|a| **a == Some(true)).count(),
                tolerance: tolerance(class),
            }
        })
        .filter(|s| s.cells > 0)
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_figure_agrees_within_its_class_or_its_printed_rounding() {
        assert_eq!(agrees(Class::Exact, 417.0, 437.0, 0.5), Some(true), "4.8%");
        assert_eq!(agrees(Class::Exact, 417.0, 440.0, 0.5), Some(false), "5.5%");
        assert_eq!(
            agrees(Class::Modelled, 0.0, 0.3, rounding("~0")),
            Some(true)
        );
        assert_eq!(
            agrees(Class::Modelled, 0.0, 0.6, rounding("~0")),
            Some(false)
        );
        assert_eq!(agrees(Class::Ratio, 2.94, 3.2, 0.0), Some(true));
        assert_eq!(agrees(Class::NotReproducible, 1.0, 1.0, 0.0), None);
        assert_eq!(rounding("2.39"), 0.005);
        assert_eq!(rounding("4,174,224,305"), 0.5);
        assert_eq!(rounding("~6.6*"), 0.05);
    }

    #[test]
    fn classes_are_counted_apart() {
        let cells = [
            (Class::Exact, Some(true)),
            (Class::Exact, Some(false)),
            (Class::Exact, None),
            (Class::NotReproducible, None),
        ];
        let s = summarise(&cells);
        assert_eq!(s.len(), 2, "classes without cells are left out");
        assert_eq!((s[0].cells, s[0].measured, s[0].agree), (3, 2, 1));
        assert_eq!((s[1].class, s[1].measured), (Class::NotReproducible, 0));
    }
}
