//! What a new user meets in the first hour: a closed pipe, a mistyped history URL, huge counts,
//! defaults that must be able to decide. Each test failed before its fix.

mod common;
use common::*;
use std::path::Path;
use std::process::Stdio;

/// Run syscost with its stdout a pipe whose reader is already gone (`| head` after its lines).
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("syscost"))
        .env("SYSCOST_HISTORY", TEST_HISTORY)
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("panicked") && !err.contains("Broken pipe"),
        "{args:?} with a closed stdout: {:?} {err}",
        out.status
    );
    out
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let run = dir.path().join("run.json");
    std::fs::write(&run, quick_run().to_string()).unwrap();
    let (run, store) = (run.to_str().unwrap(), store.to_str().unwrap());
    let ok = syscost()
        .args(["history", "import", run, "--history", store])
        .output()
        .unwrap();
    assert!(ok.status.success());
    for args in [
        &["run", "syscall", "--list-events"][..],
        &["history", "list", "--history", store],
        &["history", "list", "--history", store, "--format", "json"],
        &["history", "show", "1", "--history", store],
        &["export", "kcidb", "--origin", "lab", run],
        &["show", run],
        &["show", run, "--format", "json"],
        &["env"],
        &["man"],
        &["completions", "bash"],
    ] {
        with_closed_stdout(args);
    }
}

#[test]
fn a_measurement_into_a_closed_stdout_is_still_written_and_recorded() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let (out, store) = (dir.path().join("r.json"), dir.path().join("h.sqlite"));
    let mut args = vec!["run", "syscall", "--runs", "2", "-e", "task-clock"];
    args.extend([
        "-o",
        out.to_str().unwrap(),
        "--history",
        store.to_str().unwrap(),
    ]);
    args.extend(QUICK);
    with_closed_stdout(&args);
    assert!(Path::new(&out).exists(), "-o was not written");
    let listed = syscost()
        .args(["history", "list", "--format", "json", "--history"])
        .arg(&store)
        .output()
        .unwrap();
    let entries: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 1, "not recorded");
}
