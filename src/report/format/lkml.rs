//! `lkml`: fixed-width plain ASCII for mailing lists, with a dashed rule under the header.

use super::{Grid, Layout};
use unicode_width::UnicodeWidthStr;

pub(crate) struct Lkml;

impl Layout for Lkml {
    fn for_mail(&self) -> bool {
        true
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

/// Columns narrower than this are never wrapped to make a table fit.
const MIN_WRAP: usize = 16;

/// One line of prose wrapped to [`WIDTH`] (see [`super::wrap::prose`]).
pub(crate) fn wrap_prose(line: &str) -> String {
    super::wrap::prose(line, WIDTH, 0)
}

/// A cell wrapped to `width` columns (one line if it fits).
fn wrap_cell(c: &str, width: usize) -> Vec<String> {
    if c.width() <= width {
        return vec![c.to_string()];
    }
    super::wrap::words(c, width, width)
}

/// A table in plain fixed-width ASCII, every line within [`WIDTH`], with a dashed rule under
/// its header.
fn fixed_width(g: &Grid) -> String {
    fit(g, WIDTH, true)
}

/// A table with every line within `limit` columns (`mail`: in ASCII, with a dashed rule under
/// the header). A table that is wider first has its widest text column wrapped inside its
/// cells; if that is not enough, its columns are dealt into stacked tables that each repeat the
/// leading label columns (as R prints a wide data frame), so nothing is cut and no line wraps.
pub(crate) fn fit(g: &Grid, limit: usize, mail: bool) -> String {
    let rows = g.texts();
    let cells: Vec<Vec<String>> = std::iter::once(&g.headers)
        .chain(&rows)
        .map(|r| {
            r.iter()
                .map(|c| if mail { ascii(c) } else { c.clone() })
                .collect()
        })
        .collect();
    let ncol = g.headers.len();
    let mut width: Vec<usize> = (0..ncol)
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.width()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let span = |cols: &[usize], w: &[usize]| -> usize {
        cols.iter().map(|&c| w[c]).sum::<usize>() + 2 * cols.len().saturating_sub(1)
    };
    let all: Vec<usize> = (0..ncol).collect();
    if span(&all, &width) <= limit {
        return block(&cells, &all, &width, (&g.right, mail));
    }
    // A header wider than its column's cells wraps at its words first.
    for (c, w) in width.iter_mut().enumerate() {
        let data = (cells[1..].iter()).map(|r| r.get(c).map_or(0, |x| x.width()));
        let word = g.headers[c]
            .split(' ')
            .map(|x| x.width())
            .max()
            .unwrap_or(0);
        *w = data.max().unwrap_or(0).max(word).min(*w);
    }
    if span(&all, &width) <= limit {
        return block(&cells, &all, &width, (&g.right, mail));
    }
    // One table, with the widest left-aligned column (a verdict, a note) wrapped.
    let text_col = (1..ncol)
        .filter(|c| !g.right.contains(c) && width[*c] > MIN_WRAP)
        .max_by_key(|&c| width[c]);
    if let Some(c) = text_col {
        let others = span(&all, &width) - width[c];
        if others + MIN_WRAP <= limit {
            let mut w = width.clone();
            w[c] = limit - others;
            return block(&cells, &all, &w, (&g.right, mail));
        }
    }
    // Stacked tables: the leading left-aligned columns (the labels) in each.
    let mut keys = vec![0];
    for c in 1..ncol {
        if g.right.contains(&c) || span(&[keys.clone(), vec![c]].concat(), &width) > limit / 2 {
            break;
        }
        keys.push(c);
    }
    let mut w = width.clone();
    w[0] = w[0].min(limit / 2);
    let room = limit - span(&keys, &w) - 2;
    let mut chunks: Vec<Vec<usize>> = vec![Vec::new()];
    for c in keys.last().unwrap() + 1..ncol {
        w[c] = w[c].min(room);
        let cur = chunks.last_mut().unwrap();
        if cur.is_empty() || span(&[cur.clone(), vec![c]].concat(), &w) <= room {
            cur.push(c);
            continue;
        }
        // A text column (a verdict) wraps into what is left of the block, if enough is.
        let left = room.saturating_sub(span(cur, &w) + 2);
        if !g.right.contains(&c) && left >= MIN_WRAP {
            w[c] = left;
            cur.push(c);
        } else {
            chunks.push(vec![c]);
        }
    }
    chunks
        .iter()
        .map(|chunk| {
            block(
                &cells,
                &[keys.clone(), chunk.clone()].concat(),
                &w,
                (&g.right, mail),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The columns `cols` of `cells` (the header first), each `width[c]` wide, with a dashed rule
/// under the header when `rule`; a cell wider than its column wraps onto more lines.
fn block(
    cells: &[Vec<String>],
    cols: &[usize],
    width: &[usize],
    (right, rule): (&[usize], bool),
) -> String {
    let mut out = String::new();
    for (ri, r) in cells.iter().enumerate() {
        let wrapped: Vec<Vec<String>> = cols
            .iter()
            .map(|&c| wrap_cell(r.get(c).map(String::as_str).unwrap_or(""), width[c]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let mut line = String::new();
            for (i, &c) in cols.iter().enumerate() {
                let cell = wrapped[i].get(k).map(String::as_str).unwrap_or("");
                let w = width[c];
                if i > 0 {
                    line.push_str("  ");
                }
                if right.contains(&c) {
                    line.push_str(&format!("{cell:>w$}"));
                } else {
                    line.push_str(&format!("{cell:<w$}"));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if ri == 0 && rule {
            let total = cols.iter().map(|&c| width[c]).sum::<usize>() + 2 * (cols.len() - 1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
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
