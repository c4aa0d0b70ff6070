//! End-to-end: `syscost report` from real results of this machine: the page parses, every chart
//! has a title and axis labels with units, headless Chromium renders it, and bad inputs are
//! refused.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

crate::tests! {
    Serial page_parses_and_every_chart_is_labelled,
    Serial headless_chromium_renders_the_page,
    Serial svg_charts_and_bad_inputs,
    Shared results_of_many_samples_are_streamed_and_thinned,
    Shared charts_of_many_variants_fit_and_say_whose_they_are,
}

/// Real results of several kinds, made once per test binary.
fn results(dir: &Path) -> Vec<PathBuf> {
    let q = [
        "--samples",
        "2",
        "--warmup",
        "0",
        "--sample-time",
        "10ms",
        "-e",
        "task-clock",
    ];
    let mut files = Vec::new();
    let mut run = |args: &[&str], name: &str| {
        let f = dir.join(name);
        let out = syscost()
            .args(args)
            .args(q)
            .arg("-o")
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(f);
    };
    run(&["run", "syscall", "--runs", "3"], "run.json");
    run(
        &[
            "run",
            "audit-replica",
            "--rules",
            "16",
            "--slab-fill",
            "50",
            // cacheline-spread takes a handful of values over 16 entries in 8 sets: 4 runs
            // gave one value 4 times in a CI run, and no correlation; 8 runs make that rare.
            "--runs",
            "8",
        ],
        "replica.json",
    );
    let out = syscost()
        .args([
            "ab",
            "--variant",
            "syscall",
            "--variant",
            "syscall --syscall getppid",
        ])
        .args(["--variant", "syscall --syscall gettid", "-o"])
        .arg(dir.join("ab.json"))
        .args(["--", "--runs", "7"])
        .args(q)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    files.push(dir.join("ab.json"));
    let corr = dir.join("corr.json");
    let out = syscost()
        .args([
            "correlate",
            dir.join("replica.json").to_str().unwrap(),
            "--x",
            "cacheline-spread",
            "-o",
        ])
        .arg(&corr)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    files.push(corr);
    let cs = syscost()
        .args([
            "cachesets",
            "--objects",
            "37",
            "--size",
            "408",
            "--geometry",
            "sets=64,ways=8,line=64",
        ])
        .args(["--trials", "1000", "--json"])
        .output()
        .unwrap();
    std::fs::write(dir.join("cachesets.json"), &cs.stdout).unwrap();
    files.push(dir.join("cachesets.json"));
    files
}

fn report(files: &[PathBuf], out: &Path) {
    let o = syscost()
        .arg("report")
        .args(files)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn page_parses_and_every_chart_is_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let files = results(dir.path());
    let page = dir.path().join("report.html");
    report(&files, &page);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "no JavaScript");
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(attr), "no network resources: {attr}");
    }
    let doc = scraper::Html::parse_document(&html);
    assert!(
        doc.errors.is_empty(),
        "the HTML parses cleanly: {:?}",
        doc.errors
    );
    let svg = scraper::Selector::parse("svg.chart").unwrap();
    let charts: Vec<_> = doc.select(&svg).collect();
    assert!(
        charts.len() >= 7,
        "run, replica, compare (3), correlate, cachesets: {}",
        charts.len()
    );
    let title = scraper::Selector::parse("title").unwrap();
    let xl = scraper::Selector::parse(".x-label").unwrap();
    let yl = scraper::Selector::parse(".y-label").unwrap();
    for c in &charts {
        let t: String = c
            .select(&title)
            .next()
            .map(|t| t.text().collect())
            .unwrap_or_default();
        assert!(!t.trim().is_empty(), "every chart has a title");
        let x: String = c
            .select(&xl)
            .next()
            .map(|t| t.text().collect())
            .unwrap_or_default();
        assert!(!x.trim().is_empty(), "{t}: an x axis label");
        // Units: every value axis says what it counts in parentheses.
        let y: Option<String> = c.select(&yl).next().map(|t| t.text().collect());
        let value_axis = y.clone().unwrap_or(x.clone());
        assert!(
            value_axis.contains('(') && value_axis.contains(')'),
            "{t}: units on '{value_axis}'"
        );
        assert_eq!(
            c.value().attr("width"),
            Some("680.00"),
            "{t}: charts keep their size"
        );
    }
    // Deterministic: the same inputs give the same page.
    let again = dir.path().join("again.html");
    report(&files, &again);
    assert_eq!(html, std::fs::read_to_string(&again).unwrap());
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|b| {
            let out = Command::new("which").arg(b).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

fn headless_chromium_renders_the_page() {
    let Some(browser) = chromium() else {
        skip("no Chromium here (scripts/test.sh installs Debian's chromium as root)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files = results(dir.path());
    let page = dir.path().join("report.html");
    report(&files, &page);
    // The screenshot is kept as an artifact in the tests' output directory.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let width = 1100u32;
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},3000"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.exists(),
        "Chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width as usize, info.height as usize);
    let bpp = info.line_size / w;
    assert_eq!(w, width as usize);
    let px = |x: usize, y: usize| -> &[u8] {
        &buf[y * info.line_size + x * bpp..y * info.line_size + x * bpp + 3]
    };
    let bg = px(0, 0).to_vec();
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0usize;
    for y in (0..h).step_by(3) {
        for x in (0..w).step_by(3) {
            let p = px(x, y);
            colours.insert(p.to_vec());
            if p != bg.as_slice() {
                ink += 1;
            }
        }
    }
    let total = (h / 3 + 1) * (w / 3 + 1);
    assert!(
        colours.len() > 20,
        "the page rendered more than a blank: {} colours",
        colours.len()
    );
    assert!(
        ink * 100 / total >= 3,
        "content covers the page: {ink} of {total} sampled pixels"
    );
    // Nothing cut off on the right: the page's right margin stays background all the way down.
    for y in (0..h).step_by(2) {
        for x in w - 40..w {
            assert_eq!(
                px(x, y),
                bg.as_slice(),
                "content reaches the right edge at ({x}, {y})"
            );
        }
    }
    println!("screenshot: {}", shot.display());
}

fn svg_charts_and_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let files = results(dir.path());
    let svg = dir.path().join("c.svg");
    let o = syscost()
        .args(["report", "--svg", "compare"])
        .arg(&files[2])
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<?xml")
            && text.contains("<style>")
            && text.trim_end().ends_with("</svg>")
    );
    let fails = |args: Vec<&str>, needle: &str| {
        let o = syscost().arg("report").args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    };
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\"schema\": \"syscost-result\", \"version\": 1, \"kind\": \"weird\"}",
    )
    .unwrap();
    let trunc = dir.path().join("trunc.json");
    std::fs::write(&trunc, "{\"schema\": ").unwrap();
    let out = dir.path().join("r.html");
    let (b, t, o, r) = (
        bad.to_str().unwrap(),
        trunc.to_str().unwrap(),
        out.to_str().unwrap(),
        files[0].to_str().unwrap(),
    );
    fails(vec![b, "-o", o], "not a kind of result");
    fails(vec![t, "-o", o], "truncated");
    fails(vec![r, "-o", "/nonexistent/dir/r.html"], "does not exist");
    fails(vec!["--svg", "sweep", r, "-o", o], "has no 'sweep' chart");
    fails(vec!["--svg", "pie", r, "-o", o], "unknown chart");
    fails(
        vec!["--svg", "run", r, files[1].to_str().unwrap(), "-o", o],
        "draws one result",
    );
    assert!(!out.exists(), "nothing written after a refusal");
}

/// A run result of many raw samples (here 12 MB, streamed rather than read whole): `show`
/// prints what it prints for the same runs with few samples, `show --format json` keeps every
/// sample, and the page draws about a thousand dots per run and says how many of how many.
fn results_of_many_samples_are_streamed_and_thinned() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.json");
    let out = syscost()
        .args([
            "run",
            "syscall",
            "--runs",
            "2",
            "--samples",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--sample-time", "5ms", "-e", "task-clock", "-o"])
        .arg(&small)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&small).unwrap()).unwrap();
    let per_run = 60_000;
    for run in v["runs"].as_array_mut().unwrap() {
        let first = run["samples"][0].clone();
        run["samples"] = serde_json::Value::Array(vec![first; per_run]);
    }
    let big = dir.path().join("big.json");
    std::fs::write(&big, serde_json::to_string(&v).unwrap()).unwrap();
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(size > 8 << 20, "large enough to be streamed: {size} bytes");

    let show = |f: &Path, json: bool| {
        let mut c = syscost();
        c.arg("show").arg(f);
        if json {
            c.args(["--format", "json"]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(show(&big, false), show(&small, false));
    let whole: serde_json::Value = serde_json::from_str(&show(&big, true)).unwrap();
    assert_eq!(
        whole["runs"][1]["samples"].as_array().unwrap().len(),
        per_run
    );

    let page = dir.path().join("big.html");
    report(&[big], &page);
    let html = std::fs::read_to_string(&page).unwrap();
    let total = 2 * per_run;
    let said = html
        .split("dots: ")
        .nth(1)
        .and_then(|s| s.split(" raw samples").next())
        .unwrap_or_else(|| panic!("the run chart says how many dots it draws"));
    let (kept, of) = said.split_once(" of the ").unwrap();
    let kept: usize = kept.parse().unwrap();
    assert_eq!(of, total.to_string());
    assert!((1000..=2000).contains(&kept), "{kept} dots for two runs");
    assert!(html.len() < 2 << 20, "a page of {} bytes", html.len());
}

/// What Chromium says of a page: its width against the window's, and every pair of chart
/// annotations (notes above the columns, labels below them) that overlap or leave their chart.
const LAYOUT_PROBE: &str = r#"<script>
const clash = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll("text.tick")].map(t => [t.textContent, t.getBoundingClientRect()]);
  for (const [s, r] of texts) {
    if (r.left < box.left - 1 || r.right > box.right + 1) clash.push("outside: " + s);
  }
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const [a, p] = texts[i], [b, q] = texts[j];
    if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1)
      clash.push(a + " / " + b);
  }
}
document.body.setAttribute("data-width", document.documentElement.scrollWidth + " " + document.documentElement.clientWidth);
document.body.setAttribute("data-clash", clash.join(" | "));
</script></body>"#;

/// A report of comparisons of 2, 3 and 8 variants with long labels, and runs of two kernels
/// one of which warns: laid out by Chromium at 1280 px, nothing overlaps or scrolls sideways,
/// the change chart draws its intervals, the header names both kernels and a warning its file.
fn charts_of_many_variants_fit_and_say_whose_they_are() {
    let Some(browser) = chromium() else {
        skip("no Chromium here (scripts/test.sh installs Debian's chromium as root)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = quick_run();
    let write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let names = [
        "baseline-kernel-6.1.0-28-amd64-with-audit",
        "patch1-cache-ctx-major-in-audit-filter",
        "patch1-2-annotate-branch-direction",
        "patch1-3-unify-audit-filters",
        "align-16",
        "align-32",
        "align-64-with-a-very-long-name-indeed",
        "x",
    ];
    let variants: Vec<PathBuf> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            write(
                &format!("{n}.json"),
                &relabelled(&base, &[], 1.0 + 0.1 * i as f64),
            )
        })
        .collect();
    let mut files = Vec::new();
    for k in [2, 3, 8] {
        let out = dir.path().join(format!("compare{k}.json"));
        let o = syscost()
            .arg("compare")
            .args(&variants[..k])
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(out);
    }
    let mut other = relabelled(&base, &[("kernel_release", "6.10.0-test")], 1.0);
    other["warnings"] = serde_json::json!(["a warning of this file alone"]);
    files.push(write("first-kernel.json", &base));
    files.push(write("second-kernel.json", &other));
    let page = dir.path().join("report.html");
    report(&files, &page);
    let html = std::fs::read_to_string(&page).unwrap();
    let kernel = base["environment"]["kernel_release"].as_str().unwrap();
    let row = html.split("<th>kernel</th><td>").nth(1).unwrap();
    let row = &row[..row.find("</td>").unwrap()];
    assert!(
        row.contains(kernel) && row.contains("6.10.0-test") && row.contains("second-kernel.json)"),
        "{row}"
    );
    assert!(html.contains("second-kernel.json: a warning of this file alone"));
    let delta = &html[html.find("Change against the baseline").unwrap()..];
    let delta = &delta[..delta.find("</svg>").unwrap()];
    assert!(
        delta.contains(" err\""),
        "the change chart draws no interval"
    );
    let probe = dir.path().join("probe.html");
    std::fs::write(&probe, html.replace("</body>", LAYOUT_PROBE)).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--window-size=1280,900", "--dump-dom"])
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let attr = |name: &str| -> String {
        let at = dom
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name}: {dom:.300}"));
        let rest = &dom[at + name.len() + 2..];
        rest[..rest.find('"').unwrap()].to_string()
    };
    let width: Vec<u32> = attr("data-width")
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(width[0] <= width[1], "the page scrolls sideways: {width:?}");
    assert_eq!(
        attr("data-clash"),
        "",
        "chart annotations overlap or leave their chart"
    );
}
