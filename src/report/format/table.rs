//! Aligned columns for a terminal (comfy-table's layout, no borders).

use super::{Grid, Layout};
use comfy_table::{CellAlignment, presets};
use unicode_width::UnicodeWidthStr;

pub(crate) struct Table;

/// The width every line of the table format keeps to, prose and tables: what a reviewer
/// pastes into a patch's cover letter or a bug without a line wrapping.
pub(crate) const WIDTH: usize = 100;

impl Layout for Table {
    fn prose(&self, s: &str) -> String {
        super::wrap::prose(s, WIDTH, 2)
    }

    fn table(&self, g: &Grid) -> String {
        let rows = g.texts();
        let multiline = (rows.iter().flatten().chain(&g.headers)).any(|c| c.contains('\n'));
        let out = match multiline {
            true => terminal(g, &rows),
            false => aligned(g, &rows),
        };
        match out.lines().any(|l| l.width() > WIDTH) {
            // Wider than a terminal's line: its widest text column wrapped, or its columns
            // stacked under their labels, as the mail format fits 80.
            true => {
                super::fit::fit(g, WIDTH - 1, (&|c: &str| c.to_string(), false))
                    .lines()
                    .map(|l| {
                        if l.is_empty() {
                            String::new()
                        } else {
                            format!(" {l}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
                    + "\n"
            }
            false => out,
        }
    }
}

/// The same layout as [`terminal`] for cells of one line, written directly: comfy-table
/// allocates per cell and per pass, which took 0.9 s and 420 MB for the 100,000 rows of a
/// lab's `history list`; this takes a tenth of it. Each cell is padded by one space on both
/// sides, aligned in its column's width, and trailing spaces are trimmed.
fn aligned(g: &Grid, rows: &[Vec<String>]) -> String {
    let cols = rows
        .iter()
        .map(Vec::len)
        .chain([g.headers.len()])
        .max()
        .unwrap_or(0);
    let mut width = vec![0usize; cols];
    for row in std::iter::once(&g.headers).chain(rows) {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.width());
        }
    }
    let mut out = String::new();
    let mut line = String::new();
    for row in std::iter::once(&g.headers).chain(rows) {
        line.clear();
        for (i, w) in width.iter().enumerate() {
            let c = row.get(i).map(String::as_str).unwrap_or("");
            let pad = w - c.width();
            line.push(' ');
            if g.right.contains(&i) {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(c);
            } else {
                line.push_str(c);
                line.extend(std::iter::repeat_n(' ', pad));
            }
            line.push(' ');
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn terminal(g: &Grid, rows: &[Vec<String>]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(presets::NOTHING);
    t.set_header(g.headers.clone());
    for r in rows {
        t.add_row(r.clone());
    }
    for (i, col) in t.column_iter_mut().enumerate() {
        if g.right.contains(&i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out: String = t
        .to_string()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn the_direct_layout_is_comfy_tables() {
        let mut g = Grid::new(&["metric", "median", "±%", ""]).right([1, 2]);
        g.row(["time (ns/call)", "152.64", "0.5%", ""]);
        g.row(["µops", "1,234,567", "12.25%", "x"]);
        g.row(["short", ""]);
        g.row(["", "7", "", "[1]"]);
        let rows = g.texts();
        assert_eq!(aligned(&g, &rows), terminal(&g, &rows));
        let empty = Grid::new(&["a", "b"]);
        assert_eq!(aligned(&empty, &[]), terminal(&empty, &[]));
    }

    #[test]
    fn a_table_wider_than_a_line_wraps_its_cells_to_fit() {
        // A campaign's profile of seven arms: a column per arm and one per change.
        let headers: Vec<String> = std::iter::once("function".to_string())
            .chain((0..13).map(|i| format!("vmlinuz-6.12.{i}")))
            .collect();
        let mut g = Grid::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
        g.row(
            std::iter::once("syscall_exit_to_user_mode_prepare".to_string())
                .chain((0..13).map(|i| format!("{}.00", 300 + i))),
        );
        let out = Table.table(&g);
        assert!(out.lines().all(|l| l.width() <= WIDTH), "{out}");
        assert!(out.contains("301.00"), "{out}");
        // A narrow one keeps its one-line layout.
        let mut small = Grid::new(&["a", "b"]);
        small.row(["x", "1"]);
        assert_eq!(Table.table(&small), " a  b\n x  1\n");
    }
}
