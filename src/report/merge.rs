//! A merge across boots: the audit series' Min/Mean/Median/Max/pstdev table, one row per boot and
//! one over boots, and how the variance splits between boots and runs.

use super::Render;
use super::charts::merge_chart;
use super::compare::summary_cells;
use super::format::Format;
use super::format::{Cell, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::compare::merge::Merged;
use crate::core::Kind;

/// A merged result shown for one metric (`merge --metric`); its JSON is the merged result.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub(crate) struct MergeTables<'a> {
    pub merged: &'a Merged,
    #[serde(skip)]
    pub metric: &'a str,
}

impl Render for MergeTables<'_> {
    fn preamble(&self) -> Vec<String> {
        self.merged.preamble(self.metric)
    }

    fn grids(&self) -> Vec<Grid> {
        vec![
            self.merged.seed_table(self.metric),
            self.merged.variance_grid(),
        ]
    }
}

impl Merged {
    pub(crate) fn preamble(&self, primary: &str) -> Vec<String> {
        let unit = self
            .metrics
            .iter()
            .find(|m| m.name == primary)
            .map(|m| m.unit.clone())
            .unwrap_or_default();
        vec![format!(
            " Merged {} boots of {}; {primary} ({unit}); each boot's value is the median of its \
             runs, and the last row summarises over boots",
            self.groups.len(),
            self.workload.describe()
        )]
    }

    /// The audit series' table: one row per boot (over its runs) and one over boots.
    pub(crate) fn seed_table(&self, primary: &str) -> Grid {
        let mut g = Grid::new(&["", "n", "Min", "Mean", "Median", "Max", "pstdev"]).right(1..=6);
        for grp in &self.groups {
            if let Some(s) = grp
                .metrics
                .iter()
                .find(|m| m.name == primary)
                .and_then(|m| m.summary.as_ref())
            {
                g.row(summary_cells(&grp.label, s));
            }
        }
        if let Some(s) = self
            .metrics
            .iter()
            .find(|m| m.name == primary)
            .and_then(|m| m.summary.as_ref())
        {
            g.row(summary_cells("all boots", s));
        }
        let mut notes: Vec<String> = self
            .warnings
            .iter()
            .map(|w| format!(" warning: {w}"))
            .collect();
        if notes.is_empty() {
            notes.clear();
        }
        g.notes = notes;
        g
    }

    /// Within-boot against between-boot spread per metric.
    pub(crate) fn variance_grid(&self) -> Grid {
        let mut g = Grid::new(&[
            "metric",
            "within-boot pstdev",
            "between-boot pstdev",
            "between share",
        ])
        .right(1..=3)
        .title(" Where the spread comes from");
        for v in &self.variance {
            g.row([
                v.metric.clone().into(),
                Cell::Num(v.within_pstdev),
                Cell::Num(v.between_pstdev),
                Cell::shown_in(
                    v.between_share_pct,
                    format!("{:.1}%", v.between_share_pct),
                    "%",
                ),
            ]);
        }
        g
    }
}

/// A merge across boots: its chart, the table over boots and the variance split.
pub(crate) const ENTRY: Entry = Entry::of::<Merged>(Kind::Merged, &["merge"]);

impl ResultKind for Merged {
    fn kind(&self) -> Kind {
        Kind::Merged
    }

    fn damage(&self) -> Option<String> {
        self.groups.is_empty().then(|| "it has no groups".into())
    }

    fn title(&self) -> String {
        format!("Merged: {} boots", self.groups.len())
    }

    fn text(&self, format: Format) -> String {
        MergeTables {
            merged: self,
            metric: "time",
        }
        .text(format)
    }

    fn section(&self, s: &mut Section) {
        s.warn(&self.warnings);
        s.figure(&merge_chart(self, "time"));
        s.table(&self.seed_table("time"));
        s.table(&self.variance_grid());
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "merge").then(|| Ok(merge_chart(self, "time")))
    }
}
