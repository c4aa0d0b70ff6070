//! `lkml`: fixed-width plain ASCII for mailing lists, with a dashed rule under the header.

use super::{Grid, Layout};

pub struct Lkml;

impl Layout for Lkml {
    fn prose(&self, s: &str) -> String {
        ascii(s)
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
