//! `syscost reproduce`: a public investigation in one command, its tables beside syscost's.

use crate::common::*;
use serde_json::Value;

crate::tests! {
    Shared the_audit_series_is_reproduced_cell_by_cell_under_tcg,
    Shared investigations_that_cannot_run_are_refused_before_booting,
}

/// The audit series on Debian's 6.1 under TCG, one boot per arm: every cell of its four tables
/// is shown with its class and reason; the exact and modelled cells are measured, the rules
/// add instructions, branches and modelled misses to a getpid, all branches outnumber the
/// conditional ones, the guest reads where its rule entries are, and the JSON, the page and
/// the rule set are written to -o DIR.
fn the_audit_series_is_reproduced_cell_by_cell_under_tcg() {
    let Some(k) = kernels_in("boot", 2) else {
        return;
    };
    let tmp = scratch();
    let out_dir = tmp.path().join("out");
    let kernels = k[0].parent().unwrap().display().to_string();
    let out = syscost()
        .current_dir(tmp.path())
        .args([
            "reproduce",
            "audit-series",
            "--kernels",
            &kernels,
            "--boots",
            "1",
        ])
        .args([
            "--runs",
            "1",
            "--samples",
            "2",
            "--sample-time",
            "20ms",
            "-o",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(text.contains("Agreement: exact: "), "{text}");
    assert!(
        text.contains("perf stat numbers for each getpid() iteration"),
        "{text}"
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("audit-series.json")).unwrap())
            .unwrap();
    assert_eq!(r["kind"], "reproduction");
    let rows = r["rows"].as_array().unwrap();
    let paper: Value =
        serde_json::from_str(include_str!("../../papers/audit-series.json")).unwrap();
    let cells: usize = paper["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cells"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows.len(), cells, "every cell of the paper is shown");
    for row in rows {
        assert!(!row["why"].as_str().unwrap().is_empty(), "{row}");
        let measured = row.get("ours").is_some();
        match row["class"].as_str().unwrap() {
            "exact" | "modelled" => assert!(measured, "{row}"),
            "not-reproducible" => assert!(!measured, "{row}"),
            "ratio" => {}
            other => panic!("class {other}"),
        }
    }
    let ours = |table: &str, row: &str, column: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r["table"] == table && r["row"] == row && r["column"] == column)
            .unwrap_or_else(|| panic!("{table} {row} {column}"));
        r["ours"].as_f64().unwrap()
    };
    let insns = |c| ours("per-call", "instructions", c);
    assert!((250.0..450.0).contains(&insns("audit=0")), "{text}");
    assert!(
        insns("audit=1") > insns("audit=0") + 1000.0,
        "42 rules: {text}"
    );
    assert!(ours("per-call", "branches", "audit=1") > ours("per-call", "branches", "audit=0"));
    let misses = |c| ours("per-call", "L1-load-misses", c);
    assert!(misses("audit=1") > misses("audit=0"), "{text}");
    let ratio = ours("perf-stat", "task-clock (msec)", "audit=1");
    assert!(
        ratio > 1.0,
        "the rules make getpid slower under TCG too: {ratio}"
    );
    for f in r["campaign"]["figures"].as_array().unwrap() {
        let counter = |name: &str| {
            let c = f["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name);
            c.and_then(|c| c["median"].as_f64())
                .unwrap_or_else(|| panic!("{name}: {f}"))
        };
        let (all, cond) = (
            counter("branches:k (emulated)"),
            counter("conditional-branches:k (emulated)"),
        );
        assert!(
            all > cond * 1.2,
            "calls, jumps and returns count too: {all} {cond}"
        );
    }
    // Each boot with rules read where its 42 entries are (its /proc/kcore): 8 sets reachable
    // by a kmalloc-512 object's first line, their spread, and the boot's misses beside them.
    let placed = r["placements"].as_array().unwrap();
    assert_eq!(placed.len(), 1, "the arm with rules: {placed:?}");
    assert_eq!(placed[0]["arm"], "audit1");
    let boot = &placed[0]["boots"][0];
    assert_eq!(boot["entries"], 42, "{boot}");
    assert_eq!(boot["reachable"], 8, "{boot}");
    let spread = boot["spread"].as_f64().unwrap();
    assert!((0.0..42.0).contains(&spread), "{boot}");
    assert!(
        boot["peak"].as_u64().unwrap() >= 6,
        "42 over 8 sets: {boot}"
    );
    assert!(boot["misses"].as_f64().is_some(), "{boot}");
    let most = &boot["most_missed"];
    assert!(
        most["set"].as_u64().unwrap() < 64,
        "the boot's most missed set: {boot}"
    );
    assert!(
        most["entries"].as_u64().is_some(),
        "and the entries in it: {boot}"
    );
    assert!(
        text.contains("Where each boot put the rule entries"),
        "{text}"
    );
    let summary = r["summary"].as_array().unwrap();
    let total: u64 = summary.iter().map(|s| s["cells"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, cells);
    let page = std::fs::read_to_string(out_dir.join("audit-series.html")).unwrap();
    assert!(page.contains("Reproduction of the 2022 audit syscall-exit series"));
    let rules = std::fs::read_to_string(out_dir.join("audit-series.rules")).unwrap();
    assert_eq!(rules.lines().filter(|l| l.starts_with("-a ")).count(), 42);
    let shown = syscost()
        .args(["show"])
        .arg(out_dir.join("audit-series.json"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        text,
        "show prints it again"
    );
}

fn investigations_that_cannot_run_are_refused_before_booting() {
    let tmp = scratch();
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    refused(
        &["reproduce", "nope"],
        "syscost reproduces audit-series, syscall-latency",
    );
    let empty = tmp.path().display().to_string();
    let e = refused(
        &["reproduce", "alignment-rfc", "--kernels", &empty, "-o", o],
        "bench/alignment_builds.sh 16 64",
    );
    assert!(
        e.contains("arm a16 boots the build vmlinuz-align-16"),
        "{e}"
    );
    let e = refused(
        &["reproduce", "audit-series", "--kernels", &empty, "-o", o],
        "apt-get download linux-image-6.1.0-",
    );
    assert!(e.contains("arm audit0"), "{e}");
    let e = refused(
        &["reproduce", "uprobe-thread", "--kernels", &empty, "-o", o],
        "apt-get download linux-image-6.12.",
    );
    assert!(e.contains("arm uprobe-nop"), "{e}");
    refused(
        &[
            "reproduce",
            "audit-series",
            "--arm",
            "x=/boot/vmlinuz",
            "-o",
            o,
        ],
        "--arm x: audit-series has the arms audit0, audit1",
    );
    refused(&["reproduce"], "NAME");
    assert!(!out.exists(), "nothing is written for a refusal");
    let list = syscost().args(["reproduce", "--list"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    for name in [
        "audit-series",
        "syscall-latency",
        "alignment-rfc",
        "uprobe-thread",
    ] {
        assert!(text.contains(name), "{text}");
    }
    assert!(
        text.contains("needs: builds of Debian's linux-source-6.1"),
        "{text}"
    );
}
