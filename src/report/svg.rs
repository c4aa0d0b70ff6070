//! The project's own small SVG charts (the crates tried had overlapping legends or needed a
//! JavaScript runtime). Every chart has a title, labelled axes with units, and its legend in a
//! row of its own under the plot, never over the data. Colours come from CSS variables so a
//! page can switch light and dark schemes; the output is deterministic (no random ids).

use crate::core::fmt_num;
use std::fmt::Write;

pub(crate) const WIDTH: f64 = 680.0;
const PLOT_H: f64 = 300.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 40.0;
const AXIS_H: f64 = 58.0;
const LEGEND_ROW: f64 = 20.0;

/// Escape text for SVG and HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The most characters of a visible title that fit the chart's width at its font size; the
/// whole title stays in the chart's <title> element.
pub(crate) const TITLE_CHARS: usize = 74;

/// A title shortened to fit the chart.
pub(crate) fn fit_title(t: &str) -> String {
    if t.chars().count() <= TITLE_CHARS {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(TITLE_CHARS - 1).collect::<String>())
    }
}

/// Numbers in SVG coordinates: two decimals, so output is stable.
fn n(v: f64) -> String {
    format!("{v:.2}")
}

/// Round tick positions covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
pub(crate) fn ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / want.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut t = first;
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// Ticks for an axis of whole numbers (threads, rules, copies): whole positions only, so the
/// steps are never below one.
pub(crate) fn whole_ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    let t = ticks(lo, hi, want);
    if t.len() >= 2 && t[1] - t[0] < 1.0 {
        let mut out = Vec::new();
        let mut v = lo.ceil();
        while v <= hi {
            out.push(v);
            v += 1.0;
        }
        return out;
    }
    t
}

/// Extend a data range to round ends with a little room.
fn padded(lo: f64, hi: f64, include_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo < 1e-12 {
        let d = if hi.abs() > 0.0 { hi.abs() * 0.1 } else { 1.0 };
        lo -= d;
        hi += d;
    }
    let pad = (hi - lo) * 0.06;
    let lo2 = if include_zero && lo >= 0.0 {
        lo
    } else {
        lo - pad
    };
    (lo2, hi + pad)
}

struct Axis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl Axis {
    fn at(&self, v: f64) -> f64 {
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }
}

/// What a legend entry looks like.
#[derive(Clone, Copy)]
pub(crate) enum Mark {
    Dot,
    Line,
    DashedLine,
    Box,
}

/// The frame every chart shares: title, plot area, axes, legend.
struct Frame {
    title: String,
    x_label: String,
    y_label: String,
    legend: Vec<(usize, String, Mark)>,
    body: String,
    height: f64,
}

impl Frame {
    fn new(title: &str, x_label: &str, y_label: &str, legend: Vec<(usize, String, Mark)>) -> Frame {
        let rows = legend.len().div_ceil(3) as f64;
        Frame {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            height: TOP + PLOT_H + AXIS_H + rows * LEGEND_ROW + 8.0,
            legend,
            body: String::new(),
        }
    }

    fn plot_bottom(&self) -> f64 {
        TOP + PLOT_H
    }

    fn y_axis(&mut self, y: &Axis) {
        for t in ticks(y.lo, y.hi, 5) {
            let py = y.at(t);
            let _ = write!(
                self.body,
                r#"<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
                n(LEFT),
                n(WIDTH - RIGHT),
                n(py),
                n(py),
                n(LEFT - 6.0),
                n(py + 4.0),
                esc(&fmt_num(t))
            );
        }
    }

    fn finish(self) -> String {
        let h = self.height;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}">"#,
            w = n(WIDTH),
            h = n(h),
            t = esc(&self.title)
        );
        let _ = write!(s, "<title>{}</title>", esc(&self.title));
        let _ = write!(
            s,
            r#"<rect class="bg" x="0" y="0" width="{}" height="{}"/><text class="title" x="{}" y="22">{}</text>"#,
            n(WIDTH),
            n(h),
            n(8.0),
            esc(&fit_title(&self.title))
        );
        s.push_str(&self.body);
        let bottom = TOP + PLOT_H;
        let _ = write!(
            s,
            r#"<line class="axis" x1="{l}" x2="{l}" y1="{t}" y2="{b}"/><line class="axis" x1="{l}" x2="{r}" y1="{b}" y2="{b}"/>"#,
            l = n(LEFT),
            r = n(WIDTH - RIGHT),
            t = n(TOP),
            b = n(bottom)
        );
        let _ = write!(
            s,
            r#"<text class="label x-label" x="{}" y="{}" text-anchor="middle">{}</text><text class="label y-label" transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
            n(LEFT + (WIDTH - LEFT - RIGHT) / 2.0),
            n(bottom + 44.0),
            esc(&self.x_label),
            n(TOP + PLOT_H / 2.0),
            esc(&self.y_label)
        );
        for (i, (class, label, mark)) in self.legend.iter().enumerate() {
            let x = LEFT + (i % 3) as f64 * 200.0;
            let y = bottom + AXIS_H + (i / 3) as f64 * LEGEND_ROW;
            let sym = match mark {
                Mark::Dot => format!(
                    r#"<circle class="s{class}" cx="{}" cy="{}" r="4"/>"#,
                    n(x + 8.0),
                    n(y - 4.0)
                ),
                Mark::Line => format!(
                    r#"<line class="s{class} ln" x1="{}" x2="{}" y1="{}" y2="{}"/>"#,
                    n(x),
                    n(x + 16.0),
                    n(y - 4.0),
                    n(y - 4.0)
                ),
                Mark::DashedLine => format!(
                    r#"<line class="s{class} ln dash" x1="{}" x2="{}" y1="{}" y2="{}"/>"#,
                    n(x),
                    n(x + 16.0),
                    n(y - 4.0),
                    n(y - 4.0)
                ),
                Mark::Box => format!(
                    r#"<rect class="s{class} fillsoft" x="{}" y="{}" width="16" height="10"/>"#,
                    n(x),
                    n(y - 9.0)
                ),
            };
            let _ = write!(
                s,
                r#"<g class="legend">{sym}<text class="tick" x="{}" y="{}">{}</text></g>"#,
                n(x + 22.0),
                n(y),
                esc(label)
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// A numeric series.
pub(crate) enum Series {
    /// Points, optionally with a vertical interval each.
    Points {
        class: usize,
        label: String,
        pts: Vec<(f64, f64)>,
        err: Option<Vec<(f64, f64)>>,
    },
    /// A polyline.
    Line {
        class: usize,
        label: String,
        pts: Vec<(f64, f64)>,
        dashed: bool,
    },
    /// A shaded band between `lower` and `upper` at the same x values.
    Band {
        class: usize,
        label: String,
        x: Vec<f64>,
        lower: Vec<f64>,
        upper: Vec<f64>,
    },
    /// A horizontal reference line.
    HLine { class: usize, label: String, y: f64 },
}

impl Series {
    /// Add the series' x and y values (error bars and bands included) to the axes' extent.
    fn extent(&self, xs: &mut Vec<f64>, ys: &mut Vec<f64>) {
        match self {
            Series::Points { pts, err, .. } => {
                xs.extend(pts.iter().map(|p| p.0));
                ys.extend(pts.iter().map(|p| p.1));
                if let Some(e) = err {
                    ys.extend(e.iter().flat_map(|(a, b)| [*a, *b]));
                }
            }
            Series::Line { pts, .. } => {
                xs.extend(pts.iter().map(|p| p.0));
                ys.extend(pts.iter().map(|p| p.1));
            }
            Series::Band {
                x, lower, upper, ..
            } => {
                xs.extend(x);
                ys.extend(lower.iter().chain(upper));
            }
            Series::HLine { y, .. } => ys.push(*y),
        }
    }

    /// The series' legend entry (an unlabelled line has none).
    fn legend(&self) -> Option<(usize, String, Mark)> {
        match self {
            Series::Points { class, label, .. } => Some((*class, label.clone(), Mark::Dot)),
            Series::Line { label, .. } if label.is_empty() => None,
            Series::Line {
                class,
                label,
                dashed,
                ..
            } => {
                let mark = if *dashed {
                    Mark::DashedLine
                } else {
                    Mark::Line
                };
                Some((*class, label.clone(), mark))
            }
            Series::Band { class, label, .. } => Some((*class, label.clone(), Mark::Box)),
            Series::HLine { class, label, .. } => Some((*class, label.clone(), Mark::DashedLine)),
        }
    }

    /// Draw what lies behind the data: bands and reference lines.
    fn draw_back(&self, body: &mut String, xa: &Axis, ya: &Axis) {
        match self {
            Series::Band {
                class,
                x,
                lower,
                upper,
                ..
            } => {
                let mut d = String::new();
                for (i, (xv, yv)) in x.iter().zip(upper).enumerate() {
                    let m = if i == 0 { "M" } else { "L" };
                    let _ = write!(d, "{m}{},{} ", n(xa.at(*xv)), n(ya.at(*yv)));
                }
                for (xv, yv) in x.iter().zip(lower).rev() {
                    let _ = write!(d, "L{},{} ", n(xa.at(*xv)), n(ya.at(*yv)));
                }
                let _ = write!(
                    body,
                    r#"<path class="s{class} band" d="{}Z"/>"#,
                    d.trim_end()
                );
            }
            Series::HLine { class, y, .. } => {
                let _ = write!(
                    body,
                    r#"<line class="s{class} ln dash" x1="{}" x2="{}" y1="{}" y2="{}"/>"#,
                    n(LEFT),
                    n(WIDTH - RIGHT),
                    n(ya.at(*y)),
                    n(ya.at(*y))
                );
            }
            _ => {}
        }
    }

    /// Draw the data: lines, then points with their error bars.
    fn draw_front(&self, body: &mut String, xa: &Axis, ya: &Axis) {
        match self {
            Series::Line {
                class, pts, dashed, ..
            } => {
                let d: Vec<String> = pts
                    .iter()
                    .map(|(x, y)| format!("{},{}", n(xa.at(*x)), n(ya.at(*y))))
                    .collect();
                let _ = write!(
                    body,
                    r#"<polyline class="s{class} ln{}" points="{}"/>"#,
                    if *dashed { " dash" } else { "" },
                    d.join(" ")
                );
            }
            Series::Points {
                class, pts, err, ..
            } => {
                for ((x, _), (lo, hi)) in pts.iter().zip(err.iter().flatten()) {
                    let px = xa.at(*x);
                    let _ = write!(
                        body,
                        r#"<path class="s{class} err" d="M{a},{t} L{a},{b} M{l},{t} L{r},{t} M{l},{b} L{r},{b}"/>"#,
                        a = n(px),
                        l = n(px - 4.0),
                        r = n(px + 4.0),
                        t = n(ya.at(*hi)),
                        b = n(ya.at(*lo))
                    );
                }
                for (x, y) in pts {
                    let _ = write!(
                        body,
                        r#"<circle class="s{class}" cx="{}" cy="{}" r="3.5"/>"#,
                        n(xa.at(*x)),
                        n(ya.at(*y))
                    );
                }
            }
            _ => {}
        }
    }
}

/// The finite extent of `v`.
fn finite_extent(v: &[f64]) -> (f64, f64) {
    let f = v.iter().copied().filter(|x| x.is_finite());
    (
        f.clone().fold(f64::INFINITY, f64::min),
        f.fold(f64::NEG_INFINITY, f64::max),
    )
}

/// A chart with numeric axes.
pub(crate) fn xy(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    y_zero: bool,
) -> String {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for s in series {
        s.extent(&mut xs, &mut ys);
    }
    let legend = series.iter().filter_map(Series::legend).collect();
    let (x0, x1) = finite_extent(&xs);
    let (y0, y1) = finite_extent(&ys);
    let (x0, x1) = padded(x0, x1, false);
    let (y0, y1) = padded(y0, y1, y_zero);
    let xa = Axis {
        lo: x0,
        hi: x1,
        p0: LEFT,
        p1: WIDTH - RIGHT,
    };
    let ya = Axis {
        lo: y0,
        hi: y1,
        p0: TOP + PLOT_H,
        p1: TOP,
    };
    let mut f = Frame::new(title, x_label, y_label, legend);
    f.y_axis(&ya);
    x_ticks(&mut f, &xa, &xs);
    for s in series {
        s.draw_back(&mut f.body, &xa, &ya);
    }
    for s in series {
        s.draw_front(&mut f.body, &xa, &ya);
    }
    f.finish()
}

/// The x axis's ticks. An x of whole numbers only (threads, rules loaded, a count of cache
/// lines) is a count: whole ticks, printed as such ("2", not "2.00" or "2.50").
fn x_ticks(f: &mut Frame, xa: &Axis, xs: &[f64]) {
    let whole = xs.iter().all(|x| !x.is_finite() || x.fract() == 0.0);
    let ticks = if whole {
        whole_ticks(xa.lo, xa.hi, 6)
    } else {
        ticks(xa.lo, xa.hi, 6)
    };
    for t in ticks {
        let px = xa.at(t);
        let label = if whole {
            crate::core::num::group_thousands(&format!("{t:.0}"))
        } else {
            fmt_num(t)
        };
        let _ = write!(
            f.body,
            r#"<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            n(px),
            n(f.plot_bottom() + 16.0),
            esc(&label)
        );
    }
}

/// One category's content in a categorical chart.
#[derive(Clone, Debug, Default)]
pub(crate) struct Category {
    pub label: String,
    /// Dots (a strip), spread evenly across the category's width.
    pub strip: Vec<f64>,
    /// A box: (min, q1, median, q3, max).
    pub boxplot: Option<(f64, f64, f64, f64, f64)>,
    /// A dot with an interval: (value, lo, hi).
    pub dot: Option<(f64, f64, f64)>,
    /// A bar from zero.
    pub bar: Option<f64>,
    /// Text above the category (a % delta, a verdict).
    pub note: Option<String>,
    /// Colour class.
    pub class: usize,
}

/// A chart with categories on the x axis.
pub(crate) fn categories(
    title: &str,
    x_label: &str,
    y_label: &str,
    cats: &[Category],
    legend: Vec<(usize, String, Mark)>,
    hline: Option<(usize, f64)>,
) -> String {
    let mut ys: Vec<f64> = cats.iter().flat_map(Category::values).collect();
    ys.extend(hline.map(|h| h.1));
    let bars = cats.iter().any(|c| c.bar.is_some());
    let (y0, y1) = finite_extent(&ys);
    let (y0, y1) = padded(y0, y1, bars);
    let w = (WIDTH - LEFT - RIGHT) / cats.len().max(1) as f64;
    // Columns too narrow for their notes and labels take them on two staggered lines.
    let narrow = w < 130.0;
    // Room above the data for the notes, so they never sit on a point.
    let headroom = match (cats.iter().any(|c| c.note.is_some()), narrow) {
        (false, _) => 0.0,
        (true, false) => 18.0,
        (true, true) => 30.0,
    };
    let ya = Axis {
        lo: y0,
        hi: y1,
        p0: TOP + PLOT_H,
        p1: TOP + headroom,
    };
    let mut f = Frame::new(title, x_label, y_label, legend);
    f.y_axis(&ya);
    let column = Column { w, narrow };
    let labels: Vec<&str> = cats.iter().map(|c| c.label.as_str()).collect();
    let shown = distinct_parts(&labels, |s| column.fits(s) == s);
    for (i, c) in cats.iter().enumerate() {
        c.draw(
            &mut f.body,
            &ya,
            LEFT + w * (i as f64 + 0.5),
            (w * 0.3).min(40.0),
        );
        column.texts(&mut f, c, &shown[i], i);
    }
    if let Some((class, y)) = hline {
        let _ = write!(
            f.body,
            r#"<line class="s{class} ln dash" x1="{}" x2="{}" y1="{}" y2="{}"/>"#,
            n(LEFT),
            n(WIDTH - RIGHT),
            n(ya.at(y)),
            n(ya.at(y))
        );
    }
    f.finish()
}

/// What tells `labels` apart when some do not fit (`fits`): each without the start and the end
/// they all share (a series of builds named vmlinuz-6.12.N+deb12-cloud-amd64 shows N), cut at
/// a `-`, `.`, `+` or `_` so a version reads whole; the labels as they are when they fit, when
/// there is one, or when that would leave one empty.
fn distinct_parts(labels: &[&str], fits: impl Fn(&str) -> bool) -> Vec<String> {
    let whole = || labels.iter().map(|l| l.to_string()).collect();
    if labels.len() < 2 || labels.iter().all(|l| fits(l)) {
        return whole();
    }
    let common = |a: &str, b: &str, rev: bool| -> usize {
        let (x, y): (Vec<char>, Vec<char>) = match rev {
            false => (a.chars().collect(), b.chars().collect()),
            true => (a.chars().rev().collect(), b.chars().rev().collect()),
        };
        x.iter().zip(&y).take_while(|(p, q)| p == q).count()
    };
    let (first, rest) = (labels[0], &labels[1..]);
    let lead = rest
        .iter()
        .map(|l| common(first, l, false))
        .min()
        .unwrap_or(0);
    let tail = rest
        .iter()
        .map(|l| common(first, l, true))
        .min()
        .unwrap_or(0);
    let sep = |c: char| matches!(c, '-' | '.' | '+' | '_' | '/' | '=');
    // Back to the last separator within the shared part, so "6.12.100" and "6.12.101" keep
    // "100" and "101" rather than "0" and "1".
    let cut_lead = |l: &str| -> usize {
        let c: Vec<char> = l.chars().collect();
        (0..=lead.min(c.len()))
            .rev()
            .find(|&i| i == 0 || sep(c[i - 1]))
            .unwrap_or(0)
    };
    let cut_tail = |l: &str| -> usize {
        let c: Vec<char> = l.chars().collect();
        let n = c.len();
        (0..=tail.min(n))
            .rev()
            .find(|&k| k == 0 || sep(c[n - k]))
            .unwrap_or(0)
    };
    let parts: Vec<String> = labels
        .iter()
        .map(|l| {
            let c: Vec<char> = l.chars().collect();
            let (a, b) = (cut_lead(l), c.len().saturating_sub(cut_tail(l)));
            c.get(a..b.max(a))
                .map(|s| s.iter().collect())
                .unwrap_or_default()
        })
        .collect();
    match parts.iter().any(String::is_empty) {
        true => whole(),
        false => parts,
    }
}

/// A category's column: its width, and whether its texts are staggered.
struct Column {
    w: f64,
    narrow: bool,
}

impl Column {
    /// `s` shortened to what the column holds: about 6 px a character at the tick size.
    fn fits(&self, s: &str) -> String {
        let w = if self.narrow { 2.0 * self.w } else { self.w };
        let room = (w / 6.2).floor().max(4.0) as usize;
        if s.chars().count() > room {
            format!("{}…", s.chars().take(room - 1).collect::<String>())
        } else {
            s.to_string()
        }
    }

    /// The note above column `i` and its label below (`shown` of it; the whole label is its
    /// tooltip). Within its column, every other one a line lower when columns are narrow, so
    /// neighbours neither overlap nor run past the plot.
    fn texts(&self, f: &mut Frame, c: &Category, shown: &str, i: usize) {
        let cx = LEFT + self.w * (i as f64 + 0.5);
        let lower = self.narrow && i % 2 == 1;
        if let Some(note) = &c.note {
            let _ = write!(
                f.body,
                r#"<text class="tick note" x="{}" y="{}" text-anchor="middle">{}</text>"#,
                n(cx),
                n(TOP + if lower { 24.0 } else { 12.0 }),
                esc(&self.fits(note))
            );
        }
        let _ = write!(
            f.body,
            r#"<text class="tick" x="{}" y="{}" text-anchor="middle"><title>{}</title>{}</text>"#,
            n(cx),
            n(f.plot_bottom() + if lower { 28.0 } else { 16.0 }),
            esc(&c.label),
            esc(&self.fits(shown))
        );
    }
}

impl Category {
    /// Every value the category draws, for the axis's extent.
    fn values(&self) -> Vec<f64> {
        let mut ys = self.strip.clone();
        ys.extend(self.boxplot.map(|b| [b.0, b.4]).into_iter().flatten());
        ys.extend(self.dot.map(|d| [d.1, d.2]).into_iter().flatten());
        ys.extend(self.bar);
        ys
    }

    /// Its bar, box, strip of dots and dot with whiskers, centred on `cx`, `half` wide each side.
    fn draw(&self, body: &mut String, ya: &Axis, cx: f64, half: f64) {
        let class = self.class;
        if let Some(v) = self.bar {
            let (a, b) = (ya.at(0f64.max(ya.lo)), ya.at(v));
            let _ = write!(
                body,
                r#"<rect class="s{class} fillsoft" x="{}" y="{}" width="{}" height="{}"/>"#,
                n(cx - half),
                n(a.min(b)),
                n(2.0 * half),
                n((a - b).abs())
            );
        }
        if let Some((mn, q1, med, q3, mx)) = self.boxplot {
            let _ = write!(
                body,
                r#"<path class="s{class} err" d="M{cx},{a} L{cx},{b} M{cx},{c} L{cx},{d}"/><rect class="s{class} boxp" x="{x}" y="{y}" width="{bw}" height="{bh}"/><line class="s{class} ln" x1="{x}" x2="{x2}" y1="{m}" y2="{m}"/>"#,
                cx = n(cx),
                a = n(ya.at(mx)),
                b = n(ya.at(q3)),
                c = n(ya.at(q1)),
                d = n(ya.at(mn)),
                x = n(cx - half),
                x2 = n(cx + half),
                y = n(ya.at(q3)),
                bw = n(2.0 * half),
                bh = n((ya.at(q1) - ya.at(q3)).abs()),
                m = n(ya.at(med))
            );
        }
        let k = self.strip.len();
        for (j, v) in self.strip.iter().enumerate() {
            let dx = if k > 1 {
                -half + 2.0 * half * j as f64 / (k - 1) as f64
            } else {
                0.0
            };
            let _ = write!(
                body,
                r#"<circle class="s{class} strip" cx="{}" cy="{}" r="2.5"/>"#,
                n(cx + dx * 0.8),
                n(ya.at(*v))
            );
        }
        if let Some((v, lo, hi)) = self.dot {
            let _ = write!(
                body,
                r#"<path class="s{class} err" d="M{cx},{t} L{cx},{b} M{l},{t} L{r},{t} M{l},{b} L{r},{b}"/><circle class="s{class}" cx="{cx}" cy="{y}" r="4.5"/>"#,
                cx = n(cx),
                l = n(cx - 6.0),
                r = n(cx + 6.0),
                t = n(ya.at(hi)),
                b = n(ya.at(lo)),
                y = n(ya.at(v))
            );
        }
    }
}

/// Horizontal bars, one per labelled row (top to bottom), diverging from zero when values
/// are signed; `values` in the unit of `x_label`.
pub(crate) fn hbars(
    title: &str,
    x_label: &str,
    rows: &[(String, f64, usize)],
    intervals: &[Option<(f64, f64)>],
    legend: Vec<(usize, String, Mark)>,
) -> String {
    const LABEL_W: f64 = 250.0;
    let row_h = 18.0;
    let plot_h = row_h * rows.len().max(1) as f64;
    let ends = intervals.iter().flatten().flat_map(|(a, b)| [*a, *b]);
    let values = rows
        .iter()
        .map(|r| r.1)
        .chain(ends)
        .filter(|v| v.is_finite());
    let vmin = values.clone().fold(0f64, f64::min);
    let vmax = values.fold(0f64, f64::max);
    let (lo, hi) = padded(vmin, vmax, true);
    let xa = Axis {
        lo,
        hi,
        p0: LABEL_W,
        p1: WIDTH - RIGHT,
    };
    let legend_rows = legend.len().div_ceil(3) as f64;
    let height = TOP + plot_h + 50.0 + legend_rows * LEGEND_ROW + 8.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><rect class="bg" x="0" y="0" width="{w}" height="{h}"/><text class="title" x="{l}" y="22">{ft}</text>"#,
        w = n(WIDTH),
        h = n(height),
        t = esc(title),
        ft = esc(&fit_title(title)),
        l = n(8.0)
    );
    for t in ticks(lo, hi, 5) {
        let px = xa.at(t);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x}" x2="{x}" y1="{t}" y2="{b}"/><text class="tick" x="{x}" y="{ty}" text-anchor="middle">{v}</text>"#,
            x = n(px),
            t = n(TOP),
            b = n(TOP + plot_h),
            ty = n(TOP + plot_h + 16.0),
            v = esc(&fmt_num(t))
        );
    }
    for (i, (label, v, class)) in rows.iter().enumerate() {
        let y = TOP + row_h * i as f64;
        let (a, b) = (xa.at(0.0), xa.at(*v));
        let short: String = if label.chars().count() > 38 {
            format!("{}…", label.chars().take(37).collect::<String>())
        } else {
            label.clone()
        };
        let _ = write!(
            s,
            r#"<rect class="s{class} fillsoft" x="{}" y="{}" width="{}" height="{}"/><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
            n(a.min(b)),
            n(y + 3.0),
            n((a - b).abs()),
            n(row_h - 6.0),
            n(LABEL_W - 6.0),
            n(y + row_h - 5.0),
            esc(&short)
        );
        // The interval as a whisker across the bar, with end caps.
        if let Some(Some((lo, hi))) = intervals.get(i) {
            let (l, r, m) = (xa.at(*lo), xa.at(*hi), y + row_h / 2.0);
            let _ = write!(
                s,
                r#"<path class="s{class} err" d="M{l},{m} L{r},{m} M{l},{t} L{l},{b} M{r},{t} L{r},{b}"/>"#,
                l = n(l),
                r = n(r),
                m = n(m),
                t = n(m - 5.0),
                b = n(m + 5.0)
            );
        }
    }
    let _ = write!(
        s,
        r#"<line class="axis" x1="{z}" x2="{z}" y1="{t}" y2="{b}"/><text class="label x-label" x="{c}" y="{ly}" text-anchor="middle">{xl}</text>"#,
        z = n(xa.at(0.0)),
        t = n(TOP),
        b = n(TOP + plot_h),
        c = n(LABEL_W + (WIDTH - RIGHT - LABEL_W) / 2.0),
        ly = n(TOP + plot_h + 36.0),
        xl = esc(x_label)
    );
    for (i, (class, label, _)) in legend.iter().enumerate() {
        // From the left edge: three entries of up to ~28 characters fit the width.
        let x = 8.0 + (i % 3) as f64 * 220.0;
        let y = TOP + plot_h + 50.0 + (i / 3) as f64 * LEGEND_ROW;
        let _ = write!(
            s,
            r#"<g class="legend"><rect class="s{class} fillsoft" x="{}" y="{}" width="16" height="10"/><text class="tick" x="{}" y="{}">{}</text></g>"#,
            n(x),
            n(y - 9.0),
            n(x + 22.0),
            n(y),
            esc(label)
        );
    }
    s.push_str("</svg>");
    s
}

/// Styles for the charts: used inline in a standalone SVG and in the HTML page.
pub(crate) const STYLE: &str = r#"
.chart { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.chart .bg { fill: var(--bg, #ffffff); }
.chart .title { font-size: 15px; font-weight: 600; fill: var(--fg, #1b1b1f); }
.chart .label { font-size: 12px; fill: var(--fg, #1b1b1f); }
.chart .tick { font-size: 11px; fill: var(--muted, #55555f); font-variant-numeric: tabular-nums; }
.chart .axis { stroke: var(--fg, #1b1b1f); stroke-width: 1; }
.chart .grid { stroke: var(--grid, #e3e3ea); stroke-width: 1; }
.chart .ln { fill: none; stroke-width: 2; }
.chart .dash { stroke-dasharray: 6 4; }
.chart .err { fill: none; stroke-width: 1.4; }
.chart .band { stroke: none; opacity: 0.18; }
.chart .fillsoft { opacity: 0.75; stroke: none; }
.chart .boxp { fill-opacity: 0.18; stroke-width: 1.4; }
.chart .strip { opacity: 0.7; stroke: none; }
.chart .s0 { fill: var(--c0, #2b6cb0); stroke: var(--c0, #2b6cb0); }
.chart .s1 { fill: var(--c1, #c05621); stroke: var(--c1, #c05621); }
.chart .s2 { fill: var(--c2, #2f855a); stroke: var(--c2, #2f855a); }
.chart .s3 { fill: var(--c3, #6b46c1); stroke: var(--c3, #6b46c1); }
.chart .s4 { fill: var(--c4, #b83280); stroke: var(--c4, #b83280); }
.chart .s5 { fill: var(--c5, #718096); stroke: var(--c5, #718096); }
.chart .ln.s0, .chart .ln.s1, .chart .ln.s2, .chart .ln.s3, .chart .ln.s4, .chart .ln.s5 { fill: none; }
.chart .err.s0, .chart .err.s1, .chart .err.s2, .chart .err.s3, .chart .err.s4, .chart .err.s5 { fill: none; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #17171c; --fg: #e8e8ee; --muted: #a8a8b6; --grid: #2c2c36;
          --c0: #63b3ed; --c1: #f6ad55; --c2: #68d391; --c3: #b794f4; --c4: #f687b3; --c5: #a0aec0; }
}
"#;

/// A chart as a standalone SVG file.
pub(crate) fn standalone(chart: &str) -> String {
    let body = chart
        .trim_start_matches(|c| c != '>')
        .trim_start_matches('>');
    let open_end = chart.len() - body.len();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}<style>{}</style>{}\n",
        &chart[..open_end],
        STYLE,
        body
    )
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn labels_that_do_not_fit_show_what_tells_them_apart() {
        let long = [
            "vmlinuz-6.12.100+deb12-cloud-amd64",
            "vmlinuz-6.12.101+deb12-cloud-amd64",
        ];
        let shown = distinct_parts(&long, |s| s.len() <= 17);
        assert_eq!(shown, ["100", "101"]);
        let short = ["v100", "v101"];
        assert_eq!(distinct_parts(&short, |s| s.len() <= 17), ["v100", "v101"]);
        // One label the start of another: cut back to a separator, each still has its part.
        let nested = ["build-6.12", "build-6.12-rc1-with-a-long-name"];
        assert_eq!(
            distinct_parts(&nested, |s| s.len() <= 10),
            ["12", "12-rc1-with-a-long-name"]
        );
        // Labels with nothing in common stay whole.
        let apart = ["good-kernel-build", "bad-kernel-image"];
        assert_eq!(distinct_parts(&apart, |s| s.len() <= 4), apart);
    }

    #[test]
    fn counts_get_whole_ticks() {
        assert_eq!(whole_ticks(0.8, 4.2, 6), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(whole_ticks(0.0, 100.0, 5), ticks(0.0, 100.0, 5));
        let page = xy(
            "t",
            "threads",
            "y",
            &[Series::Line {
                class: 0,
                label: String::new(),
                pts: vec![(1.0, 1.0), (2.0, 2.0), (3.0, 2.5)],
                dashed: false,
            }],
            true,
        );
        let x_ticks: Vec<&str> = page
            .split(r#"class="tick" x="#)
            .skip(1)
            .filter(|s| s.contains(r#"text-anchor="middle""#))
            .filter_map(|s| s.split("</text>").next()?.rsplit('>').next())
            .collect();
        assert_eq!(x_ticks, ["1", "2", "3"], "{page}");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(95.0, 112.0, 4), vec![95.0, 100.0, 105.0, 110.0]);
        assert_eq!(ticks(5.0, 5.0, 4), vec![5.0]);
    }

    #[test]
    fn long_titles_are_shortened_to_fit() {
        let long = "x".repeat(120);
        assert_eq!(fit_title(&long).chars().count(), TITLE_CHARS);
        assert_eq!(fit_title("short"), "short");
        let chart = xy(&long, "x (s)", "y (s)", &[], false);
        assert!(
            chart.contains(&format!("<title>{long}</title>")),
            "the whole title is kept"
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(esc("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
