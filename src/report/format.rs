//! Tables in the formats syscost prints: a terminal table, CSV, Markdown, and `lkml`: plain
//! fixed-width ASCII that pastes cleanly into a patch cover letter (no box drawing, no Unicode).
//! JSON output is the serialised result itself, not a table.

use comfy_table::{CellAlignment, Table, presets};
use serde::{Deserialize, Serialize};

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// The result as JSON.
    Json,
    /// Comma-separated values, one table after another separated by a blank line.
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// Fixed-width plain ASCII for mailing lists.
    Lkml,
}

/// A titled table with optional notes under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    pub title: Option<String>,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns to right-align (numbers).
    pub right: Vec<usize>,
    pub notes: Vec<String>,
}

impl Grid {
    pub fn new(headers: &[&str]) -> Grid {
        Grid {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Grid::default()
        }
    }

    pub fn title(mut self, t: impl Into<String>) -> Grid {
        self.title = Some(t.into());
        self
    }

    pub fn right(mut self, cols: impl IntoIterator<Item = usize>) -> Grid {
        self.right = cols.into_iter().collect();
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
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

fn terminal(g: &Grid) -> String {
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    t.set_header(g.headers.clone());
    for r in &g.rows {
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

fn fixed_width(g: &Grid) -> String {
    let cells: Vec<Vec<String>> = std::iter::once(&g.headers)
        .chain(&g.rows)
        .map(|r| r.iter().map(|c| ascii(c)).collect())
        .collect();
    let ncol = g.headers.len();
    let width: Vec<usize> = (0..ncol)
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (ri, r) in cells.iter().enumerate() {
        let mut line = String::new();
        for (i, w) in width.iter().enumerate() {
            let c = r.get(i).map(String::as_str).unwrap_or("");
            if i > 0 {
                line.push_str("  ");
            }
            if g.right.contains(&i) {
                line.push_str(&format!("{c:>w$}"));
            } else {
                line.push_str(&format!("{c:<w$}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if ri == 0 {
            let total = width.iter().sum::<usize>() + 2 * ncol.saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

fn markdown(g: &Grid) -> String {
    let esc = |c: &str| c.replace('|', "\\|");
    let mut out = String::new();
    out.push_str(&format!(
        "| {} |\n",
        g.headers
            .iter()
            .map(|h| esc(h))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    let seps: Vec<&str> = (0..g.headers.len())
        .map(|i| if g.right.contains(&i) { "---:" } else { "---" })
        .collect();
    out.push_str(&format!("| {} |\n", seps.join(" | ")));
    for r in &g.rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

fn csv(g: &Grid) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&g.headers).expect("in-memory CSV");
    for r in &g.rows {
        w.write_record(r).expect("in-memory CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("CSV of UTF-8 text")
}

/// Render grids, with free text (`preamble`, printed first, and each grid's title and notes)
/// for the text formats. CSV carries the tables only. JSON is not a grid format.
pub fn render(format: Format, preamble: &[String], grids: &[Grid]) -> String {
    let mut out = String::new();
    let text = |s: &str| {
        if format == Format::Lkml {
            ascii(s)
        } else {
            s.to_string()
        }
    };
    if format != Format::Csv {
        for line in preamble {
            out.push_str(&text(line));
            out.push('\n');
        }
        if !preamble.is_empty() {
            out.push('\n');
        }
    }
    for (i, g) in grids.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match format {
            Format::Csv => out.push_str(&csv(g)),
            _ => {
                if let Some(t) = &g.title {
                    let t = text(t);
                    match format {
                        Format::Markdown => out.push_str(&format!("**{t}**\n\n")),
                        _ => out.push_str(&format!("{t}\n")),
                    }
                }
                out.push_str(&match format {
                    Format::Markdown => markdown(g),
                    Format::Lkml => fixed_width(g),
                    _ => terminal(g),
                });
                if !g.notes.is_empty() {
                    if format == Format::Markdown {
                        out.push('\n');
                    }
                    for n in &g.notes {
                        out.push_str(&text(n));
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod unit {
    use super::*;

    fn grid() -> Grid {
        let mut g = Grid::new(&["metric", "median", "±%"])
            .title("T")
            .right([1, 2]);
        g.row(vec![
            "time (ns/call)".into(),
            "102.13".into(),
            "0.45%".into(),
        ]);
        g.row(vec!["a|b, \"c\"".into(), "1,234".into(), "1.00%".into()]);
        g.notes.push("[1] note µs".into());
        g
    }

    #[test]
    fn lkml_is_plain_ascii_fixed_width() {
        let s = render(Format::Lkml, &["pre ±".into()], &[grid()]);
        assert!(s.is_ascii(), "{s}");
        assert!(s.contains("pre +-"));
        assert!(s.contains("[1] note us"));
        let lines: Vec<&str> = s.lines().collect();
        let header = lines.iter().position(|l| l.starts_with("metric")).unwrap();
        assert!(lines[header + 1].chars().all(|c| c == '-'));
        // Right-aligned numbers end in the same column.
        let ends: Vec<usize> = lines[header + 2..header + 4]
            .iter()
            .map(|l| l.find('%').unwrap())
            .collect();
        assert_eq!(ends[0], ends[1]);
    }

    #[test]
    fn csv_quotes_and_has_no_prose() {
        let s = render(Format::Csv, &["pre".into()], &[grid()]);
        assert_eq!(
            s,
            "metric,median,±%\ntime (ns/call),102.13,0.45%\n\"a|b, \"\"c\"\"\",\"1,234\",1.00%\n"
        );
    }

    #[test]
    fn markdown_escapes_pipes_and_aligns_numbers() {
        let s = render(Format::Markdown, &[], &[grid()]);
        assert!(s.contains("| metric | median | ±% |\n| --- | ---: | ---: |"));
        assert!(s.contains("a\\|b"));
        assert!(s.starts_with("**T**"));
    }
}
