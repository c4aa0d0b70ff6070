//! End-to-end: `syscost export kcidb` of real results (files and the history) is a KCIDB v5.0
//! report that KernelCI's own schema package (kcidb-io, installed by scripts/test.sh into
//! target/kcidb-venv) accepts; bad origins and results with nothing to export are refused.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

crate::tests! {
    Shared results_export_as_a_kcidb_report_that_kcidb_io_accepts,
}

const VENV_PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/kcidb-venv/bin/python");

/// Validate with kcidb-io exactly as v5.0 and against its latest schema.
pub(crate) fn kcidb_io_accepts(report: &Path) -> Option<String> {
    if !Path::new(VENV_PYTHON).exists() {
        skip(format!(
            "kcidb-io validation: {VENV_PYTHON} is missing (scripts/test.sh installs it)"
        ));
        return None;
    }
    let out = std::process::Command::new(VENV_PYTHON)
        .args([
            "-c",
            "import json, sys, kcidb_io\n\
             d = json.load(open(sys.argv[1]))\n\
             kcidb_io.schema.V5_0.validate_exactly(d)\n\
             kcidb_io.schema.LATEST.validate(d)\n\
             print('valid', kcidb_io.schema.LATEST.major, kcidb_io.schema.LATEST.minor)",
        ])
        .arg(report)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kcidb-io refused {}: {}",
        report.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn results_export_as_a_kcidb_report_that_kcidb_io_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("history.sqlite");
    let mut files = Vec::new();
    for call in ["getpid", "getppid"] {
        let f = dir.path().join(format!("{call}.json"));
        let out = syscost()
            .args([
                "run",
                "syscall",
                "--syscall",
                call,
                "--runs",
                "3",
                "--samples",
                "2",
            ])
            .args(["--sample-time", "5ms", "--history"])
            .arg(&store)
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
    // From files.
    let report = dir.path().join("report.json");
    let out = syscost()
        .args(["export", "kcidb", "--origin", "syscost_ci", "-o"])
        .arg(&report)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(d["version"]["major"], 5);
    assert_eq!(d["checkouts"].as_array().unwrap().len(), 1, "one kernel");
    assert_eq!(
        d["builds"].as_array().unwrap().len(),
        1,
        "one configuration"
    );
    let tests = d["tests"].as_array().unwrap();
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let measured = run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["summary"].is_object())
        .count();
    assert_eq!(
        tests.len(),
        2 * measured,
        "a test per measured metric of each result"
    );
    let mut ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), tests.len(), "test ids are unique");
    let time = tests
        .iter()
        .find(|t| t["path"] == "syscost.syscall.getpid.time")
        .expect("getpid's time");
    assert_eq!(time["status"], "DONE");
    assert_eq!(time["number"]["unit"], "ns/call");
    let median = median(metric(&run, "time"));
    assert!((time["number"]["value"].as_f64().unwrap() - median).abs() < 1e-9 * median);
    if let Some(said) = kcidb_io_accepts(&report) {
        assert!(said.starts_with("valid 5"), "{said}");
    }

    // From the history, with a filter; to stdout.
    let out = syscost()
        .args(["export", "kcidb", "--origin", "syscost_ci", "--history"])
        .arg(&store)
        .args(["--param", "syscall=getppid"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = d["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    assert!(
        paths
            .iter()
            .all(|p| p.starts_with("syscost.syscall.getppid.")),
        "{paths:?}"
    );
    let from_history = dir.path().join("history-report.json");
    std::fs::write(&from_history, &out.stdout).unwrap();
    kcidb_io_accepts(&from_history);

    // Refusals.
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/example");
    refused(
        &[
            "export",
            "kcidb",
            "--origin",
            "My-Lab",
            files[0].to_str().unwrap(),
        ],
        "lower-case letters, digits and _",
    );
    refused(
        &[
            "export",
            "kcidb",
            "--origin",
            "lab",
            &format!("{examples}/ab.json"),
        ],
        "no run result",
    );
    // A result of another kind among runs: left out with a warning.
    let out = syscost()
        .args([
            "export",
            "kcidb",
            "--origin",
            "lab",
            &format!("{examples}/ab.json"),
        ])
        .arg(&files[0])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a run: left out"));
}
