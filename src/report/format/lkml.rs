//! `lkml`: fixed-width plain ASCII for mailing lists, with a dashed rule under the header.

use super::{Grid, Layout};

pub(crate) struct Lkml;

impl Layout for Lkml {
    fn shown<'g>(&self, g: &'g Grid) -> &'g [Grid] {
        g.narrow.as_deref().unwrap_or(std::slice::from_ref(g))
    }
    /// The fullest form that fits [`WIDTH`] in ASCII, else the shortest.
    fn line(&self, forms: &[String]) -> String {
        let plain: Vec<String> = forms.iter().map(|f| ascii(f)).collect();
        let fits = plain.iter().position(|f| f.chars().count() <= WIDTH);
        fits.or(plain.len().checked_sub(1))
            .map(|i| plain[i].clone())
            .unwrap_or_default()
    }
    fn prose(&self, s: &str) -> String {
        wrap_prose(&ascii(s))
    }
    fn table(&self, g: &Grid) -> String {
        fixed_width(g)
    }
}

/// Replace the few non-ASCII characters syscost prints with ASCII spellings.
pub fn ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '±' => out.push_str("+-"),
            'µ' | 'μ' => out.push('u'),
            '×' => out.push('x'),
            'σ' => out.push_str("sd"),
            '–' | '—' | '−' => out.push('-'),
            '≥' => out.push_str(">="),
            '≤' => out.push_str("<="),
            '²' => out.push_str("^2"),
            'ρ' => out.push_str("rho"),
            c if c.is_ascii() => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

/// The width every line fits, as a mail client wraps at and the audit series' tables keep to.
pub(crate) const WIDTH: usize = 80;

/// One line of prose wrapped to [`WIDTH`] (see [`super::wrap::prose`]).
pub(crate) fn wrap_prose(line: &str) -> String {
    super::wrap::prose(line, WIDTH, 0)
}

/// A table in plain fixed-width ASCII, every line within [`WIDTH`], with a dashed rule under
/// its header.
fn fixed_width(g: &Grid) -> String {
    super::fit::fit(g, WIDTH, (&ascii, true))
}

#[cfg(test)]
mod unit {
    use super::*;

    fn widest(text: &str) -> usize {
        text.lines().map(str::len).max().unwrap_or(0)
    }

    #[test]
    fn prose_wraps_with_its_indent() {
        let long = format!(" {}", "word ".repeat(40));
        let w = wrap_prose(&long);
        assert!(widest(&w) <= WIDTH, "{w}");
        assert!(w.lines().all(|l| l.starts_with(" word")), "{w}");
        let item = format!("   - {}", "item ".repeat(30));
        let w = wrap_prose(&item);
        assert!(w.lines().skip(1).all(|l| l.starts_with("     item")), "{w}");
        let note = format!(" [12] {}", "note ".repeat(30));
        let w = wrap_prose(&note);
        assert!(
            w.lines().skip(1).all(|l| l.starts_with("      note")),
            "{w}"
        );
        let path = format!(" /{}", "x".repeat(200));
        assert!(widest(&wrap_prose(&path)) <= WIDTH);
        assert_eq!(wrap_prose(" short line"), " short line");
        assert_eq!(wrap_prose(""), "");
    }

    fn grid(cols: usize, cell: &str) -> Grid {
        let headers: Vec<String> = (0..cols).map(|i| format!("col{i}")).collect();
        let mut g = Grid {
            headers,
            right: (2..cols).collect(),
            ..Grid::default()
        };
        g.row((0..cols).map(|i| format!("{cell}{i}")));
        g
    }

    #[test]
    fn narrow_tables_are_unchanged() {
        let g = grid(3, "value");
        assert_eq!(
            fixed_width(&g),
            "col0    col1      col2\n----------------------\nvalue0  value1  value2\n"
        );
    }

    #[test]
    fn a_long_text_column_wraps_in_its_cells() {
        let mut g = Grid::new(&["metric", "median", "verdict"]).right([1]);
        g.row([
            "time (ns/call)",
            "112.10",
            "no verdict: one run (its samples share one process; use --runs 5 or more)",
        ]);
        let t = fixed_width(&g);
        assert!(widest(&t) <= WIDTH, "{t}");
        assert!(t.contains("no verdict"), "{t}");
        assert!(t.contains("or more)"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with('-')).count(),
            1,
            "one table: {t}"
        );
    }

    #[test]
    fn wide_tables_stack_with_their_labels() {
        let g = grid(14, "a-rather-wide-cell-");
        let t = fixed_width(&g);
        assert!(widest(&t) <= WIDTH, "{t}");
        for i in 0..14 {
            assert!(
                t.contains(&format!("a-rather-wide-cell-{i}")),
                "column {i}: {t}"
            );
        }
        let stacks = t.lines().filter(|l| l.starts_with("col0")).count();
        assert!(stacks > 1, "{t}");
    }
}
