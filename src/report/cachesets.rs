//! A cache-set analysis: the geometry, the sets objects can reach, how crowded they are, and
//! the chance that a random placement overflows a set.

use super::Render;
use super::charts::cachesets_chart;
use super::format::{Format, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::core::Kind;
use crate::layout::Analysis;

impl Render for Analysis {
    fn grids(&self) -> Vec<Grid> {
        Vec::new()
    }

    /// The analysis in sentences, the same in every text format.
    fn text(&self, _format: Format) -> String {
        let g = &self.geometry;
        let mut out = format!(
            " Cache: {} sets x {} ways x {} B lines ({})\n",
            g.sets, g.ways, g.line, self.geometry_source
        );
        match (self.object_size, self.slab_class) {
            (Some(s), Some(c)) => out.push_str(&format!(
                " Objects: {} of {s} B, from kmalloc-{c}: aligned to {} B\n",
                self.objects, self.alignment
            )),
            _ => out.push_str(&format!(
                " Objects: {}, aligned to {} B\n",
                self.objects, self.alignment
            )),
        }
        out.push_str(&format!(
            " Their first line can reach {} of {} sets: {{{}}} ({} slots of {} ways)\n",
            self.reachable_sets.len(),
            g.sets,
            self.reachable_sets
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            self.reachable_slots,
            g.ways
        ));
        out.push_str(&format!(
            " {} lines per object counted; {} placement: cacheline-spread {:.2} (stdev of \
             lines per reachable set; 0 is even)\n",
            self.lines_per_object,
            if self.addresses_given {
                "given"
            } else {
                "even"
            },
            self.cacheline_spread
        ));
        let crowded: Vec<String> = self
            .crowded
            .iter()
            .map(|(s, p)| format!("set {s}: {p}"))
            .collect();
        out.push_str(&format!(
            " Most crowded: {} (against {} ways); overflowing: {}\n",
            crowded.join(", "),
            g.ways,
            if self.overflowing.is_empty() {
                "none".to_string()
            } else {
                format!("{:?}", self.overflowing)
            }
        ));
        let mc = &self.monte_carlo;
        out.push_str(&format!(
            " Random placement within the reachable sets ({} trials, seed {}): P(some set \
             holds more than {} first lines) = {:.4} (95% CI {:.4}-{:.4})\n",
            mc.trials, mc.seed, g.ways, mc.overflow_probability, mc.ci95.0, mc.ci95.1
        ));
        out
    }
}

/// A cache-set analysis: its chart and its sentences.
pub(crate) const ENTRY: Entry = Entry::of::<Analysis>(Kind::Cachesets, &["cachesets"]);

impl ResultKind for Analysis {
    fn kind(&self) -> Kind {
        Kind::Cachesets
    }

    fn title(&self) -> String {
        format!("Cache sets: {} objects", self.objects)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.figure(&cachesets_chart(self));
        s.pre(&Render::text(self, Format::Table));
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "cachesets").then(|| Ok(cachesets_chart(self)))
    }
}
