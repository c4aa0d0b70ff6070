//! A thread-count sweep in the uprobe thread's shape: one line per thread count with the total M/s
//! ± stddev and M/s per CPU. The lines are the table in every text format.

use super::Render;
use super::charts::scale_charts;
use super::format::{Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::core::Kind;
use crate::experiments::scale::Scale;

impl Render for Scale {
    fn grids(&self) -> Vec<Grid> {
        Vec::new()
    }

    /// The 2024 uprobe thread's shape (the BPF selftests' bench output):
    /// `uprobe-nop ( 1 cpus):    3.565 ± 0.004M/s  (  3.565M/s/cpu)`.
    fn text(&self, format: Format) -> String {
        let mut out = String::new();
        for r in &self.rows {
            let line = format!(
                "{:<22}({:>2} cpus): {:>8.3} ± {:.3}M/s  ({:>7.3}M/s/cpu)",
                self.case, r.threads, r.mean, r.stdev, r.per_cpu
            );
            // Where the run count does not fit (a mail's 80 columns), it is shortened.
            let forms = [
                format!("{line}   n={} runs", r.runs),
                format!("{line}  n={}", r.runs),
            ];
            out.push_str(&format.layout().line(&forms));
            out.push('\n');
        }
        out
    }
}

/// A thread-count sweep: its charts and its lines.
pub(crate) const ENTRY: Entry = Entry::of::<Scale>(Kind::Scale, &["scale"]);

impl ResultKind for Scale {
    fn kind(&self) -> Kind {
        Kind::Scale
    }

    fn title(&self) -> String {
        format!("Thread scaling: {}", self.case)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        for c in scale_charts(self) {
            s.figure(&c);
        }
        s.pre(&Render::text(self, Format::Table));
    }

    fn environment(&self) -> Option<&crate::environment::Environment> {
        self.results.first().map(|x| &x.environment)
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "scale").then(|| Ok(scale_charts(self).remove(0)))
    }
}
