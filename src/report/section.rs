//! One result's part of the report's page, as its kind fills it: charts, lines, tables and
//! warnings ([`Section`]), with the HTML of a table and a comparison's section, which several
//! kinds share. The page itself ([`super::html`]) puts the sections together.

use super::Render;
use super::charts::*;
use super::format::Grid;
use super::svg::esc;
use crate::compare::Comparison;

/// A grid as an HTML table.
pub(crate) fn table(g: &Grid) -> String {
    let mut s = String::from("<table>");
    if let Some(t) = &g.title {
        s.push_str(&format!("<caption>{}</caption>", esc(t.trim())));
    }
    s.push_str("<thead><tr>");
    for (i, h) in g.headers.iter().enumerate() {
        s.push_str(&format!(
            "<th{}>{}</th>",
            if g.right.contains(&i) {
                " class=\"num\""
            } else {
                ""
            },
            esc(h)
        ));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &g.texts() {
        s.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            s.push_str(&format!(
                "<td{}>{}</td>",
                if g.right.contains(&i) {
                    " class=\"num\""
                } else {
                    ""
                },
                cell_html(c)
            ));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    let notes: Vec<&String> = g.notes.iter().filter(|n| !n.trim().is_empty()).collect();
    if !notes.is_empty() {
        s.push_str("<ul class=\"notes\">");
        for n in notes {
            s.push_str(&format!("<li>{}</li>", esc(n.trim())));
        }
        s.push_str("</ul>");
    }
    s
}

/// A cell's text as HTML: a URL (a LAVA job's page) as a link to it.
fn cell_html(c: &str) -> String {
    let url = (c.starts_with("https://") || c.starts_with("http://"))
        && !c.contains(|x: char| x.is_whitespace() || x == '"' || x == '<');
    match url {
        true => format!("<a href=\"{}\">{}</a>", esc(c), esc(c)),
        false => esc(c),
    }
}

/// One result's section of the page, as its kind fills it.
pub struct Section {
    pub(super) html: String,
    /// Its warnings, for the page's list (said once, with the files that gave them).
    pub warnings: Vec<String>,
}

impl Section {
    /// A chart in its figure.
    pub(crate) fn figure(&mut self, chart: &str) {
        self.html.push_str(&format!("<figure>{chart}</figure>"));
    }

    /// A line of text above the tables.
    pub(crate) fn meta(&mut self, line: &str) {
        self.html
            .push_str(&format!("<p class=\"meta\">{}</p>", esc(line.trim())));
    }

    /// A line that is already HTML.
    pub(crate) fn raw(&mut self, html: &str) {
        self.html.push_str(html);
    }

    pub(crate) fn table(&mut self, g: &Grid) {
        self.html.push_str(&table(g));
    }

    /// Preformatted text (a kind whose text is its own shape).
    pub(crate) fn pre(&mut self, text: &str) {
        self.html.push_str(&format!("<pre>{}</pre>", esc(text)));
    }

    pub(crate) fn warn(&mut self, warnings: &[String]) {
        self.warnings.extend(warnings.iter().cloned());
    }
}

/// A comparison's section: its charts, lines and tables (also a probe's).
pub(crate) fn compare_section(s: &mut Section, c: &Comparison) {
    s.warn(&c.warnings);
    s.figure(&compare_chart(c));
    s.figure(&delta_chart(c));
    if let Some(r) = ranking_chart(c) {
        s.figure(&r);
    }
    if let Some(p) = profile_diff_chart(c) {
        s.figure(&p);
    }
    for line in c.preamble() {
        s.meta(&line);
    }
    let mut d = c.delta_grid();
    d.notes.clear();
    s.table(&d);
    s.table(&c.seed_table());
}
