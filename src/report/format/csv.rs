//! Comma-separated values: the tables only, one after another separated by a blank line. Cells
//! are plain numbers (see [`Cell::plain`]); a column of intervals or of values with their spread
//! becomes two columns.

use super::{Cell, Grid, Layout};

pub struct Csv;

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

fn csv(g: &Grid) -> String {
    let shape = widest(g);
    let mut w = csv::Writer::from_writer(Vec::new());
    let headers: Vec<String> = g
        .headers
        .iter()
        .zip(&shape)
        .flat_map(|(h, c)| c.map_or_else(|| vec![h.clone()], |c| c.headers(h)))
        .collect();
    w.write_record(&headers).expect("in-memory CSV");
    for r in &g.rows {
        let mut fields = Vec::new();
        for (i, c) in r.iter().enumerate() {
            let mut f = c.plain();
            let arity = shape.get(i).copied().flatten().map_or(1, Cell::arity);
            f.resize(arity.max(f.len()), String::new());
            fields.extend(f);
        }
        w.write_record(&fields).expect("in-memory CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("CSV of UTF-8 text")
}
