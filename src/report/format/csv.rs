//! Comma-separated values: the tables only, one after another separated by a blank line.

use super::{Grid, Layout};

pub struct Csv;

impl Layout for Csv {
    fn has_prose(&self) -> bool {
        false
    }
    fn table(&self, g: &Grid) -> String {
        csv(g)
    }
}

fn csv(g: &Grid) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&g.headers).expect("in-memory CSV");
    for r in &g.rows {
        w.write_record(r).expect("in-memory CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("CSV of UTF-8 text")
}
