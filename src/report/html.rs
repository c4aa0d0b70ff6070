//! `syscost report`: one self-contained HTML page (inline CSS and SVG, no JavaScript, no
//! network) with the charts engineers draw by hand, for every kind of syscost result.

use super::kind::Loaded;
use super::loaded::chart_names;
use super::section::Section;
use super::svg::{self, esc};
use anyhow::{Result, bail};

/// One section per result.
fn section(l: &Loaded, label: &str) -> Section {
    let mut s = Section {
        html: format!(
            "<section><h2>{}</h2><p class=\"src\">{}</p>",
            esc(&l.title()),
            esc(label)
        ),
        warnings: Vec::new(),
    };
    l.section(&mut s);
    s.html.push_str("</section>");
    s
}

/// Every kernel the results were measured on; when they differ, each with its files.
fn kernels(loaded: &[(String, Loaded)]) -> String {
    let mut seen: Vec<(String, Vec<&str>)> = Vec::new();
    for (label, l) in loaded {
        let Some(e) = l.environment() else { continue };
        let k = format!(
            "{} {}",
            e.kernel_release.clone().unwrap_or_default(),
            e.kernel_version.clone().unwrap_or_default()
        );
        match seen.iter_mut().find(|(x, _)| *x == k) {
            Some((_, files)) => files.push(label),
            None => seen.push((k, vec![label])),
        }
    }
    match &seen[..] {
        [(k, _)] => k.clone(),
        _ => seen
            .iter()
            .map(|(k, files)| format!("{} ({})", k.trim(), files.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn header(loaded: &[(String, Loaded)]) -> String {
    let env = loaded.iter().find_map(|(_, l)| l.environment()).cloned();
    let mut rows: Vec<(String, String)> = Vec::new();
    match env {
        Some(e) => {
            rows.push(("kernel".into(), kernels(loaded)));
            rows.push((
                "cpu".into(),
                format!(
                    "{} (family {} model {} stepping {}, microcode {})",
                    e.cpu.model_name.unwrap_or_default(),
                    e.cpu.family.unwrap_or_default(),
                    e.cpu.model.unwrap_or_default(),
                    e.cpu.stepping.unwrap_or_default(),
                    e.cpu.microcode.unwrap_or_default()
                ),
            ));
            for c in &e.cpu.caches {
                rows.push((
                    format!("L{} {}", c.level, c.type_.to_lowercase()),
                    format!(
                        "{}: {} sets x {} ways x {} B lines",
                        c.size.clone().unwrap_or_default(),
                        c.sets.map(|x| x.to_string()).unwrap_or_default(),
                        c.ways.map(|x| x.to_string()).unwrap_or_default(),
                        c.line_size.map(|x| x.to_string()).unwrap_or_default()
                    ),
                ));
            }
            rows.push((
                "hardware PMU".into(),
                if e.hardware_pmu {
                    "present".into()
                } else {
                    "absent: cycles and cache events not counted".into()
                },
            ));
            rows.push(("clocksource".into(), e.clocksource.unwrap_or_default()));
        }
        None => {
            rows.extend(loaded.iter().flat_map(|(_, l)| l.machine_rows()));
            if rows.is_empty() {
                rows.push(("machine".into(), "not recorded in these results".into()));
            }
        }
    }
    let mut s = String::from("<table class=\"env\"><tbody>");
    for (k, v) in rows {
        s.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(&k),
            esc(&v)
        ));
    }
    s.push_str("</tbody></table>");
    s
}

const PAGE_STYLE: &str = r#"
:root { --bg: #ffffff; --fg: #1b1b1f; --muted: #55555f; --grid: #e3e3ea; --rule: #d0d0da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #17171c; --fg: #e8e8ee; --muted: #a8a8b6; --grid: #2c2c36; --rule: #3a3a46; }
}
html { background: var(--bg); color: var(--fg); }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1000px; margin: 0 auto; padding: 24px; line-height: 1.45; }
h1 { font-size: 24px; margin: 0 0 8px; }
h2 { font-size: 19px; margin: 32px 0 4px; border-top: 1px solid var(--rule); padding-top: 16px; }
.src, .meta { color: var(--muted); font-size: 13px; margin: 2px 0; }
figure { margin: 16px 0; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.env th { color: var(--muted); font-weight: normal; }
.notes { color: var(--muted); font-size: 13px; }
.warnings li { color: #b7791f; }
pre { font-size: 12px; overflow-x: auto; }
@media print {
  body { max-width: none; padding: 0; }
  section, figure, table { break-inside: avoid; }
  h2 { break-after: avoid; }
}
"#;

/// The whole page.
pub fn page(loaded: &[(String, Loaded)]) -> String {
    // Each warning with the files that gave it.
    let mut said: Vec<(String, Vec<&str>)> = Vec::new();
    let mut sections = Vec::new();
    for (label, l) in loaded {
        let sec = section(l, label);
        let mut own = sec.warnings;
        sections.push(sec.html);
        own.sort();
        own.dedup();
        for w in own {
            match said.iter_mut().find(|(x, _)| *x == w) {
                Some((_, files)) => files.push(label),
                None => said.push((w, vec![label])),
            }
        }
    }
    // A warning of every file is said once; one of some files names them.
    let warnings: Vec<String> = said
        .into_iter()
        .map(|(w, files)| {
            if files.len() == loaded.len() {
                w
            } else {
                format!("{}: {w}", files.join(", "))
            }
        })
        .collect();
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"color-scheme\" content=\"light dark\">");
    s.push_str("<title>syscost report</title><style>");
    s.push_str(PAGE_STYLE);
    s.push_str(svg::STYLE);
    s.push_str("</style></head><body><h1>syscost report</h1>");
    s.push_str(&format!(
        "<p class=\"meta\">{} result(s); syscost {}</p>",
        loaded.len(),
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(&header(loaded));
    if !warnings.is_empty() {
        s.push_str("<h2>Warnings</h2><ul class=\"warnings\">");
        for w in &warnings {
            s.push_str(&format!("<li>{}</li>", esc(w)));
        }
        s.push_str("</ul>");
    }
    for sec in sections {
        s.push_str(&sec);
    }
    s.push_str("</body></html>\n");
    s
}

/// One chart of `kind` from the results, for `--svg`.
pub fn single_chart(kind: &str, loaded: &[(String, Loaded)]) -> Result<String> {
    let one = |want: &str| -> Result<&Loaded> {
        match loaded {
            [(_, l)] => Ok(l),
            _ => bail!(crate::refused!(
                crate::core::input::Opt::Svg,
                format!(" {want} draws one result; {} were given", loaded.len())
            )),
        }
    };
    let l = one(kind)?;
    let names = chart_names();
    if !names.contains(&kind) {
        bail!("unknown chart '{kind}': one of {}", names.join(", "));
    }
    let chart = match l.chart(kind) {
        Some(chart) => chart?,
        None => bail!("a '{}' result has no '{kind}' chart", l.kind()),
    };
    Ok(svg::standalone(&chart))
}

#[cfg(test)]
mod snapshots {
    //! Charts of fixed inputs: the output is deterministic, so it is compared byte for byte.
    use crate::compare::tests::variant;
    use crate::compare::{Options, compare};
    use crate::layout::{Geometry, Request, analyse};
    use crate::report::charts::*;

    #[test]
    fn charts_of_fixed_inputs() {
        let r = crate::results::fixture::fixed_result();
        insta::assert_snapshot!("svg_run", run_chart(&r));
        let c = compare(
            vec![
                variant("base", &[100.0, 101.0, 99.5, 100.5, 100.2]),
                variant("slow", &[112.0, 111.0, 113.5, 112.5, 111.8]),
                variant("fast", &[90.0, 91.0, 89.5, 90.5, 90.2]),
            ],
            &Options {
                resamples: 500,
                ..Options::default()
            },
        )
        .unwrap();
        insta::assert_snapshot!("svg_compare", compare_chart(&c));
        insta::assert_snapshot!("svg_ranking", ranking_chart(&c).unwrap());
        let a = analyse(&Request {
            geometry: Geometry {
                sets: 64,
                ways: 8,
                line: 64,
            },
            geometry_source: "--geometry",
            addrs: Some(&(0..12).map(|i| i * 4096).collect::<Vec<u64>>()),
            objects: 12,
            size: Some(408),
            align: None,
            lines: 1,
            trials: 100,
            seed: 1,
        })
        .unwrap();
        insta::assert_snapshot!("svg_cachesets", cachesets_chart(&a));
        // Same input, same bytes.
        assert_eq!(run_chart(&r), run_chart(&r));
    }
}
