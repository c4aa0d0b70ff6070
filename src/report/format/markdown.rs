//! GitHub-flavoured Markdown: bold titles, pipe tables with numbers right-aligned.

use super::{Grid, Layout};

pub(crate) struct Markdown;

impl Layout for Markdown {
    fn title(&self, t: &str) -> String {
        format!("**{t}**\n\n")
    }
    fn table(&self, g: &Grid) -> String {
        markdown(g)
    }
    fn before_notes(&self) -> &'static str {
        "\n"
    }
}

fn markdown(g: &Grid) -> String {
    // `<not supported>` would be taken for an HTML tag and hidden by GitHub.
    let esc = |c: &str| {
        c.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('|', "\\|")
    };
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
    for r in &g.texts() {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}
