//! Comma-separated values: the tables only, one after another separated by a blank line. Cells
//! are plain numbers (see [`Cell::plain`]); a column of intervals or of values with their spread
//! becomes two columns.

use super::{Cell, Grid, Layout};

pub(crate) struct Csv;

impl Layout for Csv {
    fn has_prose(&self) -> bool {
        false
    }
    fn table(&self, g: &Grid) -> String {
        csv(g)
    }
}

/// Each column's widest value cell (text and "-" only when it has nothing else): it names
/// the CSV columns the column becomes.
fn widest(g: &Grid) -> Vec<Option<&Cell>> {
    let text = |c: &Cell| matches!(c, Cell::Text(_) | Cell::Missing);
    (0..g.headers.len())
        .map(|i| {
            g.rows
                .iter()
                .filter_map(|r| r.get(i))
                .max_by_key(|c| (c.arity(), !text(c)))
        })
        .collect()
}

/// Column `i`'s CSV name: a blank header is `note` over a table's note marks and `name` over
/// the rows' names; `±%` (the relative spread) says what it is in words a program can take.
fn column_name(g: &Grid, i: usize) -> String {
    let marks = g.rows.iter().filter_map(|r| r.get(i)).all(|c| match c {
        Cell::Text(t) => t.trim().is_empty() || is_mark(t),
        _ => matches!(c, Cell::Missing),
    });
    match g.headers[i].trim() {
        "" if marks => "note".into(),
        "" => "name".into(),
        "±%" => "pstdev %".into(),
        t => t.replace('±', "+-"),
    }
}

/// `[k]`: a mark that refers to a table's note.
fn is_mark(t: &str) -> bool {
    let t = t.trim();
    t.strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .is_some_and(|k| k.parse::<usize>().is_ok())
}

/// A cell's fields in a column shaped like `shape`: a word in a column of numbers (`<not
/// supported>`) is an empty field, the word going to the row's status; a note mark (`[1]`)
/// is the note's text, as CSV carries no notes.
fn fields(
    c: &Cell,
    shape: Option<&Cell>,
    notes: &[String],
    status: &mut Vec<String>,
) -> Vec<String> {
    let numeric = shape.is_some_and(|s| !matches!(s, Cell::Text(_) | Cell::Missing));
    let arity = shape.map_or(1, Cell::arity);
    let mut f = match c {
        Cell::Text(t) if numeric => {
            let t = t.trim();
            if !t.is_empty() && t != "-" {
                status.push(t.to_string());
            }
            Vec::new()
        }
        Cell::Text(t) => vec![note_text(t, notes).unwrap_or_else(|| t.clone())],
        _ => c.plain(),
    };
    f.resize(arity.max(f.len()), String::new());
    f
}

/// The text of note `[k]` when `mark` is just that mark.
fn note_text(mark: &str, notes: &[String]) -> Option<String> {
    let m = mark.trim();
    if !is_mark(m) {
        return None;
    }
    notes
        .iter()
        .find_map(|n| n.trim().strip_prefix(m).map(|t| t.trim().to_string()))
}

fn csv(g: &Grid) -> String {
    let shape = widest(g);
    let mut rows = Vec::new();
    let mut any_status = false;
    for r in &g.rows {
        let mut status = Vec::new();
        let mut row: Vec<String> = Vec::new();
        for (i, c) in r.iter().enumerate() {
            row.extend(fields(
                c,
                shape.get(i).copied().flatten(),
                &g.notes,
                &mut status,
            ));
        }
        any_status |= !status.is_empty();
        rows.push((row, status.join("; ")));
    }
    let mut headers: Vec<String> = (0..g.headers.len())
        .zip(&shape)
        .flat_map(|(i, c)| {
            let h = column_name(g, i);
            c.map_or_else(|| vec![h.clone()], |c| c.headers(&h))
        })
        .collect();
    if any_status {
        headers.push("status".into());
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&headers).expect("in-memory CSV");
    for (mut row, status) in rows {
        row.resize(headers.len() - usize::from(any_status), String::new());
        if any_status {
            row.push(status);
        }
        w.write_record(&row).expect("in-memory CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("CSV of UTF-8 text")
}

#[cfg(test)]
mod unit {
    use super::*;

    /// A counter perf cannot count: its numeric cells are empty and its status says why; the
    /// note mark becomes the note's words; every column is named.
    #[test]
    fn words_leave_numeric_columns_for_a_status_and_note_marks_become_their_notes() {
        let mut g = Grid::new(&["metric", "median", "±%", ""]);
        g.rows.push(vec![
            Cell::Text("time (ns/call)".into()),
            Cell::Num(102.5),
            Cell::Pct(0.45),
            Cell::Text(String::new()),
        ]);
        g.rows.push(vec![
            Cell::Text("cycles (/call)".into()),
            Cell::Text("<not supported>".into()),
            Cell::Missing,
            Cell::Text("[1]".into()),
        ]);
        g.notes.push(" [1] no hardware PMU on this machine".into());
        let text = csv(&g);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "metric,median,pstdev %,note,status");
        assert_eq!(lines[1], "time (ns/call),102.5,0.45,,");
        assert_eq!(
            lines[2],
            "cycles (/call),,,no hardware PMU on this machine,<not supported>"
        );
    }
}
