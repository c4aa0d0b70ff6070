//! Fitting a table to a width, for every format that keeps to one (the table format's 100
//! columns, the mail format's 80): its widest text column wrapped inside its cells, else its
//! columns dealt into stacked tables that repeat the leading label columns.

use super::Grid;
use unicode_width::UnicodeWidthStr;

/// Columns narrower than this are never wrapped to make a table fit.
const MIN_WRAP: usize = 16;

/// A cell wrapped to `width` columns (one line if it fits).
fn wrap_cell(c: &str, width: usize) -> Vec<String> {
    if c.width() <= width {
        return vec![c.to_string()];
    }
    super::wrap::words(c, width, width)
}

/// A table with every line within `limit` columns, each cell's text as `cell` gives it, with
/// a dashed rule under the header when `rule`. A table that is wider first has its widest text column wrapped inside its
/// cells; if that is not enough, its columns are dealt into stacked tables that each repeat the
/// leading label columns (as R prints a wide data frame), so nothing is cut and no line wraps.
pub(crate) fn fit(g: &Grid, limit: usize, (cell, rule): (&dyn Fn(&str) -> String, bool)) -> String {
    let rows = g.texts();
    let cells: Vec<Vec<String>> = std::iter::once(&g.headers)
        .chain(&rows)
        .map(|r| r.iter().map(|c| cell(c)).collect())
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
        return block(&cells, &all, &width, (&g.right, rule));
    }
    // A header wider than its column's cells wraps at its words first.
    for (c, w) in width.iter_mut().enumerate() {
        let data = (cells[1..].iter()).map(|r| r.get(c).map_or(0, |x| x.width()));
        let word = header_words(&g.headers[c]);
        *w = data.max().unwrap_or(0).max(word).min(*w);
    }
    if span(&all, &width) <= limit {
        return block(&cells, &all, &width, (&g.right, rule));
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
            return block(&cells, &all, &w, (&g.right, rule));
        }
    }
    stacked(g, &cells, &width, (limit, rule))
}

/// `cells` as stacked tables within `limit` columns, each repeating the columns that name a
/// row (the leading left-aligned ones that fit in half the line, unless the grid says how
/// many), as R prints a wide data frame.
fn stacked(
    g: &Grid,
    cells: &[Vec<String>],
    width: &[usize],
    (limit, rule): (usize, bool),
) -> String {
    let ncol = g.headers.len();
    let span = |cols: &[usize], w: &[usize]| -> usize {
        cols.iter().map(|&c| w[c]).sum::<usize>() + 2 * cols.len().saturating_sub(1)
    };
    let mut keys: Vec<usize> = (0..g.keys.max(1).min(ncol)).collect();
    let guessed = if g.keys == 0 { 1..ncol } else { 0..0 };
    for c in guessed {
        let fits = span(&[keys.clone(), vec![c]].concat(), width) <= limit / 2;
        if g.right.contains(&c) || !fits {
            break;
        }
        keys.push(c);
    }
    let mut w = width.to_vec();
    w[0] = w[0].min(limit / 2);
    let room = limit.saturating_sub(span(&keys, &w) + 2).max(MIN_WRAP);
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
                cells,
                &[keys.clone(), chunk.clone()].concat(),
                &w,
                (&g.right, rule),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The widest unit a header wraps at: a word, or a percentage with the word after it ("95%
/// CI" stays on one line: a --steps table once printed "95%" over "CI of").
fn header_words(h: &str) -> usize {
    let words: Vec<&str> = h.split(' ').collect();
    (0..words.len())
        .map(|i| match words[i].ends_with('%') && i + 1 < words.len() {
            true => words[i].width() + 1 + words[i + 1].width(),
            false => words[i].width(),
        })
        .max()
        .unwrap_or(0)
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

    /// A verdict table too wide for its line, split into stacked blocks: every block's rows
    /// name their metric and their arm (a 4-arm campaign's verdict block printed three
    /// "instructions (emulated) (/call)  higher" rows with no arm named).
    #[test]
    fn every_block_of_a_split_table_names_its_rows() {
        let mut g = Grid::new(&[
            "metric", "variant", "baseline", "median", "delta", "verdict",
        ])
        .right(2..=4)
        .keys(2);
        let metric = "conditional-branches:k (emulated) (/call)";
        let verdict = "higher (exact: every boot apart by more than 0.01%, both sides' range)";
        for arm in ["newer", "rules", "same"] {
            g.row([metric, arm, "40.00", "60.00", "+50.00%", verdict]);
        }
        let text = fit(&g, 80, (&|c: &str| c.to_string(), false));
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert!(blocks.len() >= 2, "{text}");
        for b in &blocks {
            let rows: Vec<&str> = b.lines().filter(|l| l.starts_with("conditional")).collect();
            assert_eq!(rows.len(), 3, "{text}");
            for (row, arm) in rows.iter().zip(["newer", "rules", "same"]) {
                assert!(row.contains(arm), "{row}: {text}");
            }
        }
        assert_eq!(header_words("95% CI of delta"), 6);
        // Without keys, the leading text columns that fit in half the line: the metric alone.
        g.keys = 0;
        let text = fit(&g, 80, (&|c: &str| c.to_string(), false));
        assert!(
            !text.split("\n\n").nth(1).unwrap().contains("newer"),
            "{text}"
        );
    }
}
