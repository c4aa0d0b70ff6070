//! A correlation: Pearson and Spearman with p-values, and the least-squares line.

use super::Render;
use super::charts::correlate_chart;
use super::format::Format;
use super::format::{Cell, Grid};
use super::kind::{Entry, ResultKind};
use super::section::Section;
use crate::compare::correlate::CorrelationResult;
use crate::core::Kind;
use crate::core::fmt_num;

impl Render for CorrelationResult {
    fn grids(&self) -> Vec<Grid> {
        vec![grid(self)]
    }
}

/// The coefficients, their p-values, and the least-squares line under the table.
pub(crate) fn grid(r: &CorrelationResult) -> Grid {
    let c = &r.correlation;
    let mut g = Grid::new(&["x", "y", "n", "Pearson r", "p", "Spearman rho", "p"])
        .right(2..=6)
        .title(format!(
            " Correlation across {}s of {} files",
            r.unit,
            r.files.len()
        ));
    let coefficient = |v: f64| Cell::shown(v, format!("{v:.3}"));
    g.row([
        super::metric_label(&r.x, &r.x_unit).into(),
        super::metric_label(&r.y, &r.y_unit).into(),
        Cell::Int(c.n as i64),
        coefficient(c.pearson_r),
        Cell::P(c.pearson_p),
        coefficient(c.spearman_rho),
        Cell::P(c.spearman_p),
    ]);
    g.notes.push(format!(
        " least squares: {} = {} x {} {} {}",
        r.y,
        fmt_num(r.slope),
        r.x,
        if r.intercept < 0.0 { "-" } else { "+" },
        fmt_num(r.intercept.abs())
    ));
    g
}

/// A correlation: its scatter and its table.
pub(crate) const ENTRY: Entry = Entry::of::<CorrelationResult>(Kind::Correlate, &["correlate"]);

impl ResultKind for CorrelationResult {
    fn kind(&self) -> Kind {
        Kind::Correlate
    }

    fn title(&self) -> String {
        format!("Correlation: {} and {}", self.x, self.y)
    }

    fn text(&self, format: Format) -> String {
        Render::text(self, format)
    }

    fn section(&self, s: &mut Section) {
        s.figure(&correlate_chart(self));
        s.table(&grid(self));
    }

    fn chart(&self, name: &str) -> Option<anyhow::Result<String>> {
        (name == "correlate").then(|| Ok(correlate_chart(self)))
    }
}
