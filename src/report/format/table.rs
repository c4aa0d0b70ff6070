//! Aligned columns for a terminal (comfy-table, no borders).

use super::{Grid, Layout};
use comfy_table::{CellAlignment, presets};

pub struct Table;

impl Layout for Table {
    fn table(&self, g: &Grid) -> String {
        terminal(g)
    }
}

fn terminal(g: &Grid) -> String {
    let mut t = comfy_table::Table::new();
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
