//! The text formats syscost prints, one file each: [`table`] (aligned columns for a terminal),
//! [`csv`], [`markdown`] and [`lkml`] (plain fixed-width ASCII that pastes cleanly into a patch
//! cover letter: no box drawing, no Unicode); [`json`] is the serialised result itself. Every
//! result kind is laid out as a preamble and [`Grid`]s (see `report::Render`), and [`render`]
//! hands them to the format's [`Layout`], which alone turns their typed [`Cell`]s into text and
//! chooses what fits its width (a wide table or the narrower blocks it carries, the fullest
//! form of a fixed line that fits). A new format is one file implementing [`Layout`] and one
//! variant of [`Format`].

pub(crate) mod cell;
pub(crate) mod csv;
pub(crate) mod fit;
pub(crate) mod json;
pub(crate) mod lkml;
pub(crate) mod markdown;
pub(crate) mod table;
pub(crate) mod wrap;

use serde::{Deserialize, Serialize};

pub(crate) use cell::Cell;
pub use lkml::ascii;

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// The result as JSON.
    Json,
    /// Comma-separated plain numbers, one table after another separated by a blank line.
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// Fixed-width plain ASCII for mailing lists.
    Lkml,
}

/// A titled table of typed cells with optional notes under it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    pub title: Option<String>,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Columns to right-align (numbers).
    pub right: Vec<usize>,
    pub notes: Vec<String>,
    /// The same table as narrower blocks (one a metric), for a format that keeps to a mail's
    /// width; `None`: that format prints the table itself, `Some` of none: the table is left
    /// out there, its blocks shown with another's.
    pub narrow: Option<Vec<Grid>>,
    /// How many leading columns name a row (a metric and its arm), repeated in every block
    /// of a table too wide for its line; 0: the leading text columns that fit in half the
    /// line.
    pub keys: usize,
}

impl Grid {
    pub(crate) fn new(headers: &[&str]) -> Grid {
        Grid {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Grid::default()
        }
    }

    pub(crate) fn title(mut self, t: impl Into<String>) -> Grid {
        self.title = Some(t.into());
        self
    }

    /// Its first `n` columns name a row: every block of the table split to fit a line repeats
    /// them.
    pub(crate) fn keys(mut self, n: usize) -> Grid {
        self.keys = n;
        self
    }

    pub(crate) fn right(mut self, cols: impl IntoIterator<Item = usize>) -> Grid {
        self.right = cols.into_iter().collect();
        self
    }

    pub(crate) fn row(&mut self, cells: impl IntoIterator<Item = impl Into<Cell>>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Without those of columns `cols` that hold nothing in any row (every cell missing).
    pub(crate) fn without_empty(mut self, cols: &[usize]) -> Grid {
        let mut empty: Vec<usize> = (cols.iter().copied())
            .filter(|&c| (self.rows.iter()).all(|r| matches!(r.get(c), Some(Cell::Missing) | None)))
            .collect();
        empty.sort_unstable();
        for &c in empty.iter().rev() {
            self.headers.remove(c);
            for r in &mut self.rows {
                if c < r.len() {
                    r.remove(c);
                }
            }
            self.right.retain(|&x| x != c);
            self.right
                .iter_mut()
                .filter(|x| **x > c)
                .for_each(|x| *x -= 1);
        }
        self
    }

    /// The rows as the human formats print them.
    pub(crate) fn texts(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| r.iter().map(Cell::text).collect())
            .collect()
    }
}

/// How one text format lays out a document of free text and tables.
pub(crate) trait Layout {
    /// Whether free text (the preamble, titles, notes) is written at all.
    fn has_prose(&self) -> bool {
        true
    }
    /// A line of free text as this format writes it.
    fn prose(&self, s: &str) -> String {
        s.to_string()
    }
    /// A table's title line(s).
    fn title(&self, t: &str) -> String {
        format!("{t}\n")
    }
    /// The table itself.
    fn table(&self, g: &Grid) -> String;
    /// What separates a table from its notes.
    fn before_notes(&self) -> &'static str {
        ""
    }
    /// The tables this format prints for `g`: `g` itself, or the narrower blocks it carries
    /// (see [`Grid::narrow`]) in a format that keeps to a mail's width.
    fn shown<'g>(&self, g: &'g Grid) -> &'g [Grid] {
        std::slice::from_ref(g)
    }
    /// A line of fixed text said in `forms`, from the fullest to the shortest: the one this
    /// format prints, as it prints it (the fullest, unless the format keeps to a width).
    fn line(&self, forms: &[String]) -> String {
        forms.first().cloned().unwrap_or_default()
    }
}

impl Format {
    /// The layout of a text format (JSON documents are not laid out: they are serialised).
    pub(crate) fn layout(self) -> &'static dyn Layout {
        match self {
            Format::Table | Format::Json => &table::Table,
            Format::Csv => &csv::Csv,
            Format::Markdown => &markdown::Markdown,
            Format::Lkml => &lkml::Lkml,
        }
    }
}

/// Render grids, with free text (`preamble`, printed first, and each grid's title and notes)
/// for the formats that carry prose. CSV carries the tables only. JSON is not a grid format.
pub(crate) fn render(format: Format, preamble: &[String], grids: &[Grid]) -> String {
    let l = format.layout();
    let mut out = String::new();
    if l.has_prose() {
        for line in preamble {
            out.push_str(&l.prose(line));
            out.push('\n');
        }
        if !preamble.is_empty() {
            out.push('\n');
        }
    }
    let mut first = true;
    for g in grids {
        let shown = l.shown(g);
        // Blocks shown for a table say its title before them and its notes after them.
        let blocks = !std::ptr::eq(shown.as_ptr(), g);
        for (i, b) in shown.iter().enumerate() {
            if !first {
                out.push('\n');
            }
            first = false;
            let title = (blocks && i == 0).then_some(&g.title).into_iter().flatten();
            if l.has_prose() {
                for t in title.chain(&b.title) {
                    out.push_str(&l.title(&l.prose(t)));
                }
            }
            out.push_str(&l.table(b));
            let last = blocks && i + 1 == shown.len();
            let notes: Vec<&String> = b
                .notes
                .iter()
                .chain(last.then_some(&g.notes).into_iter().flatten())
                .collect();
            if l.has_prose() && !notes.is_empty() {
                out.push_str(l.before_notes());
                for n in notes {
                    out.push_str(&l.prose(n));
                    out.push('\n');
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
        g.row(["time (ns/call)".into(), Cell::Num(102.13), Cell::Pct(0.45)]);
        g.row(["a|b, \"c\"".into(), Cell::Num(12345.0), Cell::Pct(1.0)]);
        g.notes.push("[1] note µs".into());
        g
    }

    /// A table that carries narrower blocks is printed as those in a mail, under its title and
    /// over its notes (a campaign's mail once had its comparison's blocks without either), as
    /// itself in every other format; one whose blocks are none is left out of a mail.
    #[test]
    fn each_format_chooses_between_a_table_and_its_narrow_blocks() {
        let mut block = Grid::new(&["", "median"]).title("B").right([1]);
        block.row(["a".into(), Cell::Num(1.0)]);
        let mut wide = grid();
        wide.narrow = Some(vec![block.clone(), block.title("C")]);
        let mut gone = grid().title("G");
        gone.narrow = Some(Vec::new());
        let grids = [wide, gone];
        let mail = render(Format::Lkml, &[], &grids);
        assert!(
            mail.starts_with("T\nB\n") && mail.contains("\nC\n"),
            "{mail}"
        );
        let note = mail.find("[1] note us").expect("the table's note");
        assert!(
            note > mail.find("\nC\n").unwrap(),
            "under the last block: {mail}"
        );
        assert_eq!(mail.matches("[1] note").count(), 1, "{mail}");
        assert!(
            !mail.contains("time (ns/call)") && !mail.contains("\nG\n"),
            "{mail}"
        );
        for f in [Format::Table, Format::Markdown, Format::Csv] {
            let text = render(f, &[], &grids);
            assert!(text.contains("time (ns/call)"), "{f:?}: {text}");
            assert!(
                !text.contains("\nB\n") && !text.starts_with("B\n"),
                "{f:?}: {text}"
            );
        }
    }

    /// A fixed line in several forms: the fullest that fits a mail, in ASCII; the fullest in
    /// the other formats.
    #[test]
    fn a_mail_takes_the_fullest_form_of_a_line_that_fits() {
        let forms = ["x ±".repeat(30), "y ±".repeat(20), "z".repeat(90)];
        assert_eq!(Format::Lkml.layout().line(&forms), "y +-".repeat(20));
        assert_eq!(Format::Table.layout().line(&forms), forms[0]);
        let none_fit = ["z".repeat(90), "w".repeat(85)];
        assert_eq!(Format::Lkml.layout().line(&none_fit), none_fit[1]);
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
    fn columns_with_nothing_in_any_row_can_go() {
        let mut g = Grid::new(&["metric", "p", "effect", "verdict"]).right([1, 2]);
        g.row([
            Cell::from("insns"),
            Cell::Missing,
            Cell::Num(2.0),
            Cell::from("higher"),
        ]);
        g.row([
            Cell::from("branches"),
            Cell::Missing,
            Cell::Missing,
            Cell::from("equal"),
        ]);
        let g = g.without_empty(&[1, 2]);
        assert_eq!(g.headers, ["metric", "effect", "verdict"]);
        assert_eq!(g.right, [1]);
        assert_eq!(g.rows[0][1], Cell::Num(2.0));
    }

    #[test]
    fn csv_quotes_and_has_no_prose() {
        let s = render(Format::Csv, &["pre".into()], &[grid()]);
        assert_eq!(
            s,
            "metric,median,pstdev %\ntime (ns/call),102.13,0.45\n\"a|b, \"\"c\"\"\",12345,1\n"
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
