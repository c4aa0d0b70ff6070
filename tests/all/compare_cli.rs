//! End-to-end: compare, merge, correlate and ab through the real binary: fixed inputs in every
//! output format (snapshots), real results from this machine, and every bad input.

use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

crate::tests! {
    Shared compare_in_every_format,
    Shared verdicts_a_a_and_shifted,
    Shared merge_and_compare_merged,
    Shared correlate_two_metrics,
    Shared bad_files_are_refused_by_name,
    Serial real_results_compare_merge_correlate,
    Serial ab_interleaves_and_calls_a_real_difference,
    Shared summaries_are_recomputed_and_damaged_metrics_refused,
    Shared correlate_warns_of_pooled_files_and_correlates_within,
    Shared an_output_that_is_an_input_is_refused,
    Shared extreme_values_get_a_message_not_a_panic,
    Shared messages_say_what_is_really_wrong,
    Shared merge_summarises_results_of_one_boot,
    Shared fail_on_gates_with_status_3,
}

/// A minimal `run` result with the given per-run times, context switches and spread.
fn fixture(dir: &Path, name: &str, syscall: &str, times: &[f64], boot: &str) -> PathBuf {
    let n = times.len();
    let units: Vec<u32> = (0..n as u32).collect();
    let summary = |v: &[f64]| serde_json::to_value(syscost::stats::Summary::of(v)).unwrap();
    let cs: Vec<f64> = times.iter().map(|t| t / 1e8).collect();
    let r = json!({
        "schema": "syscost-result", "version": 1, "kind": "run",
        "tool": {"name": "syscost", "version": "test"},
        "created_unix": 1_700_000_000u64,
        "workload": {"workload": "syscall", "syscall": syscall},
        "op_name": "call",
        "options": {"ops_per_sample": 1_000_000, "subtract_overhead": false},
        "environment": {"kernel_release": "6.18.0-test", "hostname": "box", "boot_id": boot,
                        "hardware_pmu": false},
        "runs": units.iter().map(|i| json!({"index": i, "pid": 1000 + i, "samples": []})).collect::<Vec<_>>(),
        "metrics": [
            {"name": "time", "unit": "ns/call", "kind": "time", "replication": "run",
             "values": times, "units": units, "summary": summary(times),
             "status": null, "reason": null, "running_pct": null},
            {"name": "context-switches", "unit": "/call", "kind": "counter", "replication": "run",
             "values": cs, "units": units, "summary": summary(&cs),
             "status": null, "reason": null, "running_pct": 100.0},
            {"name": "cycles", "unit": "/call", "kind": "counter", "replication": "run",
             "values": [], "units": [], "summary": null,
             "status": "<not supported>", "reason": "no PMU", "running_pct": null}
        ],
        "warnings": []
    });
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    p
}

struct Fixtures {
    _dir: tempfile::TempDir,
    base: PathBuf,
    same: PathBuf,
    slower: PathBuf,
    faster: PathBuf,
}

fn fixtures() -> Fixtures {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    Fixtures {
        base: fixture(
            d,
            "base.json",
            "getpid",
            &[100.0, 101.0, 99.5, 100.5, 100.2, 99.8],
            "b1",
        ),
        same: fixture(
            d,
            "same.json",
            "getpid",
            &[100.3, 99.6, 100.9, 100.1, 99.9, 100.4],
            "b2",
        ),
        slower: fixture(
            d,
            "slower.json",
            "getpid",
            &[112.0, 111.0, 113.5, 112.5, 111.8, 112.2],
            "b3",
        ),
        faster: fixture(
            d,
            "faster.json",
            "getpid",
            &[90.0, 91.0, 89.5, 90.5, 90.2, 89.8],
            "b4",
        ),
        _dir: dir,
    }
}

fn stdout_of(args: &[&str]) -> String {
    let out = syscost().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn p(x: &Path) -> &str {
    x.to_str().unwrap()
}

/// Paths in the output differ per run: keep file names only.
fn scrub(s: &str, dir: &Path) -> String {
    s.replace(&format!("{}/", dir.display()), "")
}

fn compare_in_every_format() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    for format in ["table", "csv", "markdown", "lkml"] {
        let out = stdout_of(&[
            "compare",
            p(&f.base),
            p(&f.slower),
            p(&f.faster),
            "--format",
            format,
            "--resamples",
            "2000",
        ]);
        insta::assert_snapshot!(format!("compare_{format}"), scrub(&out, &dir));
        if format == "lkml" {
            assert!(out.is_ascii(), "lkml is plain ASCII");
        }
    }
    let json: Value = serde_json::from_str(&stdout_of(&[
        "compare",
        p(&f.base),
        p(&f.slower),
        "--format",
        "json",
        "--resamples",
        "2000",
    ]))
    .unwrap();
    assert_eq!(json["kind"], "compare");
    assert_eq!(json["bootstrap"]["seed"], 42);
    let d = &json["deltas"][0];
    assert_eq!(d["metric"], "time");
    assert_eq!(d["verdict"], "slower");
    assert!(
        d["ci_pct"][0].as_f64().unwrap() > 0.0,
        "the CI excludes zero"
    );
}

fn verdicts_a_a_and_shifted() {
    let f = fixtures();
    let out = stdout_of(&["compare", p(&f.base), p(&f.same), "--format", "csv"]);
    let time_row = out.lines().find(|l| l.starts_with("time")).unwrap();
    assert!(
        time_row.ends_with("equivalent (within ±2%)"),
        "A/A: {time_row}"
    );
    let out = stdout_of(&["compare", p(&f.base), p(&f.faster), "--format", "csv"]);
    let time_row = out.lines().find(|l| l.starts_with("time")).unwrap();
    assert!(time_row.ends_with("faster"), "{time_row}");
    // Same seed, same output.
    let a = stdout_of(&["compare", p(&f.base), p(&f.faster), "--seed", "7"]);
    let b = stdout_of(&["compare", p(&f.base), p(&f.faster), "--seed", "7"]);
    assert_eq!(a, b);
    let w = stdout_of(&["compare", p(&f.base), p(&f.faster), "--test", "welch"]);
    assert!(w.contains("Welch"));
}

fn merge_and_compare_merged() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let merged = dir.join("merged.json");
    let out = stdout_of(&[
        "merge",
        p(&f.base),
        p(&f.same),
        p(&f.faster),
        "-o",
        p(&merged),
    ]);
    insta::assert_snapshot!("merge_table", scrub(&out, &dir));
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m["kind"], "merged");
    assert_eq!(m["groups"].as_array().unwrap().len(), 3);
    let time = &m["metrics"][0];
    assert_eq!(time["replication"], "boot");
    assert_eq!(time["values"].as_array().unwrap().len(), 3);
    let split = &m["variance"][0];
    assert!(
        split["between_share_pct"].as_f64().unwrap() > 50.0,
        "{split}"
    );
    // The merged file is itself comparable, with the boot as the unit.
    let merged2 = dir.join("merged2.json");
    stdout_of(&[
        "merge",
        p(&f.slower),
        p(&f.same),
        p(&f.base),
        "-o",
        p(&merged2),
    ]);
    let out = stdout_of(&["compare", p(&merged), p(&merged2), "--format", "lkml"]);
    assert!(
        out.contains("Unit of replication: boot (n = 3, 3)"),
        "{out}"
    );
}

fn correlate_two_metrics() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let out = stdout_of(&[
        "correlate",
        p(&f.base),
        p(&f.slower),
        "--x",
        "context-switches",
        "--y",
        "time",
    ]);
    insta::assert_snapshot!("correlate_table", scrub(&out, &dir));
    let json: Value = serde_json::from_str(&stdout_of(&[
        "correlate",
        p(&f.base),
        p(&f.slower),
        "--x",
        "context-switches",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["correlation"]["n"], 12);
    assert!(json["correlation"]["pearson_r"].as_f64().unwrap() > 0.999);
}

fn fails(args: &[&str], needles: &[&str]) {
    let out = syscost().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected '{n}' in: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one message: {err}");
}

fn bad_files_are_refused_by_name() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let write = |name: &str, text: &str| {
        let q = dir.join(name);
        std::fs::write(&q, text).unwrap();
        q
    };
    let empty = write("empty.json", "");
    let truncated = write(
        "trunc.json",
        &std::fs::read_to_string(&f.base).unwrap()[..200],
    );
    let garbage = write("garbage.json", "not json at all");
    let other = write("other.json", "{\"name\": \"x\"}");
    let future = write(
        "future.json",
        "{\"schema\": \"syscost-result\", \"version\": 99, \"kind\": \"run\"}",
    );
    let b = p(&f.base);
    fails(&["compare", b, p(&empty)], &["empty.json", "empty"]);
    fails(&["compare", b, p(&truncated)], &["trunc.json", "truncated"]);
    fails(
        &["compare", b, p(&garbage)],
        &["garbage.json", "not valid JSON"],
    );
    fails(
        &["compare", b, p(&other)],
        &["other.json", "not a syscost result"],
    );
    fails(
        &["compare", b, p(&future)],
        &["future.json", "newer syscost"],
    );
    fails(
        &["compare", b, "/nonexistent.json"],
        &["cannot read /nonexistent.json"],
    );
    fails(&["compare", b], &["at least two results"]);
    fails(
        &["compare", b, p(&f.same), "--metric", "nosuch"],
        &["no metric 'nosuch'", "time"],
    );
    fails(
        &["correlate", b, "--x", "nosuch"],
        &["base.json", "no metric 'nosuch'", "context-switches"],
    );
    fails(&["merge", b], &["at least two"]);
    let ppid = fixture(&dir, "ppid.json", "getppid", &[1.0, 2.0, 3.0], "b9");
    fails(
        &["compare", b, p(&ppid)],
        &["measure different things", "getppid", "--force"],
    );
    fails(&["compare", b, p(&f.same), "--alpha", "2"], &["--alpha"]);
    fails(
        &["compare", b, p(&f.same), "-o", "/nonexistent/dir/x.json"],
        &["does not exist"],
    );
    fails(
        &["show", p(&f.base)],
        &["base.json", "damaged or incomplete"],
    );
}

fn real_results_compare_merge_correlate() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, sc) in ["getpid", "getpid", "getpid"].iter().enumerate() {
        let f = dir.path().join(format!("r{i}.json"));
        let out = syscost()
            .args(["run", "syscall", "--syscall", sc, "--runs", "4"])
            .args(QUICK)
            .arg("-o")
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(f);
    }
    let out = stdout_of(&["compare", p(&files[0]), p(&files[1]), "--format", "json"]);
    let c: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(c["variants"][0]["unit"], "run");
    assert!(
        c["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["metric"] == "task-clock")
    );
    let merged = dir.path().join("m.json");
    stdout_of(&[
        "merge",
        p(&files[0]),
        p(&files[1]),
        p(&files[2]),
        "-o",
        p(&merged),
    ]);
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m["groups"].as_array().unwrap().len(), 3);
    assert!(
        m["warnings"][0].as_str().unwrap().contains("same boot"),
        "results of one boot are flagged: {}",
        m["warnings"]
    );
    let out = stdout_of(&[
        "correlate",
        p(&files[0]),
        p(&files[1]),
        p(&files[2]),
        "--x",
        "task-clock",
        "--y",
        "time",
        "--format",
        "json",
    ]);
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["correlation"]["n"], 12);
    // Pearson's r of the 12 runs' figures as the files hold them (how closely task-clock
    // follows wall time depends on what else this machine runs: not asserted).
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for f in &files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let values = |name| metric(&v, name)["values"].as_array().unwrap().clone();
        x.extend(values("task-clock").iter().map(|a| a.as_f64().unwrap()));
        y.extend(values("time").iter().map(|a| a.as_f64().unwrap()));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(&x), mean(&y));
    let dot = |a: &[f64], ma: f64, b: &[f64], mb: f64| -> f64 {
        a.iter().zip(b).map(|(p, q)| (p - ma) * (q - mb)).sum()
    };
    let want = dot(&x, mx, &y, my) / (dot(&x, mx, &x, mx) * dot(&y, my, &y, my)).sqrt();
    let got = r["correlation"]["pearson_r"].as_f64().unwrap();
    assert!(
        (got - want).abs() < 1e-9,
        "{got} against {want}: {}",
        r["correlation"]
    );
    // A saved result shows again in another format.
    let lk = stdout_of(&["show", p(&files[0]), "--format", "lkml"]);
    assert!(lk.is_ascii() && lk.contains("time (ns/call)"));
}

fn ab_interleaves_and_calls_a_real_difference() {
    let cpu = a_cpu();
    let dir = tempfile::tempdir().unwrap();
    let out = syscost()
        .args([
            "ab",
            "--variant",
            "syscall --syscall getpid",
            "--variant",
            "syscall --syscall sched_yield",
        ])
        .args([
            "--label", "getpid", "--label", "yield", "--format", "json", "--save",
        ])
        .arg(dir.path())
        .args(["--", "--cpu", &cpu, "--runs", "6"])
        .args(QUICK)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let time = time_delta(&c);
    // sched_yield does more work per call than getpid: a ratio, not an absolute time.
    assert!(time["median"].as_f64().unwrap() > time["base_median"].as_f64().unwrap());
    let a: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("getpid.json")).unwrap())
            .unwrap();
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("yield.json")).unwrap())
            .unwrap();
    // Interleaved: the runs of the two configurations alternate in time (pids increase).
    let pids = |r: &Value| -> Vec<u64> {
        r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["pid"].as_u64().unwrap())
            .collect()
    };
    let (pa, pb) = (pids(&a), pids(&b));
    assert_eq!(pa.len(), 6);
    assert!(
        (0..6).all(|r| (pa[r] < pb[r]) == (r % 2 == 0)),
        "ABBA order: {pa:?} {pb:?}"
    );
    // And within a round the two runs took turns sample by sample: A B, B A, ... from slot to
    // slot, the first slot alternating from round to round.
    assert_eq!(a["options"]["interleaved"], "samples");
    for round in 0..6 {
        let seen = turns(&a, &b, round);
        let expected: String = (0..seen.len() / 2)
            .map(|slot| if (round + slot) % 2 == 0 { "AB" } else { "BA" })
            .collect();
        assert_eq!(seen, expected, "round {round}");
    }
    assert!(c["analysis"].as_str().unwrap().contains("sample by sample"));
    // --interleave runs: one run after the other.
    let out = syscost()
        .args(["ab", "--interleave", "runs", "--variant", "syscall"])
        .args(["--variant", "syscall --syscall getppid", "--save"])
        .arg(dir.path())
        .args(["--format", "json", "--", "--cpu", &cpu, "--runs", "6"])
        .args(QUICK)
        .output()
        .unwrap();
    assert!(out.status.success());
    let read = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(f)).unwrap()).unwrap()
    };
    let (a, b) = (read("getpid.json"), read("getppid.json"));
    assert_eq!(a["options"]["interleaved"], "runs");
    assert_eq!(turns(&a, &b, 0), "AAAABBBB");
    assert_eq!(turns(&a, &b, 1), "BBBBAAAA");
}

/// Whose samples (warm-up included) came in which order in round `round` of two results: a
/// string of A and B by start time.
fn turns(a: &Value, b: &Value, round: usize) -> String {
    let mut t: Vec<(u64, char)> = Vec::new();
    for (r, who) in [(a, 'A'), (b, 'B')] {
        let run = &r["runs"][round];
        for s in run["warmup"]
            .as_array()
            .unwrap()
            .iter()
            .chain(run["samples"].as_array().unwrap())
        {
            t.push((s["start_ns"].as_u64().expect("start_ns"), who));
        }
    }
    t.sort();
    t.into_iter().map(|x| x.1).collect()
}

// A stored summary is never trusted: one edited to say the median is twice what the values say
// printed "+99.9%" beside an interval of [+2.6, +3.4]. And values that do not match their units
// are refused, naming the file and the metric.
fn summaries_are_recomputed_and_damaged_metrics_refused() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let mut stale: Value =
        serde_json::from_str(&std::fs::read_to_string(&f.slower).unwrap()).unwrap();
    stale["metrics"][0]["summary"]["median"] = json!(224.2);
    let stale_path = dir.join("stale.json");
    std::fs::write(&stale_path, stale.to_string()).unwrap();
    let c = json_of(&["compare", p(&f.base), p(&stale_path), "--format", "json"]);
    let d = time_delta(&c);
    let delta = d["delta_pct"].as_f64().unwrap();
    assert!(
        (delta - 11.99).abs() < 0.1,
        "the values' median, not the stored one: {d}"
    );
    let mut bad = stale.clone();
    bad["metrics"][0]["units"] = json!([0, 1]);
    let bad_path = dir.join("units.json");
    std::fs::write(&bad_path, bad.to_string()).unwrap();
    fails(
        &["compare", p(&f.base), p(&bad_path)],
        &["units.json", "metric 'time'", "6 values but 2 units"],
    );
}

// Pooling files whose means differ correlates the files; --within correlates the runs.
fn correlate_warns_of_pooled_files_and_correlates_within() {
    let f = fixtures();
    let args = [
        "correlate",
        p(&f.base),
        p(&f.faster),
        "--x",
        "context-switches",
    ];
    let pooled = json_of(&[&args[..], &["--format", "json"]].concat());
    let warnings = pooled["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("--within")),
        "{warnings:?}"
    );
    let within = json_of(&[&args[..], &["--within", "--format", "json"]].concat());
    assert_eq!(within["within"], true);
    assert!(within["warnings"].as_array().unwrap().is_empty());
    assert_eq!(within["correlation"]["n"], pooled["correlation"]["n"]);
}

// `-o` naming an input replaced a run result with the comparison; it is refused, and the
// input is left as it was.
fn an_output_that_is_an_input_is_refused() {
    let f = fixtures();
    let before = std::fs::read(&f.base).unwrap();
    for cmd in [
        vec!["compare", p(&f.base), p(&f.same), "-o", p(&f.base)],
        vec!["merge", p(&f.same), p(&f.base), "-o", p(&f.base)],
        vec!["report", p(&f.base), "-o", p(&f.base)],
    ] {
        fails(&cmd, &["is one of the inputs"]);
    }
    assert_eq!(std::fs::read(&f.base).unwrap(), before);
}

// A value of 1.797e308 made statrs panic inside correlate (XOutOfRange); Welch with values
// around 1e200 panicked on its degrees of freedom.
fn extreme_values_get_a_message_not_a_panic() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&f.base).unwrap()).unwrap();
    v["metrics"][0]["values"][0] = json!(1.797e308);
    let huge = dir.join("huge.json");
    std::fs::write(&huge, v.to_string()).unwrap();
    fails(
        &["correlate", p(&huge), "--x", "time", "--y", "time"],
        &["huge.json", "too large to correlate"],
    );
    // Values edited to around 1e200 (the stored summary stays; it is recomputed on read).
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&f.base).unwrap()).unwrap();
    v["metrics"][0]["values"] = json!([1e200, 2e200, 3e200, 4e200, 5e200, 6e200]);
    let b1 = dir.join("big1.json");
    std::fs::write(&b1, v.to_string()).unwrap();
    v["metrics"][0]["values"] = json!([2e200, 3e200, 4e200, 5e200, 6e200, 7e200]);
    let b2 = dir.join("big2.json");
    std::fs::write(&b2, v.to_string()).unwrap();
    let out = syscost()
        .args(["compare", p(&b1), p(&b2), "--test", "welch"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// A metric present without values was reported as missing ("has no metric 'cycles'; it has:
// ..., cycles"); merge suggested "--force to compare them".
fn messages_say_what_is_really_wrong() {
    let f = fixtures();
    fails(
        &["compare", p(&f.base), p(&f.same), "--metric", "cycles"],
        &[
            "its 'cycles' has no values (no PMU)",
            "metrics with values: time",
        ],
    );
    let dir = f.base.parent().unwrap().to_path_buf();
    let ppid = fixture(&dir, "ppid2.json", "getppid", &[1.0, 2.0, 3.0], "b8");
    fails(&["merge", p(&f.base), p(&ppid)], &["--force to merge them"]);
}

// A merge of many results of one boot printed a warning for every pair of them.
fn merge_summarises_results_of_one_boot() {
    let f = fixtures();
    let dir = f.base.parent().unwrap().to_path_buf();
    let copies: Vec<PathBuf> = (0..12)
        .map(|i| {
            fixture(
                &dir,
                &format!("copy{i}.json"),
                "getpid",
                &[1.0, 2.0, 3.0],
                "one-boot",
            )
        })
        .collect();
    let mut args = vec!["merge", "--format", "json"];
    args.extend(copies.iter().map(|c| p(c)));
    let m = json_of(&args);
    let same: Vec<&str> = m["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("same boot"))
        .collect();
    assert_eq!(same.len(), 1, "{same:?}");
    assert!(
        same[0].starts_with("12 results come from the same boot") && same[0].contains("and 7 more")
    );
}

// A kernel CI job gates on a comparison: --fail-on exits 3 after printing everything.
fn fail_on_gates_with_status_3() {
    let f = fixtures();
    let status = |args: &[&str]| {
        let out = syscost().args(args).output().unwrap();
        assert!(
            !out.stdout.is_empty(),
            "the comparison is printed either way"
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = status(&["compare", p(&f.base), p(&f.slower), "--fail-on", "slower"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("--fail-on: slower.json: time slower"), "{err}");
    assert_eq!(
        status(&["compare", p(&f.base), p(&f.faster), "--fail-on", "slower"]).0,
        Some(0)
    );
    assert_eq!(
        status(&["compare", p(&f.base), p(&f.same), "--fail-on", "changed"]).0,
        Some(0)
    );
    let (code, _) = status(&[
        "compare",
        p(&f.base),
        p(&f.faster),
        "--fail-on",
        "slower",
        "--fail-on",
        "changed",
    ]);
    assert_eq!(code, Some(3));
}
