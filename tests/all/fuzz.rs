//! A fuzz target that runs in CI: seeded random inputs into every parser of user input, and
//! every result the loader accepts rendered in every format and drawn, asserting no panic and,
//! for refused input, one line of error. `SYSCOST_FUZZ_CASES` sets the number of mutations per
//! seed (default 20,000: 100,000 result files and 80,000 strings, about 15 s in CI;
//! `SYSCOST_FUZZ_CASES=200000 cargo test --release --test fuzz` for a longer run, as the book
//! says). Seeded, so a failure names the case that reproduces it.

use crate::common::*;
use rand::{RngExt, SeedableRng};
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};
use syscost::report::format::Format;
use syscost::report::html;
use syscost::report::loaded::{self, Loaded};

crate::tests! {
    // its runs make results to parse, whose figures nothing reads: beside the others
    Shared result_files_of_every_kind_never_panic,
    Shared text_parsers_never_panic,
}

fn cases() -> usize {
    std::env::var("SYSCOST_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Everything a result can become: its text in every format, its page, every chart.
fn render_all(name: &str, l: Loaded) {
    let formats = [Format::Table, Format::Csv, Format::Markdown, Format::Lkml];
    for f in formats {
        let _ = l.text(f);
    }
    let all = vec![(name.to_string(), l)];
    let _ = html::page(&all);
    for kind in loaded::chart_names() {
        let _ = html::single_chart(kind, &all);
    }
}

/// One structural mutation of a JSON document.
fn mutate(v: &mut Value, rng: &mut rand_pcg::Pcg64) {
    // Choose a random node by walking down, then take it by its JSON pointer.
    let mut pointer = String::new();
    let mut at: &Value = v;
    for _ in 0..rng.random_range(0..8) {
        let next = match at {
            Value::Object(m) if !m.is_empty() => {
                let (k, n) = m.iter().nth(rng.random_range(0..m.len())).unwrap();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                n
            }
            Value::Array(a) if !a.is_empty() => {
                let k = rng.random_range(0..a.len());
                pointer.push_str(&format!("/{k}"));
                &a[k]
            }
            _ => break,
        };
        at = next;
    }
    let node = v
        .pointer_mut(&pointer)
        .expect("the pointer was just walked");
    let extreme = [
        0.0, -1.0, 1.0, 1e308, -1e308, 1e-308, 1e200, 4e9, 1.8e19, 0.5, -0.0,
    ];
    match rng.random_range(0..7) {
        0 => *node = Value::from(extreme[rng.random_range(0..extreme.len())]),
        1 => *node = Value::from(rng.random_range(0..u64::MAX)),
        2 => *node = Value::Array(Vec::new()),
        3 => *node = Value::Null,
        4 => *node = Value::from(""),
        5 => {
            if let Value::Object(m) = node
                && !m.is_empty()
            {
                let k = m.keys().nth(rng.random_range(0..m.len())).cloned().unwrap();
                m.remove(&k);
            }
        }
        _ => {
            if let Value::Array(a) = node
                && let Some(first) = a.first().cloned()
            {
                for _ in 0..rng.random_range(1..4) {
                    a.push(first.clone());
                }
            }
        }
    }
}

/// Real results of every kind this machine can make quickly: a run, a second one, their
/// comparison, a merge, a correlation, a cache-set analysis and a trend.
fn seeds(dir: &std::path::Path) -> Vec<(String, String)> {
    let path = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let quick = ["--runs", "3", "--samples", "2", "--sample-time", "5ms"];
    for (name, call) in [("a.json", "getpid"), ("b.json", "getppid")] {
        let out = path(name);
        let mut args = vec!["run", "syscall", "--syscall", call, "-o", &out];
        args.extend(quick);
        assert!(syscost().args(&args).output().unwrap().status.success());
    }
    let (a, b) = (path("a.json"), path("b.json"));
    for args in [
        vec!["compare", &a, &b, "--force", "-o", &path("c.json")],
        vec!["merge", &a, &a, "--force", "-o", &path("m.json")],
        vec![
            "correlate",
            &a,
            &b,
            "--x",
            "task-clock",
            "-o",
            &path("r.json"),
        ],
    ] {
        let out = syscost().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cs = syscost()
        .args([
            "cachesets",
            "--objects",
            "37",
            "--size",
            "408",
            "--trials",
            "200",
            "--json",
        ])
        .output()
        .unwrap();
    std::fs::write(path("s.json"), &cs.stdout).unwrap();
    // A trend: the first run stored as two kernels.
    let mut later: Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    later["environment"]["kernel_release"] = "99.1".into();
    std::fs::write(path("a2.json"), later.to_string()).unwrap();
    let store = path("history.sqlite");
    for args in [
        vec![
            "history",
            "--history",
            &store,
            "import",
            &a,
            &path("a2.json"),
        ],
        vec![
            "history",
            "--history",
            &store,
            "trend",
            "-o",
            &path("t.json"),
        ],
    ] {
        let out = syscost().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ["a.json", "c.json", "m.json", "r.json", "s.json", "t.json"]
        .iter()
        .map(|n| (n.to_string(), std::fs::read_to_string(path(n)).unwrap()))
        .collect()
}

fn result_files_of_every_kind_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (mut inputs, mut accepted) = (0, 0);
    for (si, (name, text)) in seeds(dir.path()).into_iter().enumerate() {
        let seed_value: Value = serde_json::from_str(&text).unwrap();
        // The seed itself loads and renders.
        render_all(
            &name,
            loaded::parse(&name, &text).expect("a real result loads"),
        );
        for case in 0..cases() {
            let mut rng = rand_pcg::Pcg64::seed_from_u64((si * 1_000_000 + case) as u64);
            let input = if case % 5 == 4 {
                // Bytes: a truncation or a flipped byte.
                let mut b = text.clone().into_bytes();
                let at = rng.random_range(0..b.len());
                if rng.random_range(0..2) == 0 {
                    b.truncate(at);
                } else {
                    b[at] = rng.random_range(0..=255u8);
                }
                String::from_utf8_lossy(&b).into_owned()
            } else {
                let mut v = seed_value.clone();
                for _ in 0..rng.random_range(1..4) {
                    mutate(&mut v, &mut rng);
                }
                v.to_string()
            };
            inputs += 1;
            let outcome = catch_unwind(AssertUnwindSafe(|| match loaded::parse(&name, &input) {
                Ok(l) => {
                    render_all(&name, l);
                    true
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert_eq!(msg.lines().count(), 1, "one line of error: {msg}");
                    false
                }
            }));
            match outcome {
                Ok(true) => accepted += 1,
                Ok(false) => {}
                Err(_) => panic!(
                    "panic on seed {name} case {case} (SYSCOST_FUZZ_CASES reproduces it): {input}"
                ),
            }
        }
    }
    eprintln!("fuzz: {inputs} result files ({accepted} accepted and rendered), no panic");
    // Mutations that keep a result loadable are what reach the renderers: the target is only
    // worth running if a good share of them do.
    assert!(accepted * 10 > inputs, "{accepted} of {inputs} accepted");
}

fn text_parsers_never_panic() {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(99);
    let alphabet: Vec<char> = "0123456789,-:{}=uk xabcdefsetwayline%.\n\t#"
        .chars()
        .collect();
    let n = cases() * 4;
    for case in 0..n {
        let len = rng.random_range(0..24);
        let s: String = (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        let outcome = catch_unwind(|| {
            let _ = syscost::core::CpuList::parse(&s);
            let _ = syscost::counters::parse_event_list(&[&s]);
            let _ = syscost::layout::Geometry::parse(&s);
            let _ = syscost::layout::parse_addresses(&s, "fuzz");
            let _ = syscost::experiments::audit_sweep::parse_rule_counts(&s);
        });
        assert!(outcome.is_ok(), "panic on case {case}: {s:?}");
    }
    eprintln!("fuzz: {} strings into five parsers, no panic", n);
}
