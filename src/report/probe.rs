//! A probe on a real program: its hits, and the command's wall time with and without it.

use super::Render;
use super::charts::compare_chart;
use super::format::{Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::{Section, compare_section};
use super::svg::esc;
use crate::core::Kind;
use crate::core::fmt_num;
use crate::experiments::probe::ProbeResult;
use crate::probes::ProbeKind;
use crate::stats::median;

impl Render for ProbeResult {
    fn grids(&self) -> Vec<Grid> {
        let mut d = self.comparison.delta_grid();
        // A mail shows the deltas one block a metric.
        d.narrow = Some(self.comparison.delta_blocks());
        vec![d]
    }

    fn text(&self, format: Format) -> String {
        let hits: Vec<f64> = self.hits.iter().map(|h| *h as f64).collect();
        let rates: Vec<f64> = self
            .hits
            .iter()
            .zip(&self.probed_s)
            .map(|(h, s)| *h as f64 / s)
            .collect();
        let mut pre = vec![
            format!(
                " {} on {} (file offset {:#x}){} during `{}`, {} runs each, interleaved",
                match self.probe {
                    ProbeKind::Uretprobe => "uretprobe",
                    _ => "uprobe",
                },
                self.target,
                self.offset,
                if self.bpf { " with a BPF program" } else { "" },
                shown_command(&self.command),
                self.hits.len()
            ),
            format!(
                " hits per run: median {} (min {}, max {}); {} hits/s median",
                fmt_num(median(&hits)),
                self.hits.iter().min().unwrap_or(&0),
                self.hits.iter().max().unwrap_or(&0),
                fmt_num(median(&rates))
            ),
        ];
        if let Some(e) = &self.environment {
            pre.push(format!(
                " on {}, kernel {}",
                e.hostname.as_deref().unwrap_or("an unnamed host"),
                e.kernel_release.as_deref().unwrap_or("of unknown release")
            ));
        }
        pre.extend(self.comparison.preamble().into_iter().skip(1));
        super::format::render(format, &pre, &self.grids())
    }
}

/// A probe: its hits and its comparison.
pub(crate) const ENTRY: Entry = Entry::of::<ProbeResult>(Kind::Probe, &["compare"]);

impl ResultKind for ProbeResult {
    fn kind(&self) -> Kind {
        Kind::Probe
    }

    fn damage(&self) -> Option<String> {
        super::compare::comparison_damage(&self.comparison)
    }

    fn title(&self) -> String {
        format!("Probe: {}", self.target)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.raw(&format!(
            "<p class=\"meta\">{} during <code>{}</code>: hits per run {:?}</p>",
            esc(&self.target),
            esc(&shown_command(&self.command)),
            self.hits
        ));
        compare_section(s, &self.comparison);
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "compare").then(|| Ok(compare_chart(&self.comparison)))
    }
}

/// A command's words as a shell would take them, on one line: quoted where a word needs it,
/// a newline or tab inside a word escaped (`sh -c 'a\nb'`), so a header never breaks.
fn shown_command(words: &[String]) -> String {
    let quoted =
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "));
    crate::core::printable(&quoted)
}

#[cfg(test)]
mod unit {
    /// A multi-line script given to `sh -c` is one quoted word on one line.
    #[test]
    fn a_multi_line_command_is_shown_on_one_line() {
        let words = ["sh", "-c", "for i in 1 2; do\n  getpid\ndone"].map(String::from);
        let shown = super::shown_command(&words);
        assert_eq!(shown, r"sh -c 'for i in 1 2; do\n  getpid\ndone'");
        assert!(!shown.contains('\n'));
    }
}
